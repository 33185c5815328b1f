//! A seed kernel of the repository, mutated by the bytes (token deletions, duplications,
//! swaps, boundary numbers, deep nesting, bad UTF-8), through the whole oracle.
#![no_main]
use bwsim_testkit::corpus::Corpus;
use bwsim_testkit::oracle::Budget;
use bwsim_testkit::{case, Source};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn corpus() -> &'static Corpus {
    static S: OnceLock<Corpus> = OnceLock::new();
    S.get_or_init(|| Corpus {
        tile: bwsim_testkit::corpus::seeds(),
        ttgir: Vec::new(),
    })
}

fuzz_target!(|data: &[u8]| {
    case(Source::Mutant, data, corpus()).check(&Budget::default());
});
