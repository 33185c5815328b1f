//! Every resource limit firing with its message (which limit, where the kernel was, how to
//! raise it), the memory limit refusing a launch before anything is allocated, limits from the
//! launch section and from the caller layered, and deadlocks reported at once whatever the
//! limits.

mod common;
use bwsim_isa::limits::{Limit, Limits};
use bwsim_sim::{run_source_with, Outcome, RunOptions, RunResult};
use common::*;
use std::time::{Duration, Instant};

/// A loop of `N` iterations, each polling a barrier nobody arrives on: it never blocks, so only
/// a limit stops it when N is large.
const SPIN: &str = include_str!("tiles/limits/spin.tile");

/// `N` arrivals on a one-arrival barrier: two trace events (arrive, phase flip) per iteration.
const ARRIVALS: &str = include_str!("tiles/limits/arrivals.tile");

/// The default limits changed by `set`.
fn limits(set: impl FnOnce(&mut Limits)) -> Limits {
    let mut l = Limits::default();
    set(&mut l);
    l
}

fn with_limits(src: &str, limits: Limits) -> RunResult {
    let opts = RunOptions {
        seed: 1,
        limits,
        ..RunOptions::default()
    };
    run_opts(src, &[], None, &opts)
}

fn limit_diag(r: &RunResult, l: Limit) -> &bwsim_isa::Diagnostic {
    assert_eq!(r.outcome, Outcome::LimitReached(l), "{:?}", r.diagnostics);
    r.diagnostics
        .iter()
        .find(|d| d.code == l.code())
        .unwrap_or_else(|| panic!("no `{}` diagnostic: {:?}", l.code(), r.diagnostics))
}

/// Asserts that the message of `d` contains each of `says`.
#[track_caller]
fn assert_says(d: &bwsim_isa::Diagnostic, says: &[&str]) {
    for s in says {
        assert!(d.message.contains(s), "no `{s}` in: {}", d.message);
    }
}

#[test]
fn step_limit_stops_a_spinning_loop_and_says_where_it_was() {
    let r = with_limits(SPIN, limits(|l| l.steps = Some(5000)));
    let d = limit_diag(&r, Limit::Steps);
    assert_eq!(r.counters.steps, 5000);
    assert_says(d, &["limit of 5000 simulated steps"]);
    // The only agent is inside the loop: at the poll or at the loop's own branch.
    let at = &SPIN[d.primary.span.range()];
    assert!(
        at.contains("mbar.test_wait") || at.contains("for i in 0..N"),
        "points at `{at}`"
    );
    assert!(
        d.primary.message.contains("cta0.default"),
        "{}",
        d.primary.message
    );
    assert!(d
        .notes
        .iter()
        .any(|n| n.contains("after 5000 steps") && n.contains("0 of 1 CTAs")));
    let help = d.help.as_deref().unwrap_or("");
    assert!(help.contains("--max-steps 20000"), "{help}");
    assert!(help.contains("limit steps = N"), "{help}");
}

#[test]
fn wall_time_limit_stops_a_long_run() {
    let t = Instant::now();
    let r = with_limits(SPIN, limits(|l| l.wall_time = Some(Duration::from_millis(50))));
    let d = limit_diag(&r, Limit::WallTime);
    assert!(t.elapsed() < Duration::from_secs(20), "took {:?}", t.elapsed());
    assert_says(d, &["limit of 0.1s wall-clock time"]);
    assert!(d.help.as_deref().unwrap_or("").contains("--max-wall-time"));
    assert!(r.counters.steps > 0);
}

#[test]
fn trace_limit_keeps_exactly_the_events_up_to_it() {
    let full = run(ARRIVALS, &[]);
    assert_ok(ARRIVALS, &full);
    assert!(full.trace.events.len() > 50, "{}", full.trace.events.len());
    let r = with_limits(ARRIVALS, limits(|l| l.trace_events = Some(50)));
    let d = limit_diag(&r, Limit::TraceEvents);
    assert_says(d, &["limit of 50 trace events"]);
    assert!(d.help.as_deref().unwrap_or("").contains("--max-trace-events 200"));
    // The partial trace is the full trace's first 50 events.
    assert_eq!(r.trace.events, full.trace.events[..50]);
    // Without a trace there is nothing to limit.
    let r = run_opts(
        ARRIVALS,
        &[],
        None,
        &RunOptions {
            trace: false,
            limits: limits(|l| l.trace_events = Some(50)),
            ..RunOptions::default()
        },
    );
    assert_ok(ARRIVALS, &r);
}

const BIG: &str = include_str!("tiles/limits/big.tile");

fn refused(src: &str, consts: &[(&str, &str)], limits: Limits) -> bwsim_isa::Diagnostic {
    let opts = RunOptions {
        limits,
        ..RunOptions::default()
    };
    match run_source_with(src, &overrides(consts), None, &opts) {
        Ok(r) => panic!("launched: {:?}", r.outcome),
        Err(d) => {
            assert_eq!(d.len(), 1, "{d:?}");
            d.into_iter().next().expect("one diagnostic")
        }
    }
}

#[test]
fn memory_limit_refuses_a_launch_before_allocating() {
    // 4 TiB of f32: far more than this machine has. Were anything allocated, the test would
    // die; the default limit (8 GiB) refuses it first.
    let t = Instant::now();
    let d = refused(BIG, &[("ROWS", "1048576")], Limits::default());
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(d.code, "memory-limit");
    assert_says(&d, &["need 4.1TiB", "memory limit of 8GiB"]);
    // The primary span is the largest tensor's line.
    assert!(
        BIG[d.primary.span.range()].starts_with("tensor huge"),
        "{}",
        &BIG[d.primary.span.range()]
    );
    assert!(d.notes.iter().any(|n| n == "nothing was allocated"));
    assert!(d.help.as_deref().unwrap_or("").contains("--max-memory 4.1TiB"));
}

#[test]
fn memory_limit_from_the_launch_section_and_from_the_caller() {
    // 4 MiB + 1 KiB needed.
    let with_spec = BIG.replace("    grid = [1]\n", "    grid = [1]\n    limit memory = 4 * MiB\n");
    let d = refused(&with_spec, &[], Limits::default());
    assert_eq!(d.code, "memory-limit");
    assert_says(&d, &["memory limit of 4MiB"]);
    // The caller's limit overrides the launch section's, both ways.
    let r = run_opts(
        &with_spec,
        &[],
        None,
        &RunOptions {
            limits: limits(|l| l.memory = Some(5 << 20)),
            ..RunOptions::default()
        },
    );
    assert_ok(&with_spec, &r);
    let d = refused(BIG, &[], limits(|l| l.memory = Some(1 << 20)));
    assert_says(&d, &["memory limit of 1MiB (1048576 bytes)"]);
}

#[test]
fn launch_section_step_limit_applies_under_the_callers() {
    let src = SPIN.replace("    grid = [1]\n", "    grid = [1]\n    limit steps = 300\n");
    let r = with_limits(&src, Limits::default());
    limit_diag(&r, Limit::Steps);
    assert_eq!(r.counters.steps, 300);
    let r = with_limits(&src, limits(|l| l.steps = Some(100)));
    assert_eq!(r.counters.steps, 100);
}

/// Waits for a phase nobody completes: with every limit raised far beyond need, the run still
/// stops at once with the deadlock diagnostic (it never waits for the clock).
const STUCK: &str = include_str!("tiles/limits/stuck.tile");

#[test]
fn deadlock_is_reported_at_once_whatever_the_limits() {
    let t = Instant::now();
    let r = with_limits(
        STUCK,
        Limits {
            steps: Some(u64::MAX),
            wall_time: Some(Duration::from_secs(3600)),
            trace_events: Some(u64::MAX),
            memory: None,
        },
    );
    assert_eq!(r.outcome, Outcome::Deadlock, "{}", rendered(STUCK, &r));
    assert!(r.counters.steps < 10, "{} steps", r.counters.steps);
    assert!(t.elapsed() < Duration::from_secs(5));
    // A zero wall-time limit does not turn a deadlock into a timeout either.
    let r = with_limits(STUCK, limits(|l| l.wall_time = Some(Duration::ZERO)));
    assert_eq!(r.outcome, Outcome::Deadlock);
}

#[test]
fn partial_trace_is_written_whole() {
    let r = with_limits(ARRIVALS, limits(|l| l.trace_events = Some(50)));
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bwsim-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("trace.txt");
    std::fs::write(
        &path,
        "an older, longer file that must be replaced entirely\n".repeat(100),
    )
    .expect("write");
    r.trace.write_text(&path, None).expect("written");
    let text = std::fs::read_to_string(&path).expect("read back");
    assert_eq!(text, r.trace.render(None));
    assert_eq!(text.lines().count(), 50);
    let json = dir.join("trace.json");
    r.trace.write_chrome(&json, None).expect("written");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("read")).expect("valid JSON");
    assert!(v["traceEvents"].as_array().is_some_and(|a| !a.is_empty()));
    // No temporary file is left beside them.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The rendered messages, as a user sees them (snapshots in traces/limits/).
#[test]
fn limit_messages_render_with_spans() {
    let mut out = String::new();
    let r = with_limits(SPIN, limits(|l| l.steps = Some(5000)));
    out.push_str(&rendered(SPIN, &r));
    let d = refused(BIG, &[("ROWS", "1048576")], Limits::default());
    out.push_str(&bwsim_isa::diag::render(
        &[d],
        &bwsim_isa::SourceFile::new("test.tile", BIG),
    ));
    insta::with_settings!({
        snapshot_path => "../../traces/limits",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!("limit_messages", out);
    });
}
