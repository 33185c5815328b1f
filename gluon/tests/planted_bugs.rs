//! The checker catalogue's bugs planted in Gluon source (tests/gluon/planted_bugs.py), compiled
//! to TTGIR and imported: the simulator reports the same diagnostic codes as for the catalogue's
//! `.tile` kernels (tests/fail/), at the Python lines of the mistake; the correct variants run
//! clean and compute the CPU reference's result.
//!
//! `fence removed` (missing-fence) and `early release` (race / write-while-in-flight) are
//! hazards the happens-before checker reports; their fixtures are imported and verified here,
//! and their codes are asserted once `bwsim check` runs the checker.

use bwsim_isa::launch::{self, LaunchPlan};
use bwsim_isa::typeck::Checked;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{diag, Diagnostic, Kernel, SourceFile, Target};
use bwsim_sim::{Outcome, RunOptions, RunResult};
use std::collections::BTreeSet;

const DIR: &str = "../tests/gluon";

fn import(stem: &str) -> (Kernel, SourceFile) {
    let path = std::path::PathBuf::from(format!("{DIR}/{stem}.ttgir"));
    let l = bwsim_gluon::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match l.kernel {
        Ok(k) => (k, l.source),
        Err(d) => panic!("{stem} does not import:\n{}", diag::render(&d, &l.source)),
    }
}

fn checked<'k>(k: &'k Kernel, target: Target, file: &SourceFile) -> (Checked<'k>, LaunchPlan) {
    let (c, d) = verify(
        k,
        &VerifyOptions {
            target: Some(target),
            overrides: Vec::new(),
        },
    );
    let c = c.unwrap_or_else(|| panic!("{} does not verify:\n{}", k.name.name, diag::render(&d, file)));
    let plan = launch::resolve(&c, k.launch.as_ref().expect("launch sidecar"))
        .unwrap_or_else(|d| panic!("launch:\n{}", diag::render(&d, file)));
    (c, plan)
}

fn run(c: &Checked, plan: &LaunchPlan, seed: u64) -> RunResult {
    bwsim_sim::run(
        c,
        plan,
        launch::materialize(plan, seed).expect("within the memory limit"),
        &RunOptions {
            seed,
            trace: false,
            ..RunOptions::default()
        },
    )
}

fn codes(ds: &[Diagnostic]) -> BTreeSet<String> {
    ds.iter()
        .filter(|d| d.is_error())
        .map(|d| d.code.clone())
        .collect()
}

/// The 1-based line of planted_bugs.py right after the `# BUG: ...` comment containing `marker`.
fn bug_line(marker: &str) -> usize {
    let py = std::fs::read_to_string(format!("{DIR}/planted_bugs.py")).expect("planted_bugs.py");
    let i = py
        .lines()
        .position(|l| l.contains("# BUG:") && l.contains(marker))
        .unwrap_or_else(|| panic!("no `# BUG:` comment with `{marker}`"));
    i + 2
}

/// Every (file, line) a diagnostic's labels point at.
fn places(d: &Diagnostic, file: &SourceFile) -> Vec<(String, usize)> {
    std::iter::once(&d.primary)
        .chain(&d.labels)
        .map(|l| {
            let s = l.span.start as usize;
            (file.file_name_of(l.span).to_string(), file.line_col(s).0)
        })
        .collect()
}

fn points_at(d: &Diagnostic, file: &SourceFile, line: usize) -> bool {
    places(d, file)
        .iter()
        .any(|(f, l)| f.ends_with("planted_bugs.py") && *l == line)
}

/// The codes the catalogue's `.tile` version reports for `seed`.
fn catalogue_codes(name: &str, target: Target, seed: u64) -> BTreeSet<String> {
    let path = format!("{}/../tests/fail/{name}.tile", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).expect("catalogue kernel");
    let r = bwsim_sim::run_source_with(
        &src,
        &[],
        Some(target),
        &RunOptions {
            seed,
            trace: false,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|d| {
        panic!(
            "{name}:\n{}",
            diag::render(&d, &SourceFile::new(name, src.clone()))
        )
    });
    codes(&r.diagnostics)
}

#[test]
fn ws_add_wrong_parity_deadlocks_at_the_python_wait() {
    let line = bug_line("fresh barrier");
    for target in [Target::Sm100a, Target::Sm90a] {
        let (k, file) = import(&format!("bug_ws_add_wrong_parity.{}", target.name()));
        let (c, plan) = checked(&k, target, &file);
        for seed in 0..3 {
            let r = run(&c, &plan, seed);
            assert_eq!(r.outcome, Outcome::Deadlock, "seed {seed}");
            assert_eq!(
                codes(&r.diagnostics),
                catalogue_codes("ws_add_wrong_parity", target, seed)
            );
            let d = r
                .diagnostics
                .iter()
                .find(|d| d.code == "deadlock")
                .expect("a deadlock");
            assert!(
                points_at(d, &file, line),
                "the deadlock names planted_bugs.py:{line}:\n{}",
                diag::render(&r.diagnostics, &file)
            );
        }
    }
}

#[test]
fn ws_add_short_expect_is_a_tx_mismatch_at_the_python_copies() {
    let line = bug_line("one of the two loads");
    for target in [Target::Sm100a, Target::Sm90a] {
        let (k, file) = import(&format!("bug_ws_add_short_expect.{}", target.name()));
        let (c, plan) = checked(&k, target, &file);
        for seed in 0..3 {
            let r = run(&c, &plan, seed);
            let d = r
                .diagnostics
                .iter()
                .find(|d| d.code == "tx-mismatch")
                .unwrap_or_else(|| {
                    panic!(
                        "seed {seed}: no tx-mismatch:\n{}",
                        diag::render(&r.diagnostics, &file)
                    )
                });
            // The overshooting copies follow the short expect and its correct `else` branch.
            let (f, l) = &places(d, &file)[0];
            assert!(
                f.ends_with("planted_bugs.py") && (line + 3..=line + 4).contains(l),
                "{f}:{l}"
            );
            assert!(catalogue_codes("short_expect_oob", target, seed).contains("tx-mismatch"));
        }
    }
}

#[test]
fn pipelined_matmul_wrong_parity_deadlocks_at_the_python_wait() {
    let line = bug_line("off by one");
    let (k, file) = import("bug_pipelined_matmul_wrong_parity.sm_100a");
    let (c, plan) = checked(&k, Target::Sm100a, &file);
    let r = run(&c, &plan, 0);
    assert_eq!(r.outcome, Outcome::Deadlock);
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.code == "deadlock")
        .expect("a deadlock");
    assert!(
        points_at(d, &file, line),
        "{}",
        diag::render(&r.diagnostics, &file)
    );
    let rendered = diag::render(&r.diagnostics, &file);
    assert!(
        rendered.contains("mbarrier.wait(self.bar, (self.counter - num_outstanding) & 1)"),
        "{rendered}"
    );
    insta::with_settings!({
        snapshot_path => "../../traces/gluon",
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("pipelined_matmul_wrong_parity", rendered);
    });
}

#[test]
fn pipelined_matmul_short_expect_is_a_tx_mismatch_at_the_python_copy() {
    let line = bug_line("expects the A tile only");
    let (k, file) = import("bug_pipelined_matmul_short_expect.sm_100a");
    let (c, plan) = checked(&k, Target::Sm100a, &file);
    for seed in 0..3 {
        let r = run(&c, &plan, seed);
        let d = r
            .diagnostics
            .iter()
            .find(|d| d.code == "tx-mismatch")
            .unwrap_or_else(|| {
                panic!(
                    "seed {seed}: no tx-mismatch:\n{}",
                    diag::render(&r.diagnostics, &file)
                )
            });
        let (f, l) = &places(d, &file)[0];
        assert!(
            f.ends_with("planted_bugs.py") && (line + 3..=line + 4).contains(l),
            "{f}:{l}"
        );
    }
}

#[test]
fn correct_variants_run_clean_and_match_the_reference() {
    for (stem, target, reference) in [
        ("bug_ws_add_fixed.sm_100a", Target::Sm100a, "elementwise_add_ws"),
        ("bug_ws_add_fixed.sm_90a", Target::Sm90a, "elementwise_add_ws"),
        (
            "bug_pipelined_matmul_fixed.sm_100a",
            Target::Sm100a,
            "matmul_pipelined",
        ),
    ] {
        let (k, file) = import(stem);
        let (c, plan) = checked(&k, target, &file);
        for seed in 0..3 {
            let inputs = launch::materialize(&plan, seed).expect("within the memory limit");
            let r = bwsim_sim::run(
                &c,
                &plan,
                inputs.clone(),
                &RunOptions {
                    seed,
                    trace: false,
                    ..RunOptions::default()
                },
            );
            assert_eq!(
                r.outcome,
                Outcome::Completed,
                "{stem}:\n{}",
                diag::render(&r.diagnostics, &file)
            );
            assert!(
                r.diagnostics.is_empty(),
                "{stem}:\n{}",
                diag::render(&r.diagnostics, &file)
            );
            let expected = bwsim_kernels::reference::reference(reference, &plan, &inputs)
                .expect("a reference")
                .expect("reference inputs");
            for e in &expected {
                let got = r.tensor(&e.tensor).expect("output");
                let cmp = bwsim_kernels::reference::compare(got, e);
                assert!(cmp.passed(), "{stem} seed {seed}: {cmp:?}");
            }
        }
    }
}

/// The hazards only the checker sees: the fixtures import and verify, ready for `bwsim check`
/// (expected: missing-fence for `no_fence`, race or write-while-in-flight for `early_release`).
#[test]
fn checker_only_bugs_import_and_verify() {
    for stem in [
        "bug_ws_add_no_fence.sm_100a",
        "bug_ws_add_no_fence.sm_90a",
        "bug_ws_add_early_release.sm_100a",
        "bug_ws_add_early_release.sm_90a",
        "bug_pipelined_matmul_no_fence.sm_100a",
        "bug_pipelined_matmul_early_release.sm_100a",
    ] {
        let target = if stem.ends_with("sm_90a") {
            Target::Sm90a
        } else {
            Target::Sm100a
        };
        let (k, file) = import(stem);
        checked(&k, target, &file);
        // The mistake is in the imported IR: the fence (or the arrive's position) differs from
        // the correct kernel's.
        let fixed = stem
            .replace("no_fence", "fixed")
            .replace("early_release", "fixed");
        let (kf, _) = import(&fixed);
        let count = |k: &Kernel, name: &str| {
            let mut n = 0;
            k.walk_stmts(&mut |s| {
                if let bwsim_isa::ir::StmtKind::Op(op) = &s.kind {
                    if op.kind.name() == name {
                        n += 1;
                    }
                }
            });
            n
        };
        let order = |k: &Kernel| {
            let mut v = Vec::new();
            k.walk_stmts(&mut |s| match &s.kind {
                bwsim_isa::ir::StmtKind::Op(op)
                | bwsim_isa::ir::StmtKind::Let {
                    value: bwsim_isa::ir::Rhs::Op(op),
                    ..
                } => v.push(op.kind.name()),
                _ => {}
            });
            v
        };
        let first = |v: &[&str], name: &str| v.iter().position(|n| *n == name).expect("present");
        if stem.contains("no_fence") {
            assert_eq!(
                count(&k, "fence.async_shared") + 1,
                count(&kf, "fence.async_shared"),
                "{stem}"
            );
        } else if stem.contains("ws_add") {
            // The load buffers are released (arrive) before they are read (smem.load).
            let (b, f) = (order(&k), order(&kf));
            assert!(first(&b, "mbar.arrive") < first(&b, "smem.load"), "{stem}");
            assert!(first(&f, "mbar.arrive") > first(&f, "smem.load"), "{stem}");
        } else {
            // The wait for the previous MMA before reusing its operands is gone.
            assert!(count(&k, "mbar.wait") < count(&kf, "mbar.wait"), "{stem}");
        }
    }
}
