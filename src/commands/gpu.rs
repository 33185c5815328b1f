//! `bwsim gpu`: run kernels on the local GPU and diff them against the simulator (the
//! differential harness lives in `bwsim_harness`). A `.ptx` file runs as it is against the
//! PTX front end (`bwsim_harness::ptxfile`); `--all` includes the PTX fixtures (cases
//! `ptx/NAME.TARGET`, `--filter ptx/` selects them).

use super::npy::{self, InputArg};
use super::{parse_override, parse_target, CliError, CliResult};
use bwsim_harness::{self as harness, cases, gluon, ptxfile, Gpu, Options, Report, Verdict, NO_GPU};
use bwsim_isa::consts::Override;
use bwsim_isa::Target;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// Exit status of `bwsim gpu --all` when no case ran because there is no GPU (the autotools
/// "skipped" convention): neither a pass (0) nor a failure (1).
pub const EXIT_NO_GPU: u8 = 77;

#[derive(clap::Args)]
pub struct Args {
    /// A .tile file, a .ttgir file (Gluon), a .ptx file (run as it is, against the PTX front
    /// end) or a bundled kernel name (omit with --all).
    #[arg(required_unless_present_any = ["all", "probe", "list"], conflicts_with = "all", value_parser = super::kernel_spec())]
    kernel: Option<String>,
    /// Run every differential case that supports the local GPU's architecture.
    #[arg(long)]
    all: bool,
    /// Only run the cases whose name contains this text (with --all; imported Gluon kernels
    /// are named `gluon/PATH`).
    #[arg(long, value_name = "TEXT", requires = "all")]
    filter: Option<String>,
    /// Where --all and --list find the Gluon fixtures (every `.ttgir` below it, with its
    /// `.launch` sidecar) [default: tests/gluon, when it exists].
    #[arg(long, value_name = "DIR")]
    gluon_dir: Option<std::path::PathBuf>,
    /// Where --all and --list find PTX files (every `.ptx` in it; each with its launch sidecar
    /// next to it, else NAME.launch in the Gluon fixtures' folder)
    /// [default: ptxfront/tests/fixtures/triton-3.9, when it exists].
    #[arg(long, value_name = "DIR")]
    ptx_dir: Option<std::path::PathBuf>,
    /// Replace a launch tensor by an array instead of random data: --input a=a.npy
    /// (repeatable; shape and element type must match the launch's tensor).
    #[arg(long = "input", value_name = "NAME=FILE.npy", value_parser = npy::parse_input, conflicts_with_all = ["all", "no_check"])]
    inputs: Vec<InputArg>,
    /// Write the GPU's output tensors into DIR as NAME.npy once it finished.
    #[arg(long, value_name = "DIR", conflicts_with = "all")]
    save_outputs: Option<std::path::PathBuf>,
    /// Override a compile-time constant: --const BLOCK_N=128 (repeatable).
    #[arg(long = "const", value_name = "NAME=VALUE", value_parser = parse_override)]
    consts: Vec<Override>,
    /// Target (default: the local GPU's; sm_100a kernels on a Hopper GPU report that they need
    /// Blackwell).
    #[arg(long, value_parser = parse_target)]
    target: Option<Target>,
    /// Seed of the random inputs and of the simulator's schedule.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Prepare every launch (lower, assemble, inputs, tensor maps) without running anything.
    #[arg(long)]
    dry_run: bool,
    /// Watchdog per launch, in seconds: a kernel still running then is reported as a hang.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    /// Timed repetitions after the checked launch (GPU time column).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    reps: u32,
    /// Timing mode: N timed launches (CUDA events) after the first launch, which warms up and
    /// is the one checked; the JSON gains every time (`times_ms`), `median_ms` and `min_ms`.
    #[arg(long, value_name = "N", conflicts_with = "reps", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    time: Option<u32>,
    /// Compare the GPU's outputs with the simulator's within `atol + rtol * |sim|` instead of
    /// the kernel's own comparison (a bundled kernel's tolerance class; bit for bit
    /// otherwise): for kernels whose float folds the GPU orders differently (row sums).
    #[arg(long, value_name = "F", requires = "rtol", conflicts_with = "all", value_parser = parse_tol)]
    atol: Option<f64>,
    /// The relative part of `--atol`'s tolerance.
    #[arg(long, value_name = "F", requires = "atol", conflicts_with = "all", value_parser = parse_tol)]
    rtol: Option<f64>,
    /// Do not run the simulator or compare (the GPU alone, for timing full-size problems).
    #[arg(long)]
    no_check: bool,
    /// For a .ptx file: its launch sidecar (default: NAME.launch next to the file or in its
    /// parent, else in the Gluon fixtures' folder).
    #[arg(long, value_name = "FILE", conflicts_with = "all")]
    launch: Option<std::path::PathBuf>,
    /// Print the local GPU (or why there is none) and exit.
    #[arg(long)]
    probe: bool,
    /// List the differential cases and exit.
    #[arg(long)]
    list: bool,
    /// One JSON object per case instead of the table.
    #[arg(long)]
    json: bool,
}

fn exe() -> Result<std::path::PathBuf, CliError> {
    std::env::current_exe().map_err(|e| CliError(format!("cannot locate the bwsim executable: {e}")))
}

/// `given`, else `default` when it is a folder here.
fn folder<'a>(given: Option<&'a Path>, default: &'a str) -> Option<&'a Path> {
    given.or_else(|| Some(Path::new(default)).filter(|d| d.is_dir()))
}

/// The suite: the generated and bundled cases, then the Gluon fixtures, then the PTX files.
fn suite(gluon_dir: Option<&Path>, ptx_dir: Option<&Path>) -> Result<Vec<cases::Case>, CliError> {
    let mut v = cases::all();
    let gluon_dir = folder(gluon_dir, gluon::DEFAULT_DIR);
    if let Some(dir) = gluon_dir {
        let fixtures = gluon::fixtures(dir, &v).map_err(CliError)?;
        v.extend(fixtures);
    }
    if let Some(dir) = folder(ptx_dir, ptxfile::DEFAULT_DIR) {
        v.extend(ptxfile::fixtures(dir, gluon_dir).map_err(CliError)?);
    }
    Ok(v)
}

pub fn run(a: Args) -> CliResult {
    let cases_all = if a.all || a.list {
        suite(a.gluon_dir.as_deref(), a.ptx_dir.as_deref())?
    } else {
        Vec::new()
    };
    if a.list {
        for c in &cases_all {
            let t: Vec<&str> = c.targets.iter().map(|t| t.name()).collect();
            outln!("{:<60} {:<16} {:?}", c.name, t.join(","), c.check);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let exe = exe()?;
    let gpu = if a.dry_run {
        Gpu::Absent("dry run".into())
    } else {
        Gpu::probe(&exe)
    };
    if a.probe {
        return Ok(match &gpu {
            Gpu::Present(i) => {
                outln!(
                    "{} (sm_{}){}",
                    i.name,
                    i.sm,
                    i.target().map(|t| format!(", runs {t}")).unwrap_or_default()
                );
                ExitCode::SUCCESS
            }
            Gpu::Absent(why) => {
                outln!("{NO_GPU}: {why}");
                ExitCode::from(EXIT_NO_GPU)
            }
        });
    }
    let opts = Options {
        seed: a.seed,
        dry_run: a.dry_run,
        timeout: Duration::from_secs(a.timeout.max(1)),
        timing_reps: a.time.unwrap_or(a.reps),
        check: !a.no_check,
        exe,
        inputs: a.inputs.clone(),
        save_outputs: a.save_outputs.clone(),
    };
    let local = match &gpu {
        Gpu::Present(i) => i.target(),
        Gpu::Absent(_) => None,
    };
    // The (case, target) pairs to run.
    let mut work: Vec<(cases::Case, Target)> = Vec::new();
    if a.all {
        for c in cases_all {
            if a.filter.as_deref().is_some_and(|f| !c.name.contains(f)) {
                continue;
            }
            let targets: Vec<Target> = match (a.target, local) {
                (Some(t), _) => c.targets.iter().copied().filter(|x| *x == t).collect(),
                // On a GPU: its target if the case has it, else the case's first (reported as
                // needing another architecture).
                (None, Some(l)) => vec![if c.targets.contains(&l) { l } else { c.targets[0] }],
                // Dry run or no GPU: every target the case lists.
                (None, None) => c.targets.clone(),
            };
            for t in targets {
                work.push((c.clone(), t));
            }
        }
    } else if a.kernel.as_deref().is_some_and(super::ptx_file::is_ptx) {
        let spec = a.kernel.clone().unwrap_or_default();
        let path = Path::new(&spec);
        super::read_text(path)?;
        if !a.consts.is_empty() {
            return Err(CliError(format!(
                "{spec}: --const does not apply to a PTX file (its constants are compiled in)"
            )));
        }
        let check = match (a.atol, a.rtol) {
            (Some(atol), Some(rtol)) => Some(cases::Check::Tolerance { atol, rtol }),
            _ => None,
        };
        let launch = match &a.launch {
            Some(p) => Some(p.clone()),
            None => ptxfile::sidecar_for(path, folder(a.gluon_dir.as_deref(), gluon::DEFAULT_DIR)),
        };
        let c = ptxfile::case(path, launch, check);
        let target = a.target.unwrap_or(c.targets[0]);
        work.push((c, target));
    } else {
        let spec = a.kernel.clone().unwrap_or_default();
        let path = std::path::Path::new(&spec);
        let (k, text) = if bwsim_gluon::is_ttgir(path) {
            // A Gluon kernel: imported, then run as the `.tile` text of the import (launch
            // section from its sidecar included).
            let k = super::load_ttgir(path)
                .map_err(|e| CliError(format!("cannot read `{spec}`: {e}")))?
                .kernel
                .map_err(|_| CliError(format!("`{spec}` does not import (run `bwsim import {spec}`)")))?;
            let text = bwsim_isa::print(&k);
            (k, text)
        } else {
            let file = super::load_source(&spec)?;
            let k = bwsim_isa::parse(&file)
                .map_err(|_| CliError(format!("`{spec}` does not parse (run `bwsim verify {spec}`)")))?;
            (k, file.text)
        };
        // A bundled kernel, or the Gluon fixture `NAME.TARGET.ttgir` of one, keeps its
        // tolerance class from the case list.
        let twin = if bwsim_gluon::is_ttgir(path) {
            path.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.split('.').next())
                .unwrap_or_default()
                .to_string()
        } else {
            spec.clone()
        };
        let target = a
            .target
            .or(local.filter(|l| k.targets.contains(l)))
            .or(k.targets.first().copied())
            .unwrap_or(Target::Sm100a);
        // A bundled kernel keeps its tolerance class from the case list.
        let check = cases::all()
            .into_iter()
            .find(|c| matches!(c.source, cases::Source::Bundled(n) if n == twin))
            .map(|c| c.check)
            .unwrap_or(cases::Check::Exact);
        // A Gluon fixture's sidecar tolerance (`// gpu: atol=A rtol=R`) applies as in `--all`.
        let check = match bwsim_gluon::is_ttgir(path)
            .then(|| gluon::sidecar_tolerance(path))
            .flatten()
        {
            Some(c) => c,
            None => check,
        };
        let check = match (a.atol, a.rtol) {
            (Some(atol), Some(rtol)) => cases::Check::Tolerance { atol, rtol },
            _ => check,
        };
        let consts: Vec<String> = a
            .consts
            .iter()
            .map(|o| format!("{}={}", o.name, o.value))
            .collect();
        let name = if consts.is_empty() {
            k.name.name.clone()
        } else {
            format!("{}[{}]", k.name.name, consts.join(","))
        };
        work.push((
            cases::Case {
                name,
                source: cases::Source::Inline(text),
                consts,
                targets: k.targets.clone(),
                check,
            },
            target,
        ));
    }
    if !a.json {
        match &gpu {
            Gpu::Present(i) => errln!("GPU: {} (sm_{})", i.name, i.sm),
            Gpu::Absent(why) if !a.dry_run => {
                errln!("{NO_GPU} ({why}): every case is prepared, none runs")
            }
            Gpu::Absent(_) => {
                errln!("dry run: every case is lowered, assembled and prepared up to the launch")
            }
        }
    }
    // Table columns: kernel, configuration (the case's overrides), target, ...
    let split = |name: &str| -> (String, String) {
        match name.split_once('[') {
            Some((k, c)) => (k.to_string(), c.trim_end_matches(']').to_string()),
            None => (name.to_string(), "default".to_string()),
        }
    };
    // A column as wide as its widest entry, within [lo, hi].
    let width = |part: fn((String, String)) -> String, lo: usize, hi: usize| {
        let widest = work.iter().map(|(c, _)| part(split(&c.name)).len()).max();
        widest.unwrap_or(lo).clamp(lo, hi)
    };
    let kw = width(|(k, _)| k, 6, 40);
    let cw = width(|(_, c)| c, 7, 48);
    if !a.json {
        outln!(
            "{:<kw$}  {:<cw$}  {:<8}  {:<10}  {:>10}  result",
            "kernel",
            "config",
            "target",
            "max error",
            "GPU ms"
        );
    }
    let progress = !a.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let print = |r: &Report| {
        if a.json {
            outln!(
                "{}",
                serde_json::json!({
                    "case": r.case,
                    "kernel": split(&r.case).0,
                    "config": split(&r.case).1,
                    "target": r.target.map(|t| t.name()),
                    "result": r.verdict.label(),
                    "max_err": r.max_err,
                    "gpu_ms": r.gpu_ms,
                    "times_ms": r.times_ms,
                    "median_ms": harness::median(&r.times_ms),
                    "min_ms": r.times_ms.iter().copied().reduce(f32::min),
                    "checked": !a.no_check,
                    "notes": r.notes,
                })
            );
            return;
        }
        if progress {
            err!("\x1b[2K\r");
        }
        let (kernel, config) = split(&r.case);
        outln!(
            "{:<kw$}  {:<cw$}  {:<8}  {:<10}  {:>10}  {}",
            kernel,
            config,
            r.target.map(|t| t.name()).unwrap_or("-"),
            r.max_err
                .map(|e| format!("{e:.3e}"))
                .unwrap_or_else(|| "-".into()),
            r.gpu_ms.map(|m| format!("{m:.4}")).unwrap_or_else(|| "-".into()),
            r.verdict.label()
        );
        for n in &r.notes {
            outln!("    {n}");
        }
    };
    let show_progress = |i: usize, name: &str, t: Target| {
        if progress {
            err!("\x1b[2K\r[{}/{}] {name} ({t})...", i + 1, work.len());
            let _ = std::io::stderr().flush();
        }
    };
    let mut reports: Vec<Report> = Vec::new();
    if opts.dry_run {
        // Nothing touches the GPU: prepare the cases in parallel, print them in order.
        reports = bwsim_isa::pool::map_ordered(&work, bwsim_isa::pool::threads(8), |i, (c, t)| {
            show_progress(i, &c.name, *t);
            harness::run_case(c, *t, &gpu, &opts)
        });
        reports.iter().for_each(&print);
    } else {
        for (i, (c, t)) in work.iter().enumerate() {
            // Nobody reads the table any more (`bwsim gpu --all | head`): launch nothing else.
            if crate::output::stdout_closed() {
                break;
            }
            show_progress(i, &c.name, *t);
            let r = harness::run_case(c, *t, &gpu, &opts);
            print(&r);
            reports.push(r);
        }
    }
    let count = |f: &dyn Fn(&Verdict) -> bool| reports.iter().filter(|r| f(&r.verdict)).count();
    let (pass, fail, err, skip, prep) = (
        count(&|v| matches!(v, Verdict::Pass | Verdict::Unchecked)),
        count(&|v| matches!(v, Verdict::Fail(_))),
        count(&|v| matches!(v, Verdict::Error(_))),
        count(&|v| matches!(v, Verdict::Skipped(_))),
        count(&|v| *v == Verdict::Prepared),
    );
    if !a.json {
        outln!(
            "{} case(s): {pass} passed, {fail} failed, {err} errors, {skip} skipped, {prep} prepared",
            reports.len()
        );
    }
    Ok(if fail + err > 0 {
        ExitCode::from(1)
    } else if !a.dry_run && pass == 0 && skip > 0 && matches!(gpu, Gpu::Absent(_)) {
        ExitCode::from(EXIT_NO_GPU)
    } else {
        ExitCode::SUCCESS
    })
}

/// A tolerance: a finite, non-negative number.
fn parse_tol(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a finite, non-negative number")),
    }
}
