//! `bwsim check --fix` over the project's planted bugs: every `tests/fail/*.tile` and every bug
//! twin of the Gluon corpus (`tests/gluon/3.9/bug_*.ttgir` with its launch sidecar).
//!
//! For each bug the checker's exploration finds the planted finding (the first error of an
//! expected code), `fix::suggest` searches its fixes, and then, independently of the search:
//! - every suggested fix, applied to the kernel, is checked again over the finding's schedule
//!   and fresh seeds the search did not use: the finding is gone and no error of a new code
//!   appears (no suggestion the re-check does not support);
//! - where the bug has a fixed twin (`tests/pass/NAME_fixed.tile`; the Gluon
//!   `bug_ws_add_fixed` / `bug_pipelined_matmul_fixed` of the `bug_ws_add_*` /
//!   `bug_pipelined_matmul_*` twins), the top suggestion must be the twin's edit or one the
//!   checker shows equivalent: the kernel with it applied checks clean of the planted bug, as
//!   the twin does (no finding of its code, no error of a new code; `tma_dtype_race` holds a
//!   second bug of another code, which its twin fixes too);
//! - the share of bugs with at least one verified fix is printed and held to a floor.
//!
//! The default tier runs `tests/fail` and the Gluon twins that have a fixed twin, with few
//! schedules; the full tier (`BWSIM_FULL=1`) adds every Gluon bug and more schedules.

mod common;

use bwsim_isa::consts::Override;
use bwsim_isa::ir::Kernel;
use bwsim_isa::levels::Levels;
use bwsim_isa::{diag, Code, Diagnostic, SourceFile, Span, Target};
use bwsim_sim::check::fix::{self, Fix};
use bwsim_sim::check::{self, Prepared};
use bwsim_sim::explore::{ExploreOptions, Finding};
use bwsim_testkit::directives;
use std::path::{Path, PathBuf};

/// One planted bug.
struct Bug {
    name: String,
    file: SourceFile,
    kernel: Kernel,
    target: Option<Target>,
    overrides: Vec<Override>,
    levels: Levels,
    /// The codes the planted finding may have.
    expect: Vec<String>,
    /// Schedules of the exploration that finds it.
    schedules: u64,
    /// The fixed twin's name, if it has one.
    twin: Option<String>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn full() -> bool {
    bwsim_testkit::full_tier()
}

/// Schedules each candidate fix is checked over inside the search.
fn fix_schedules() -> u64 {
    if full() {
        8
    } else {
        4
    }
}

/// The buggy kernels of tests/fail, each with its twin tests/pass/NAME_fixed.tile.
fn tile_bugs() -> Vec<Bug> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join("tests/fail"))
        .expect("tests/fail")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "tile"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let stem = p.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).expect("readable");
            let file = SourceFile::new(format!("tests/fail/{stem}.tile"), text.clone());
            let kernel = bwsim_isa::parse(&file).unwrap_or_else(|d| panic!("{}", diag::render(&d, &file)));
            let mut bug = Bug {
                name: stem.clone(),
                file,
                kernel,
                target: None,
                overrides: Vec::new(),
                levels: Levels::new(),
                expect: Vec::new(),
                schedules: 24,
                twin: root()
                    .join(format!("tests/pass/{stem}_fixed.tile"))
                    .exists()
                    .then(|| format!("{stem}_fixed")),
            };
            for d in directives::parse(&text, directives::CHECK_KEYS, false).expect("directives") {
                let v = d.value.as_str();
                match d.key.as_str() {
                    "expect" => bug.expect.push(v.to_string()),
                    "target" => bug.target = Target::from_name(v),
                    "const" => bug.overrides.push(Override::parse(v).expect("const")),
                    "schedules" => bug.schedules = v.parse().expect("schedules: N"),
                    k @ ("deny" | "warn" | "allow") => {
                        common::level_directive(&mut bug.levels, k, v).expect("level")
                    }
                    _ => {}
                }
            }
            bug
        })
        .collect()
}

/// The sidecar's launch with `shapes:` applied (`grid = [...]`, `NAME = ...`, tensor shapes).
fn apply_shapes(launch: &str, shapes: &[(String, String)]) -> String {
    let mut lines: Vec<String> = launch.lines().map(String::from).collect();
    for (name, value) in shapes {
        for l in &mut lines {
            let t = l.trim_start();
            let indent = l[..l.len() - t.len()].to_string();
            if let Some(rest) = t.strip_prefix(&format!("tensor {name}:")) {
                if let Some((dtype, tail)) = rest
                    .split_once('[')
                    .and_then(|(d, r)| Some((d, r.split_once(']')?.1)))
                {
                    *l = format!("{indent}tensor {name}:{dtype}{value}{tail}");
                }
            } else if t.split_once('=').is_some_and(|(n, _)| n.trim() == name.as_str()) {
                *l = format!("{indent}{name} = {value}");
            }
        }
    }
    lines.join("\n") + "\n"
}

/// `NAME=VALUE ...` with bracketed values (`a=[64, 400]`).
fn shape_list(v: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut cur, mut depth) = (String::new(), 0);
    for ch in v.chars().chain([' ']) {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            ' ' if depth == 0 => {
                if let Some((n, x)) = cur.split_once('=') {
                    out.push((n.to_string(), x.to_string()));
                }
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out
}

/// The fixed twin of a Gluon bug twin: `bug_ws_add_fixed` for `bug_ws_add_*`.
fn gluon_twin(stem: &str) -> Option<&'static str> {
    ["bug_ws_add", "bug_pipelined_matmul"]
        .into_iter()
        .find(|p| stem.starts_with(&format!("{p}_")))
        .map(|p| {
            if p == "bug_ws_add" {
                "bug_ws_add_fixed"
            } else {
                "bug_pipelined_matmul_fixed"
            }
        })
}

/// A Gluon fixture of 3.9, imported with its sidecar at its `shapes:` (the small launches of the
/// default corpus run), with its directives.
fn gluon_fixture(ttgir: &Path) -> Option<(SourceFile, Kernel, Vec<directives::Directive>)> {
    let stem = ttgir.file_name()?.to_string_lossy().into_owned();
    let (base, target) = stem.strip_suffix(".ttgir")?.rsplit_once('.')?;
    let sidecar = root().join(format!("tests/gluon/{base}.launch"));
    let side = std::fs::read_to_string(&sidecar).ok()?;
    let ds: Vec<directives::Directive> = directives::parse(&side, directives::GLUON_KEYS, true)
        .expect("sidecar directives")
        .into_iter()
        .filter(|d| d.applies_to((3, 9), target).unwrap_or(false))
        .collect();
    let shapes: Vec<(String, String)> = ds
        .iter()
        .filter(|d| d.key == "shapes")
        .flat_map(|d| shape_list(&d.value))
        .collect();
    let launch = apply_shapes(&side, &shapes);
    let text = std::fs::read_to_string(ttgir).ok()?;
    let l = bwsim_gluon::import_text(
        &ttgir.display().to_string(),
        &text,
        ttgir.parent(),
        Some((sidecar.display().to_string(), launch)),
    );
    Some((l.source, l.kernel.ok()?, ds))
}

/// The Gluon bug twins of 3.9 (the fixed ones and those clean as compiled left out).
fn gluon_bugs(only_twinned: bool) -> Vec<Bug> {
    let dir = root().join("tests/gluon/3.9");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/gluon/3.9")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.starts_with("bug_") && n.ends_with(".ttgir") && !n.contains("_fixed.")
        })
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        let stem = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .replace(".ttgir", "");
        let base = stem.split('.').next().unwrap_or("").to_string();
        let twin = gluon_twin(&base).map(|t| stem.replacen(&base, t, 1));
        if only_twinned && twin.is_none() {
            continue;
        }
        let (file, kernel, ds) =
            gluon_fixture(&p).unwrap_or_else(|| panic!("{} does not import", p.display()));
        let expect: Vec<String> = ds
            .iter()
            .filter(|d| d.key == "expect")
            .filter_map(|d| d.value.split_whitespace().next().map(String::from))
            .collect();
        if expect.is_empty() {
            // Correct as this release compiles it (`check: clean`).
            continue;
        }
        let schedules = ds
            .iter()
            .find(|d| d.key == "schedules")
            .and_then(|d| d.value.parse().ok())
            .unwrap_or(8);
        out.push(Bug {
            name: format!("3.9/{stem}"),
            file,
            kernel,
            target: None,
            overrides: Vec::new(),
            levels: Levels::new(),
            expect,
            schedules: if full() { schedules.max(8) } else { schedules },
            twin,
        });
    }
    out
}

fn prepare(b: &Bug, k: &Kernel, inputs: &Prepared) -> Option<Prepared> {
    let mut p = check::prepare_kernel(k, &b.overrides, b.target, Default::default()).ok()?;
    if p.inputs.len() == inputs.inputs.len() {
        p.set_inputs(inputs.inputs.clone());
    }
    Some(p)
}

fn explore(p: &Prepared, first_seed: u64, schedules: u64, levels: &Levels) -> Vec<Finding> {
    let e = p.explore(
        &ExploreOptions {
            first_seed,
            schedules,
            jobs: 2,
            stop_on_first_error: false,
        },
        |_, _| {},
    );
    e.findings
        .into_iter()
        .filter_map(|mut f| {
            f.diagnostic = levels.apply(f.diagnostic)?;
            Some(f)
        })
        .collect()
}

/// What one bug gave.
struct Outcome {
    fixes: Vec<Fix>,
    problems: Vec<String>,
}

fn run(b: &Bug) -> Outcome {
    let mut problems = Vec::new();
    let p = check::prepare_kernel(&b.kernel, &b.overrides, b.target, Default::default())
        .unwrap_or_else(|d| panic!("{}: {}", b.name, diag::render(&d, &b.file)));
    let findings = explore(&p, 0, b.schedules, &b.levels);
    let Some(f) = findings
        .iter()
        .find(|f| b.expect.iter().any(|c| c == f.diagnostic.code.name()))
    else {
        problems.push(format!(
            "{}: the planted finding ({:?}) was not found",
            b.name, b.expect
        ));
        return Outcome {
            fixes: Vec::new(),
            problems,
        };
    };
    let codes: Vec<Code> = findings.iter().map(|f| f.diagnostic.code).collect();
    let fixes = fix::suggest(&b.kernel, f, &findings, fix_schedules(), 2, &|k| {
        prepare(b, k, &p)
    });
    let place = |s: Span| {
        let (l, _) = b.file.line_col(s.start as usize);
        format!("{}:{l}", b.file.file_name_of(s))
    };
    let gluon = !b.file.parts().is_empty();
    for (i, x) in fixes.iter().enumerate() {
        let what = format!("{}: fix {i} ({})", b.name, x.describe(gluon, &place));
        let Some(k) = x.apply(&b.kernel) else {
            problems.push(format!("{what}: does not apply"));
            continue;
        };
        let Some(q) = prepare(b, &k, &p) else {
            problems.push(format!("{what}: the edited kernel does not prepare"));
            continue;
        };
        // The re-check, over the finding's schedule and seeds the search did not use.
        let mut again: Vec<Diagnostic> = q.run(f.seed, false).diagnostics;
        again.extend(
            explore(&q, 1000, fix_schedules(), &b.levels)
                .into_iter()
                .map(|f| f.diagnostic),
        );
        let again: Vec<Diagnostic> = again.into_iter().filter_map(|d| b.levels.apply(d)).collect();
        if let Some(d) = again.iter().find(|d| fix::same_finding(d, &f.diagnostic)) {
            problems.push(format!(
                "{what}: the finding is still there:\n{}",
                diag::render(std::slice::from_ref(d), &b.file)
            ));
        }
        if let Some(d) = again.iter().find(|d| d.is_error() && !codes.contains(&d.code)) {
            problems.push(format!(
                "{what}: a new error:\n{}",
                diag::render(std::slice::from_ref(d), &b.file)
            ));
        }
        // The top suggestion of a bug with a fixed twin: the kernel checks clean of the
        // planted bug, as the twin does (no finding of its code anywhere, and no error of a
        // code the bug did not show; a second bug the twin also fixes, of another code, may
        // stay).
        if i == 0 && b.twin.is_some() {
            let left = explore(&q, 0, b.schedules, &b.levels);
            if let Some(l) = left.iter().find(|l| {
                l.diagnostic.code == f.diagnostic.code
                    || (l.diagnostic.is_error() && !codes.contains(&l.diagnostic.code))
            }) {
                problems.push(format!(
                    "{what}: the top fix does not check clean as the twin {} does:\n{}",
                    b.twin.as_deref().unwrap_or(""),
                    diag::render(std::slice::from_ref(&l.diagnostic), &b.file)
                ));
            }
        }
    }
    Outcome { fixes, problems }
}

/// Run every bug, print what each gave and return (bugs, bugs with a verified fix,
/// problems).
fn measure(bugs: Vec<Bug>) -> (usize, usize, Vec<String>) {
    let n = bugs.len();
    let mut covered = 0;
    let mut problems = Vec::new();
    for b in bugs {
        let name = b.name.clone();
        let start = std::time::Instant::now();
        let o = bwsim_testkit::with_big_stack(move || run(&b));
        let top = o.fixes.first().map_or("-".to_string(), |f| f.tile.clone());
        eprintln!(
            "{name}: {} verified fix(es) in {:.1} s; top: {top}",
            o.fixes.len(),
            start.elapsed().as_secs_f64()
        );
        covered += usize::from(!o.fixes.is_empty());
        problems.extend(o.problems);
    }
    eprintln!("{covered} of {n} planted bugs have a verified fix");
    (n, covered, problems)
}

/// Bugs of tests/fail with a verified fix (of 39; with only a fence and the store and copy
/// waits: 6; before the phase-aliasing, device-assert, handshake and move-past-the-commit
/// edits: 26).
const TILE_COVERED: usize = 30;
/// The same for the Gluon bug twins of 3.9 (of 64; at first: 11; before the edits above and
/// the expect before a copy or cancel: 45; before the `cp.async` arrivals' `noinc` and moves:
/// 49).
const GLUON_COVERED: usize = 53;

#[test]
fn fixes_of_the_tile_catalogue_are_verified_and_match_their_twins() {
    let (n, covered, problems) = measure(tile_bugs());
    common::assert_no_failures("fix suggestions", &problems);
    assert_eq!(n, 39, "tests/fail holds 39 planted bugs");
    assert!(
        covered >= TILE_COVERED,
        "{covered} of {n} tests/fail bugs have a verified fix"
    );
}

#[test]
fn fixes_of_the_gluon_bug_twins_are_verified_and_match_their_fixed_twins() {
    let all = bwsim_testkit::runs_in_full_tier("`--fix` over the Gluon bugs without a fixed twin");
    let (n, covered, problems) = measure(gluon_bugs(!all));
    common::assert_no_failures("fix suggestions", &problems);
    if all {
        assert_eq!(n, 69, "tests/gluon/3.9 holds 69 planted bugs");
        assert!(
            covered >= GLUON_COVERED,
            "{covered} of {n} Gluon bugs have a verified fix"
        );
    } else {
        // Every twin with a fixed twin but the early release of the pipelined matmul, whose
        // wait needs a parity of the MMA count the kernel does not spell.
        assert!(
            covered + 1 >= n,
            "{covered} of {n} Gluon twins with a fixed twin have a verified fix"
        );
    }
}
