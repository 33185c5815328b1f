//! Raw bytes as a `.tile` file through the whole oracle (parse, print, verify, launch, run).
#![no_main]
use bwsim_testkit::oracle::{self, Budget};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    oracle::check(data, &Budget::default());
});
