//! bwsim's robustness kit: what the fuzz drivers (the short proptest runs in this crate's
//! tests, `scripts/fuzz`, and the libFuzzer targets under `fuzz/`) generate and check.
//!
//! - [`corpus`]: the seed `.tile` files of the repository and the TTGIR of every supported
//!   Triton release with its launch sidecars.
//! - [`mutate`]: token-level mutations of `.tile` text near the grammar.
//! - [`ttgir`]: TTGIR cases (text and sidecar) and MLIR-aware mutations of them.
//! - [`gen`]: random kernels from a grammar of valid programs, with random launch specs.
//! - [`oracle`]: the properties every input must satisfy (no panic, no hang, diagnostics with
//!   spans, runs end in a known outcome, determinism for a seed).
//! - [`directives`]: the header directives of the file-driven tests (`// expect: CODE`),
//!   re-exported from `bwsim_isa::directives` (the harness behind `bwsim gpu` reads the
//!   launch sidecars through it too).
//!
//! Every generator draws from an [`arbitrary::Unstructured`], so a failing case is its bytes.

pub mod corpus;
pub use bwsim_isa::directives;
pub mod gen;
pub mod mutate;
pub mod oracle;
pub mod shapes;
pub mod ttgir;

pub use arbitrary::Unstructured;
pub use ttgir::TtgirCase;

/// Whether the full test tier runs: `BWSIM_FULL=1`, which `bash scripts/test --full` (and so
/// CI) sets. The default tier (`bash scripts/test`) leaves out the loops whose cost grows with
/// the corpus: every older Triton release's fixtures, ptxas over every case of every release.
pub fn full_tier() -> bool {
    std::env::var("BWSIM_FULL").is_ok_and(|v| v == "1")
}

/// For a test that belongs to the full tier only: `true` when it should run; otherwise says on
/// stderr what was left out and how to run it, and returns `false`.
pub fn runs_in_full_tier(what: &str) -> bool {
    if full_tier() {
        return true;
    }
    eprintln!("skipped in the default tier: {what} (BWSIM_FULL=1 or `bash scripts/test --full` runs it)");
    false
}

/// Which generator a case comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A `.tile` seed file with token mutations.
    Mutant,
    /// A kernel from [`gen::kernel`].
    Generated,
    /// A generated kernel with token mutations on top.
    MutatedGenerated,
    /// A TTGIR seed (any release) with MLIR-aware mutations, and its sidecar.
    Ttgir,
}

impl Source {
    /// Every source, in the order drivers take turns.
    pub const ALL: [Source; 4] = [
        Source::Mutant,
        Source::Generated,
        Source::MutatedGenerated,
        Source::Ttgir,
    ];

    /// The name drivers use for it (`mutated-generated`).
    pub fn name(self) -> &'static str {
        match self {
            Source::Mutant => "mutant",
            Source::Generated => "generated",
            Source::MutatedGenerated => "mutated-generated",
            Source::Ttgir => "ttgir",
        }
    }

    /// The source a name stands for.
    pub fn from_name(name: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// One input: `.tile` bytes, or a TTGIR case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Case {
    Tile(Vec<u8>),
    Ttgir(TtgirCase),
}

impl Case {
    /// Check every property of [`oracle`] on the case.
    pub fn check(&self, budget: &oracle::Budget) -> oracle::Verdict {
        match self {
            Case::Tile(b) => oracle::check(b, budget),
            Case::Ttgir(c) => oracle::check_ttgir(c, budget),
        }
    }

    /// The case as a file's bytes (a TTGIR case with its sidecar after
    /// [`ttgir::LAUNCH_MARKER`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Case::Tile(b) => b.clone(),
            Case::Ttgir(c) => c.to_bytes(),
        }
    }

    /// The extension of a file holding it: `tile` or `ttgir`.
    pub fn extension(&self) -> &'static str {
        match self {
            Case::Tile(_) => "tile",
            Case::Ttgir(_) => "ttgir",
        }
    }
}

/// The case drawn from `data` by `source` (seeds from `corpus`).
pub fn case(source: Source, data: &[u8], corpus: &corpus::Corpus) -> Case {
    let mut u = Unstructured::new(data);
    match source {
        Source::Mutant => {
            let i = u.choose_index(corpus.tile.len().max(1)).unwrap_or(0);
            let text = corpus.tile.get(i).map_or("", |s| s.text.as_str());
            Case::Tile(mutate::mutate(&mut u, text, 3))
        }
        Source::Generated => Case::Tile(gen::kernel(&mut u).into_bytes()),
        Source::MutatedGenerated => {
            let k = gen::kernel(&mut u);
            Case::Tile(mutate::mutate(&mut u, &k, 2))
        }
        Source::Ttgir => Case::Ttgir(ttgir::case(&mut u, &corpus.ttgir, 4)),
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
