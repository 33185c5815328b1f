//! Opt-in: regenerate every supported Triton version's TTGIR fixtures (tests/gluon/VERSION/)
//! with that Triton, through tests/gluon/regenerate.sh, into a temporary directory, and fail on
//! any difference from the checked-in files (the set of files, and each file byte for byte).
//!
//!     BWSIM_GLUON_REGEN=1 cargo test -p bwsim-gluon --test regenerate
//!
//! Each version's Triton is the virtual environment `.tools/triton-VERSION` (regenerate.sh
//! creates it on first use: `pip install triton==VERSION numpy`), or, for one version, the
//! Python in `BWSIM_TRITON_PYTHON` with `BWSIM_GLUON_REGEN=VERSION` (`3.9.0`; `1` or `all`:
//! every version). Without `BWSIM_GLUON_REGEN` the test says how to run it and why it did not
//! (the default suite needs no Triton).

use bwsim_gluon::version::Version;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn ttgir_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ttgir"))
        .collect()
}

/// The releases `BWSIM_GLUON_REGEN` asks for: `1` or `all` for every supported one.
fn releases(wanted: &str) -> Vec<Version> {
    if wanted == "1" || wanted == "all" {
        return Version::all().collect();
    }
    let v = Version::parse(wanted).unwrap_or_else(|e| panic!("BWSIM_GLUON_REGEN={wanted}: {e}"));
    vec![v]
}

/// The differences between the checked-in folder and the regenerated one.
fn differences(have_dir: &Path, made_dir: &Path) -> Vec<String> {
    let (have, made) = (ttgir_files(have_dir), ttgir_files(made_dir));
    let mut differ = Vec::new();
    for n in have.difference(&made) {
        differ.push(format!("{n}: checked in, not regenerated"));
    }
    for n in made.difference(&have) {
        differ.push(format!("{n}: regenerated, not checked in"));
    }
    for name in have.intersection(&made) {
        let a = std::fs::read_to_string(have_dir.join(name)).expect("fixture");
        let b = std::fs::read_to_string(made_dir.join(name)).expect("regenerated");
        if a != b {
            let line = a
                .lines()
                .zip(b.lines())
                .position(|(x, y)| x != y)
                .map_or(a.lines().count().min(b.lines().count()) + 1, |i| i + 1);
            differ.push(format!("{name}: first difference at line {line}"));
        }
    }
    differ
}

#[test]
fn fixtures_regenerate_identically() {
    let Some(wanted) = std::env::var_os("BWSIM_GLUON_REGEN") else {
        eprintln!(
            "not run: regenerating the TTGIR fixtures needs Triton ({}); set BWSIM_GLUON_REGEN=1 \
             (or =VERSION) to regenerate them into a temporary directory and compare",
            Version::all().map(|v| v.tested_release()).collect::<Vec<_>>().join(", ")
        );
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let fixtures = root.join("tests/gluon");
    let out = std::env::temp_dir().join(format!("bwsim-gluon-regen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut differ = Vec::new();
    for v in releases(&wanted.to_string_lossy()) {
        let release = v.tested_release();
        let dest = out.join(v.minor());
        let status = Command::new("bash")
            .arg(fixtures.join("regenerate.sh"))
            .arg(release)
            .arg(&dest)
            .current_dir(&root)
            .status()
            .expect("bash runs");
        assert!(
            status.success(),
            "tests/gluon/regenerate.sh {release} failed (see its output above)"
        );
        differ.extend(
            differences(&fixtures.join(v.minor()), &dest)
                .into_iter()
                .map(|d| format!("{}/{d}", v.minor())),
        );
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        differ.is_empty(),
        "regenerated TTGIR differs from tests/gluon/:\n  {}",
        differ.join("\n  ")
    );
}
