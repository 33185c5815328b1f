//! Short fuzz run of the front end (the long run is `scripts/fuzz`): mutated seed kernels —
//! deleted, duplicated and swapped tokens, huge numbers, deep nesting, random bytes — must
//! parse, print and verify without panicking, and every rejection must carry a span inside the
//! text.

use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{SourceFile, Target};
use bwsim_testkit::mutate::{tokens, BOUNDARY_NUMBERS, INSERTS};
use proptest::prelude::*;
use std::path::Path;

fn seeds() -> Vec<String> {
    let mut v = Vec::new();
    for dir in ["../kernels/tiles", "../tests/verify"] {
        let d = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut paths: Vec<_> = std::fs::read_dir(&d)
            .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|e| e == "tile") {
                if let Ok(s) = std::fs::read_to_string(&p) {
                    v.push(s);
                }
            }
        }
    }
    assert!(v.len() > 20, "seed corpus missing");
    v
}

#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
    Huge(usize, u8),
    Insert(usize, &'static str),
}

fn apply(toks: &[String], muts: &[Mutation]) -> String {
    let mut t: Vec<String> = toks.to_vec();
    for m in muts {
        if t.is_empty() {
            break;
        }
        let n = t.len();
        match *m {
            Mutation::Delete(i) => {
                t.remove(i % n);
            }
            Mutation::Duplicate(i) => {
                let x = t[i % n].clone();
                t.insert(i % n, x);
            }
            Mutation::Swap(i, j) => t.swap(i % n, j % n),
            Mutation::Huge(i, k) => {
                t[i % n] = BOUNDARY_NUMBERS[k as usize % BOUNDARY_NUMBERS.len()].to_string();
            }
            Mutation::Insert(i, s) => t.insert(i % n, s.to_string()),
        }
    }
    t.concat()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Duplicate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::Huge(a, b)),
        // The fragments the libFuzzer mutator inserts: punctuation, keywords, operations,
        // openers without closers, and the boundary numbers.
        (any::<usize>(), 0..INSERTS.len() + BOUNDARY_NUMBERS.len()).prop_map(|(a, b)| {
            Mutation::Insert(
                a,
                INSERTS
                    .get(b)
                    .unwrap_or_else(|| &BOUNDARY_NUMBERS[b - INSERTS.len()]),
            )
        }),
    ]
}

/// Run `exercise_inner` on a thread with the main thread's 8 MiB stack (test threads get 2 MiB;
/// unoptimised builds need more than that at the parser's maximum nesting depth).
fn exercise(text: &str) {
    let t = text.to_string();
    let h = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || exercise_inner(&t))
        .expect("spawn");
    if let Err(e) = h.join() {
        std::panic::resume_unwind(e);
    }
}

/// Parse, print, re-parse and verify on both targets; check every diagnostic's span.
fn exercise_inner(text: &str) {
    let file = SourceFile::new("fuzz.tile", text);
    let len = text.len() as u32;
    match bwsim_isa::parse(&file) {
        Err(diags) => {
            assert!(!diags.is_empty(), "rejected without a diagnostic");
            for d in &diags {
                assert!(
                    d.primary.span.end <= len && d.primary.span.start <= d.primary.span.end,
                    "span out of the text: {d:?}"
                );
            }
            let _ = bwsim_isa::diag::render(&diags, &file);
        }
        Ok(k) => {
            let printed = bwsim_isa::print(&k);
            let again =
                bwsim_isa::parse(&SourceFile::new("p.tile", printed.clone())).expect("printed kernels parse");
            assert_eq!(bwsim_isa::print(&again), printed, "print is not a fixed point");
            for t in [Target::Sm100a, Target::Sm90a] {
                let (_, diags) = verify(
                    &k,
                    &VerifyOptions {
                        target: Some(t),
                        overrides: vec![],
                    },
                );
                for d in &diags {
                    assert!(d.primary.span.end <= len, "span out of the text: {d:?}");
                }
                let _ = bwsim_isa::diag::render(&diags, &file);
            }
        }
    }
}

proptest! {
    // BWSIM_FUZZ_CASES raises the count for long runs (scripts/fuzz).
    #![proptest_config(ProptestConfig {
        cases: std::env::var("BWSIM_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_seed_kernels_never_panic(seed in 0usize..1000, muts in proptest::collection::vec(mutation(), 1..6)) {
        let corpus = seeds();
        let base = &corpus[seed % corpus.len()];
        let text = apply(&tokens(base), &muts);
        exercise(&text);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        // Non-UTF-8 input is rejected by the CLI before parsing; lossy text must still be safe.
        let text = String::from_utf8_lossy(&bytes).into_owned();
        exercise(&text);
    }
}

#[test]
fn deep_nesting_is_a_diagnostic_not_a_stack_overflow() {
    for depth in [50usize, 250, 5000] {
        let expr = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
        let text = format!("kernel k {{\n  target sm_100a\n  num_warps 4\n  let x = {expr}\n}}\n");
        exercise(&text);
        let blocks = format!("{}{}", "if true {\n".repeat(depth), "}\n".repeat(depth));
        let text = format!("kernel k {{\n  target sm_100a\n  num_warps 4\n{blocks}}}\n");
        exercise(&text);
    }
}
