//! bwsim's robustness kit: what the fuzz drivers (the short proptest runs in this crate's
//! tests, `scripts/fuzz`, and the libFuzzer targets under `fuzz/`) generate and check.
//!
//! - [`corpus`]: the seed `.tile` files of the repository.
//! - [`mutate`]: token-level mutations of `.tile` text near the grammar.
//! - [`gen`]: random kernels from a grammar of valid programs, with random launch specs.
//! - [`oracle`]: the properties every input must satisfy (no panic, diagnostics with spans,
//!   runs end in a known outcome, determinism for a seed).
//! - [`directives`]: the header directives of the file-driven tests (`// expect: CODE`).
//!
//! Every generator draws from an [`arbitrary::Unstructured`], so a failing case is its bytes.

pub mod corpus;
pub mod directives;
pub mod gen;
pub mod mutate;
pub mod oracle;

pub use arbitrary::Unstructured;

/// Which generator a case comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A seed file with token mutations.
    Mutant,
    /// A kernel from [`gen::kernel`].
    Generated,
    /// A generated kernel with token mutations on top.
    MutatedGenerated,
}

/// The input text (maybe not UTF-8) of one case drawn from `data`.
pub fn case_input(source: Source, data: &[u8], seeds: &[corpus::Seed]) -> Vec<u8> {
    let mut u = Unstructured::new(data);
    match source {
        Source::Mutant => {
            let i = u.choose_index(seeds.len().max(1)).unwrap_or(0);
            let text = seeds.get(i).map(|s| s.text.as_str()).unwrap_or("");
            mutate::mutate(&mut u, text, 3)
        }
        Source::Generated => gen::kernel(&mut u).into_bytes(),
        Source::MutatedGenerated => {
            let k = gen::kernel(&mut u);
            mutate::mutate(&mut u, &k, 2)
        }
    }
}

/// Run `f` on a thread with an 8 MiB stack (the main thread's size; test threads get 2 MiB and
/// unoptimised builds need more at the parser's maximum nesting depth), re-raising its panic.
pub fn with_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let h = std::thread::Builder::new().stack_size(8 << 20).spawn(f);
    match h {
        Ok(h) => match h.join() {
            Ok(v) => v,
            Err(e) => std::panic::resume_unwind(e),
        },
        // Cannot spawn (out of threads): run here.
        Err(_) => panic!("cannot spawn a fuzz worker thread"),
    }
}
