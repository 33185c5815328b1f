//! The timing model's trace: what each partition, TMA unit and tensor pipe did, with cycle
//! stamps, for the CTAs of one chosen SM (or all of them), and two renderings: compact text
//! for insta snapshots and Chrome trace JSON for Perfetto (one process per CTA with one track
//! per partition, one for its TMA unit and one for its tensor pipe; plus an HBM bandwidth
//! counter for the whole GPU).
//!
//! Events are recorded in the order the engine processes them, which is time order for
//! everything that touches shared state; rendering sorts nothing, so the text is stable.

use super::memsys::HbmTimeline;
use bwsim_isa::{SourceFile, Span};
use serde_json::{json, Value as Json};
use std::fmt::Write as _;

/// A track of a CTA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TUnit {
    /// A partition (0: the default partition; workers in declaration order).
    Agent(u32),
    Tma,
    /// The tensor pipe (tcgen05 operations; wgmma of the SM's tensor cores).
    Tc,
    /// mbarrier phase completions.
    Bars,
    /// The CTA itself (start, end).
    Cta,
}

/// What happened.
#[derive(Clone, Debug, PartialEq)]
pub enum TWhat {
    CtaStart,
    CtaEnd,
    AgentStart,
    AgentEnd,
    /// A synchronous operation that kept the partition busy until `end`.
    Op {
        op: &'static str,
        end: f64,
    },
    /// A partition that had waited since `since` goes on (at the event's time).
    Waited {
        op: &'static str,
        since: f64,
    },
    /// A TMA load: its bytes land at `done`.
    TmaLoad {
        op: &'static str,
        bytes: u64,
        done: f64,
        hit: bool,
    },
    /// A TMA store: shared memory read by `read`, global writes done by `write`.
    TmaStore {
        op: &'static str,
        bytes: u64,
        read: f64,
        write: f64,
    },
    /// A tensor-pipe operation issued at the event's time, executing from `start` to `end`
    /// (tcgen05.cp has no M/N/K).
    Mma {
        op: &'static str,
        m: u32,
        n: u32,
        k: u32,
        start: f64,
        end: f64,
    },
    /// tcgen05.commit: its arrival lands at `arrive`.
    Commit {
        op: &'static str,
        arrive: f64,
    },
    /// An mbarrier completed a phase.
    Phase {
        bar: u32,
        phase: u64,
    },
}

/// One recorded event.
#[derive(Clone, Debug, PartialEq)]
pub struct TEvent {
    pub t: f64,
    pub sm: u32,
    pub cta: u32,
    pub unit: TUnit,
    pub what: TWhat,
    pub span: Span,
}

/// Which SMs to record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceMode {
    Off,
    /// The CTAs of one SM.
    Sm(u32),
    /// Every SM (small kernels: tests and snapshots).
    All,
}

/// The recorder and the recorded trace.
#[derive(Clone, Debug)]
pub struct Rec {
    pub mode: TraceMode,
    pub events: Vec<TEvent>,
    /// Partition names by agent index.
    pub names: Vec<String>,
    /// HBM bytes per bin, filled in at the end.
    pub hbm: Option<HbmTimeline>,
    pub clock_mhz: f64,
}

impl Rec {
    pub fn new(mode: TraceMode, clock_mhz: f64) -> Rec {
        Rec {
            mode,
            events: Vec::new(),
            names: vec!["default".to_string()],
            hbm: None,
            clock_mhz,
        }
    }
    pub fn wants(&self, sm: u32) -> bool {
        match self.mode {
            TraceMode::Off => false,
            TraceMode::Sm(s) => s == sm,
            TraceMode::All => true,
        }
    }
    pub fn push(&mut self, t: f64, sm: u32, cta: u32, unit: TUnit, what: TWhat, span: Span) {
        self.events.push(TEvent {
            t,
            sm,
            cta,
            unit,
            what,
            span,
        });
    }
    pub fn name_agent(&mut self, idx: u32, name: &str) {
        let i = idx as usize;
        if self.names.len() <= i {
            self.names.resize(i + 1, String::new());
        }
        if self.names[i].is_empty() {
            self.names[i] = name.to_string();
        }
    }

    fn unit_name(&self, u: TUnit) -> String {
        match u {
            TUnit::Agent(i) => self
                .names
                .get(i as usize)
                .filter(|n| !n.is_empty())
                .cloned()
                .unwrap_or_else(|| format!("worker{i}")),
            TUnit::Tma => "tma".into(),
            TUnit::Tc => "tc".into(),
            TUnit::Bars => "mbarriers".into(),
            TUnit::Cta => "cta".into(),
        }
    }

    /// Compact text, one event per line: `cycle sm cta unit what`.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for e in &self.events {
            let _ = write!(
                s,
                "{:>9.1} sm{} cta{} {:<10} ",
                e.t,
                e.sm,
                e.cta,
                self.unit_name(e.unit)
            );
            let _ = match &e.what {
                TWhat::CtaStart => writeln!(s, "start"),
                TWhat::CtaEnd => writeln!(s, "end"),
                TWhat::AgentStart => writeln!(s, "partition start"),
                TWhat::AgentEnd => writeln!(s, "partition end"),
                TWhat::Op { op, end } => writeln!(s, "{op} until {end:.1}"),
                TWhat::Waited { op, since } => writeln!(s, "{op} done (blocked since {since:.1})"),
                TWhat::TmaLoad { op, bytes, done, hit } => {
                    writeln!(
                        s,
                        "{op} {bytes} B {} lands {done:.1}",
                        if *hit { "hit" } else { "miss" }
                    )
                }
                TWhat::TmaStore {
                    op,
                    bytes,
                    read,
                    write,
                } => {
                    writeln!(s, "{op} {bytes} B read {read:.1} written {write:.1}")
                }
                TWhat::Mma {
                    op,
                    m,
                    n,
                    k,
                    start,
                    end,
                } => {
                    if *m == 0 {
                        writeln!(s, "{op} runs {start:.1}..{end:.1}")
                    } else {
                        writeln!(s, "{op} {m}x{n}x{k} runs {start:.1}..{end:.1}")
                    }
                }
                TWhat::Commit { op, arrive } => writeln!(s, "{op} arrives {arrive:.1}"),
                TWhat::Phase { bar, phase } => writeln!(s, "bar@{bar} phase -> {phase}"),
            };
        }
        s
    }

    /// Chrome trace JSON (Perfetto loads it). Times are microseconds at the chip's clock.
    pub fn chrome_json(&self, file: Option<&SourceFile>) -> Json {
        let us = |cycles: f64| cycles / self.clock_mhz;
        let tid = |u: TUnit| -> u64 {
            match u {
                TUnit::Agent(i) => i as u64,
                TUnit::Tma => 1000,
                TUnit::Tc => 1001,
                TUnit::Bars => 1002,
                TUnit::Cta => 1003,
            }
        };
        let loc = |span: Span| -> String {
            match file {
                Some(f) if !span.is_dummy() => {
                    let (l, c) = f.line_col(span.start as usize);
                    format!("{}:{}:{}", f.name, l, c)
                }
                _ => String::new(),
            }
        };
        let mut evs: Vec<Json> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let mut id: u64 = 0;
        for e in &self.events {
            let pid = e.cta as u64;
            if seen.insert((e.cta, None)) {
                evs.push(
                    json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
                    "args": {"name": format!("SM {} CTA {}", e.sm, e.cta)}}),
                );
            }
            if seen.insert((e.cta, Some(e.unit))) {
                evs.push(
                    json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid(e.unit), "ts": 0,
                    "args": {"name": self.unit_name(e.unit)}}),
                );
            }
            let at = loc(e.span);
            let t = us(e.t);
            let tid = tid(e.unit);
            match &e.what {
                TWhat::CtaStart | TWhat::CtaEnd | TWhat::AgentStart | TWhat::AgentEnd => {
                    let name = match e.what {
                        TWhat::CtaStart => "cta start",
                        TWhat::CtaEnd => "cta end",
                        TWhat::AgentStart => "partition start",
                        _ => "partition end",
                    };
                    evs.push(json!({"ph": "i", "s": "t", "name": name, "pid": pid, "tid": tid, "ts": t}));
                }
                TWhat::Op { op, end } => {
                    evs.push(json!({"ph": "X", "name": op, "pid": pid, "tid": tid, "ts": t,
                        "dur": us(end - e.t), "args": {"at": at}}));
                }
                TWhat::Waited { op, since } => {
                    evs.push(
                        json!({"ph": "X", "name": format!("wait {op}"), "pid": pid, "tid": tid,
                        "ts": us(*since), "dur": us(e.t - since), "args": {"at": at}}),
                    );
                }
                TWhat::TmaLoad { op, bytes, done, hit } => {
                    id += 1;
                    evs.push(
                        json!({"ph": "b", "cat": "tma", "name": op, "id": id, "pid": pid, "tid": tid,
                        "ts": t, "args": {"bytes": bytes, "l2": if *hit {"hit"} else {"miss"}, "at": at}}),
                    );
                    evs.push(
                        json!({"ph": "e", "cat": "tma", "name": op, "id": id, "pid": pid, "tid": tid,
                        "ts": us(*done)}),
                    );
                }
                TWhat::TmaStore { op, bytes, write, .. } => {
                    id += 1;
                    evs.push(
                        json!({"ph": "b", "cat": "tma", "name": op, "id": id, "pid": pid, "tid": tid,
                        "ts": t, "args": {"bytes": bytes, "at": at}}),
                    );
                    evs.push(
                        json!({"ph": "e", "cat": "tma", "name": op, "id": id, "pid": pid, "tid": tid,
                        "ts": us(*write)}),
                    );
                }
                TWhat::Mma {
                    op,
                    m,
                    n,
                    k,
                    start,
                    end,
                } => {
                    evs.push(
                        json!({"ph": "X", "name": op, "pid": pid, "tid": tid, "ts": us(*start),
                        "dur": us(end - start), "args": {"shape": format!("{m}x{n}x{k}"), "at": at}}),
                    );
                }
                TWhat::Commit { op, arrive } => {
                    evs.push(
                        json!({"ph": "i", "s": "t", "name": op, "pid": pid, "tid": tid, "ts": us(*arrive),
                        "args": {"at": at}}),
                    );
                }
                TWhat::Phase { bar, phase } => {
                    evs.push(
                        json!({"ph": "i", "s": "t", "name": format!("bar@{bar} -> phase {phase}"),
                        "pid": pid, "tid": tid, "ts": t}),
                    );
                }
            }
        }
        if let Some(h) = &self.hbm {
            let pid = 1_000_000u64;
            evs.push(
                json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
                "args": {"name": "GPU memory"}}),
            );
            let bin_s = h.bin_cycles / (self.clock_mhz * 1e6);
            for (i, b) in h.bytes.iter().enumerate() {
                evs.push(json!({"ph": "C", "name": "HBM", "pid": pid, "tid": 0,
                    "ts": us(i as f64 * h.bin_cycles), "args": {"TB/s": b / bin_s / 1e12}}));
            }
        }
        json!({"traceEvents": evs, "displayTimeUnit": "ns"})
    }
}
