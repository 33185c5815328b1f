//! `bwsim time`: the timing model on a chip, with an optional Perfetto trace.

use super::{load_source, parse_or_report, parse_override, print_diags, CliError, CliResult};
use bwsim_isa::consts::Override;
use bwsim_sim::chips;
use bwsim_sim::session::{Session, SetupError, Verify};
use bwsim_sim::timing::{self, TimeOptions, TraceMode};
use std::process::ExitCode;

/// Inputs larger than this are not materialised for the functional pre-run.
const FUNCTIONAL_LIMIT_BYTES: u64 = 256 << 20;

#[derive(clap::Args)]
pub struct Args {
    /// A .tile file, a .ttgir file (Gluon) or a bundled kernel name.
    #[arg(value_parser = super::kernel_spec())]
    kernel: String,
    /// The chip to time on.
    #[arg(long, value_parser = ["b200", "gb200", "h100", "h200"])]
    chip: String,
    /// Override a compile-time constant: --const K=16384 (repeatable). NUM_SMS defaults to the
    /// chip's SM count when the kernel declares it.
    #[arg(long = "const", value_name = "NAME=VALUE", value_parser = parse_override)]
    consts: Vec<Override>,
    /// Skip the functional run (and so tile payloads altogether): what full-size problems need.
    #[arg(long)]
    timing_only: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Write a Chrome/Perfetto trace of one SM's CTAs and the HBM bandwidth to this file.
    #[arg(long, value_name = "OUT.json")]
    chrome: Option<std::path::PathBuf>,
    /// Write the same trace as compact text (one event per line) to this file.
    #[arg(long, value_name = "OUT.txt")]
    text_trace: Option<std::path::PathBuf>,
    /// The SM whose CTAs the trace shows.
    #[arg(long, default_value_t = 0)]
    trace_sm: u32,
    /// Cycles a partition may run ahead of the event queue (0: strict time order, slower).
    #[arg(long, default_value_t = timing::DEFAULT_LOOKAHEAD, value_parser = super::non_negative_f64)]
    lookahead: f64,
    /// Seed of the functional run's inputs and schedule.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Take a launch tensor's contents for the functional run from a .npy file:
    /// --input a=a.npy (repeatable).
    #[arg(long = "input", value_name = "NAME=FILE.npy", value_parser = super::npy::parse_input)]
    inputs: Vec<super::npy::InputArg>,
    /// Replace one number of the chip table for this run: --set commit_latency=900
    /// (repeatable; what `scripts/timing-blackwell fit` varies). The report's `trust` then
    /// lists the field as set.
    #[arg(long = "set", value_name = "FIELD=VALUE", value_parser = parse_chip_setting)]
    set: Vec<(String, f64)>,
    /// Sweep a constant over values: --sweep NUM_BUFFERS=2,3,4 (repeatable; every combination
    /// is timed, without payloads, and the configurations are printed fastest first with their
    /// throughput, what limits them and how far to trust the prediction).
    #[arg(long = "sweep", value_name = "NAME=V1,V2,...", value_parser = super::time_sweep::parse_sweep)]
    sweep: Vec<(String, Vec<String>)>,
    /// Show the sweep's progress bar even when stderr is not a terminal.
    #[arg(long, requires = "sweep")]
    progress: bool,
    /// Limits of the functional run that checks the kernel first.
    #[command(flatten)]
    limits: super::limits::LimitArgs,
}

pub fn run(a: Args) -> CliResult {
    let chip = chips::chip(&a.chip).ok_or_else(|| CliError(format!("unknown chip `{}`", a.chip)))?;
    let file = load_source(&a.kernel)?;
    let Some(k) = parse_or_report(&file, a.json) else {
        return Ok(ExitCode::from(1));
    };
    if !a.sweep.is_empty() {
        if a.chrome.is_some() || a.text_trace.is_some() || !a.set.is_empty() || !a.inputs.is_empty() {
            return Err(CliError(
                "--sweep times many configurations without payloads: it takes no --chrome, --text-trace, --set or --input"
                    .into(),
            ));
        }
        return super::time_sweep::run(&k, &file, chip, &a.consts, &a.sweep, a.json, a.progress);
    }
    let overrides = timing::chip_overrides(&k, chip, &a.consts);
    // Verified for the chip's target: every verifier error stops (the timing model runs only
    // kernels without any).
    let mut s = match Session::new(&k, Some(chip.target), &overrides, Verify::Strict) {
        Ok(s) => s,
        Err(SetupError::NoLaunch { .. }) => {
            return Err(CliError(format!(
                "`{}` has no `launch {{ }}` section to time",
                file.name
            )));
        }
        Err(e) => {
            report_diags(&e.into_diagnostics(), &file, a.json);
            return Ok(ExitCode::from(1));
        }
    };
    if !a.timing_only {
        let bytes = s.plan.total_bytes();
        if bytes > FUNCTIONAL_LIMIT_BYTES {
            return Err(CliError(format!(
                "the launch has {} MiB of tensors, too many for the functional run that checks the kernel first; \
                 pass --timing-only to time it without running its payloads",
                bytes >> 20
            )));
        }
        if !a.json {
            errln!(
                "functional run: {} CTAs, {} KiB of tensors (--timing-only skips it)",
                s.plan.num_ctas(),
                bytes >> 10
            );
        }
        s = s.with_limits(a.limits.limits());
        let mut inputs = match s.inputs(a.seed) {
            Ok(t) => t,
            Err(e) => {
                report_diags(&e.into_diagnostics(), &file, a.json);
                return Ok(ExitCode::from(1));
            }
        };
        super::npy::apply_inputs(&mut inputs, &a.inputs).map_err(CliError)?;
        let mut opts = bwsim_sim::RunOptions {
            seed: a.seed,
            trace: false,
            limits: s.plan.limits,
            ..bwsim_sim::RunOptions::default()
        };
        let progress = std::sync::Arc::new(bwsim_sim::Progress::default());
        opts.progress = Some(progress.clone());
        let watch = super::run::interrupted_at(&file.name, a.seed, progress, s.plan.num_ctas());
        let r = bwsim_sim::run(&s.checked, &s.plan, inputs, &opts);
        drop(watch);
        if !r.ok() {
            report_diags(&r.diagnostics, &file, a.json);
            if !a.json {
                errln!("the functional run ended with {:?}: not timed", r.outcome);
            }
            return Ok(ExitCode::from(1));
        }
    }
    let mut opts = TimeOptions::new(chip);
    for (field, value) in &a.set {
        opts.chip
            .set(field, *value)
            .map_err(|e| CliError(e.to_string()))?;
    }
    opts.lookahead_cycles = a.lookahead.max(0.0);
    if a.chrome.is_some() || a.text_trace.is_some() {
        if a.trace_sm >= chip.sms {
            return Err(CliError(format!(
                "--trace-sm {} but {} has {} SMs",
                a.trace_sm, chip.name, chip.sms
            )));
        }
        opts.trace = TraceMode::Sm(a.trace_sm);
    }
    let name = file.name.clone();
    let chip_name = chip.name.to_string();
    let watch = crate::interrupt::Watch::start(move |sig| {
        format!("{name}: interrupted ({sig}) in the timing model on {chip_name}; nothing to report")
    });
    let timed = timing::time(&s.checked, &s.plan, &opts);
    drop(watch);
    let t = match timed {
        Ok(t) => t,
        Err(e) => {
            report_diags(&e.to_diagnostics(), &file, a.json);
            return Ok(ExitCode::from(1));
        }
    };
    if let (Some(path), Some(tr)) = (&a.chrome, &t.trace) {
        let v = tr.chrome_json(Some(&file));
        let text = serde_json::to_string(&v).map_err(|e| CliError(e.to_string()))?;
        crate::output::write_file(path, text.as_bytes())?;
        if !a.json {
            errln!(
                "wrote {} ({} events of SM {}; open it in ui.perfetto.dev)",
                path.display(),
                tr.events.len(),
                a.trace_sm
            );
        }
    }
    if let (Some(path), Some(tr)) = (&a.text_trace, &t.trace) {
        crate::output::write_file(path, tr.text().as_bytes())?;
    }
    if a.json {
        let mut v = serde_json::to_value(&t.report).map_err(|e| CliError(e.to_string()))?;
        if let Some(o) = v.as_object_mut() {
            o.insert("file".into(), serde_json::Value::String(file.name.clone()));
            o.insert("trust".into(), trust_json(&opts.chip, &a.set));
        }
        outln!("{v}");
    } else {
        out!("{}", t.report.render());
        outln!("{}", trust_line(&opts.chip, &a.set));
    }
    Ok(ExitCode::SUCCESS)
}

/// The chip table's provenance as `--json` reports it: the summary, the calibrated and the
/// estimated fields, and the fields this run replaced with `--set`.
fn trust_json(chip: &chips::Chip, set: &[(String, f64)]) -> serde_json::Value {
    let t = chip.trust();
    serde_json::json!({
        "summary": t.summary,
        "calibrated": t.calibrated,
        "estimates": t.estimates,
        "set": set.iter().map(|(f, v)| serde_json::json!({ "field": f, "value": v })).collect::<Vec<_>>(),
    })
}

/// The same as one line of the text report.
fn trust_line(chip: &chips::Chip, set: &[(String, f64)]) -> String {
    let t = chip.trust();
    let mut s = format!(
        "  trust         {}; {} figures calibrated, {} estimates (`--json` lists them)",
        t.summary,
        t.calibrated.len(),
        t.estimates.len()
    );
    if !set.is_empty() {
        let names: Vec<String> = set.iter().map(|(f, v)| format!("{f}={v}")).collect();
        s.push_str(&format!("; this run sets {}", names.join(", ")));
    }
    s
}

/// `FIELD=VALUE` of `--set`.
fn parse_chip_setting(s: &str) -> Result<(String, f64), String> {
    let (field, value) = s
        .split_once('=')
        .ok_or_else(|| format!("expected FIELD=VALUE, got `{s}`"))?;
    let value: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("`{value}` is not a number"))?;
    let mut probe = chips::B200;
    probe.set(field.trim(), value).map_err(|e| e.to_string())?;
    Ok((field.trim().to_string(), value))
}

fn report_diags(d: &[bwsim_isa::Diagnostic], file: &bwsim_isa::SourceFile, json: bool) {
    if json {
        outln!(
            "{}",
            serde_json::json!({ "file": file.name, "ok": false, "diagnostics": super::diags_json(d, file) })
        );
    } else {
        print_diags(d, file);
    }
}
