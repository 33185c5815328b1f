//! Minimal counterexamples: a failing schedule shrunk to the fewest preemptions that still
//! show its finding, and the handful of events that matter, agents as columns.
//!
//! A schedule is a [`Script`]: every choice a run asked its scheduler for (which agent steps,
//! each asynchronous latency, TMA piece counts, completion tie-breaks, stalls), recorded from
//! the [`crate::pct::PctScheduler`] of the finding's seed by [`Recorder`]. [`Replay`] plays a
//! script back: at each pick it takes the scripted agent when that agent can run, else keeps
//! the agent that ran last, else the first runnable one; a missing latency or tie-break takes a
//! fixed default. A *preemption* is a pick that switches away from an agent that could have
//! gone on.
//!
//! [`shrink`] removes perturbations (preemptive picks and stalls) with delta debugging
//! (Zeller and Hildebrandt's ddmin): it keeps a set of them, drops halves, quarters, ... and
//! keeps every drop after which a replay still reports the finding (the same code at the same
//! spans), so the result is 1-minimal for the perturbations the first replay made. Every
//! candidate is a full, deterministic replay, bounded by [`MAX_REPLAYS`].
//!
//! [`Counterexample::events`] replays the result with the trace on and keeps the events that
//! matter: the preemptions, the finding's accesses (the events at its spans) and the
//! completions of the asynchronous operations issued there.

use super::Prepared;
use crate::explore::Finding;
use crate::pct::PctScheduler;
use crate::sched::{AgentRef, AsyncKind, Scheduler};
use crate::trace::{Event, Unit, What};
use bwsim_isa::{Diagnostic, SourceFile};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Replays one shrink may run at the most.
pub const MAX_REPLAYS: usize = 400;

/// Every choice of one run, in the order the machine asked for them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// The agent of each pick; `None`: no preference (go on with the agent that ran last).
    pub picks: Vec<Option<AgentRef>>,
    /// `None`: every pick is taken as scripted (an exact replay of a recording). `Some(set)`:
    /// a pick switches away from an agent that could go on only at the indices in the set;
    /// elsewhere the scripted agent is taken only when the last one cannot run.
    pub preempt: Option<BTreeSet<usize>>,
    pub latencies: Vec<u64>,
    pub pieces: Vec<u32>,
    pub ties: Vec<u64>,
    pub stalls: Vec<bool>,
}

/// A scheduler that records the choices of another.
pub struct Recorder<'a> {
    inner: &'a mut dyn Scheduler,
    pub script: Script,
}

impl<'a> Recorder<'a> {
    pub fn new(inner: &'a mut dyn Scheduler) -> Self {
        Recorder {
            inner,
            script: Script::default(),
        }
    }
}

impl Scheduler for Recorder<'_> {
    fn at_time(&mut self, now: u64) {
        self.inner.at_time(now);
    }
    fn pick(&mut self, runnable: &[AgentRef]) -> usize {
        let i = self.inner.pick(runnable).min(runnable.len() - 1);
        self.script.picks.push(Some(runnable[i]));
        i
    }
    fn latency(&mut self, kind: AsyncKind) -> u64 {
        let v = self.inner.latency(kind);
        self.script.latencies.push(v);
        v
    }
    fn pieces(&mut self, max: u32) -> u32 {
        let v = self.inner.pieces(max);
        self.script.pieces.push(v);
        v
    }
    fn tiebreak(&mut self) -> u64 {
        let v = self.inner.tiebreak();
        self.script.ties.push(v);
        v
    }
    fn stall(&mut self) -> bool {
        let v = self.inner.stall();
        self.script.stalls.push(v);
        v
    }
}

/// A switch away from an agent that could have gone on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preemption {
    /// The pick's index in the run (its step).
    pub step: usize,
    /// The logical time of the pick.
    pub time: u64,
    pub from: AgentRef,
    pub to: AgentRef,
}

/// The latency of an asynchronous operation a script does not say (a replay that went past
/// what the recorded run issued).
const DEFAULT_LATENCY: u64 = 50;

/// Plays a [`Script`] back, noting the preemptions and stalls it made.
pub struct Replay<'a> {
    script: &'a Script,
    current: Option<AgentRef>,
    now: u64,
    counts: [usize; 5],
    /// The preemptions of this replay, in order.
    pub preemptions: Vec<Preemption>,
    /// The indices of the stalls this replay took.
    pub stalls: Vec<usize>,
}

impl<'a> Replay<'a> {
    pub fn new(script: &'a Script) -> Self {
        Replay {
            script,
            current: None,
            now: 0,
            counts: [0; 5],
            preemptions: Vec::new(),
            stalls: Vec::new(),
        }
    }

    fn next(&mut self, which: usize) -> usize {
        let k = self.counts[which];
        self.counts[which] += 1;
        k
    }

    /// The next decision of kind `which` as the script recorded it in `list` (none past the
    /// recording).
    fn recorded<T: Copy + 'a>(&mut self, which: usize, list: impl Fn(&'a Script) -> &'a [T]) -> Option<T> {
        let k = self.next(which);
        list(self.script).get(k).copied()
    }
}

impl Scheduler for Replay<'_> {
    fn at_time(&mut self, now: u64) {
        self.now = now;
    }
    fn pick(&mut self, runnable: &[AgentRef]) -> usize {
        let step = self.next(0);
        let find = |a: Option<AgentRef>| a.and_then(|a| runnable.iter().position(|&r| r == a));
        let wanted = self.script.picks.get(step).copied().flatten();
        let cur = find(self.current);
        let may_preempt = self.script.preempt.as_ref().is_none_or(|s| s.contains(&step));
        let i = match cur {
            Some(c) if !may_preempt => c,
            _ => find(wanted).or(cur).unwrap_or(0),
        };
        if let (Some(c), Some(from)) = (cur, self.current) {
            if c != i {
                self.preemptions.push(Preemption {
                    step,
                    time: self.now,
                    from,
                    to: runnable[i],
                });
            }
        }
        self.current = Some(runnable[i]);
        i
    }
    fn latency(&mut self, _: AsyncKind) -> u64 {
        self.recorded(1, |s| &s.latencies)
            .unwrap_or(DEFAULT_LATENCY)
            .max(1)
    }
    fn pieces(&mut self, max: u32) -> u32 {
        self.recorded(2, |s| &s.pieces).unwrap_or(1).clamp(1, max.max(1))
    }
    fn tiebreak(&mut self) -> u64 {
        let k = self.next(3);
        self.script.ties.get(k).copied().unwrap_or(k as u64)
    }
    fn stall(&mut self) -> bool {
        let k = self.next(4);
        let s = self.script.stalls.get(k).copied().unwrap_or(false);
        if s {
            self.stalls.push(k);
        }
        s
    }
}

/// One perturbation a shrink may drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Perturbation {
    /// The pick at this index switches agents although the last one could go on.
    Preempt(usize),
    /// The stall at this index lets time pass.
    Stall(usize),
}

/// A finding's schedule shrunk as far as replays allow.
#[derive(Clone, Debug)]
pub struct Counterexample {
    /// The seed whose schedule was shrunk.
    pub seed: u64,
    pub script: Script,
    /// The preemptions of the shrunk schedule, in order.
    pub preemptions: Vec<Preemption>,
    /// Its stalls (time let pass although an agent could run).
    pub stalls: usize,
    /// Steps of the shrunk run.
    pub steps: u64,
    /// Preemptions of the schedule before shrinking.
    pub preemptions_before: usize,
    /// Replays the shrink ran.
    pub replays: usize,
    /// Whether the replay budget ran out before the result was 1-minimal.
    pub truncated: bool,
}

/// Identity of a finding across schedules: its code and every span.
fn same(a: &Diagnostic, b: &Diagnostic) -> bool {
    crate::explore::key(a) == crate::explore::key(b)
}

/// `script` with only the perturbations in `keep` (of those `all` lists): only a kept
/// preemption may switch away from an agent that could go on, a dropped stall does not stall.
fn with_only(script: &Script, all: &[Perturbation], keep: &BTreeSet<Perturbation>) -> Script {
    let mut s = script.clone();
    s.preempt = Some(
        keep.iter()
            .filter_map(|p| match *p {
                Perturbation::Preempt(i) => Some(i),
                Perturbation::Stall(_) => None,
            })
            .collect(),
    );
    for p in all {
        if keep.contains(p) {
            continue;
        }
        match *p {
            Perturbation::Preempt(_) => {}
            Perturbation::Stall(i) => {
                if let Some(x) = s.stalls.get_mut(i) {
                    *x = false;
                }
            }
        }
    }
    s
}

/// Shrinks the schedule of `f` (its seed under the checker's scheduler). `None` when a replay
/// of the recorded schedule does not show the finding (it should; a run that depends on wall
/// time, say, may not).
pub fn shrink(p: &Prepared, f: &Finding) -> Option<Counterexample> {
    let mut pct = PctScheduler::new(f.seed, p.expected_steps);
    let mut rec = Recorder::new(&mut pct);
    let _ = p.run_with(&mut rec, false);
    let recorded = rec.script;
    let replays = std::cell::Cell::new(0usize);
    // A replay of `s`: whether it shows the finding, with its preemptions and stalls.
    let test = |s: &Script| -> (bool, Vec<Preemption>, Vec<usize>, u64) {
        replays.set(replays.get() + 1);
        let mut r = Replay::new(s);
        let run = p.run_with(&mut r, false);
        let shows = run.diagnostics.iter().any(|d| same(d, &f.diagnostic));
        (shows, r.preemptions, r.stalls, run.counters.steps)
    };
    let (shows, pre, stalls, _) = test(&recorded);
    if !shows {
        return None;
    }
    let preemptions_before = pre.len();
    let all: Vec<Perturbation> = pre
        .iter()
        .map(|x| Perturbation::Preempt(x.step))
        .chain(stalls.iter().map(|&i| Perturbation::Stall(i)))
        .collect();
    // Nothing at all first: many findings need no perturbation. Then ddmin: drop each of n
    // chunks in turn, keeping a drop that still shows the finding; refine when none does.
    let mut keep: Vec<Perturbation> = all.clone();
    let mut truncated = false;
    if !keep.is_empty() && test(&with_only(&recorded, &all, &BTreeSet::new())).0 {
        keep.clear();
    }
    let mut n = 2usize;
    'outer: while keep.len() > 1 || (keep.len() == 1 && n == 2) {
        let n_chunks = n.min(keep.len());
        let size = keep.len().div_ceil(n_chunks);
        let chunks: Vec<Vec<Perturbation>> = keep.chunks(size).map(<[_]>::to_vec).collect();
        for ci in 0..chunks.len() {
            if replays.get() >= MAX_REPLAYS {
                truncated = true;
                break 'outer;
            }
            let rest: BTreeSet<Perturbation> = chunks
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != ci)
                .flat_map(|(_, c)| c.iter().copied())
                .collect();
            if test(&with_only(&recorded, &all, &rest)).0 {
                keep = rest.into_iter().collect();
                n = (n - 1).max(2);
                continue 'outer;
            }
        }
        if n_chunks >= keep.len() {
            break;
        }
        n = (n * 2).min(keep.len());
    }
    let keep: BTreeSet<Perturbation> = keep.into_iter().collect();
    let script = with_only(&recorded, &all, &keep);
    let (shows, preemptions, stalls, steps) = test(&script);
    debug_assert!(shows, "the kept schedule shows the finding");
    Some(Counterexample {
        seed: f.seed,
        script,
        preemptions,
        stalls: stalls.len(),
        steps,
        preemptions_before,
        replays: replays.get(),
        truncated,
    })
}

/// One row of a counterexample's event table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub time: u64,
    /// The column (unit) it belongs to.
    pub unit: String,
    pub text: String,
}

/// Rows shown at the most.
const MAX_ROWS: usize = 16;

impl Counterexample {
    /// The events that matter in the shrunk schedule, in time order: each preemption (in the
    /// column of the agent that takes over), the finding's accesses and the asynchronous
    /// operations issued at its spans (issue, pieces, completion).
    pub fn events(&self, p: &Prepared, d: &Diagnostic, file: Option<&SourceFile>) -> Vec<Row> {
        let (run, preemptions) = self.replay(p);
        let trace = &run.trace;
        let spans: Vec<(u32, u32)> = std::iter::once(d.primary.span)
            .chain(d.labels.iter().map(|l| l.span))
            .filter(|s| !s.is_dummy())
            .map(|s| (s.start, s.end))
            .collect();
        let at = |e: &Event| spans.contains(&(e.span.start, e.span.end));
        // Asynchronous operations issued at one of the spans: their later events matter too.
        let ids: BTreeSet<u64> = trace
            .events
            .iter()
            .filter(|e| at(e))
            .filter_map(|e| match e.what {
                What::Issue { id, .. } => Some(id),
                _ => None,
            })
            .collect();
        let line = |e: &Event| -> String {
            match file {
                Some(f) if !e.span.is_dummy() => format!(" (line {})", f.line_col(e.span.start as usize).0),
                _ => String::new(),
            }
        };
        let mut rows: Vec<Row> = Vec::new();
        for e in &trace.events {
            let async_id = match e.what {
                What::Start { id, .. } | What::Piece { id, .. } | What::Complete { id, .. } => Some(id),
                _ => None,
            };
            // The finding's own operations; of the asynchronous ones issued there, the issue
            // and the completion (not every piece and byte count).
            let shown = match e.what {
                What::Piece { .. }
                | What::CompleteTx { .. }
                | What::PhaseFlip { .. }
                | What::Start { .. } => false,
                What::Complete { .. } => true,
                _ => at(e),
            };
            if shown && (at(e) || async_id.is_some_and(|i| ids.contains(&i))) {
                let mut text = what_text(&e.what);
                text.push_str(&line(e));
                rows.push(Row {
                    time: e.time,
                    unit: trace.unit_name(e.cta, e.unit),
                    text,
                });
            }
        }
        for x in &preemptions {
            let time = x.time;
            rows.push(Row {
                time,
                unit: trace.unit_name(x.to.cta, Unit::Agent(x.to.agent)),
                text: format!(
                    "runs, preempting {}",
                    trace.unit_name(x.from.cta, Unit::Agent(x.from.agent))
                ),
            });
        }
        rows.sort_by_key(|r| r.time);
        rows.dedup();
        if rows.len() > MAX_ROWS {
            // Keep the preemptions and the last events before the finding.
            let keep_from = rows.len() - MAX_ROWS;
            rows.drain(..keep_from);
        }
        rows
    }

    /// The shrunk schedule run again with the trace on, and its preemptions.
    pub fn replay(&self, p: &Prepared) -> (crate::machine::RunResult, Vec<Preemption>) {
        let mut r = Replay::new(&self.script);
        let run = p.run_with(&mut r, true);
        (run, r.preemptions)
    }

    /// The shrunk schedule's whole trace as Chrome trace JSON (Perfetto), each preemption an
    /// instant event `preempted by ...` on the preempted agent's track.
    pub fn chrome_json(&self, p: &Prepared, file: Option<&SourceFile>) -> serde_json::Value {
        let (run, preemptions) = self.replay(p);
        let mut json = run.trace.chrome_json(file);
        if let Some(evs) = json["traceEvents"].as_array_mut() {
            for x in &preemptions {
                evs.push(serde_json::json!({
                    "ph": "i", "s": "t", "name": format!("preempted by {}", run.trace.unit_name(x.to.cta, Unit::Agent(x.to.agent))),
                    "pid": x.from.cta, "tid": x.from.agent, "ts": x.time,
                    "args": {"step": x.step},
                }));
            }
        }
        json
    }

    /// One line: seed, preemptions, stalls, steps.
    pub fn summary(&self) -> String {
        let n = |k: usize, w: &str| format!("{k} {w}{}", if k == 1 { "" } else { "s" });
        format!(
            "minimal counterexample of schedule seed {}: {} (was {}), {}, {} steps{}",
            self.seed,
            n(self.preemptions.len(), "preemption"),
            self.preemptions_before,
            n(self.stalls, "stall"),
            self.steps,
            if self.truncated {
                " (replay budget spent; may not be minimal)"
            } else {
                ""
            }
        )
    }
}

fn what_text(w: &What) -> String {
    match w {
        What::Issue { op, .. } => format!("issues {op}"),
        What::Start { op, .. } => format!("{op} starts"),
        What::Piece { op, bytes, .. } => format!("{op}: {bytes} bytes land"),
        What::Complete { op, .. } => format!("{op} completes"),
        What::Exec { op } => (*op).to_string(),
        What::Fence { op } => (*op).to_string(),
        What::WaitBegin { parity, .. } => format!("waits (parity {parity})"),
        What::WaitDone { parity, .. } => format!("wait done (parity {parity})"),
        What::Arrive { pending, .. } => format!("arrives ({pending} pending)"),
        What::Increment { count, pending, .. } => {
            format!("adds {count} pending arrivals ({pending} pending)")
        }
        What::Blocked { on } => format!("blocked on {on}"),
        What::Resumed { on } => format!("resumed after {on}"),
        What::AgentStart => "starts".into(),
        What::AgentEnd => "ends".into(),
        What::Init { count, .. } => format!("mbar.init (count {count})"),
        What::ExpectTx { bytes, .. } => format!("expect_tx {bytes} bytes"),
        What::CompleteTx { bytes, .. } => format!("complete_tx {bytes} bytes"),
        What::PhaseFlip { phase, .. } => format!("barrier phase -> {phase}"),
        What::Invalidate { .. } => "mbar.invalidate".into(),
        What::TmemAlloc { col, cols } => format!("tmem.alloc columns {col}..{}", col + cols),
        What::TmemDealloc { col, cols } => format!("tmem.dealloc columns {col}..{}", col + cols),
        What::Trap { error } => format!("trap: {error}"),
    }
}

/// The rows as a table, one column per unit in order of first appearance.
pub fn render_rows(rows: &[Row]) -> String {
    if rows.is_empty() {
        return "(no traced event at the finding's lines: replay the seed with --trace for the whole run)\n"
            .into();
    }
    let mut cols: Vec<&str> = Vec::new();
    for r in rows {
        if !cols.contains(&r.unit.as_str()) {
            cols.push(&r.unit);
        }
    }
    let width = |c: &str| {
        rows.iter()
            .filter(|r| r.unit == c)
            .map(|r| r.text.chars().count())
            .chain(std::iter::once(c.chars().count()))
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = cols.iter().map(|c| width(c)).collect();
    let mut out = String::new();
    let _ = write!(out, "{:>8}", "time");
    for (c, w) in cols.iter().zip(&widths) {
        let _ = write!(out, "  {c:<w$}");
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    for r in rows {
        let _ = write!(out, "{:>8}", r.time);
        for (c, w) in cols.iter().zip(&widths) {
            let cell = if *c == r.unit { r.text.as_str() } else { "" };
            let _ = write!(out, "  {cell:<w$}");
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(agent: u32) -> AgentRef {
        AgentRef { cta: 0, agent }
    }

    #[test]
    fn a_replay_follows_the_script_and_counts_preemptions() {
        let script = Script {
            picks: vec![Some(a(0)), Some(a(1)), None, Some(a(0)), Some(a(1))],
            ..Script::default()
        };
        let mut r = Replay::new(&script);
        let both = [a(0), a(1)];
        let got: Vec<usize> = (0..5).map(|_| r.pick(&both)).collect();
        // 0, switch to 1 (a preemption), stay on 1, back to 0 (a preemption), to 1 again.
        assert_eq!(got, vec![0, 1, 1, 0, 1]);
        let steps: Vec<usize> = r.preemptions.iter().map(|p| p.step).collect();
        assert_eq!(steps, vec![1, 3, 4]);
        // A forced switch (the last agent cannot run) is no preemption.
        let mut r = Replay::new(&script);
        r.pick(&both);
        assert_eq!(r.pick(&[a(1)]), 0);
        assert!(r.preemptions.is_empty());
    }

    #[test]
    fn a_replay_past_its_script_goes_on_with_the_last_agent_and_defaults() {
        let script = Script {
            picks: vec![Some(a(1))],
            latencies: vec![7],
            ..Script::default()
        };
        let mut r = Replay::new(&script);
        let both = [a(0), a(1)];
        assert_eq!(r.pick(&both), 1);
        assert_eq!(r.pick(&both), 1);
        assert_eq!(r.latency(AsyncKind::TmaLoad), 7);
        assert_eq!(r.latency(AsyncKind::TmaLoad), DEFAULT_LATENCY);
        assert_eq!(r.pieces(4), 1);
        assert!(!r.stall());
    }

    #[test]
    fn dropping_perturbations_clears_picks_and_stalls() {
        let script = Script {
            picks: vec![Some(a(0)), Some(a(1)), Some(a(0))],
            stalls: vec![true, false, true],
            ..Script::default()
        };
        let all = [
            Perturbation::Preempt(1),
            Perturbation::Preempt(2),
            Perturbation::Stall(0),
            Perturbation::Stall(2),
        ];
        let keep: BTreeSet<Perturbation> = [Perturbation::Preempt(2), Perturbation::Stall(0)].into();
        let s = with_only(&script, &all, &keep);
        assert_eq!(s.preempt, Some([2].into()));
        assert_eq!(s.stalls, vec![true, false, false]);
        // Only a kept preemption switches: pick 1 may leave agent 1, pick 2 may not.
        let s2 = Script {
            picks: vec![Some(a(1)), Some(a(0)), Some(a(1))],
            preempt: Some([1].into()),
            ..Script::default()
        };
        let mut r = Replay::new(&s2);
        let both = [a(0), a(1)];
        let got: Vec<usize> = (0..3).map(|_| r.pick(&both)).collect();
        assert_eq!(got, vec![1, 0, 0]);
        assert_eq!(r.preemptions.len(), 1);
    }

    #[test]
    fn rows_render_one_column_per_unit() {
        let rows = vec![
            Row {
                time: 3,
                unit: "cta0.default".into(),
                text: "smem.store".into(),
            },
            Row {
                time: 9,
                unit: "cta0.tma".into(),
                text: "tma.store starts".into(),
            },
        ];
        let t = render_rows(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "    time  cta0.default  cta0.tma");
        assert_eq!(lines[1], "       3  smem.store");
        assert_eq!(lines[2], "       9                tma.store starts");
    }
}
