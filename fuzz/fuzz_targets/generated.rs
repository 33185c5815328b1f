//! A kernel from the grammar of valid programs with a random launch spec (the first byte
//! decides whether token mutations go on top), through the whole oracle.
#![no_main]
use bwsim_testkit::corpus::Corpus;
use bwsim_testkit::oracle::Budget;
use bwsim_testkit::{case, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let source = if first % 4 == 0 { Source::MutatedGenerated } else { Source::Generated };
    case(source, rest, &Corpus::default()).check(&Budget::default());
});
