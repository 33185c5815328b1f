//! `bwsim check --exhaustive`: every schedule within a delay bound
//! (`bwsim_sim::check::exhaustive`), its findings and what a clean result proves.

use super::{at_levels, jobs, tally, Args, Report};
use crate::commands::levels::{self, Format};
use crate::commands::{diags_json, print_diags};
use bwsim_isa::{Diagnostic, SourceFile};
use bwsim_sim::check::exhaustive::{self, Options, Search};
use bwsim_sim::check::Prepared;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

/// The replay hint of a finding of the search.
fn replay(file: &str, delays: u32) -> String {
    format!("bwsim check {file} --exhaustive --delays {delays}")
}

/// The default delay bound (per cluster) of `--exhaustive`.
pub const DEFAULT_DELAYS: u32 = 2;

/// The agent steps the default bound's deepest level may take (its runs times the reference
/// run's steps); past it the search stops one level lower. A checked step costs 2 to 50 us
/// (the tensor-core kernels the most), so the level takes at most about 100 s of CPU time,
/// 50 s on two cores (docs/semantics.md, exhaustive checking).
pub const DEFAULT_STEP_BUDGET: u64 = 2_000_000;

pub(super) fn run(p: &Prepared, a: &Args, out: &Report, file: &SourceFile) -> ExitCode {
    let opts = Options {
        delays: a.delays.unwrap_or(DEFAULT_DELAYS),
        max_schedules: a.max_schedules,
        jobs: jobs(a).max(1),
        step_budget: a.delays.is_none().then_some(DEFAULT_STEP_BUDGET),
    };
    let bar = if a.progress || (std::io::stderr().is_terminal() && out.format == Format::Text) {
        let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {pos} schedules {per_sec}") {
            b.set_style(style);
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let start = Instant::now();
    let watch = crate::interrupt::Watch::notice(move |sig| {
        format!(
            "{sig}: finishing the schedules already running, then reporting; send it again to quit at once"
        )
    });
    let mut s = exhaustive::search(p, &opts, crate::interrupt::flag(), |n| bar.set_position(n));
    drop(watch);
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    s.findings = at_levels(std::mem::take(&mut s.findings), &out.levels, |f| {
        &mut f.diagnostic
    });
    let interrupted = crate::interrupt::requested();
    print(&s, out, file, secs);
    let errors = s.findings.iter().any(|f| f.diagnostic.is_error());
    if let Some((_, status)) = interrupted {
        ExitCode::from(status)
    } else if errors {
        ExitCode::from(1)
    } else if !s.complete {
        // Nothing found, nothing proved.
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

/// A finding with where the search first saw it.
fn annotate(f: &exhaustive::Found, s: &Search, file: &str, delays: u32) -> Diagnostic {
    f.diagnostic.clone().with_note(format!(
        "found by the exhaustive search ({}; {} of {} schedules); replay: {}",
        exhaustive::describe(&f.plan),
        f.count,
        s.schedules,
        replay(file, delays)
    ))
}

/// What the search proved: `every schedule of each cluster within 2 delays (1 + 40 + 610 =
/// 651 runs, 2,048 cluster schedules)`, and why a default bound stopped lower.
fn scope(s: &Search) -> String {
    let parts: Vec<String> = s.by_delays.iter().map(u64::to_string).collect();
    let delays = s.bound;
    let why = match s.left_out {
        Some(l) => format!(
            " (the default bound: {} delays would be {} runs of about {} agent steps in all, over the budget of {DEFAULT_STEP_BUDGET}; `--delays {}` runs them)",
            l.delays, l.runs, l.steps, l.delays
        ),
        None => String::new(),
    };
    format!(
        "{} of each cluster within {delays} delay{}{why} ({} = {} runs, {} cluster schedules)",
        if s.complete {
            "every schedule"
        } else {
            "part of the schedules"
        },
        if delays == 1 { "" } else { "s" },
        parts.join(" + "),
        s.schedules,
        s.cluster_schedules.iter().sum::<u64>()
    )
}

fn print(s: &Search, out: &Report, file: &SourceFile, secs: f64) {
    let diags: Vec<Diagnostic> = s
        .findings
        .iter()
        .map(|f| annotate(f, s, &file.name, s.bound))
        .collect();
    match out.format {
        Format::Sarif => outln!("{}", levels::sarif_log(&diags, file)),
        Format::Json => {
            let findings: Vec<serde_json::Value> = s
                .findings
                .iter()
                .zip(&diags)
                .map(|(f, d)| {
                    serde_json::json!({
                        "plan": f.plan.iter().map(|&(c, i, k)| serde_json::json!({"cluster": c, "decision": i, "delays": k})).collect::<Vec<_>>(),
                        "count": f.count,
                        "replay": replay(&file.name, s.bound),
                        "diagnostic": diags_json(std::slice::from_ref(d), file)[0].clone(),
                    })
                })
                .collect();
            outln!(
                "{}",
                serde_json::json!({
                    "file": file.name,
                    "delays": s.bound,
                    "left_out": s.left_out.map(|l| serde_json::json!({"delays": l.delays, "runs": l.runs, "steps": l.steps})),
                    "schedules": s.schedules,
                    "schedules_by_delays": s.by_delays,
                    "cluster_schedules_by_delays": s.cluster_schedules,
                    "complete": s.complete,
                    "seconds": secs,
                    "ok": s.complete && !s.findings.iter().any(|f| f.diagnostic.is_error()),
                    "levels": out.levels.to_json(),
                    "findings": findings,
                })
            );
        }
        Format::Text => {
            print_diags(&diags, file);
            let verdict = if !s.findings.is_empty() {
                tally(&s.findings.iter().map(|f| &f.diagnostic).collect::<Vec<_>>())
            } else if s.complete {
                "no hazards: the kernel is clean within this bound".into()
            } else {
                format!(
                    "incomplete (stopped at {} schedules): nothing found, nothing proved",
                    s.schedules
                )
            };
            errln!("{}: {} in {secs:.1} s: {verdict}", file.name, scope(s));
        }
    }
}
