//! Resource limits of a launch: how many simulated steps, how much wall time, how much memory
//! for simulated global tensors and how many trace events one run may use.
//!
//! A limit comes from three places, the later overriding the earlier: the defaults here, the
//! kernel's launch section (`limit memory = 4 * GiB`, one line per limit) and the command line
//! (`--max-memory 4GiB`). This module owns the names, units, defaults and messages; the launch
//! resolution enforces [`Limit::Memory`] before allocating, the simulator the others. It knows
//! nothing of how they are enforced.

use crate::codes::Code;
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// One kind of limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Limit {
    /// Agent steps (instructions executed) of one run.
    Steps,
    /// Wall-clock time of one run.
    WallTime,
    /// Bytes of all global tensors of a launch.
    Memory,
    /// Events recorded in the trace of one run.
    TraceEvents,
}

impl Limit {
    pub const ALL: [Limit; 4] = [Limit::Steps, Limit::WallTime, Limit::Memory, Limit::TraceEvents];

    /// The key in a launch section: `limit KEY = VALUE`.
    pub fn key(self) -> &'static str {
        match self {
            Limit::Steps => "steps",
            Limit::WallTime => "wall_time",
            Limit::Memory => "memory",
            Limit::TraceEvents => "trace_events",
        }
    }

    /// The command-line flag that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            Limit::Steps => "--max-steps",
            Limit::WallTime => "--max-wall-time",
            Limit::Memory => "--max-memory",
            Limit::TraceEvents => "--max-trace-events",
        }
    }

    /// The stable diagnostic code of a run stopped (or a launch refused) by this limit.
    pub fn code(self) -> Code {
        match self {
            Limit::Steps => Code::StepLimit,
            Limit::WallTime => Code::WallTimeLimit,
            Limit::Memory => Code::MemoryLimit,
            Limit::TraceEvents => Code::TraceLimit,
        }
    }

    /// What is counted, in words.
    pub fn what(self) -> &'static str {
        match self {
            Limit::Steps => "simulated steps",
            Limit::WallTime => "wall-clock time",
            Limit::Memory => "memory for global tensors",
            Limit::TraceEvents => "trace events",
        }
    }

    /// A launch-section key back to its limit.
    pub fn from_key(key: &str) -> Option<Limit> {
        Limit::ALL.into_iter().find(|l| l.key() == key)
    }

    /// How to raise the limit to `wanted` (a value in the limit's unit), as a help line.
    pub fn raise_help(self, wanted: Option<u64>) -> String {
        let example = match (self, wanted) {
            (Limit::Memory, Some(b)) => format_bytes_ceil(b),
            (Limit::WallTime, Some(ms)) => format!("{}s", ms.div_ceil(1000).max(1)),
            (_, Some(n)) => n.to_string(),
            (Limit::Memory, None) => "16GiB".into(),
            (Limit::WallTime, None) => "1h".into(),
            (_, None) => "1000000000".into(),
        };
        let spec = match self {
            Limit::Memory => "N * GiB".to_string(),
            Limit::WallTime => "SECONDS".to_string(),
            _ => "N".to_string(),
        };
        format!(
            "raise it with `{} {example}` on the command line or `limit {} = {spec}` in the launch section",
            self.flag(),
            self.key()
        )
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Limits as given (each `None` when unset: the layer below decides).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Limits {
    pub steps: Option<u64>,
    /// Wall-clock time of one run. Deadlock detection never depends on it.
    pub wall_time: Option<Duration>,
    /// Bytes of all global tensors of a launch.
    pub memory: Option<u64>,
    pub trace_events: Option<u64>,
}

impl Limits {
    /// Agent steps of one run when nothing else says.
    pub const DEFAULT_STEPS: u64 = 200_000_000;
    /// Global-tensor bytes of one launch when nothing else says.
    pub const DEFAULT_MEMORY: u64 = 8 << 30;
    /// Trace events of one run when nothing else says (an event is about 64 bytes).
    pub const DEFAULT_TRACE_EVENTS: u64 = 20_000_000;

    /// `self`'s limits where set, `base`'s elsewhere.
    pub fn or(self, base: Limits) -> Limits {
        Limits {
            steps: self.steps.or(base.steps),
            wall_time: self.wall_time.or(base.wall_time),
            memory: self.memory.or(base.memory),
            trace_events: self.trace_events.or(base.trace_events),
        }
    }

    pub fn steps_or_default(&self) -> u64 {
        self.steps.unwrap_or(Self::DEFAULT_STEPS)
    }
    /// The wall-time limit; none by default (steps bound every run).
    pub fn wall_time_or_default(&self) -> Option<Duration> {
        self.wall_time
    }
    pub fn memory_or_default(&self) -> u64 {
        self.memory.unwrap_or(Self::DEFAULT_MEMORY)
    }
    pub fn trace_events_or_default(&self) -> u64 {
        self.trace_events.unwrap_or(Self::DEFAULT_TRACE_EVENTS)
    }

    /// Set one limit from a value in its unit (steps, milliseconds, bytes, events).
    pub fn set(&mut self, l: Limit, v: u64) {
        match l {
            Limit::Steps => self.steps = Some(v),
            Limit::WallTime => self.wall_time = Some(Duration::from_millis(v)),
            Limit::Memory => self.memory = Some(v),
            Limit::TraceEvents => self.trace_events = Some(v),
        }
    }
}

/// Byte units usable in a launch section's `limit memory = ...` (and accepted as suffixes by
/// [`parse_bytes`]).
pub const BYTE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
];

/// A limit value that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitValueError {
    #[error("unknown size unit `{0}` (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)")]
    SizeUnit(String),
    #[error("`{0}` is not a size like `4GiB` or `65536`")]
    Size(String),
    #[error("unknown time unit `{0}` (use ms, s, m or h)")]
    TimeUnit(String),
    #[error("`{0}` is not a duration like `90s` or `10m`")]
    Duration(String),
    #[error("`{0}` is not a non-negative integer")]
    Count(String),
}

/// `1.5GB` → (`1.5`, `GB`): the leading number (digits, `.`, `_`) and what follows it.
fn number_and_unit(s: &str) -> (&str, &str) {
    let split = (s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))).unwrap_or(s.len());
    s.split_at(split)
}

/// `4096`, `512MiB`, `4GiB`, `1.5GB` (case-sensitive units from [`BYTE_UNITS`]) → bytes.
pub fn parse_bytes(s: &str) -> Result<u64, LimitValueError> {
    let s = s.trim();
    let (num, unit) = number_and_unit(s);
    let unit = unit.trim();
    let mult = if unit.is_empty() {
        1
    } else {
        BYTE_UNITS
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, m)| *m)
            .ok_or_else(|| LimitValueError::SizeUnit(unit.to_string()))?
    };
    scaled(num, mult as f64).ok_or_else(|| LimitValueError::Size(s.to_string()))
}

/// `90`, `90s`, `1.5s`, `500ms`, `10m`, `2h` → a duration (a bare number is seconds).
pub fn parse_duration(s: &str) -> Result<Duration, LimitValueError> {
    let s = s.trim();
    let (num, unit) = number_and_unit(s);
    let ms_per = match unit.trim() {
        "" | "s" => 1000.0,
        "ms" => 1.0,
        "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        u => return Err(LimitValueError::TimeUnit(u.to_string())),
    };
    scaled(num, ms_per)
        .map(Duration::from_millis)
        .ok_or_else(|| LimitValueError::Duration(s.to_string()))
}

/// A count with optional `_` separators.
pub fn parse_count(s: &str) -> Result<u64, LimitValueError> {
    let t: String = s.trim().chars().filter(|&c| c != '_').collect();
    t.parse::<u64>()
        .map_err(|_| LimitValueError::Count(s.trim().to_string()))
}

/// `num * mult` for a decimal `num`, rounded up; `None` when malformed, negative or too large
/// for a `u64`.
fn scaled(num: &str, mult: f64) -> Option<u64> {
    let t: String = num.chars().filter(|&c| c != '_').collect();
    if t.is_empty() {
        return None;
    }
    if !t.contains('.') {
        let n: u64 = t.parse().ok()?;
        return n.checked_mul(mult as u64).filter(|_| mult.fract() == 0.0);
    }
    let x: f64 = t.parse().ok()?;
    let v = (x * mult).ceil();
    // 2^64 as f64 is exact; anything at or above it does not fit.
    (v.is_finite() && (0.0..18_446_744_073_709_551_616.0).contains(&v)).then_some(v as u64)
}

/// Bytes in the largest binary unit that keeps a short number, rounded up: `4GiB`, `1.5MiB`,
/// `300B`.
pub fn format_bytes_ceil(b: u64) -> String {
    for (u, m) in [
        ("TiB", 1u64 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if b >= m {
            if b.is_multiple_of(m) {
                return format!("{}{u}", b / m);
            }
            let tenths = (b as u128 * 10).div_ceil(m as u128);
            return format!("{}.{}{u}", tenths / 10, tenths % 10);
        }
    }
    format!("{b}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("4GiB"), Ok(4 << 30));
        assert_eq!(parse_bytes("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("1.5KiB"), Ok(1536));
        assert_eq!(parse_bytes("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_bytes("1_000"), Ok(1000));
        assert!(parse_bytes("4gib").is_err());
        assert!(parse_bytes("-1").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("GiB").is_err());
        // 2^64 bytes and beyond do not fit.
        assert!(parse_bytes("16777216TiB").is_err());
        assert!(parse_bytes("18446744073709551616").is_err());
        assert_eq!(parse_bytes("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("10d").is_err());
        assert!(parse_duration("99999999999999999999h").is_err());
    }

    #[test]
    fn later_layers_override_earlier_ones() {
        let spec = Limits {
            steps: Some(10),
            memory: Some(100),
            ..Limits::default()
        };
        let cli = Limits {
            memory: Some(5),
            ..Limits::default()
        };
        let l = cli.or(spec);
        assert_eq!(l.steps, Some(10));
        assert_eq!(l.memory, Some(5));
        assert_eq!(l.trace_events_or_default(), Limits::DEFAULT_TRACE_EVENTS);
        assert_eq!(Limits::default().memory_or_default(), 8 << 30);
    }

    #[test]
    fn bytes_format_round_up() {
        assert_eq!(format_bytes_ceil(4 << 30), "4GiB");
        assert_eq!(format_bytes_ceil((1 << 20) + 1), "1.1MiB");
        assert_eq!(format_bytes_ceil(300), "300B");
        assert_eq!(
            parse_bytes(&format_bytes_ceil(3_000_000_123)).map(|b| b >= 3_000_000_123),
            Ok(true)
        );
    }

    #[test]
    fn help_names_flag_and_key() {
        let h = Limit::Memory.raise_help(Some(3 << 30));
        assert!(h.contains("--max-memory 3GiB"), "{h}");
        assert!(h.contains("limit memory = N * GiB"), "{h}");
        assert_eq!(Limit::from_key("trace_events"), Some(Limit::TraceEvents));
        assert_eq!(Limit::from_key("nope"), None);
    }
}
