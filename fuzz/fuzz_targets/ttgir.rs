//! TTGIR of every supported Triton release through the whole oracle: import, print, verify,
//! launch (the sidecar), run twice.
//!
//! An input whose first byte is 0 drives the MLIR-aware mutator over the repository's TTGIR
//! seeds (`tests/gluon/3.*/*.ttgir` with their sidecars) with the rest of its bytes; any other
//! input is a TTGIR case as it is (the text, then optionally the
//! `// ---- bwsim-fuzz: launch sidecar ----` line and the sidecar), which is how `scripts/fuzz`
//! seeds the corpus and how a crash file replays with `bwsim-fuzz --replay CRASH.ttgir`.
#![no_main]
use bwsim_testkit::oracle::{self, Budget};
use bwsim_testkit::ttgir::{self, TtgirCase};
use bwsim_testkit::{corpus, Unstructured};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn seeds() -> &'static [corpus::TtgirSeed] {
    static S: OnceLock<Vec<corpus::TtgirSeed>> = OnceLock::new();
    S.get_or_init(corpus::ttgir_seeds)
}

fuzz_target!(|data: &[u8]| {
    let case = match data.split_first() {
        Some((0, rest)) => ttgir::case(&mut Unstructured::new(rest), seeds(), 4),
        _ => TtgirCase::from_bytes(data),
    };
    oracle::check_ttgir(&case, &Budget::default());
});
