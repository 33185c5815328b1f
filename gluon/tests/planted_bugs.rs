//! The checker catalogue's bugs planted in Gluon source (tests/gluon/planted_bugs.py), compiled
//! to TTGIR and imported: the simulator and the hazard checker report the same diagnostic codes
//! as for the catalogue's `.tile` kernels (tests/fail/), at the Python lines of the mistake; the
//! correct variants run clean, check clean and compute the CPU reference's result.
//!
//! | planted bug | code | catalogue twin |
//! |---|---|---|
//! | wrong parity (add, matmul) | `deadlock` | ws_add_wrong_parity |
//! | short expect (add, matmul) | `tx-mismatch` | short_expect_oob |
//! | fence removed (add) | `missing-fence` | ws_add_no_load_fence |
//! | fence removed (matmul epilogue) | `missing-fence` | missing_fence_store |
//! | early release (add) | `race` | ws_add_no_load_fence with its release moved before the reads |
//! | early release (matmul) | `write-while-in-flight` | mma_buffer_reuse |
//!
//! | attention: P stored after its ready barrier's arrive | `race` (tcgen05.st against the P @ V read) | - |
//! | attention: correction without waiting for the previous P @ V | `read-before-complete` | - |
//! | attention: wrong phase on the S-ready barrier | `phase-aliasing` | - |
//! | block-scaled matmul: last MMA not waited for | `read-before-complete` (the accumulator read), `barrier-misuse`, `write-while-in-flight` | - |
//!
//! | ping-pong attention: alpha announced before it is stored | `race` (tcgen05.st against the correction's tcgen05.ld) | - |
//! | ping-pong attention: P @ V issued without waiting for P | `race` (tcgen05.st against the MMA's read of P) | - |
//!
//! | cp.async pipeline: a stage read without `wait_group` | `read-before-complete` | - |
//! | two cp.async copies into one buffer before `wait_group` | `write-while-in-flight` | cp_async_overlap |
//! | an f32 buffer stored through an f16 descriptor, then overwritten in flight | `tma-dtype` and `write-while-in-flight`, in one check | - |
//!
//! The cp.async bug is planted in tests/gluon/cp_async.py (`BUG='no_wait'`), the tutorial
//! 03-shaped pipeline whose correct variant is the bundled `cp_async` kernel's twin.
//! The attention bugs are planted in tests/gluon/attention.py (`BUG=...`), the Blackwell
//! attention forward whose correct variant is the bundled kernel's twin, and in
//! tests/gluon/attention_pingpong.py (tutorial 01-attention-forward's structure), whose correct
//! variant runs against its CPU reference in seeds.rs.
//!
//! The checker runs as `bwsim check` runs it (`check::prepare_kernel`, `Prepared::explore`),
//! over 8 schedules by default, `BWSIM_GLUON_SCHEDULES` otherwise; the rendered findings of the
//! sm_100a fixtures are snapshotted in traces/gluon/ (at the default count).

use bwsim_isa::launch::{self, LaunchPlan};
use bwsim_isa::limits::Limits;
use bwsim_isa::typeck::Checked;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{diag, Diagnostic, Kernel, SourceFile, Target};
use bwsim_sim::check;
use bwsim_sim::explore::{Exploration, ExploreOptions, Finding};
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
        .map(|d| d.code.to_string())
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
        ("attention.sm_100a", Target::Sm100a, "attention_kernel"),
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

/// The hazards only the checker sees are in the imported IR: the fence is gone, or the release
/// moved (the checker's findings on them are asserted below).
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

/// Schedules per checker run: `BWSIM_GLUON_SCHEDULES`, else 8.
fn schedules() -> (u64, bool) {
    match std::env::var("BWSIM_GLUON_SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(n) => (n, true),
        None => (8, false),
    }
}

fn explore(p: &check::Prepared) -> Exploration {
    let opts = ExploreOptions {
        first_seed: 0,
        schedules: schedules().0,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()).min(4),
        stop_on_first_error: false,
    };
    p.explore(&opts, |_, _| {})
}

/// The checker over an imported fixture, as `bwsim check FILE.ttgir` runs it.
fn check_fixture(stem: &str, target: Target) -> (Exploration, SourceFile) {
    let (k, file) = import(stem);
    let p = check::prepare_kernel(&k, &[], Some(target), Limits::default())
        .unwrap_or_else(|d| panic!("{stem}:\n{}", diag::render(&d, &file)));
    (explore(&p), file)
}

/// The checker over `.tile` source.
fn check_tile(name: &str, src: &str, target: Target) -> Exploration {
    let p = check::prepare(src, &[], Some(target)).unwrap_or_else(|d| {
        panic!(
            "{name}:\n{}",
            diag::render(&d, &SourceFile::new(name, src.to_string()))
        )
    });
    explore(&p)
}

fn catalogue_src(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../tests/fail/{name}.tile",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("catalogue kernel")
}

fn error_codes(e: &Exploration) -> BTreeSet<String> {
    e.findings
        .iter()
        .filter(|f| f.diagnostic.is_error())
        .map(|f| f.diagnostic.code.to_string())
        .collect()
}

/// The 1-based lines of planted_bugs.py that contain `needle`.
fn lines_of(needle: &str) -> Vec<usize> {
    let py = std::fs::read_to_string(format!("{DIR}/planted_bugs.py")).expect("planted_bugs.py");
    let v: Vec<usize> = py
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    assert!(!v.is_empty(), "no line with `{needle}`");
    v
}

/// Every finding of `code`, with at least one.
fn findings<'e>(e: &'e Exploration, code: &str, file: &SourceFile) -> Vec<&'e Finding> {
    let v: Vec<_> = e.findings.iter().filter(|f| f.diagnostic.code == code).collect();
    assert!(!v.is_empty(), "no {code}:\n{}", render(e, file));
    v
}

/// The findings rendered as `bwsim check` prints them (without the schedule counts, which
/// depend on how many ran).
fn render(e: &Exploration, file: &SourceFile) -> String {
    let d: Vec<_> = e
        .findings
        .iter()
        .map(|f| check::annotate(f, &file.name, None))
        .collect();
    diag::render(&d, file)
}

/// The primary label's line, and every label's line.
fn lines(d: &Diagnostic, file: &SourceFile) -> (usize, BTreeSet<usize>) {
    let p = places(d, file);
    assert!(p.iter().all(|(f, _)| f.ends_with("planted_bugs.py")), "{p:?}");
    (p[0].1, p.iter().map(|x| x.1).collect())
}

fn snapshot(name: &str, rendered: &str) {
    if schedules().1 {
        return;
    }
    insta::with_settings!({
        snapshot_path => "../../traces/gluon",
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(name, rendered);
    });
}

/// The Triton releases whose TTGIR of a fixture compiled by all of them is checked.
const VERSIONS: [&str; 4] = ["3.6", "3.7", "3.8", "3.9"];

fn both_targets() -> [(Target, &'static str); 2] {
    [(Target::Sm100a, "sm_100a"), (Target::Sm90a, "sm_90a")]
}

#[test]
fn ws_add_no_fence_is_a_missing_fence_at_the_python_lines() {
    let copies = lines_of("tma.async_copy_global_to_shared(");
    let copies: BTreeSet<usize> = copies.into_iter().take(2).collect();
    let reads: BTreeSet<usize> = [
        lines_of("a_val = a_bufs.index(load_index).load(layout)")[0],
        lines_of("b_val = b_bufs.index(load_index).load(layout)")[0],
    ]
    .into();
    // The correct release, after the reads (the other arrive is the early release).
    let release = lines_of("mbarrier.arrive(load_empty_bars.index(load_index), count=1)")[1];
    for (target, t) in both_targets() {
        let (e, file) = check_fixture(&format!("bug_ws_add_no_fence.{t}"), target);
        let twin = check_tile(
            "ws_add_no_load_fence",
            &catalogue_src("ws_add_no_load_fence"),
            target,
        );
        assert_eq!(
            error_codes(&e),
            BTreeSet::from(["missing-fence".to_string()]),
            "{t}"
        );
        assert_eq!(error_codes(&e), error_codes(&twin), "{t}");
        for f in findings(&e, "missing-fence", &file) {
            let (primary, all) = lines(&f.diagnostic, &file);
            assert!(copies.contains(&primary), "{primary}");
            assert!(all.contains(&release), "{all:?}");
            assert!(all.iter().any(|l| reads.contains(l)), "{all:?}");
        }
        let r = render(&e, &file);
        assert!(
            r.contains("tma.async_copy_global_to_shared(a_desc, [xoff, yoff], bar, a_bufs.index(index))")
                && r.contains("a_val = a_bufs.index(load_index).load(layout)"),
            "{r}"
        );
        if target == Target::Sm100a {
            snapshot("ws_add_no_fence", &r);
        }
    }
}

/// The catalogue's warp-specialized add (tests/fail/ws_add_no_load_fence.tile, whose only
/// mistake is the missing fence) with its release moved before the reads, as the Gluon bug has
/// it: the `.tile` twin of `early_release`.
fn ws_add_early_release_tile() -> String {
    let src = catalogue_src("ws_add_no_load_fence");
    let arrive = "        mbar.arrive load_empty_bars[load_index], count=1\n";
    let wait = "        mbar.wait load_ready_bars[load_index], load_phase\n";
    assert_eq!((src.matches(arrive).count(), src.matches(wait).count()), (1, 1));
    src.replace(arrive, "").replace(wait, &format!("{wait}{arrive}"))
}

#[test]
fn ws_add_early_release_is_a_race_at_the_python_lines() {
    let copies: BTreeSet<usize> = lines_of("tma.async_copy_global_to_shared(")
        .into_iter()
        .take(2)
        .collect();
    let reads: BTreeSet<usize> = [
        lines_of("a_val = a_bufs.index(load_index).load(layout)")[0],
        lines_of("b_val = b_bufs.index(load_index).load(layout)")[0],
    ]
    .into();
    let twin_src = ws_add_early_release_tile();
    for (target, t) in both_targets() {
        let (e, file) = check_fixture(&format!("bug_ws_add_early_release.{t}"), target);
        let twin = check_tile("ws_add_early_release", &twin_src, target);
        assert!(error_codes(&e).contains("race"), "{t}:\n{}", render(&e, &file));
        assert_eq!(error_codes(&e), error_codes(&twin), "{t}");
        for f in findings(&e, "race", &file) {
            // The generic read and the next TMA load into the buffer it handed back.
            let (_, all) = lines(&f.diagnostic, &file);
            assert!(all.iter().any(|l| copies.contains(l)), "{all:?}");
            assert!(all.iter().any(|l| reads.contains(l)), "{all:?}");
        }
        if target == Target::Sm100a {
            snapshot("ws_add_early_release", &render(&e, &file));
        }
    }
}

#[test]
fn pipelined_matmul_no_fence_is_a_missing_fence_at_the_python_lines() {
    let store = lines_of("c_smem.store(c.to(dtype))")[0];
    let tma_store = lines_of("tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)")[0];
    let (e, file) = check_fixture("bug_pipelined_matmul_no_fence.sm_100a", Target::Sm100a);
    let twin = check_tile(
        "missing_fence_store",
        &catalogue_src("missing_fence_store"),
        Target::Sm100a,
    );
    assert_eq!(error_codes(&e), BTreeSet::from(["missing-fence".to_string()]));
    assert_eq!(error_codes(&e), error_codes(&twin));
    let f = findings(&e, "missing-fence", &file);
    assert_eq!(f.len(), 1);
    let (primary, all) = lines(&f[0].diagnostic, &file);
    assert_eq!((primary, all), (tma_store, BTreeSet::from([store, tma_store])));
    snapshot("pipelined_matmul_no_fence", &render(&e, &file));
}

#[test]
fn pipelined_matmul_early_release_overwrites_operands_in_flight() {
    let mma = lines_of("tcgen05_mma(a, b, self.acc_tmem, use_acc=self.use_acc)")[0];
    let loads: BTreeSet<usize> = [
        lines_of("tma.async_copy_global_to_shared(a_desc, [off_m, k], bar, a_bufs.index(index))")[0],
        lines_of("tma.async_copy_global_to_shared(b_desc, [k, off_n], bar, b_bufs.index(index))")[0],
    ]
    .into();
    let (e, file) = check_fixture("bug_pipelined_matmul_early_release.sm_100a", Target::Sm100a);
    let twin = check_tile(
        "mma_buffer_reuse",
        &catalogue_src("mma_buffer_reuse"),
        Target::Sm100a,
    );
    let codes = error_codes(&e);
    assert!(codes.contains("write-while-in-flight"), "{codes:?}");
    assert!(codes.is_superset(&error_codes(&twin)), "{codes:?}");
    // The TMA loads of both operands overwrite a buffer the MMA of an earlier step may still
    // read.
    let mut seen = BTreeSet::new();
    for f in findings(&e, "write-while-in-flight", &file) {
        let (primary, all) = lines(&f.diagnostic, &file);
        assert!(all.contains(&mma), "{all:?}");
        if loads.contains(&primary) {
            seen.insert(primary);
        }
    }
    assert_eq!(seen, loads);
    snapshot("pipelined_matmul_early_release", &render(&e, &file));
}

#[test]
fn fixed_variants_check_clean() {
    for (stem, target) in [
        ("bug_ws_add_fixed.sm_100a", Target::Sm100a),
        ("bug_ws_add_fixed.sm_90a", Target::Sm90a),
        ("bug_pipelined_matmul_fixed.sm_100a", Target::Sm100a),
    ] {
        let (e, file) = check_fixture(stem, target);
        assert!(e.findings.is_empty(), "{stem}:\n{}", render(&e, &file));
    }
}

/// The 1-based line of attention.py right after the `# BUG: NAME` comment.
fn attention_bug_line(name: &str) -> usize {
    py_bug_line("attention.py", name)
}

/// The 1-based line of `file` (in tests/gluon) right after its `# BUG: NAME` comment.
fn py_bug_line(file: &str, name: &str) -> usize {
    let py = std::fs::read_to_string(format!("{DIR}/{file}")).expect("fixture source");
    let i = py
        .lines()
        .position(|l| l.contains(&format!("# BUG: {name} ")))
        .unwrap_or_else(|| panic!("no `# BUG: {name}` comment in {file}"));
    i + 2
}

/// Each attention bug is found with its code, one of the diagnostic's labels on the line the
/// bug is planted at.
#[test]
fn attention_bugs_are_reported_at_the_python_lines() {
    for (bug, code) in [
        ("p_before_store", "race"),
        ("correction_race", "read-before-complete"),
        ("s_ready_phase", "phase-aliasing"),
    ] {
        let (e, file) = check_fixture(&format!("bug_attention_{bug}.sm_100a"), Target::Sm100a);
        let line = attention_bug_line(bug);
        let hits: Vec<_> = findings(&e, code, &file)
            .into_iter()
            .filter(|f| {
                places(&f.diagnostic, &file)
                    .iter()
                    .any(|(n, l)| n.ends_with("attention.py") && *l == line)
            })
            .collect();
        assert!(
            !hits.is_empty(),
            "{bug}: no {code} at attention.py:{line}:\n{}",
            render(&e, &file)
        );
    }
}

/// The correct attention kernel checks clean (it runs against the reference in
/// `correct_variants_run_clean_and_match_the_reference`).
#[test]
fn attention_checks_clean() {
    let (e, file) = check_fixture("attention.sm_100a", Target::Sm100a);
    assert!(e.findings.is_empty(), "{}", render(&e, &file));
}

/// The ping-pong attention's hand-off bugs (tests/gluon/attention_pingpong.py, the structure
/// of tutorial 01-attention-forward): alpha announced before its tensor-memory store races
/// with the correction's load of it; P @ V issued without waiting for P races with the
/// softmax's store of P. Each is reported with `race` on the planted line.
#[test]
fn pingpong_attention_bugs_are_reported_at_the_python_lines() {
    for bug in ["alpha_early", "no_p_wait"] {
        let (e, file) = check_fixture(&format!("bug_attention_pingpong_{bug}.sm_100a"), Target::Sm100a);
        let line = py_bug_line("attention_pingpong.py", bug);
        let hits: Vec<_> = findings(&e, "race", &file)
            .into_iter()
            .filter(|f| {
                places(&f.diagnostic, &file)
                    .iter()
                    .any(|(n, l)| n.ends_with("attention_pingpong.py") && *l == line)
            })
            .collect();
        assert!(
            !hits.is_empty(),
            "{bug}: no race at attention_pingpong.py:{line}:\n{}",
            render(&e, &file)
        );
    }
}

/// A cp.async stage read without the `wait_group` that retires its copies: a
/// `read-before-complete` (with `uninit-read` where the first copies had not landed), each
/// one's read a stage load (the one after `# BUG: no_wait` among them) and its write one of the
/// file's `async_copy_global_to_shared` lines; the correct pipeline checks clean.
#[test]
fn cp_async_without_wait_reads_before_complete_at_the_python_lines() {
    let py = std::fs::read_to_string(format!("{DIR}/cp_async.py")).expect("cp_async.py");
    let numbered: Vec<(usize, &str)> = py.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    let read = numbered
        .iter()
        .find(|(_, l)| l.contains("# BUG: no_wait"))
        .map(|(i, _)| i + 1)
        .expect("a `# BUG: no_wait` comment");
    let copies: BTreeSet<usize> = numbered
        .iter()
        .filter(|(_, l)| l.contains("cp.async_copy_global_to_shared("))
        .map(|(i, _)| *i)
        .collect();
    let loads: BTreeSet<usize> = numbered
        .iter()
        .filter(|(_, l)| l.contains("_bufs.index(k % NUM_BUFFERS).load("))
        .map(|(i, _)| *i)
        .collect();
    assert!(loads.contains(&read), "line {read} is not a stage load");
    for (target, t) in both_targets() {
        let (e, file) = check_fixture(&format!("bug_cp_async_no_wait.{t}"), target);
        // Where the copy has not landed by the read, the bytes were never written either.
        let codes = error_codes(&e);
        assert!(codes.contains("read-before-complete"), "{t}: {codes:?}");
        assert!(
            codes
                .iter()
                .all(|c| c == "read-before-complete" || c == "uninit-read"),
            "{t}: {codes:?}"
        );
        let mut primaries = BTreeSet::new();
        for f in findings(&e, "read-before-complete", &file) {
            let p = places(&f.diagnostic, &file);
            assert!(p.iter().all(|(n, _)| n.ends_with("cp_async.py")), "{p:?}");
            assert!(
                loads.contains(&p[0].1),
                "{t}: the primary label is a stage's load: {p:?}"
            );
            assert!(p[1..].iter().any(|(_, l)| copies.contains(l)), "{t}: {p:?}");
            primaries.insert(p[0].1);
        }
        assert!(
            primaries.contains(&read),
            "{t}: nothing at line {read}: {primaries:?}"
        );
        let (e, file) = check_fixture(&format!("cp_async.{t}"), target);
        assert!(e.findings.is_empty(), "{t}:\n{}", render(&e, &file));
    }
}

/// The 1-based line after the `# BUG: NAME` comment of tests/gluon/FILE, and every line of it
/// containing `needle`.
fn marked_lines(file: &str, bug: &str, needle: &str) -> (usize, BTreeSet<usize>) {
    let py = std::fs::read_to_string(format!("{DIR}/{file}")).expect("fixture source");
    let at = py
        .lines()
        .position(|l| l.contains(&format!("# BUG: {bug}")))
        .unwrap_or_else(|| panic!("no `# BUG: {bug}` in {file}"));
    let lines = (py.lines().enumerate())
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    (at + 2, lines)
}

/// cp.async over a cp.async in flight, as the concurrency sanitizer's test writes it (two
/// copies into one buffer, one `wait_group`; tests/gluon/cp_async_overlap.py): a
/// `write-while-in-flight` at the second copy's line, the first copy's line as the other
/// access, and nothing else; the correct variant (the first group retired before the second
/// copy) checks clean (tests/gluon/corpus.rs runs it against its reference, out = b).
#[test]
fn cp_async_over_a_cp_async_in_flight_is_reported_at_the_python_lines() {
    let (second, copies) = marked_lines("cp_async_overlap.py", "overlap", "cp.async_load(");
    assert!(copies.contains(&second), "line {second} is not a copy");
    let first = *copies.iter().next().expect("two copies");
    for ((target, t), v) in both_targets().into_iter().flat_map(|t| VERSIONS.map(|v| (t, v))) {
        let (e, file) = check_fixture(&format!("{v}/bug_cp_async_overlap.{t}"), target);
        let codes = error_codes(&e);
        assert_eq!(
            codes,
            BTreeSet::from(["write-while-in-flight".to_string()]),
            "{t}:\n{}",
            render(&e, &file)
        );
        for f in findings(&e, "write-while-in-flight", &file) {
            let p = places(&f.diagnostic, &file);
            assert!(p.iter().all(|(n, _)| n.ends_with("cp_async_overlap.py")), "{p:?}");
            assert_eq!(p[0].1, second, "{t}: the primary label is the second copy: {p:?}");
            assert!(p[1..].iter().any(|(_, l)| *l == first), "{t}: {p:?}");
        }
        let (e, file) = check_fixture(&format!("{v}/cp_async_overlap.{t}"), target);
        assert!(e.findings.is_empty(), "{v} {t}:\n{}", render(&e, &file));
    }
}

/// One check reports everything (tests/gluon/tma_dtype_race.py): an f32 buffer stored through
/// an f16 descriptor is `tma-dtype` at the store's line, and the simulation goes on doing what
/// the hardware does, so the buffer overwritten while the store may still read it is reported
/// too (`write-while-in-flight` at the overwrite, the store as the other access). The store
/// moves the buffer's first half as f16: `bwsim run` gives those bits to `out`.
#[test]
fn a_tma_dtype_mismatch_is_reported_with_the_hazard_in_one_check() {
    let (store, _) = marked_lines("tma_dtype_race.py", "tma-dtype", "tma.async_store(");
    let (overwrite, _) = marked_lines("tma_dtype_race.py", "race", "buf.store(");
    for (target, t) in both_targets() {
        let (e, file) = check_fixture(&format!("3.6/bug_tma_dtype_race.{t}"), target);
        let codes = error_codes(&e);
        assert_eq!(
            codes,
            BTreeSet::from(["tma-dtype".to_string(), "write-while-in-flight".to_string()]),
            "{t}:\n{}",
            render(&e, &file)
        );
        let d = &findings(&e, "tma-dtype", &file)[0].diagnostic;
        assert_eq!(places(d, &file)[0].1, store, "{t}: {:?}", places(d, &file));
        for f in findings(&e, "write-while-in-flight", &file) {
            let p = places(&f.diagnostic, &file);
            assert_eq!(p[0].1, overwrite, "{t}: {p:?}");
            assert!(p[1..].iter().any(|(_, l)| *l == store), "{t}: {p:?}");
        }
        // The run: the store moves the f16 box [64, 64] from the buffer's first byte. Under the
        // 128-byte swizzle an f32 row of 64 elements is two column blocks of 32 (8 KiB each),
        // so box row R (128 bytes) is f32 elements (R, 0..32) of block 0, and f16 element
        // (R, C) is the low (C even) or high (C odd) half of f32 element (R, C / 2); the
        // swizzle permutes the same absolute addresses for both. That element holds 64 R +
        // C / 2, or that plus 1 where the racing overwrite landed first.
        let (k, file) = import(&format!("3.6/bug_tma_dtype_race.{t}"));
        let (c, plan) = {
            let (c, d) = bwsim_isa::verify::verify_to_run(
                &k,
                &VerifyOptions {
                    target: Some(target),
                    overrides: Vec::new(),
                },
            );
            let c = c.unwrap_or_else(|| panic!("{}", diag::render(&d, &file)));
            let plan = launch::resolve(&c, k.launch.as_ref().expect("launch sidecar"))
                .unwrap_or_else(|d| panic!("launch:\n{}", diag::render(&d, &file)));
            (c, plan)
        };
        let r = run(&c, &plan, 0);
        assert_eq!(r.outcome, Outcome::Completed, "{t}");
        let out = r.tensor("out").expect("out");
        let half = |v: f32, hi: bool| {
            if hi {
                v.to_bits() >> 16
            } else {
                v.to_bits() & 0xffff
            }
        };
        for i in 0..64 * 64u64 {
            let (row, col) = (i / 64, i % 64);
            let v = (row * 64 + col / 2) as f32;
            let got = out.get_bits(i) as u32;
            assert!(
                got == half(v, col % 2 == 1) || got == half(v + 1.0, col % 2 == 1),
                "{t}: out[{row}, {col}] = {got:#06x}"
            );
        }
    }
}

/// The 1-based lines of mma_scaled.py that contain `needle`.
fn mma_scaled_lines(needle: &str) -> Vec<usize> {
    let py = std::fs::read_to_string(format!("{DIR}/mma_scaled.py")).expect("mma_scaled.py");
    let v: Vec<usize> = py
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    assert!(!v.is_empty(), "no line with `{needle}`");
    v
}

/// The block-scaled matmul (tests/gluon/mma_scaled.py) with the last K step's MMA not waited
/// for: the epilogue's `tmem_load` of the accumulator is reported against the scaled MMA that
/// may still write it (`read-before-complete`), at the Python lines of both; so are the two
/// other consequences of the missing wait: the barrier invalidated under the pending commit
/// (`barrier-misuse` at the commit) and the epilogue's staging buffer, placed over the
/// operands' bytes once they are dead, written while the MMA may still read A.
#[test]
fn mma_scaled_acc_before_wait_is_reported_at_the_python_lines() {
    // `mma_scaled_kernel` is the file's first kernel (its packed-block forms follow).
    let line = |needle: &str| mma_scaled_lines(needle)[0];
    let mma = line("tcgen05_mma_scaled(a_smem, b_smem.permute((1, 0))");
    let load = line("acc = acc_tmem.load(");
    let commit = line("tcgen05_commit(mma_bar)");
    let stage = line("c_smem.store(acc.to(c_desc.dtype))");
    let (e, file) = check_fixture("bug_mma_scaled_acc_before_wait.sm_100a", Target::Sm100a);
    assert_eq!(
        error_codes(&e),
        ["barrier-misuse", "read-before-complete", "write-while-in-flight"]
            .map(String::from)
            .into(),
        "{}",
        render(&e, &file)
    );
    let in_py = |d: &Diagnostic| -> (usize, BTreeSet<usize>) {
        let p = places(d, &file);
        assert!(p.iter().all(|(f, _)| f.ends_with("mma_scaled.py")), "{p:?}");
        (p[0].1, p.iter().map(|x| x.1).collect())
    };
    for f in findings(&e, "read-before-complete", &file) {
        assert_eq!(in_py(&f.diagnostic), (load, BTreeSet::from([load, mma])));
    }
    for f in findings(&e, "barrier-misuse", &file) {
        assert_eq!(in_py(&f.diagnostic).0, commit);
    }
    for f in findings(&e, "write-while-in-flight", &file) {
        assert_eq!(in_py(&f.diagnostic), (stage, BTreeSet::from([stage, mma])));
    }
    snapshot("mma_scaled_acc_before_wait", &render(&e, &file));
    // The correct kernel checks clean (and runs against its twin and the reference in
    // seeds.rs).
    let (e, file) = check_fixture("mma_scaled.sm_100a", Target::Sm100a);
    assert!(e.findings.is_empty(), "{}", render(&e, &file));
}

/// Tutorial 11's packed-block kernel as the tutorial writes it: the factors' shared buffers are
/// read by generic-proxy loads and overwritten by the next K step's TMA with no proxy fence
/// between. Reported as `missing-fence` on both factor buffers, at the TMA copy (primary) and
/// the load; with the fence (mma_scaled_packed) it checks clean.
#[test]
fn mma_scaled_packed_no_fence_is_a_missing_fence_at_the_python_lines() {
    let (e, file) = check_fixture("bug_mma_scaled_packed_no_fence.sm_100a", Target::Sm100a);
    assert_eq!(
        error_codes(&e),
        BTreeSet::from(["missing-fence".to_string()]),
        "{}",
        render(&e, &file)
    );
    let a_load = mma_scaled_lines("a_sf = scales_from_packed_registers(a_sf_smem.load(")[0];
    let b_load = mma_scaled_lines("b_sf = scales_from_packed_registers(b_sf_smem.load(")[0];
    // The packed kernel's TMA copies of the factors end at the buffer argument's line.
    let packed_start = mma_scaled_lines("def mma_scaled_packed_kernel(")[0];
    let a_copy = *mma_scaled_lines("a_sf_smem)")
        .iter()
        .find(|&&l| l > packed_start)
        .expect("a copy");
    let b_copy = *mma_scaled_lines("b_sf_smem)")
        .iter()
        .find(|&&l| l > packed_start)
        .expect("b copy");
    let mut seen = BTreeSet::new();
    for f in findings(&e, "missing-fence", &file) {
        let p = places(&f.diagnostic, &file);
        assert!(p.iter().all(|(f, _)| f.ends_with("mma_scaled.py")), "{p:?}");
        let lines: BTreeSet<usize> = p.iter().map(|x| x.1).collect();
        assert!(
            lines == BTreeSet::from([a_copy, a_load]) || lines == BTreeSet::from([b_copy, b_load]),
            "{lines:?}"
        );
        assert!(p[0].1 == a_copy || p[0].1 == b_copy, "{p:?}");
        seen.insert(p[0].1);
    }
    assert_eq!(seen, BTreeSet::from([a_copy, b_copy]));
    let (e, file) = check_fixture("mma_scaled_packed.sm_100a", Target::Sm100a);
    assert!(e.findings.is_empty(), "{}", render(&e, &file));
}
