//! `bwsim run`: simulate a kernel on the inputs its launch spec describes, then report its
//! outputs (checked against the CPU reference when the kernel has one), any trap with its span,
//! and a summary of the run. A `.ptx` file runs on the PTX front end ([`ptx`]).

mod ptx;

use super::limits::LimitArgs;
use super::npy::{self, InputArg};
use super::{diags_json, load_source, parse_override, parse_target, print_diags, CliError, CliResult};
use crate::output::write_file;
use bwsim_harness::compare::unravel;
use bwsim_isa::consts::Override;
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::{SourceFile, Target};
use bwsim_kernels::reference::{self, Comparison, Expected, Tolerance};
use bwsim_sim::session::{self, Session, SetupError, Verify};
use bwsim_sim::{Outcome, Progress, RunOptions, RunResult};
use serde_json::json;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    source: super::ptx_file::KernelSource,
    /// Seed of the input data and of the scheduler (same seed, same run).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Override a compile-time constant: --const BLOCK_M=64 (repeatable).
    #[arg(long = "const", value_name = "NAME=VALUE", value_parser = parse_override)]
    consts: Vec<Override>,
    /// Target to run for (default: the kernel's first target).
    #[arg(long, value_parser = parse_target)]
    target: Option<Target>,
    /// Write the event trace in its compact text form to this file.
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// Write the event trace as Chrome trace JSON (Perfetto, chrome://tracing) to this file.
    #[arg(long, value_name = "FILE")]
    chrome: Option<std::path::PathBuf>,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Take a launch tensor's contents from a .npy file instead of its initialiser:
    /// --input a=a.npy (repeatable; shape and element type must match the launch's tensor).
    #[arg(long = "input", value_name = "NAME=FILE.npy", value_parser = npy::parse_input)]
    inputs: Vec<InputArg>,
    /// Once the run completed, write each output tensor as DIR/NAME.npy.
    #[arg(long, value_name = "DIR")]
    save_outputs: Option<std::path::PathBuf>,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    levels: super::levels::LevelArgs,
}

/// What the run's outputs came to.
enum Verdict {
    Pass,
    Fail,
    /// Completed; the kernel has no CPU reference.
    Unchecked,
    /// Trapped, deadlocked, stopped by a diagnostic or by the step limit.
    Stopped,
}

impl Verdict {
    fn word(&self, r: &RunResult) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Unchecked => "COMPLETED (no reference to check against)",
            Verdict::Stopped => match r.outcome {
                Outcome::Trapped => "TRAP",
                Outcome::Deadlock => "DEADLOCK",
                Outcome::LimitReached(_) => "LIMIT REACHED",
                _ => "ERROR",
            },
        }
    }
}

pub fn run(a: Args) -> CliResult {
    if a.source.is_ptx() {
        return ptx::run(&a);
    }
    let format = a.levels.format(a.json)?;
    let levels = a.levels.levels()?;
    let file = load_source(&a.source.kernel)?;
    let Some(k) = super::parse_or_report_as(&file, format) else {
        return Ok(ExitCode::from(1));
    };
    // Errors whose hardware behaviour is defined (verify::CONTINUES) are reported with the
    // run's findings; the run does what the hardware does. The command line's limits over the
    // launch section's.
    let prepared = Session::new(&k, a.target, &a.consts, Verify::ToRun)
        .map(|s| s.with_limits(a.limits.limits()))
        .and_then(|s| s.inputs(a.seed).map(|inputs| (s, inputs)));
    let (
        Session {
            checked,
            plan,
            diagnostics: vdiags,
        },
        mut inputs,
    ) = match prepared {
        Ok(p) => p,
        Err(e) => {
            report_static_failure(&file, &setup_diagnostics(e), format);
            return Ok(ExitCode::from(1));
        }
    };
    npy::apply_inputs(&mut inputs, &a.inputs).map_err(CliError)?;

    // A Gluon fixture's sidecar may name the reference for its release and target
    // (`// run [3.6-3.7]: reference NAME`); else the kernel's own name.
    let reference_name = Some(Path::new(&a.source.kernel))
        .filter(|p| p.extension().is_some_and(|e| e == "ttgir"))
        .and_then(bwsim_harness::gluon::fixture_reference)
        .unwrap_or_else(|| k.name.name.clone());
    let progress = Arc::new(Progress::default());
    let opts = RunOptions {
        seed: a.seed,
        trace: a.trace.is_some() || a.chrome.is_some(),
        limits: plan.limits,
        progress: Some(progress.clone()),
        // Large MMAs split their rows over the cores (elements are computed independently:
        // the same bits on any number of threads).
        mma_exec: bwsim_sim::mma::MmaExec {
            memo: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            // Each MMA is computed on other threads while the run goes on (the same bits).
            ahead: true,
        },
        ..RunOptions::default()
    };
    // The CPU reference computes on another thread while the simulator runs (it reads the
    // same inputs; neither depends on the other).
    let (expected, result, wall) = std::thread::scope(|scope| {
        let expected = scope.spawn(|| reference::reference(&reference_name, &plan, &inputs));
        let started = Instant::now();
        let watch = interrupted_at(&file.name, a.seed, progress.clone(), plan.num_ctas());
        let result = with_progress(&progress, plan.num_ctas(), || {
            bwsim_sim::run(&checked, &plan, inputs.clone(), &opts)
        });
        drop(watch);
        let wall = started.elapsed();
        let expected = expected.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        (expected, result, wall)
    });

    if let Some(p) = &a.trace {
        write_file(p, result.trace.render(Some(&file)).as_bytes())?;
    }
    if let Some(p) = &a.chrome {
        write_file(p, result.trace.chrome_json(Some(&file)).to_string().as_bytes())?;
    }

    // Compare outputs once the run completed.
    let completed = result.outcome == Outcome::Completed;
    let saved = match (&a.save_outputs, completed) {
        (Some(dir), true) => {
            let outs: Vec<HostTensor> = outputs(&plan, &result).into_iter().cloned().collect();
            npy::save_all(dir, &outs).map_err(CliError)?
        }
        _ => Vec::new(),
    };
    let (expected, comparisons, ref_error) =
        against_reference(expected, completed.then_some(&result.tensors[..]));
    // Every diagnostic at its level (`--deny`, `--warn`, `--allow`): the verifier's (its
    // warnings, and the static errors whose hardware behaviour is defined, after which the
    // run went on), then the run's.
    let diags = levels.apply_all(vdiags.into_iter().chain(result.diagnostics.iter().cloned()));
    let verdict = if !completed || diags.iter().any(|d| d.is_error()) {
        Verdict::Stopped
    } else if ref_error.is_some()
        || comparisons
            .iter()
            .any(|(_, c, _)| c.as_ref().is_some_and(|c| !c.passed()))
    {
        Verdict::Fail
    } else if expected {
        Verdict::Pass
    } else {
        Verdict::Unchecked
    };

    let rep = Report {
        file: &file,
        args: &a,
        checked: &checked,
        plan: &plan,
        result: &result,
        cmp: &comparisons,
        reference: expected.then_some(reference_name.as_str()),
        ref_error: &ref_error,
        verdict: &verdict,
        wall,
    };
    if format == super::levels::Format::Sarif {
        outln!("{}", super::levels::sarif_log(&diags, &file));
    } else if format == super::levels::Format::Json {
        print_json(&rep, &diags, &saved);
    } else {
        print_diags(&diags, &file);
        print_text(&rep);
    }
    Ok(match verdict {
        Verdict::Pass | Verdict::Unchecked => ExitCode::SUCCESS,
        Verdict::Fail | Verdict::Stopped => ExitCode::from(1),
    })
}

/// A setup error's diagnostics; a missing `launch { }` section says how to add one.
fn setup_diagnostics(e: SetupError) -> Vec<bwsim_isa::Diagnostic> {
    match e {
        SetupError::NoLaunch { span } => vec![session::no_launch(span).with_help(
            "add a launch section: grid, tensors and the argument of every parameter (docs/tile-format.md)",
        )],
        e => e.into_diagnostics(),
    }
}

fn report_static_failure(file: &SourceFile, diags: &[bwsim_isa::Diagnostic], format: super::levels::Format) {
    super::levels::report_failure(diags, file, format, json!({"result": "ERROR"}));
    if format == super::levels::Format::Text {
        errln!("{}: not run (fix the errors above)", file.name);
    }
}

/// Until dropped, end the process on Ctrl-C or SIGTERM saying how far the simulation got
/// (published every few thousand steps).
pub(crate) fn interrupted_at(name: &str, seed: u64, p: Arc<Progress>, ctas: u64) -> crate::interrupt::Watch {
    let name = name.to_string();
    crate::interrupt::Watch::start(move |sig| {
        let (steps, done, _) = p.snapshot();
        format!(
            "{name}: interrupted ({sig}) after about {steps} simulated steps (seed {seed}), {done} of {ctas} CTAs \
             finished; no outputs to report (--max-steps or --max-wall-time stop a run and say where each warp is)"
        )
    })
}

/// Run `f` on this thread while another one shows progress on stderr once the run has taken
/// more than a second: a bar on a terminal, a line every ten seconds otherwise.
fn with_progress<T: Send>(p: &Progress, ctas: u64, f: impl FnOnce() -> T + Send) -> T {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let tty = std::io::stderr().is_terminal();
            let start = Instant::now();
            let mut bar: Option<indicatif::ProgressBar> = None;
            let mut last_line = Instant::now();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if start.elapsed() < Duration::from_secs(1) {
                    continue;
                }
                let (steps, ctas_done, _) = p.snapshot();
                if tty {
                    let b = bar.get_or_insert_with(|| {
                        let b = indicatif::ProgressBar::new(ctas);
                        if let Ok(st) = indicatif::ProgressStyle::with_template(
                            "simulating {bar:30} {pos}/{len} CTAs  {msg}  [{elapsed}]",
                        ) {
                            b.set_style(st);
                        }
                        b
                    });
                    b.set_position(ctas_done);
                    b.set_message(format!("{steps} steps"));
                } else if last_line.elapsed() >= Duration::from_secs(10) {
                    last_line = Instant::now();
                    errln!(
                        "simulating: {ctas_done}/{ctas} CTAs, {steps} steps, {:.0} s",
                        start.elapsed().as_secs_f64()
                    );
                }
            }
            if let Some(b) = bar {
                b.finish_and_clear();
            }
        });
        let r = f();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        r
    })
}

/// The reference's outputs compared with the run's `tensors` (`None`: the run did not
/// complete): whether there is a reference, the comparisons, the reference's error. A launch
/// that is not the reference's (a kernel sharing a bundled kernel's name, e.g. launched from
/// Python with its own tensor names) is left unchecked, with a note.
fn against_reference(
    expected: Option<Result<Vec<Expected>, reference::RefError>>,
    tensors: Option<&[HostTensor]>,
) -> (bool, Vec<Compared>, Option<String>) {
    let expected = match expected {
        Some(Err(e)) if e.launch_differs() => {
            errln!("note: reference skipped: the launch is not the bundled kernel's ({e})");
            None
        }
        other => other,
    };
    let (comparisons, ref_error) = match (&expected, tensors) {
        (Some(Ok(exp)), Some(t)) => (compare_all(t, exp), None),
        (Some(Err(e)), _) => (Vec::new(), Some(e.to_string())),
        _ => (Vec::new(), None),
    };
    (expected.is_some(), comparisons, ref_error)
}

/// An output's name, its comparison with the reference (`None` when the run has no such
/// tensor) and the tolerance it was compared within.
type Compared = (String, Option<Comparison>, Option<Tolerance>);

/// Each reference output with its comparison against the run's `tensors`.
fn compare_all(tensors: &[HostTensor], exp: &[Expected]) -> Vec<Compared> {
    exp.iter()
        .map(|e| {
            let c = tensors
                .iter()
                .find(|t| t.name == e.tensor)
                .map(|t| reference::compare(t, e));
            (e.tensor.clone(), c, Some(e.tol))
        })
        .collect()
}

fn outputs<'a>(plan: &LaunchPlan, r: &'a RunResult) -> Vec<&'a HostTensor> {
    let idx: Vec<usize> = if plan.outputs.is_empty() {
        (0..r.tensors.len()).collect()
    } else {
        plan.outputs.clone()
    };
    idx.into_iter().filter_map(|i| r.tensors.get(i)).collect()
}

fn type_str(t: &HostTensor) -> String {
    format!(
        "{}[{}]",
        t.dtype,
        t.shape
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn tol_str(t: &Tolerance) -> String {
    match t {
        Tolerance::Exact => "bit-exact".into(),
        Tolerance::Close { atol, rtol } => format!("atol {atol:e}, rtol {rtol:e}"),
    }
}

fn stats(t: &HostTensor) -> (f64, f64, f64, u64) {
    let (mut sum, mut lo, mut hi, mut nan) = (0.0, f64::INFINITY, f64::NEG_INFINITY, 0u64);
    for i in 0..t.numel() {
        let v = t.get(i);
        if v.is_nan() {
            nan += 1;
            continue;
        }
        sum += v;
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (sum, lo, hi, nan)
}

fn location(file: &SourceFile, span: bwsim_isa::Span) -> String {
    let (l, c) = file.line_col(span.start as usize);
    format!("{}:{l}:{c}", file.name)
}

fn consts_str(a: &Args) -> String {
    a.consts
        .iter()
        .map(|o| format!("{}={}", o.name, o.value))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a run found, as the text and JSON reports print it.
struct Report<'a> {
    file: &'a SourceFile,
    args: &'a Args,
    checked: &'a bwsim_isa::typeck::Checked<'a>,
    plan: &'a LaunchPlan,
    result: &'a RunResult,
    cmp: &'a [Compared],
    /// The CPU reference the outputs were checked against (none: the kernel has none).
    reference: Option<&'a str>,
    ref_error: &'a Option<String>,
    verdict: &'a Verdict,
    wall: Duration,
}

fn print_text(rep: &Report) {
    let (file, a, plan, r) = (rep.file, rep.args, rep.plan, rep.result);
    let g = plan.grid;
    outln!(
        "{}  target {}, seed {}, grid [{}, {}, {}] ({} CTAs), {} warps{}{}",
        file.name,
        rep.checked.target,
        a.seed,
        g[0],
        g[1],
        g[2],
        plan.num_ctas(),
        rep.checked.total_warps(),
        if rep.checked.workers.is_empty() {
            String::new()
        } else {
            format!(" in {} partitions", rep.checked.workers.len() + 1)
        },
        if a.consts.is_empty() {
            String::new()
        } else {
            format!(", {}", consts_str(a))
        }
    );
    let c = &r.counters;
    let outcome = match r.outcome {
        Outcome::Completed => "completed".to_string(),
        Outcome::Trapped => format!(
            "trapped: {}",
            r.trap.as_ref().map(|t| t.error.message()).unwrap_or("fault")
        ),
        Outcome::Deadlock => "deadlock: every agent blocked with nothing in flight".into(),
        Outcome::Error => "stopped by a diagnostic".into(),
        Outcome::LimitReached(l) => format!("stopped at the {} limit (`{}`)", l.what(), l.flag()),
    };
    outln!("outcome   {outcome}");
    if let Some(t) = &r.trap {
        outln!(
            "  at      {} `{}` in {}, t={}",
            location(file, t.span),
            t.op,
            t.agent,
            t.time
        );
        outln!("  reason  {}", t.reason);
    }
    let canceled = if c.ctas_canceled > 0 {
        format!(" ({} canceled by clc.try_cancel)", c.ctas_canceled)
    } else {
        String::new()
    };
    outln!(
        "summary   {} steps, logical time {}, {} of {} CTAs finished{canceled}, {} async ops, {} MMAs, {} bytes by TMA, {:.2} s",
        c.steps,
        c.time,
        c.ctas,
        plan.num_ctas(),
        c.async_ops,
        c.mmas,
        c.tma_bytes,
        rep.wall.as_secs_f64()
    );
    if let Some(e) = rep.ref_error {
        outln!("reference error: {e}");
    }
    if r.outcome == Outcome::Completed {
        print_outputs(&outputs(plan, r), rep.cmp);
    }
    outln!("result    {}", rep.verdict.word(r));
}

/// The `outputs` block of the text report: each output with its comparison with the
/// reference, or its statistics when it has none; then each reference output the run lacks.
fn print_outputs(outs: &[&HostTensor], cmp: &[Compared]) {
    outln!("outputs");
    let w = outs.iter().map(|t| t.name.len()).max().unwrap_or(1);
    for t in outs.iter().copied() {
        let ty = type_str(t);
        match cmp.iter().find(|(n, _, _)| *n == t.name) {
            Some((_, Some(cm), Some(tol))) if cm.passed() => outln!(
                "  {:<w$}  {ty}  PASS  {} elements, {}, max |err| {:.3e}",
                t.name,
                cm.elements,
                tol_str(tol),
                cm.max_abs_err
            ),
            Some((_, Some(cm), Some(tol))) => {
                let first = cm
                    .first_mismatch
                    .map(|(i, got, want)| {
                        format!(
                            "; first at {:?}: got {got}, expected {want}",
                            unravel(i, &t.shape)
                        )
                    })
                    .unwrap_or_default();
                outln!(
                    "  {:<w$}  {ty}  FAIL  {} of {} elements differ ({}), max |err| {:.3e}{first}",
                    t.name,
                    cm.mismatches,
                    cm.elements,
                    tol_str(tol),
                    cm.max_abs_err
                )
            }
            _ => {
                let (sum, lo, hi, nan) = stats(t);
                let head: Vec<String> = (0..t.numel().min(4)).map(|i| format!("{}", t.get(i))).collect();
                outln!(
                    "  {:<w$}  {ty}  sum {sum:.6e}, min {lo}, max {hi}, {nan} NaN, first [{}{}]",
                    t.name,
                    head.join(", "),
                    if t.numel() > 4 { ", ..." } else { "" }
                );
            }
        }
    }
    // A reference output that the launch does not list is still checked.
    for (n, cm, _) in cmp {
        if cm.is_none() {
            outln!("  {n}  FAIL  the run has no tensor of that name");
        }
    }
}

/// Each output as the JSON report gives it: its comparison with the reference, or its
/// statistics when it has none.
fn outputs_json(outs: &[&HostTensor], cmp: &[Compared]) -> Vec<serde_json::Value> {
    outs.iter()
        .copied()
        .map(|t| {
            let mut o = json!({"tensor": t.name, "dtype": t.dtype.to_string(), "shape": t.shape});
            match cmp.iter().find(|(n, _, _)| *n == t.name) {
                Some((_, Some(cm), Some(tol))) => {
                    o["checked"] = json!(true);
                    o["pass"] = json!(cm.passed());
                    o["elements"] = json!(cm.elements);
                    o["mismatches"] = json!(cm.mismatches);
                    o["max_abs_err"] = json!(cm.max_abs_err);
                    o["tolerance"] = match tol {
                        Tolerance::Exact => json!("exact"),
                        Tolerance::Close { atol, rtol } => json!({"atol": atol, "rtol": rtol}),
                    };
                    o["first_mismatch"] = match cm.first_mismatch {
                        Some((i, got, want)) => {
                            json!({"index": unravel(i, &t.shape), "actual": got, "expected": want})
                        }
                        None => json!(null),
                    };
                }
                _ => {
                    let (sum, lo, hi, nan) = stats(t);
                    o["checked"] = json!(false);
                    o["sum"] = json!(sum);
                    o["min"] = json!(lo);
                    o["max"] = json!(hi);
                    o["nan"] = json!(nan);
                }
            }
            o
        })
        .collect()
}

fn print_json(rep: &Report, diags: &[bwsim_isa::Diagnostic], saved: &[std::path::PathBuf]) {
    let (file, a, plan, r) = (rep.file, rep.args, rep.plan, rep.result);
    let outs = outputs_json(&outputs(plan, r), rep.cmp);
    let trap = r.trap.as_ref().map(|t| {
        let (l, c) = file.line_col(t.span.start as usize);
        json!({"error": t.error.message(), "code": t.error.code(), "reason": t.reason, "op": t.op,
               "agent": t.agent, "time": t.time, "file": file.file_name_of(t.span), "line": l, "column": c})
    });
    let v = json!({
        "file": file.name,
        "kernel": rep.checked.kernel.name.name,
        "target": rep.checked.target.to_string(),
        "seed": a.seed,
        "consts": a.consts.iter().map(|o| json!({"name": o.name, "value": o.value})).collect::<Vec<_>>(),
        "grid": plan.grid,
        "outcome": r.outcome,
        "result": rep.verdict.word(r),
        "ok": matches!(rep.verdict, Verdict::Pass | Verdict::Unchecked),
        "outputs": outs,
        "reference": rep.reference,
        "reference_error": rep.ref_error,
        "trap": trap,
        "levels": a.levels.levels().map(|l| l.to_json()).unwrap_or_default(),
        "diagnostics": diags_json(diags, file),
        "counters": r.counters,
        "saved": saved.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "wall_seconds": rep.wall.as_secs_f64(),
    });
    outln!("{v}");
}
