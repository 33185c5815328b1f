//! Opt-in: regenerate every TTGIR fixture of tests/gluon with Triton (tests/gluon/regenerate.sh)
//! and fail on any difference from the checked-in files.
//!
//!     python3 -m pip install --target .tools/triton triton==3.6.0
//!     BWSIM_GLUON_REGEN=1 cargo test -p bwsim-gluon --test regenerate
//!
//! Triton is found on `PYTHONPATH`, else in `.tools/triton`. Without `BWSIM_GLUON_REGEN` the
//! test only says how to run it (the default suite needs no Triton).

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

#[test]
fn fixtures_regenerate_identically() {
    if std::env::var_os("BWSIM_GLUON_REGEN").is_none() {
        eprintln!(
            "not run: set BWSIM_GLUON_REGEN=1 to regenerate the TTGIR fixtures with Triton 3.6.0 and compare"
        );
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let fixtures = root.join("tests/gluon");
    let out = std::env::temp_dir().join(format!("bwsim-gluon-regen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut pythonpath = std::env::var("PYTHONPATH").unwrap_or_default();
    let local = root.join(".tools/triton");
    if local.is_dir() {
        pythonpath = if pythonpath.is_empty() {
            local.display().to_string()
        } else {
            format!("{pythonpath}:{}", local.display())
        };
    }
    let status = Command::new("bash")
        .arg(fixtures.join("regenerate.sh"))
        .arg(&out)
        .current_dir(&root)
        .env("PYTHONPATH", pythonpath)
        .status()
        .expect("bash runs");
    assert!(
        status.success(),
        "tests/gluon/regenerate.sh failed (is triton==3.6.0 installed?)"
    );
    let (have, made) = (ttgir_files(&fixtures), ttgir_files(&out));
    assert_eq!(
        have, made,
        "the regenerated set of fixtures differs from the checked-in one"
    );
    let mut differ = Vec::new();
    for name in &have {
        let a = std::fs::read_to_string(fixtures.join(name)).expect("fixture");
        let b = std::fs::read_to_string(out.join(name)).expect("regenerated");
        if a != b {
            let line = a
                .lines()
                .zip(b.lines())
                .position(|(x, y)| x != y)
                .map_or(0, |i| i + 1);
            differ.push(format!("{name} (first difference at line {line})"));
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        differ.is_empty(),
        "regenerated TTGIR differs:\n  {}",
        differ.join("\n  ")
    );
}
