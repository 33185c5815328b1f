//! `bwsim time --sweep`: the timing model over every combination of the swept constants,
//! ranked by predicted time: the autotuning a kernel author would otherwise need a GPU for.
//!
//! Each configuration is the kernel with the `--const` overrides and one value of every swept
//! constant; it is verified for the chip's target and timed without its payloads (the
//! functional run is skipped: a sweep asks which configuration is fastest, `bwsim check` and
//! `bwsim run` whether one is right). A configuration the verifier or the timing model refuses
//! (shared memory or tensor memory over budget, a shape the MMA does not take) is listed with
//! the reason, not ranked.

use super::{CliError, CliResult};
use bwsim_isa::consts::Override;
use bwsim_isa::ir::Kernel;
use bwsim_sim::chips::Chip;
use bwsim_sim::session::{Session, Verify};
use bwsim_sim::timing::{self, TimeOptions, TimingReport};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Configurations a sweep runs at the most.
const MAX_CONFIGS: usize = 4096;

/// `NAME=V1,V2,...` of `--sweep`.
pub fn parse_sweep(s: &str) -> Result<(String, Vec<String>), String> {
    let (name, values) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=V1,V2,..., got `{s}`"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("`{s}` names no constant"));
    }
    let values: Vec<String> = values
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Err(format!("`{s}` gives no value"));
    }
    Ok((name.to_string(), values))
}

/// Every combination of the swept values, the first constant varying slowest.
fn combinations(sweep: &[(String, Vec<String>)]) -> Vec<Vec<Override>> {
    let mut out: Vec<Vec<Override>> = vec![Vec::new()];
    for (name, values) in sweep {
        out = out
            .into_iter()
            .flat_map(|base| {
                values.iter().map(move |v| {
                    let mut c = base.clone();
                    c.push(Override {
                        name: name.clone(),
                        value: v.clone(),
                    });
                    c
                })
            })
            .collect();
    }
    out
}

/// One configuration's outcome.
struct Row {
    config: Vec<Override>,
    result: Result<TimingReport, String>,
}

/// How far to trust a prediction: what bounds it, and whether the chip figures behind that
/// bound were calibrated or estimated.
fn trust(r: &TimingReport, chip: &Chip) -> String {
    let t = chip.trust();
    let cal = |f: &str| t.calibrated.contains(&f);
    let bound = |fields: &[&str]| {
        let c = fields.iter().filter(|f| cal(f)).count();
        if c == fields.len() {
            "calibrated"
        } else if c == 0 {
            "estimated"
        } else {
            "partly calibrated"
        }
    };
    let (what, fields): (&str, &[&str]) = if r.critical.starts_with("tensor pipe") {
        ("tensor-pipe bound", &["mma_issue_cycles", "commit_latency"])
    } else if r.critical.starts_with("HBM") {
        ("HBM bound", &["hbm_bytes_per_s"])
    } else if r.critical.starts_with("L2") {
        ("L2 bound", &["l2_bytes_per_cycle"])
    } else if r.critical.starts_with("TMA") {
        ("TMA bound", &["tma_bytes_per_cycle_sm", "tma_issue_cycles"])
    } else {
        (
            "latency bound",
            &[
                "tma_hbm_latency",
                "tma_l2_latency",
                "commit_latency",
                "mbarrier_latency",
                "tmem_latency",
            ],
        )
    };
    format!("{what}, {}", bound(fields))
}

fn label(config: &[Override]) -> String {
    config
        .iter()
        .map(|o| format!("{}={}", o.name, o.value))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Time `k` (from `file`) on `chip` for every combination of `sweep` over the `base`
/// overrides, and print the configurations ranked.
pub fn run(
    k: &Kernel,
    file: &bwsim_isa::SourceFile,
    chip: &Chip,
    base: &[Override],
    sweep: &[(String, Vec<String>)],
    json: bool,
    progress: bool,
) -> CliResult {
    for (name, _) in sweep {
        if !k.consts.iter().any(|c| c.name.name == *name) {
            let known: Vec<&str> = k.consts.iter().map(|c| c.name.name.as_str()).collect();
            return Err(CliError(format!(
                "--sweep {name}: `{}` declares no constant `{name}` (its constants: {})",
                file.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
        if base.iter().any(|o| o.name == *name) {
            return Err(CliError(format!("`{name}` is both swept and set with --const")));
        }
    }
    let configs = combinations(sweep);
    if configs.len() > MAX_CONFIGS {
        return Err(CliError(format!(
            "the sweep has {} configurations, more than {MAX_CONFIGS}: sweep fewer values",
            configs.len()
        )));
    }
    let bar = if progress || (std::io::stderr().is_terminal() && !json) {
        let b = ProgressBar::with_draw_target(Some(configs.len() as u64), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} {pos}/{len} configurations [{bar:30}] eta {eta}")
        {
            b.set_style(style.progress_chars("=> "));
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let opts = TimeOptions::new(chip);
    let mut rows = Vec::with_capacity(configs.len());
    for config in configs {
        let mut o: Vec<Override> = base.to_vec();
        o.extend(config.iter().cloned());
        let o = timing::chip_overrides(k, chip, &o);
        let result = match Session::new(k, Some(chip.target), &o, Verify::Strict) {
            Ok(s) => timing::time(&s.checked, &s.plan, &opts)
                .map(|t| t.report)
                .map_err(|e| first_message(&e.to_diagnostics())),
            Err(e) => Err(first_message(&e.into_diagnostics())),
        };
        rows.push(Row { config, result });
        bar.inc(1);
        if crate::interrupt::requested().is_some() {
            break;
        }
    }
    bar.finish_and_clear();
    rows.sort_by(|a, b| match (&a.result, &b.result) {
        (Ok(x), Ok(y)) => x.seconds.total_cmp(&y.seconds),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => std::cmp::Ordering::Equal,
    });
    let best = rows
        .iter()
        .find_map(|r| r.result.as_ref().ok().map(|t| t.seconds))
        .unwrap_or(0.0);
    if json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                let config: serde_json::Map<String, serde_json::Value> = r
                    .config
                    .iter()
                    .map(|o| (o.name.clone(), serde_json::Value::String(o.value.clone())))
                    .collect();
                match &r.result {
                    Ok(t) => serde_json::json!({
                        "config": config,
                        "microseconds": t.microseconds,
                        "tflops": t.tflops,
                        "tbps": t.tbps,
                        "critical": t.critical,
                        "slowdown": if best > 0.0 { t.seconds / best } else { 1.0 },
                        "trust": trust(t, chip),
                        "report": t,
                    }),
                    Err(e) => serde_json::json!({ "config": config, "error": e }),
                }
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({ "file": file.name, "chip": chip.name, "base": label(base), "configs": v })
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} on {}: {} configurations{}, fastest first (timing model only: no payloads run)",
        file.name,
        chip.name,
        rows.len(),
        if base.is_empty() {
            String::new()
        } else {
            format!(" over {}", label(base))
        }
    );
    outln!(
        "{:>4}  {:<40} {:>11} {:>9} {:>7}  {:<28} trust",
        "rank",
        "configuration",
        "time (us)",
        "TFLOP/s",
        "vs best",
        "limit"
    );
    for (i, r) in rows.iter().enumerate() {
        match &r.result {
            Ok(t) => {
                let limit: String = t
                    .critical
                    .split(':')
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(28)
                    .collect();
                outln!(
                    "{:>4}  {:<40} {:>11.2} {:>9} {:>6.2}x  {:<28} {}",
                    i + 1,
                    label(&r.config),
                    t.microseconds,
                    t.tflops.map_or("-".to_string(), |x| format!("{x:.1}")),
                    if best > 0.0 { t.seconds / best } else { 1.0 },
                    limit,
                    trust(t, chip)
                );
            }
            Err(e) => outln!("   -  {:<40} not timed: {e}", label(&r.config)),
        }
    }
    outln!(
        "  trust: what bounds each prediction, and whether the chip figures behind that bound are calibrated on public measurements or estimated ({})",
        chip.trust().summary
    );
    Ok(ExitCode::SUCCESS)
}

fn first_message(d: &[bwsim_isa::Diagnostic]) -> String {
    d.iter().find(|x| x.is_error()).or(d.first()).map_or_else(
        || "refused".to_string(),
        |x| format!("[{}] {}", x.code.name(), x.message),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_parse_and_combine_first_constant_slowest() {
        assert_eq!(
            parse_sweep("NUM_BUFFERS=2, 3,4"),
            Ok((
                "NUM_BUFFERS".to_string(),
                vec!["2".into(), "3".into(), "4".into()]
            ))
        );
        assert!(parse_sweep("NUM_BUFFERS").is_err());
        assert!(parse_sweep("=2").is_err());
        assert!(parse_sweep("A=").is_err());
        let c = combinations(&[
            ("A".into(), vec!["1".into(), "2".into()]),
            ("B".into(), vec!["x".into(), "y".into(), "z".into()]),
        ]);
        let labels: Vec<String> = c.iter().map(|o| label(o)).collect();
        assert_eq!(
            labels,
            ["A=1 B=x", "A=1 B=y", "A=1 B=z", "A=2 B=x", "A=2 B=y", "A=2 B=z"]
        );
    }
}
