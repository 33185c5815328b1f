//! The event trace of a run and its two renderings: a compact, stable text form (one event per
//! line, for insta snapshots) and Chrome trace JSON (one track per partition, TMA unit and
//! tensor pipe of each CTA; loads in Perfetto).
//!
//! Events are structured data recorded without formatting; rendering happens only on demand.
//! This module knows nothing of how events are produced.

use bwsim_isa::{SourceFile, Span};
use serde::Serialize;
use serde_json::json;
use std::fmt::Write as _;
use std::path::Path;

/// Who an event belongs to within a CTA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
pub enum Unit {
    /// A partition, by index (0 is the default partition, workers follow in declaration order).
    Agent(u32),
    /// The CTA's TMA unit.
    Tma,
    /// The CTA's tensor pipe.
    Tc,
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum What {
    /// A partition started (a CTA's default partition, or a worker at `warp_specialize`).
    AgentStart,
    /// A partition finished.
    AgentEnd,
    /// An asynchronous operation was issued (`id` matches its start/complete).
    Issue {
        op: &'static str,
        id: u64,
    },
    /// An asynchronous operation started executing on its unit.
    Start {
        op: &'static str,
        id: u64,
    },
    /// Part of a TMA operation landed (`bytes` delivered).
    Piece {
        op: &'static str,
        id: u64,
        bytes: u64,
    },
    /// An asynchronous operation completed.
    Complete {
        op: &'static str,
        id: u64,
    },
    /// A synchronous operation of interest (tmem.load, smem.store, ...).
    Exec {
        op: &'static str,
    },
    Init {
        bar: u32,
        count: u32,
    },
    Arrive {
        bar: u32,
        count: u32,
        pending: u32,
    },
    /// The pending arrivals raised by `count` (`cp.async.arrive` without `noinc`).
    Increment {
        bar: u32,
        count: u32,
        pending: u32,
    },
    ExpectTx {
        bar: u32,
        bytes: i64,
        tx: i64,
    },
    CompleteTx {
        bar: u32,
        bytes: i64,
        tx: i64,
    },
    PhaseFlip {
        bar: u32,
        phase: u64,
    },
    Invalidate {
        bar: u32,
    },
    WaitBegin {
        bar: u32,
        parity: u32,
    },
    WaitDone {
        bar: u32,
        parity: u32,
    },
    /// Blocked on something that is not a barrier (`tma.store_wait`, `wgmma.wait`, join).
    Blocked {
        on: &'static str,
    },
    Resumed {
        on: &'static str,
    },
    Fence {
        op: &'static str,
    },
    TmemAlloc {
        col: u32,
        cols: u32,
    },
    TmemDealloc {
        col: u32,
        cols: u32,
    },
    Trap {
        error: &'static str,
    },
}

impl What {
    fn name(&self) -> String {
        match self {
            What::AgentStart => "start".into(),
            What::AgentEnd => "end".into(),
            What::Issue { op, .. } => format!("issue {op}"),
            What::Start { op, .. } => format!("start {op}"),
            What::Piece { op, .. } => format!("piece {op}"),
            What::Complete { op, .. } => format!("complete {op}"),
            What::Exec { op } => (*op).to_string(),
            What::Init { .. } => "mbar.init".into(),
            What::Arrive { .. } => "arrive".into(),
            What::Increment { .. } => "increment".into(),
            What::ExpectTx { .. } => "expect_tx".into(),
            What::CompleteTx { .. } => "complete_tx".into(),
            What::PhaseFlip { .. } => "phase".into(),
            What::Invalidate { .. } => "mbar.invalidate".into(),
            What::WaitBegin { .. } => "wait".into(),
            What::WaitDone { .. } => "wait done".into(),
            What::Blocked { on } => format!("blocked {on}"),
            What::Resumed { on } => format!("resumed {on}"),
            What::Fence { op } => (*op).to_string(),
            What::TmemAlloc { .. } => "tmem.alloc".into(),
            What::TmemDealloc { .. } => "tmem.dealloc".into(),
            What::Trap { .. } => "trap".into(),
        }
    }
    fn detail(&self, out: &mut String) {
        let _ = match self {
            What::Issue { id, .. } | What::Start { id, .. } | What::Complete { id, .. } => {
                write!(out, " #{id}")
            }
            What::Piece { id, bytes, .. } => write!(out, " #{id} bytes={bytes}"),
            What::Init { bar, count } => write!(out, " bar={bar:#x} count={count}"),
            What::Arrive { bar, count, pending } | What::Increment { bar, count, pending } => {
                write!(out, " bar={bar:#x} count={count} pending={pending}")
            }
            What::ExpectTx { bar, bytes, tx } | What::CompleteTx { bar, bytes, tx } => {
                write!(out, " bar={bar:#x} bytes={bytes} tx={tx}")
            }
            What::PhaseFlip { bar, phase } => write!(out, " bar={bar:#x} -> {phase}"),
            What::Invalidate { bar } => write!(out, " bar={bar:#x}"),
            What::WaitBegin { bar, parity } | What::WaitDone { bar, parity } => {
                write!(out, " bar={bar:#x} parity={parity}")
            }
            What::TmemAlloc { col, cols } | What::TmemDealloc { col, cols } => {
                write!(out, " cols={col}..{}", col + cols)
            }
            What::Trap { error } => write!(out, " {error}"),
            _ => Ok(()),
        };
    }
}

/// One event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    /// Logical time.
    pub time: u64,
    /// Linear CTA index in the grid.
    pub cta: u32,
    pub unit: Unit,
    pub what: What,
    /// The operation's span (dummy for events without one).
    pub span: Span,
}

/// The trace of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Trace {
    /// Partition names by agent index (`default`, `worker.load`, ...).
    pub agent_names: Vec<String>,
    pub events: Vec<Event>,
}

impl Trace {
    /// `cta0.default`, `cta1.worker.load`, `cta0.tma`, `cta0.tc`.
    pub fn unit_name(&self, cta: u32, unit: Unit) -> String {
        match unit {
            Unit::Agent(i) => format!(
                "cta{cta}.{}",
                self.agent_names
                    .get(i as usize)
                    .map(String::as_str)
                    .unwrap_or("agent")
            ),
            Unit::Tma => format!("cta{cta}.tma"),
            Unit::Tc => format!("cta{cta}.tc"),
        }
    }

    fn location(span: Span, file: Option<&SourceFile>) -> String {
        if span.is_dummy() {
            return String::new();
        }
        match file {
            Some(f) => {
                let (l, c) = f.line_col(span.start as usize);
                format!(" @{l}:{c}")
            }
            None => format!(" @{}..{}", span.start, span.end),
        }
    }

    /// The compact text form: `time agent event details @line:col`, one event per line.
    /// Deterministic for a seed; with `file`, spans print as line:column.
    pub fn render(&self, file: Option<&SourceFile>) -> String {
        let mut out = String::new();
        for e in &self.events {
            let _ = write!(
                out,
                "{:>7} {:<20} {}",
                e.time,
                self.unit_name(e.cta, e.unit),
                e.what.name()
            );
            e.what.detail(&mut out);
            out.push_str(&Self::location(e.span, file));
            out.push('\n');
        }
        out
    }

    /// Chrome trace JSON (`chrome://tracing`, Perfetto): one process per CTA, one thread per
    /// partition / TMA unit / tensor pipe; asynchronous operations as async slices.
    pub fn chrome_json(&self, file: Option<&SourceFile>) -> serde_json::Value {
        let tid = |u: Unit| -> u64 {
            match u {
                Unit::Agent(i) => i as u64,
                Unit::Tma => 1000,
                Unit::Tc => 1001,
            }
        };
        let mut evs = Vec::new();
        let mut seen: std::collections::BTreeSet<(u32, Unit)> = Default::default();
        for e in &self.events {
            if seen.insert((e.cta, e.unit)) {
                evs.push(
                    json!({"ph": "M", "name": "thread_name", "pid": e.cta, "tid": tid(e.unit),
                    "args": {"name": self.unit_name(e.cta, e.unit)}}),
                );
            }
            let mut detail = String::new();
            e.what.detail(&mut detail);
            let loc = Self::location(e.span, file);
            let args = json!({"detail": detail.trim(), "at": loc.trim()});
            match &e.what {
                What::Start { op, id } => evs.push(json!({"ph": "b", "cat": "async", "name": op, "id": id,
                    "pid": e.cta, "tid": tid(e.unit), "ts": e.time, "args": args})),
                What::Complete { op, id } => evs
                    .push(json!({"ph": "e", "cat": "async", "name": op, "id": id,
                    "pid": e.cta, "tid": tid(e.unit), "ts": e.time, "args": args})),
                w => evs.push(
                    json!({"ph": "i", "s": "t", "name": w.name(), "pid": e.cta, "tid": tid(e.unit),
                    "ts": e.time, "args": args}),
                ),
            }
        }
        json!({"traceEvents": evs, "displayTimeUnit": "ns"})
    }

    /// Write [`Trace::render`] to `path` with [`write_atomic`]: a run stopped by a limit
    /// leaves its whole partial trace, never a truncated file.
    pub fn write_text(&self, path: &Path, file: Option<&SourceFile>) -> std::io::Result<()> {
        write_atomic(path, self.render(file).as_bytes())
    }

    /// Write [`Trace::chrome_json`] to `path` with [`write_atomic`].
    pub fn write_chrome(&self, path: &Path, file: Option<&SourceFile>) -> std::io::Result<()> {
        write_atomic(path, self.chrome_json(file).to_string().as_bytes())
    }
}

/// Write `bytes` to `path` whole or not at all: into a temporary file beside it, flushed to
/// disk, then renamed over `path` (a rename within a folder is atomic). An interrupted write
/// leaves the old file (or none), never a truncated one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let r = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}
