//! The verifier's rule corpus: `tests/verify/CODE.fail.tile` must produce the diagnostic
//! `CODE` (its rendered text is snapshotted under traces/verify/ by the file's stem), and its
//! twin `CODE.pass.tile` must verify clean. More examples of a rule take other stems
//! (`wgmma-acc.fail.tile` expecting `mma-dtype`).
//!
//! Directives in leading comments (read by `bwsim_testkit::directives`, the one parser of test
//! directives): `// expect: CODE` (or `ok`), `// target: sm_90a`, `// const: NAME=VALUE`.
//! Adding a rule test needs no Rust: drop in two files.

mod common;

use bwsim_isa::consts::Override;
use bwsim_isa::verify::{rules, verify, VerifyOptions};
use bwsim_isa::{diag, SourceFile, Target};
use bwsim_testkit::directives;
use common::{assert_no_failures, assert_trace_snapshot};
use std::path::{Path, PathBuf};

struct Case {
    path: PathBuf,
    expect: String,
    opts: VerifyOptions,
    file: SourceFile,
}

fn load(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).expect("test corpus file is readable");
    let mut expect = String::new();
    let mut opts = VerifyOptions::default();
    let header = directives::parse(&text, directives::VERIFY_KEYS, false)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for d in header {
        let v = d.value.as_str();
        match d.key.as_str() {
            "expect" => expect = v.to_string(),
            "target" => opts.target = Target::from_name(v),
            "const" => opts
                .overrides
                .push(Override::parse(v).expect("valid const directive")),
            _ => unreachable!("a key of VERIFY_KEYS"),
        }
    }
    assert!(!expect.is_empty(), "{} has no `// expect:` line", path.display());
    let name = format!(
        "tests/verify/{}",
        path.file_name().unwrap_or_default().to_string_lossy()
    );
    Case {
        path: path.to_path_buf(),
        expect,
        opts,
        file: SourceFile::new(name, text),
    }
}

/// Parse and verify; the error diagnostics (parse errors included).
fn diagnose(c: &Case) -> Vec<bwsim_isa::Diagnostic> {
    match bwsim_isa::parse(&c.file) {
        Err(d) => d,
        Ok(k) => {
            let (_, d) = verify(&k, &c.opts);
            d.into_iter().filter(|d| d.is_error()).collect()
        }
    }
}

fn corpus(suffix: &str) -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/verify");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/verify exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v.iter().map(|p| load(p)).collect()
}

#[test]
fn every_failing_example_reports_its_rule() {
    let cases = corpus(".fail.tile");
    let mut failures = Vec::new();
    for c in &cases {
        let diags = diagnose(c);
        let codes: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
        if !codes.contains(&c.expect.as_str()) {
            failures.push(format!(
                "{}: expected `{}`, got {:?}",
                c.path.display(),
                c.expect,
                codes
            ));
            continue;
        }
        let rendered = diag::render(&diags, &c.file);
        let stem = c
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".fail.tile"))
            .unwrap_or(&c.expect)
            .to_string();
        assert_trace_snapshot("verify", &stem, &rendered);
    }
    assert_no_failures("rule examples that did not fire", &failures);
}

#[test]
fn every_passing_twin_verifies_clean() {
    let cases = corpus(".pass.tile");
    let mut failures = Vec::new();
    for c in &cases {
        assert_eq!(c.expect, "ok", "{}", c.path.display());
        let diags = diagnose(c);
        if !diags.is_empty() {
            failures.push(format!(
                "{}:\n{}",
                c.path.display(),
                diag::render(&diags, &c.file)
            ));
        }
    }
    assert_no_failures("passing twins with errors", &failures);
}

#[test]
fn at_least_25_rules_have_a_failing_and_a_passing_example() {
    let fails = corpus(".fail.tile");
    let passes = corpus(".pass.tile");
    let mut covered = 0;
    for code in rules() {
        let f = fails.iter().any(|c| code == c.expect.as_str());
        let p = passes
            .iter()
            .any(|c| c.path.to_string_lossy().contains(&format!("/{code}.pass.tile")));
        if f && p {
            covered += 1;
        }
    }
    for c in &fails {
        assert!(
            rules().any(|r| r == c.expect.as_str()),
            "{} expects unknown rule `{}`",
            c.path.display(),
            c.expect
        );
    }
    assert!(covered >= 25, "only {covered} rules have both examples");
}
