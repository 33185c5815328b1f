//! `bwsim check`: the hazard checker over many schedules, or one schedule replayed.

use super::levels::{self, Format, LevelArgs};
use super::{diags_json, load_source, parse_or_report_as, print_diags, CliResult, CompileArgs};
use bwsim_isa::ir::Kernel;
use bwsim_isa::levels::Levels;
use bwsim_isa::Diagnostic;
use bwsim_sim::check::fix::{self, Fix};
use bwsim_sim::check::shrink::{self, Counterexample};
use bwsim_sim::check::{self, Prepared};
use bwsim_sim::explore::{Exploration, ExploreOptions};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

mod exhaustive;
mod ptx;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    source: super::ptx_file::KernelSource,
    /// Schedules to explore (seeds FIRST_SEED..FIRST_SEED+N); Ctrl-C stops early and reports
    /// what the schedules explored so far found.
    #[arg(long, default_value_t = 200, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    schedules: u64,
    /// Threads to run schedules on (default: every core; 1 to 1024, at most one per schedule).
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
    /// Replay one schedule exactly and print every diagnostic of that run.
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// First seed of the exploration.
    #[arg(long, default_value_t = 0, value_name = "SEED")]
    first_seed: u64,
    #[command(flatten)]
    compile: CompileArgs,
    /// Print the findings as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// With --seed: print the event trace of the replayed schedule on stdout.
    #[arg(long, requires = "seed")]
    trace: bool,
    /// Show the progress bar even when stderr is not a terminal.
    #[arg(long)]
    progress: bool,
    /// After the exploration, search the small edits that remove each error (a proxy fence, a
    /// wait for the store, copy, load or MMA in flight, a flipped wait parity, an expect of the
    /// bytes the copies deliver, an arrive moved after the reads it releases, ...: see
    /// docs/semantics.md, "Fix suggestions"), check each edited kernel over the finding's
    /// schedule and `--fix-schedules` fresh ones, and show those that remove the finding
    /// without a new error, at the line to edit, best first
    #[arg(long, conflicts_with = "seed")]
    fix: bool,
    /// With --fix: the fresh schedules each candidate edit is checked over
    #[arg(long, default_value_t = 64, value_name = "N", requires = "fix", value_parser = clap::value_parser!(u64).range(1..))]
    fix_schedules: u64,
    /// After the exploration, shrink each error's schedule to the fewest preemptions that still
    /// show it (delta debugging over the schedule's preemptions and stalls, every candidate
    /// replayed) and print the events that matter, one column per agent or unit; `--first-seed S
    /// --schedules 1 --minimize` shrinks schedule S
    #[arg(long, conflicts_with = "seed")]
    minimize: bool,
    /// With --minimize: write the first error's shrunk schedule as Chrome trace JSON (Perfetto,
    /// chrome://tracing) to this file, each preemption marked on the preempted agent's track
    #[arg(long, requires = "minimize", value_name = "FILE")]
    chrome: Option<std::path::PathBuf>,
    /// Instead of random schedules, run every schedule within a delay bound (`--delays`): the
    /// deterministic schedule (one cluster at a time, each agent goes on while it can,
    /// asynchronous work at its shortest latency) and every schedule that differs from it in at
    /// most D decisions of each cluster (a switch to another agent before a visible step, a
    /// lone agent held back, a longest latency); a clean result proves the kernel clean within
    /// that bound
    #[arg(long, conflicts_with_all = ["seed", "minimize", "fix"])]
    exhaustive: bool,
    /// With --exhaustive: the delay bound (per cluster). Without it, the default bound: 2
    /// delays, or 1 where the level of 2 delays would run more than 2,000,000 agent steps
    /// (its runs times the reference run's steps); the report says which
    #[arg(long, value_name = "D", requires = "exhaustive", value_parser = clap::value_parser!(u32).range(0..=8))]
    delays: Option<u32>,
    /// With --exhaustive: make at most N runs (past it the search is incomplete and proves
    /// nothing)
    #[arg(long, default_value_t = 1_000_000, value_name = "N", requires = "exhaustive", value_parser = clap::value_parser!(u64).range(1..))]
    max_schedules: u64,
    /// Take a launch tensor's contents from a .npy file instead of its initialiser:
    /// --input a=a.npy (repeatable).
    #[arg(long = "input", value_name = "NAME=FILE.npy", value_parser = super::npy::parse_input)]
    inputs: Vec<super::npy::InputArg>,
    #[command(flatten)]
    limits: super::limits::LimitArgs,
    #[command(flatten)]
    levels: LevelArgs,
}

/// What `check` prints and how it judges: the output format and the diagnostic levels.
struct Report {
    format: Format,
    levels: Levels,
}

pub fn run(a: Args) -> CliResult {
    if a.source.is_ptx() {
        return ptx::run(&a);
    }
    let out = Report {
        format: a.levels.format(a.json)?,
        levels: a.levels.levels()?,
    };
    let file = load_source(&a.source.kernel)?;
    let Some(kernel) = parse_or_report_as(&file, out.format) else {
        return Ok(ExitCode::from(1));
    };
    let name = file.name.clone();
    let watch = crate::interrupt::Watch::start(move |sig| {
        format!("{name}: interrupted ({sig}) while preparing the kernel (its first run); nothing to report")
    });
    let prepared = check::prepare_kernel(&kernel, &a.compile.consts, a.compile.target, a.limits.limits());
    drop(watch);
    let mut prepared = match prepared {
        Ok(p) => p,
        Err(d) => {
            levels::report_failure(&d, &file, out.format, serde_json::json!({}));
            return Ok(ExitCode::from(1));
        }
    };
    if !a.inputs.is_empty() {
        let mut inputs = prepared.inputs.clone();
        super::npy::apply_inputs(&mut inputs, &a.inputs).map_err(super::CliError)?;
        prepared.set_inputs(inputs);
    }
    match a.seed {
        Some(seed) => Ok(replay(&prepared, seed, &a, &out, &file)),
        None if a.exhaustive => Ok(exhaustive::run(&prepared, &a, &out, &file)),
        None => Ok(explore(&prepared, &kernel, &a, &out, &file)),
    }
}

/// `--jobs`, or every core.
fn jobs(a: &Args) -> usize {
    a.jobs
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
}

/// The findings with each diagnostic at its level in `levels` (`diagnostic` names it), the
/// allowed ones dropped; the order is kept.
fn at_levels<F>(findings: Vec<F>, levels: &Levels, diagnostic: impl Fn(&mut F) -> &mut Diagnostic) -> Vec<F> {
    findings
        .into_iter()
        .filter_map(|mut f| {
            let d = diagnostic(&mut f);
            *d = levels.apply(d.clone())?;
            Some(f)
        })
        .collect()
}

/// `N errors, M warnings` (or `no hazards found`).
fn tally(diags: &[&Diagnostic]) -> String {
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let warnings = diags.len() - errors;
    let n = |k: usize, w: &str| format!("{k} {w}{}", if k == 1 { "" } else { "s" });
    match (errors, warnings) {
        (0, 0) => "no hazards found".to_string(),
        (e, 0) => n(e, "error"),
        (0, w) => format!("{} (no errors)", n(w, "warning")),
        (e, w) => format!("{}, {}", n(e, "error"), n(w, "warning")),
    }
}

fn replay(p: &Prepared, seed: u64, a: &Args, out: &Report, file: &bwsim_isa::SourceFile) -> ExitCode {
    let name = file.name.clone();
    let watch = crate::interrupt::Watch::start(move |sig| {
        format!("{name}: interrupted ({sig}) while replaying schedule seed {seed}; nothing to report")
    });
    let r = p.run(seed, a.trace);
    drop(watch);
    let diags = out.levels.apply_all(r.diagnostics.iter().cloned());
    let errors = diags.iter().any(|d| d.is_error());
    if out.format == Format::Sarif {
        outln!("{}", levels::sarif_log(&diags, file));
    } else if out.format == Format::Json {
        outln!(
            "{}",
            serde_json::json!({
                "file": file.name,
                "seed": seed,
                "outcome": r.outcome,
                "ok": !errors,
                "levels": out.levels.to_json(),
                "diagnostics": diags_json(&diags, file),
            })
        );
    } else {
        print_diags(&diags, file);
        if a.trace {
            out!("{}", r.trace.render(Some(file)));
        }
        errln!(
            "{}: schedule seed {seed}: {:?} after {} steps, {}",
            file.name,
            r.outcome,
            r.counters.steps,
            tally(&diags.iter().collect::<Vec<_>>())
        );
    }
    if errors {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn explore(p: &Prepared, kernel: &Kernel, a: &Args, out: &Report, file: &bwsim_isa::SourceFile) -> ExitCode {
    let jobs = jobs(a).clamp(1, usize::try_from(a.schedules).unwrap_or(usize::MAX));
    let opts = ExploreOptions {
        first_seed: a.first_seed,
        schedules: a.schedules,
        jobs,
        stop_on_first_error: false,
    };
    let bar = if a.progress || (std::io::stderr().is_terminal() && out.format == Format::Text) {
        let b = ProgressBar::with_draw_target(Some(a.schedules), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} {pos}/{len} schedules [{bar:30}] {per_sec} eta {eta}")
        {
            b.set_style(style.progress_chars("=> "));
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let start = Instant::now();
    let watch = crate::interrupt::Watch::notice(move |sig| {
        format!(
            "{sig}: finishing the schedules already running, then reporting (each stops at --max-steps or \
             --max-wall-time); send it again to quit at once"
        )
    });
    let mut e = p.explore_until(&opts, crate::interrupt::flag(), |done, _| bar.set_position(done));
    // Each finding at its level (allowed ones dropped); errors first again.
    e.findings = at_levels(std::mem::take(&mut e.findings), &out.levels, |f| {
        &mut f.diagnostic
    });
    e.findings.sort_by_key(|f| (f.diagnostic.severity, f.seed));
    drop(watch);
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    let interrupted = crate::interrupt::requested();
    let fixes = if a.fix && interrupted.is_none() {
        suggest_fixes(p, kernel, &e, a, jobs)
    } else {
        Vec::new()
    };
    let shrunk = if a.minimize && interrupted.is_none() {
        minimize(p, &e, file)
    } else {
        Vec::new()
    };
    if let (Some(path), Some(Some(cx))) = (&a.chrome, shrunk.iter().find(|c| c.is_some())) {
        if let Err(err) =
            crate::output::write_file(path, cx.chrome_json(p, Some(file)).to_string().as_bytes())
        {
            errln!("{err}");
            return ExitCode::from(2);
        }
    }
    let found = Found {
        e: &e,
        fixes: &fixes,
        shrunk: &shrunk,
        prepared: p,
    };
    print_exploration(&found, a, out, file, jobs, secs, interrupted.map(|(n, _)| n));
    if let Some((_, status)) = interrupted {
        ExitCode::from(status)
    } else if e.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// What an exploration found, with what `--fix` and `--minimize` added (one entry per
/// finding, empty or `None` for the others).
struct Found<'a> {
    e: &'a Exploration,
    fixes: &'a [Vec<Fix>],
    shrunk: &'a [Option<Counterexample>],
    prepared: &'a Prepared,
}

/// The shrunk schedule of each error finding of `e` (at most [`MAX_FIXED`]), with a note on
/// stderr while they are searched.
fn minimize(p: &Prepared, e: &Exploration, file: &bwsim_isa::SourceFile) -> Vec<Option<Counterexample>> {
    let errors = e
        .findings
        .iter()
        .filter(|f| f.diagnostic.is_error())
        .count()
        .min(MAX_FIXED);
    if errors > 0 {
        errln!(
            "{}: shrinking the schedules of {errors} finding{} (at most {} replays each)",
            file.name,
            if errors == 1 { "" } else { "s" },
            shrink::MAX_REPLAYS
        );
    }
    let mut left = MAX_FIXED;
    e.findings
        .iter()
        .map(|f| {
            if !f.diagnostic.is_error() || left == 0 {
                return None;
            }
            left -= 1;
            shrink::shrink(p, f)
        })
        .collect()
}

/// Findings whose fixes are searched at the most (the first, in report order).
const MAX_FIXED: usize = 8;

/// The verified fixes of each error finding of `e` (empty for the others), with a note on
/// stderr while they are searched.
fn suggest_fixes(p: &Prepared, kernel: &Kernel, e: &Exploration, a: &Args, jobs: usize) -> Vec<Vec<Fix>> {
    let prepare = |k: &Kernel| {
        let mut q = check::prepare_kernel(k, &a.compile.consts, a.compile.target, a.limits.limits()).ok()?;
        if q.inputs.len() == p.inputs.len() {
            q.set_inputs(p.inputs.clone());
        }
        Some(q)
    };
    let errors = e.findings.iter().filter(|f| f.diagnostic.is_error()).count();
    if errors > 0 {
        errln!(
            "searching fixes for {} finding{} (each candidate checked over {} schedules)",
            errors.min(MAX_FIXED),
            if errors.min(MAX_FIXED) == 1 { "" } else { "s" },
            a.fix_schedules + 1
        );
    }
    let mut left = MAX_FIXED;
    e.findings
        .iter()
        .map(|f| {
            if !f.diagnostic.is_error() || left == 0 {
                return Vec::new();
            }
            left -= 1;
            fix::suggest(kernel, f, &e.findings, a.fix_schedules, jobs, &prepare)
        })
        .collect()
}

/// `d` with a label at each of its verified fixes.
fn with_fixes(mut d: Diagnostic, fixes: &[Fix], file: &bwsim_isa::SourceFile) -> Diagnostic {
    let gluon = !file.parts().is_empty();
    for f in fixes {
        d = d.with_label(f.anchor, format!("fix: {}", f.describe(gluon, &place(file))));
    }
    d
}

/// Names a span as `FILE:LINE` (the Python file and line of a Gluon kernel's statement).
fn place(file: &bwsim_isa::SourceFile) -> impl Fn(bwsim_isa::Span) -> String + '_ {
    move |s| {
        let (line, _) = file.line_col(s.start as usize);
        format!("{}:{line}", file.file_name_of(s))
    }
}

/// The findings of `e` (and their verified fixes, one list per finding, or none);
/// `interrupted` names the signal that cut the exploration short.
fn print_exploration(
    found: &Found,
    a: &Args,
    out: &Report,
    file: &bwsim_isa::SourceFile,
    jobs: usize,
    secs: f64,
    interrupted: Option<&str>,
) {
    let (e, fixes) = (found.e, found.fixes);
    let rate = if secs > 0.0 {
        e.schedules as f64 * 60.0 / secs
    } else {
        0.0
    };
    let errors = e.findings.iter().filter(|f| f.diagnostic.is_error()).count();
    let gluon = !file.parts().is_empty();
    if out.format == Format::Sarif {
        let diags: Vec<Diagnostic> = e
            .findings
            .iter()
            .map(|f| check::annotate(f, &file.name, Some(e.schedules)))
            .collect();
        let mut log = levels::sarif_log(&diags, file);
        // Each result's replay seed and count, as SARIF properties.
        if let Some(results) = log["runs"][0]["results"].as_array_mut() {
            for (r, f) in results.iter_mut().zip(&e.findings) {
                r["properties"] = serde_json::json!({
                    "seed": f.seed,
                    "count": f.count,
                    "replay": check::replay_command(&file.name, f.seed),
                });
            }
        }
        outln!("{log}");
        return;
    }
    if out.format == Format::Json {
        let findings: Vec<serde_json::Value> = e
            .findings
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut d = diags_json(std::slice::from_ref(&f.diagnostic), file)[0].take();
                let annotated = check::annotate(f, &file.name, Some(e.schedules));
                d["rendered"] = serde_json::Value::String(bwsim_isa::diag::render(
                    &super::for_source(&[annotated], file),
                    file,
                ));
                let fx: Vec<serde_json::Value> = fixes
                    .get(i)
                    .map(|v| {
                        v.iter()
                            .map(|x| {
                                let (line, _) = file.line_col(x.anchor.start as usize);
                                let (tile, py) = x.inserted();
                                serde_json::json!({
                                    "line": line,
                                    "edit": x.kind(),
                                    "position": if x.after() { "after" } else { "before" },
                                    "insert": if gluon { py } else { tile },
                                    "schedules": x.schedules,
                                    "remaining": x.remaining,
                                    "description": x.describe(gluon, &place(file)),
                                    "diff": if gluon { None } else { x.diff(file) },
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let cx = found
                    .shrunk
                    .get(i)
                    .and_then(Option::as_ref)
                    .map(|cx| counterexample_json(cx, found.prepared, &f.diagnostic, file));
                serde_json::json!({
                    "seed": f.seed,
                    "count": f.count,
                    "replay": check::replay_command(&file.name, f.seed),
                    "diagnostic": d,
                    "fixes": fx,
                    "counterexample": cx,
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({
                "file": file.name,
                "schedules": e.schedules,
                "first_seed": a.first_seed,
                "jobs": jobs,
                "seconds": secs,
                "ok": errors == 0 && interrupted.is_none(),
                "levels": out.levels.to_json(),
                "interrupted": interrupted,
                "findings": findings,
            })
        );
        return;
    }
    let diags: Vec<Diagnostic> = e
        .findings
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let d = check::annotate(f, &file.name, Some(e.schedules));
            with_fixes(d, fixes.get(i).map_or(&[][..], |v| &v[..]), file)
        })
        .collect();
    print_diags(&diags, file);
    // The best fix of each finding as a patch of the `.tile` source.
    if !gluon {
        for (f, fx) in e.findings.iter().zip(fixes) {
            if let Some(d) = fx.first().and_then(|x| x.diff(file)) {
                let (line, _) = file.line_col(f.diagnostic.primary.span.start as usize);
                errln!(
                    "{}:{line}: fix for error[{}]:\n{d}",
                    file.name,
                    f.diagnostic.code.name()
                );
            }
        }
    }
    for (f, cx) in e.findings.iter().zip(found.shrunk) {
        if let Some(cx) = cx {
            let (line, _) = file.line_col(f.diagnostic.primary.span.start as usize);
            errln!(
                "{}:{line}: error[{}]: {}\n{}",
                file.name,
                f.diagnostic.code.name(),
                cx.summary(),
                shrink::render_rows(&cx.events(found.prepared, &f.diagnostic, Some(file)))
            );
        }
    }
    if a.fix && !fixes.is_empty() && fixes.iter().all(|v| v.is_empty()) && errors > 0 {
        errln!(
            "{}: no verified fix among the edits bwsim tries for these findings",
            file.name
        );
    }
    if let Some(sig) = interrupted {
        errln!(
            "{}: interrupted ({sig}) after {} of {} schedules (seeds {}..{}); the findings above are theirs",
            file.name,
            e.schedules,
            a.schedules,
            a.first_seed,
            a.first_seed.wrapping_add(e.schedules)
        );
    }
    errln!(
        "{}: {} schedules in {secs:.1} s ({rate:.0} schedules/min on {jobs} thread{}): {}",
        file.name,
        e.schedules,
        if jobs == 1 { "" } else { "s" },
        if e.findings.is_empty() {
            "no hazards found".to_string()
        } else {
            format!(
                "{} distinct diagnostic{}: {}",
                e.findings.len(),
                if e.findings.len() == 1 { "" } else { "s" },
                tally(&e.findings.iter().map(|f| &f.diagnostic).collect::<Vec<_>>())
            )
        }
    );
}

/// A shrunk schedule as JSON: its summary figures and the rows of its event table.
fn counterexample_json(
    cx: &Counterexample,
    p: &Prepared,
    d: &Diagnostic,
    file: &bwsim_isa::SourceFile,
) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = cx
        .events(p, d, Some(file))
        .into_iter()
        .map(|r| serde_json::json!({"time": r.time, "unit": r.unit, "event": r.text}))
        .collect();
    serde_json::json!({
        "seed": cx.seed,
        "preemptions": cx.preemptions.len(),
        "preemptions_before": cx.preemptions_before,
        "stalls": cx.stalls,
        "steps": cx.steps,
        "replays": cx.replays,
        "minimal": !cx.truncated,
        "events": rows,
    })
}
