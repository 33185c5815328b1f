//! A seed kernel of the repository, mutated by the bytes (token deletions, duplications,
//! swaps, boundary numbers, deep nesting, bad UTF-8), through the whole oracle.
#![no_main]
use bwsim_testkit::oracle::{self, Budget};
use bwsim_testkit::{case_input, corpus, Source};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn seeds() -> &'static [corpus::Seed] {
    static S: OnceLock<Vec<corpus::Seed>> = OnceLock::new();
    S.get_or_init(corpus::seeds)
}

fuzz_target!(|data: &[u8]| {
    let input = case_input(Source::Mutant, data, seeds());
    oracle::check(&input, &Budget::default());
});
