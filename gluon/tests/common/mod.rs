//! Helpers shared by the importer's integration tests: load a fixture of one Triton version,
//! the schedule count the environment asks for, and the checker's exploration with the error
//! codes it found.
#![allow(dead_code)]

use bwsim_gluon::version::Version;
use bwsim_isa::{diag, Kernel, SourceFile};
use bwsim_sim::check;
use bwsim_sim::explore::{Exploration, ExploreOptions};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The fixture `file` of Triton version `v` (tests/gluon/VERSION/FILE) imported: the kernel and
/// its composite source. A file that does not load or import fails the test.
pub fn import_fixture(v: Version, file: &str) -> (Kernel, SourceFile) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/gluon")
        .join(v.minor())
        .join(file);
    let l = bwsim_gluon::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match l.kernel {
        Ok(k) => (k, l.source),
        Err(d) => panic!(
            "{} does not import:\n{}",
            path.display(),
            diag::render(&d, &l.source)
        ),
    }
}

/// Schedules per run as `BWSIM_GLUON_SCHEDULES` says, if it is set to a number.
pub fn env_schedules() -> Option<u64> {
    std::env::var("BWSIM_GLUON_SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
}

/// The checker's exploration of `schedules` schedules from seed 0, on up to 4 threads, not
/// stopping at the first error.
pub fn explore(p: &check::Prepared, schedules: u64) -> Exploration {
    p.explore(
        &ExploreOptions {
            first_seed: 0,
            schedules,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()).min(4),
            stop_on_first_error: false,
        },
        |_, _| {},
    )
}

/// The codes of the errors an exploration found.
pub fn error_codes(e: &Exploration) -> BTreeSet<String> {
    e.findings
        .iter()
        .filter(|f| f.diagnostic.is_error())
        .map(|f| f.diagnostic.code.to_string())
        .collect()
}
