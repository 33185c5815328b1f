//! The one table of diagnostic codes (`bwsim_isa::codes`) and what is generated from it:
//! `bwsim verify --rules` lists every code any stage can emit (a diagnostic carries a `Code`,
//! so the codes a stage can emit are the table's), and the code tables of README.md and
//! docs/codes.md are the table's (`cargo run -p bwsim-isa --example code_tables -- --write`
//! regenerates them).

use bwsim_isa::codes::doc_tables;
use bwsim_isa::{Code, Stage};
use std::path::Path;
use std::process::Command;

#[test]
fn verify_rules_lists_every_code_once_with_its_stages_and_level() {
    let out = Command::new(env!("CARGO_BIN_EXE_bwsim"))
        .args(["verify", "--rules"])
        .output()
        .expect("bwsim runs");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), Code::ALL.len(), "{text}");
    for (&c, line) in Code::ALL.iter().zip(&lines) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols.first().copied(), Some(c.name()), "{line}");
        assert!(line.contains(c.description()), "{line}");
        assert!(line.contains(c.level_name()), "{line}");
    }
    // The codes that were once emitted without being listed.
    for name in [
        "layout",
        "tmem-reinterpret",
        "barrier-misuse",
        "uninit-read",
        "ttgir-syntax",
        "ttgir-version",
        "arch-clc",
        "clc-misuse",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("{name} "))),
            "`{name}` missing"
        );
    }
}

#[test]
fn the_documented_code_tables_are_the_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for t in doc_tables() {
        let text = std::fs::read_to_string(root.join(t.path)).expect("the documentation file is readable");
        let spliced = t
            .splice(&text)
            .unwrap_or_else(|| panic!("{} lacks the `<!-- codes:{} -->` markers", t.path, t.marker));
        assert!(
            spliced == text,
            "the `{}` table of {} is out of date: run `cargo run -p bwsim-isa --example code_tables -- --write`",
            t.marker,
            t.path
        );
    }
}

#[test]
fn every_code_has_a_row_in_docs_codes_md_and_checker_codes_in_the_readme() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/codes.md")).expect("docs/codes.md");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    for &c in Code::ALL {
        let row = format!("| `{}` | {} | {} | ", c.name(), c.stage_names(), c.level_name());
        assert!(docs.contains(&row), "docs/codes.md has no row `{row}`");
        assert_eq!(
            readme.contains(&row),
            c.emitted_by(Stage::Check),
            "README.md's checker table and `{c}`"
        );
    }
}

/// The Rust sources under `dir` (recursively).
fn sources(dir: &Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            if let Ok(text) = std::fs::read_to_string(&p) {
                out.push((p, text));
            }
        }
    }
}

/// Every row of the table is emitted by some stage (a `Code::Variant` in a library or the
/// command line, outside the table itself), and every code a test compares a diagnostic with
/// (`d.code == NAME`) is a row: a stage cannot emit a code the table lacks (a diagnostic
/// carries a `Code`), and the table lists nothing no stage emits.
#[test]
fn every_code_any_stage_emits_is_in_the_table_and_every_row_is_emitted() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut lib = Vec::new();
    for d in [
        "isa/src",
        "sim/src",
        "backends/src",
        "gluon/src",
        "kernels/src",
        "src",
    ] {
        sources(&root.join(d), &mut lib);
    }
    lib.retain(|(p, _)| !p.ends_with("isa/src/codes.rs"));
    for &c in Code::ALL {
        let variant = format!("Code::{c:?}");
        let used = lib.iter().any(|(_, t)| {
            t.match_indices(&variant)
                .any(|(i, _)| !t[i + variant.len()..].starts_with(|ch: char| ch.is_ascii_alphanumeric()))
        });
        assert!(used, "`{c}` ({variant}) is in the table but no stage emits it");
    }
    let mut tests = Vec::new();
    for d in [
        "tests",
        "isa/tests",
        "sim/tests",
        "backends/tests",
        "gluon/tests",
        "kernels/tests",
        "testkit",
    ] {
        sources(&root.join(d), &mut tests);
    }
    let needle = ".code == \"";
    for (p, t) in &tests {
        for (i, _) in t.match_indices(needle) {
            let rest = &t[i + needle.len()..];
            let name = &rest[..rest.find('"').unwrap_or(0)];
            assert!(
                Code::from_name(name).is_some(),
                "{} compares a diagnostic with `{name}`, which is not a code of the table",
                p.display()
            );
        }
    }
}
