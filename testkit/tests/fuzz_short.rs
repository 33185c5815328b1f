//! The short fuzz run (part of the test suite; the long run is `scripts/fuzz`): mutated seed
//! kernels, generated well-formed kernels with random launch specs, mutated generated kernels,
//! and mutated TTGIR of every supported Triton release (with their launch sidecars) go through
//! the whole pipeline — parse or import, print, verify, launch, simulate twice — and every
//! property of [`bwsim_testkit::oracle`] must hold.
//!
//! `BWSIM_FUZZ_CASES` sets the number of cases per `.tile` property (default 300) and per
//! Triton release for TTGIR (default 12). A failing TTGIR case is written to
//! `fuzz-short-failure.ttgir` under Cargo's temporary folder for the test (its sidecar after
//! the `// ---- bwsim-fuzz: launch sidecar ----` line), ready for `bwsim-fuzz --replay`.

use bwsim_testkit::corpus::Corpus;
use bwsim_testkit::oracle::{Budget, Verdict};
use bwsim_testkit::{case, ttgir, with_big_stack, Case, Source, Unstructured};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

fn corpus() -> &'static Corpus {
    static S: OnceLock<Corpus> = OnceLock::new();
    S.get_or_init(|| {
        let c = Corpus::load();
        assert!(c.tile.len() > 40, "seed corpus missing ({} files)", c.tile.len());
        c
    })
}

fn verbose() -> bool {
    std::env::var_os("BWSIM_FUZZ_VERBOSE").is_some()
}

/// Check one case on a big-stack thread; on failure show (or save) the input and fail.
fn check(what: String, c: Case) -> Verdict {
    with_big_stack(move || {
        let r = std::panic::catch_unwind(|| c.check(&Budget::default()));
        if verbose() {
            eprintln!("{what}: {r:?}");
        }
        match r {
            Ok(v) => v,
            Err(e) => {
                match &c {
                    Case::Tile(b) => {
                        eprintln!("---- failing input ----\n{}\n----", String::from_utf8_lossy(b))
                    }
                    Case::Ttgir(t) => {
                        let p = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                            .join("fuzz-short-failure.ttgir");
                        let _ = std::fs::write(&p, t.to_bytes());
                        eprintln!("---- failing TTGIR case ({what}) saved as {} ----", p.display());
                    }
                }
                std::panic::resume_unwind(e)
            }
        }
    })
}

fn run(source: Source, data: Vec<u8>) {
    check(format!("{source:?}"), case(source, &data, corpus()));
}

fn cases() -> u32 {
    std::env::var("BWSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

fn ttgir_cases() -> u32 {
    std::env::var("BWSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_seeds_through_the_whole_pipeline(data in proptest::collection::vec(any::<u8>(), 8..256)) {
        run(Source::Mutant, data);
    }

    #[test]
    fn generated_kernels_run_to_a_known_outcome(data in proptest::collection::vec(any::<u8>(), 16..512)) {
        run(Source::Generated, data);
    }

    #[test]
    fn mutated_generated_kernels(data in proptest::collection::vec(any::<u8>(), 16..512)) {
        run(Source::MutatedGenerated, data);
    }
}

/// Mutated TTGIR, the same number of cases from every release folder (lines spliced in from
/// any release), through import, print, verify, launch and two runs.
#[test]
fn mutated_ttgir_of_every_release_through_the_whole_pipeline() {
    let corpus = corpus();
    let releases = corpus.releases();
    assert!(
        releases.len() >= 4,
        "TTGIR seed corpus missing: release folders {releases:?}"
    );
    let verdicts: Mutex<BTreeMap<String, usize>> = Mutex::default();
    for release in &releases {
        let mine: Vec<usize> = (0..corpus.ttgir.len())
            .filter(|&i| corpus.ttgir[i].release == *release)
            .collect();
        assert!(mine.len() > 10, "{release}: {} TTGIR seeds", mine.len());
        let mut runner = TestRunner::new(Config {
            cases: ttgir_cases(),
            failure_persistence: None,
            max_shrink_iters: 500,
            ..Config::default()
        });
        let r = runner.run(&proptest::collection::vec(any::<u8>(), 8..512), |data| {
            let mut u = Unstructured::new(&data);
            let i = mine[u.choose_index(mine.len()).unwrap_or(0)];
            let c = ttgir::case_from(&mut u, &corpus.ttgir, i, 4);
            let v = check(format!("{} mutated", corpus.ttgir[i].name), Case::Ttgir(c));
            *verdicts.lock().unwrap().entry(format!("{v:?}")).or_default() += 1;
            Ok(())
        });
        if let Err(e) = r {
            panic!("TTGIR of Triton {release}: {e}");
        }
    }
    let v = verdicts.into_inner().unwrap();
    eprintln!("TTGIR verdicts: {v:?}");
    assert_eq!(v.values().sum::<usize>(), releases.len() * ttgir_cases() as usize);
}

/// The unmutated corpus passes the oracle, and imports: the first seeds of every release with a
/// launch run to an outcome (the mutations start from kernels that get through the pipeline).
#[test]
fn ttgir_seeds_of_every_release_import_and_run() {
    let corpus = corpus();
    for release in corpus.releases() {
        let seeds: Vec<_> = corpus
            .ttgir
            .iter()
            .filter(|s| s.release == release && s.launch.is_some() && !s.name.contains("bug_"))
            .take(3)
            .collect();
        assert_eq!(seeds.len(), 3, "{release}: too few TTGIR seeds with a launch");
        for s in seeds {
            let c = ttgir::TtgirCase::new(&s.text, s.launch.as_deref());
            let v = check(s.name.clone(), Case::Ttgir(c));
            assert!(matches!(v, Verdict::Ran(_)), "{}: {v:?}", s.name);
        }
    }
}
