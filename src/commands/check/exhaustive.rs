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

pub(super) fn run(p: &Prepared, a: &Args, out: &Report, file: &SourceFile) -> ExitCode {
    let opts = Options {
        delays: a.delays,
        max_schedules: a.max_schedules,
        jobs: jobs(a).max(1),
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
    print(&s, a, out, file, secs);
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
/// 651 runs, 2,048 cluster schedules)`.
fn scope(s: &Search, delays: u32) -> String {
    let parts: Vec<String> = s.by_delays.iter().map(u64::to_string).collect();
    format!(
        "{} of each cluster within {delays} delay{} ({} = {} runs, {} cluster schedules)",
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

fn print(s: &Search, a: &Args, out: &Report, file: &SourceFile, secs: f64) {
    let diags: Vec<Diagnostic> = s
        .findings
        .iter()
        .map(|f| annotate(f, s, &file.name, a.delays))
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
                        "replay": replay(&file.name, a.delays),
                        "diagnostic": diags_json(std::slice::from_ref(d), file)[0].clone(),
                    })
                })
                .collect();
            outln!(
                "{}",
                serde_json::json!({
                    "file": file.name,
                    "delays": a.delays,
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
            errln!("{}: {} in {secs:.1} s: {verdict}", file.name, scope(s, a.delays));
        }
    }
}
