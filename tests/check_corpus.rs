//! The hazard checker's bug catalogue and its false-positive guard.
//!
//! - `tests/fail/NAME.tile` (first line `// expect: CODE`) must produce the diagnostic `CODE`
//!   within the explored schedules; the rendered diagnostic (the first finding with that code,
//!   with its replay seed) is snapshotted as `traces/check/NAME.snap`.
//! - `tests/pass/*.tile` (the fixed twins, `// expect: ok`, and other correct kernels) must
//!   check clean over every explored schedule.
//! - Every bundled seed kernel (kernels/tiles) must check clean on each of its targets.
//!
//! Directives in leading comments (read by `bwsim_testkit::directives`, the one parser of test
//! directives): `// expect: CODE|ok`, `// target: sm_90a`, `// const: NAME=VALUE`,
//! `// schedules: N` (a smaller default for a slow kernel), `// deny: CODE`, `// warn: CODE`,
//! `// allow: CODE` (levels, as `bwsim check --deny ...`; `deny: warnings` too) and
//! `// level: error|warning` (the level the expected finding must have; by default the code's
//! default level). Adding a case needs no Rust: drop in a buggy kernel and its fixed twin.
//!
//! `BWSIM_CHECK_SCHEDULES=N` explores N schedules per kernel instead of the small defaults, and
//! runs the seed kernels in their default configurations instead of small shapes (the full
//! run: `BWSIM_CHECK_SCHEDULES=1000 cargo test --release --test check_corpus`).

mod common;

use bwsim_isa::consts::Override;
use bwsim_isa::levels::Levels;
use bwsim_isa::{diag, Code, Level, SourceFile, Target};
use bwsim_sim::check::{self, exhaustive, shrink};
use bwsim_sim::explore::{Exploration, ExploreOptions};
use bwsim_testkit::directives;
use common::{assert_no_failures, assert_trace_snapshot};
use std::path::{Path, PathBuf};

/// Schedules per buggy kernel in the default (fast, debug) suite: enough for the bugs that
/// need a particular interleaving (the ring's aliasing shows first at seed 9).
const DEFAULT_FAIL_SCHEDULES: u64 = 24;
/// The most preemptions a minimal counterexample of a `tests/fail` kernel may need.
const MAX_PREEMPTIONS: usize = 2;
/// Schedules per correct kernel in the default suite.
const DEFAULT_PASS_SCHEDULES: u64 = 12;
/// Schedules per seed kernel (small shapes) in the default suite.
const DEFAULT_SEED_SCHEDULES: u64 = 4;

fn env_schedules() -> Option<u64> {
    std::env::var("BWSIM_CHECK_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
}

struct Case {
    path: PathBuf,
    expect: String,
    target: Option<Target>,
    overrides: Vec<Override>,
    schedules: u64,
    file: SourceFile,
    /// The `deny:`, `warn:`, `allow:` directives.
    levels: Levels,
    /// The `level:` directive.
    level: Option<Level>,
}

impl Case {
    /// The file's name without its `.tile`: the name of its snapshots.
    fn name(&self) -> String {
        self.path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    }
}

fn load(dir: &str, path: &Path) -> Case {
    let text = std::fs::read_to_string(path).expect("corpus file is readable");
    let mut case = Case {
        path: path.to_path_buf(),
        expect: String::new(),
        target: None,
        overrides: Vec::new(),
        schedules: if dir == "tests/pass" {
            DEFAULT_PASS_SCHEDULES
        } else {
            DEFAULT_FAIL_SCHEDULES
        },
        file: SourceFile::new(
            format!("{dir}/{}", path.file_name().unwrap_or_default().to_string_lossy()),
            text.clone(),
        ),
        levels: Levels::new(),
        level: None,
    };
    let header = directives::parse(&text, directives::CHECK_KEYS, false)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for d in header {
        let v = d.value.as_str();
        match d.key.as_str() {
            "expect" => case.expect = v.to_string(),
            "target" => case.target = Target::from_name(v),
            "const" => case
                .overrides
                .push(Override::parse(v).expect("valid const directive")),
            "schedules" => case.schedules = v.parse().expect("schedules: N"),
            key @ ("deny" | "warn" | "allow") => common::level_directive(&mut case.levels, key, v)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            "level" => {
                case.level = Some(match v {
                    "error" => Level::Error,
                    "warning" => Level::Warning,
                    other => panic!(
                        "{}: `level: {other}` is neither error nor warning",
                        path.display()
                    ),
                })
            }
            _ => unreachable!("a key of CHECK_KEYS"),
        }
    }
    if let Some(n) = env_schedules() {
        case.schedules = n;
    }
    if case.expect.is_empty() && dir == "tests/pass" {
        case.expect = "ok".to_string();
    }
    assert!(
        !case.expect.is_empty(),
        "{} has no `// expect:` line",
        path.display()
    );
    case
}

fn corpus(dir: &str) -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("corpus directory exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "tile"))
        .collect();
    v.sort();
    v.iter().map(|p| load(dir, p)).collect()
}

fn jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(4)
}

/// Explore `schedules` seeds of a kernel; setup failures are rendered into the error.
fn explore(
    src: &SourceFile,
    overrides: &[Override],
    target: Option<Target>,
    schedules: u64,
    levels: &Levels,
) -> Result<Exploration, String> {
    explore_prepared(src, overrides, target, schedules, levels).map(|(_, e)| e)
}

/// [`explore`], with the prepared kernel.
fn explore_prepared(
    src: &SourceFile,
    overrides: &[Override],
    target: Option<Target>,
    schedules: u64,
    levels: &Levels,
) -> Result<(check::Prepared, Exploration), String> {
    let p = check::prepare(&src.text, overrides, target).map_err(|d| diag::render(&d, src))?;
    let opts = ExploreOptions {
        first_seed: 0,
        schedules,
        jobs: jobs(),
        stop_on_first_error: false,
    };
    let mut e = p.explore(&opts, |_, _| {});
    // Each finding at the level the case's directives give it (allowed ones dropped).
    e.findings = std::mem::take(&mut e.findings)
        .into_iter()
        .filter_map(|mut f| {
            f.diagnostic = levels.apply(f.diagnostic)?;
            Some(f)
        })
        .collect();
    Ok((p, e))
}

fn render_findings(e: &Exploration, file: &SourceFile) -> String {
    let d: Vec<_> = e
        .findings
        .iter()
        .map(|f| check::annotate(f, &file.name, Some(e.schedules)))
        .collect();
    diag::render(&d, file)
}

#[test]
fn every_buggy_kernel_reports_its_diagnostic() {
    let mut failures = Vec::new();
    for c in corpus("tests/fail") {
        let (p, e) = match explore_prepared(&c.file, &c.overrides, c.target, c.schedules, &c.levels) {
            Ok(x) => x,
            Err(r) => {
                failures.push(format!("{}: does not run:\n{r}", c.path.display()));
                continue;
            }
        };
        let Some(f) = e.findings.iter().find(|f| f.diagnostic.code == c.expect) else {
            failures.push(format!(
                "{}: expected `{}` within {} schedules, got:\n{}",
                c.path.display(),
                c.expect,
                c.schedules,
                render_findings(&e, &c.file)
            ));
            continue;
        };
        let want = c
            .level
            .unwrap_or_else(|| Code::from_name(&c.expect).map_or(Level::Error, |code| code.default_level()));
        if f.diagnostic.severity.level() != Some(want) {
            failures.push(format!(
                "{}: `{}` is a {:?}, expected a {}",
                c.path.display(),
                c.expect,
                f.diagnostic.severity,
                want.name()
            ));
        }
        // The count depends on how many schedules ran; the first seed does not.
        let rendered = diag::render(&[check::annotate(f, &c.file.name, None)], &c.file);
        let name = c.name();
        assert_trace_snapshot("check", &name, &rendered);
        // The finding's schedule shrunk to its fewest preemptions, with the events that matter.
        match shrink::shrink(&p, f) {
            Some(cx) => {
                if cx.preemptions.len() > MAX_PREEMPTIONS {
                    failures.push(format!(
                        "{}: the shrunk schedule still needs {} preemptions: {}",
                        c.path.display(),
                        cx.preemptions.len(),
                        cx.summary()
                    ));
                }
                let text = format!(
                    "{}\n{}",
                    cx.summary(),
                    shrink::render_rows(&cx.events(&p, &f.diagnostic, Some(&c.file)))
                );
                assert_trace_snapshot("counterexamples", &name, &text);
            }
            None => failures.push(format!(
                "{}: replaying the recorded schedule of seed {} does not show `{}`",
                c.path.display(),
                f.seed,
                c.expect
            )),
        }
    }
    assert_no_failures("buggy kernels that did not report their bug", &failures);
}

/// Buggy kernels whose bug the exhaustive search within [`EXHAUSTIVE_DELAYS`] delays does not
/// reach, with the reason (the random exploration finds them). None since the search holds a
/// lone agent back (`ws_matmul_acc_release_off_by_one` needs its MMA partition held).
const BEYOND_THE_DELAY_BOUND: &[(&str, &str)] = &[];
/// Buggy kernels whose bug shows within the delay bound as an earlier error of another code
/// than their first line expects (the random exploration finds the expected one), with that
/// code and why it is the right report.
const EXHAUSTIVE_FIRST_ERROR: &[(&str, &str, &str)] = &[(
    "ring_barrier_aliasing",
    "over-arrival",
    "one ready barrier serves two ring stages: on the base schedule the producer's third \
     `mbar.expect` (an arrive) reaches the barrier while the first stage's phase still waits for \
     its TMA bytes with no arrival pending; an arrival beyond the pending count is an arrival \
     underflow, which traps (docs/semantics.md, mbarrier rules), before any wait can see the \
     phase alias",
)];
/// The delay bound of the exhaustive search over tests/fail.
const EXHAUSTIVE_DELAYS: u32 = 1;

#[test]
fn the_exhaustive_search_finds_every_planted_bug_within_its_bound() {
    let mut failures = Vec::new();
    for c in corpus("tests/fail") {
        let name = c.name();
        let p = match check::prepare(&c.file.text, &c.overrides, c.target) {
            Ok(p) => p,
            Err(d) => {
                failures.push(format!("{name}: does not run:\n{}", diag::render(&d, &c.file)));
                continue;
            }
        };
        let opts = exhaustive::Options {
            delays: EXHAUSTIVE_DELAYS,
            max_schedules: 10_000,
            jobs: jobs(),
            step_budget: None,
        };
        let s = exhaustive::search(&p, &opts, &std::sync::atomic::AtomicBool::new(false), |_| {});
        let errors: Vec<&str> = s
            .findings
            .iter()
            .filter_map(|f| c.levels.apply(f.diagnostic.clone()))
            .map(|d| d.code.name())
            .collect();
        let beyond = BEYOND_THE_DELAY_BOUND.iter().any(|(n, _)| *n == name);
        match (errors.is_empty(), beyond) {
            (false, true) => failures.push(format!(
                "{name}: now found within {EXHAUSTIVE_DELAYS} delays ({errors:?}): take it off BEYOND_THE_DELAY_BOUND"
            )),
            (true, false) => failures.push(format!(
                "{name}: no finding within {EXHAUSTIVE_DELAYS} delays ({} schedules, complete: {})",
                s.schedules, s.complete
            )),
            _ => {}
        }
        // The expected code itself, or the one an earlier error of the same bug stops every
        // run within the bound with (see [`EXHAUSTIVE_FIRST_ERROR`]).
        let expect = EXHAUSTIVE_FIRST_ERROR
            .iter()
            .find(|(n, _, _)| *n == name)
            .map_or(c.expect.as_str(), |(_, code, _)| *code);
        if !errors.is_empty() && !errors.contains(&expect) {
            failures.push(format!(
                "{name}: expected `{expect}`, the search found {errors:?}"
            ));
        }
    }
    assert_no_failures("planted bugs the exhaustive search missed", &failures);
}

#[test]
fn every_fixed_twin_checks_clean() {
    let mut failures = Vec::new();
    for c in corpus("tests/pass") {
        assert_eq!(c.expect, "ok", "{}", c.path.display());
        match explore(&c.file, &c.overrides, c.target, c.schedules, &c.levels) {
            Ok(e) if e.findings.is_empty() => {}
            Ok(e) => failures.push(format!("{}:\n{}", c.path.display(), render_findings(&e, &c.file))),
            Err(r) => failures.push(format!("{}: does not run:\n{r}", c.path.display())),
        }
    }
    assert_no_failures("false positives on correct kernels", &failures);
}

#[test]
fn every_code_has_a_buggy_kernel_and_a_fixed_twin() {
    let fails = corpus("tests/fail");
    let passes: Vec<String> = corpus("tests/pass")
        .iter()
        .map(|c| {
            c.path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for c in &fails {
        assert!(
            check::codes().any(|code| code == c.expect.as_str()),
            "{} expects `{}`, which is not a checker code",
            c.path.display(),
            c.expect
        );
        let stem = c
            .path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        assert!(
            passes.contains(&format!("{stem}_fixed")),
            "{} has no fixed twin tests/pass/{stem}_fixed.tile",
            c.path.display()
        );
    }
    for code in check::codes() {
        assert!(
            fails.iter().any(|c| code == c.expect.as_str()),
            "no buggy kernel in tests/fail expects `{code}`"
        );
    }
}

/// Small shapes for the seed kernels in the default suite (the full run uses their defaults).
fn small(name: &str) -> &'static [&'static str] {
    match name {
        "async_gather" | "async_scatter" => &["X_MAX=256", "Y_MAX=256"],
        "elementwise_add_tma" | "elementwise_add_ws" => &["XNUMEL=64", "YNUMEL=256"],
        "matmul_pipelined" => &["M=128", "N=256", "K=192"],
        "matmul_accumulate" | "matmul_fused_gather_scatter" => &["M=256", "N=128", "K=128", "NUM_SMS=1"],
        "matmul_warp_specialized" | "persistent_matmul" | "persistent_matmul_pipelined" => {
            &["M=256", "N=256", "K=128", "NUM_SMS=1"]
        }
        _ => &[],
    }
}

#[test]
fn every_seed_kernel_checks_clean_on_each_target() {
    let full = env_schedules();
    let schedules = full.unwrap_or(DEFAULT_SEED_SCHEDULES);
    let mut failures = Vec::new();
    let mut checked = 0;
    for k in bwsim_kernels::all() {
        let file = SourceFile::new(format!("kernels/tiles/{}.tile", k.name), k.source);
        let overrides: Vec<Override> = if full.is_some() {
            Vec::new()
        } else {
            small(k.name)
                .iter()
                .map(|o| Override::parse(o).expect("valid override"))
                .collect()
        };
        for t in k.targets.split(',').map(str::trim) {
            let target = Target::from_name(t);
            assert!(target.is_some(), "{}: unknown target `{t}`", k.name);
            match explore(&file, &overrides, target, schedules, &Levels::new()) {
                Ok(e) if e.findings.is_empty() => checked += 1,
                Ok(e) => failures.push(format!("{} on {t}:\n{}", k.name, render_findings(&e, &file))),
                Err(r) => failures.push(format!("{} on {t}: does not run:\n{r}", k.name)),
            }
        }
    }
    assert_no_failures("false positives on seed kernels", &failures);
    assert!(checked >= 12, "only {checked} kernel/target pairs checked");
}
