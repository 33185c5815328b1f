//! The short fuzz run (part of the test suite; the long run is `scripts/fuzz`): mutated seed
//! kernels, generated well-formed kernels with random launch specs, and mutated generated
//! kernels go through the whole pipeline — parse, print, verify, launch, simulate twice — and
//! every property of [`bwsim_testkit::oracle`] must hold.
//!
//! `BWSIM_FUZZ_CASES` sets the number of cases per property (default 300).

use bwsim_testkit::oracle::{self, Budget};
use bwsim_testkit::{case_input, corpus, with_big_stack, Source};
use proptest::prelude::*;
use std::sync::OnceLock;

fn seeds() -> &'static [corpus::Seed] {
    static S: OnceLock<Vec<corpus::Seed>> = OnceLock::new();
    S.get_or_init(|| {
        let s = corpus::seeds();
        assert!(s.len() > 40, "seed corpus missing ({} files)", s.len());
        s
    })
}

fn run(source: Source, data: Vec<u8>) {
    with_big_stack(move || {
        let input = case_input(source, &data, seeds());
        let r = std::panic::catch_unwind(|| oracle::check(&input, &Budget::default()));
        if std::env::var_os("BWSIM_FUZZ_VERBOSE").is_some() {
            eprintln!("{source:?}: {r:?}");
        }
        if let Err(e) = r {
            eprintln!(
                "---- failing input ----\n{}\n----",
                String::from_utf8_lossy(&input)
            );
            std::panic::resume_unwind(e);
        }
    });
}

fn cases() -> u32 {
    std::env::var("BWSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
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
