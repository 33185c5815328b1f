//! Enforcement of a run's resource limits ([`bwsim_isa::limits`]): simulated steps, wall-clock
//! time and trace events. The machine asks [`Guard::check`] at one point of its main loop, and
//! builds the diagnostic with [`limit_diagnostic`] from where its agents are.
//!
//! The memory limit is enforced earlier, before any tensor is allocated
//! ([`bwsim_isa::launch::materialize`]). Deadlock detection never involves this module: a run
//! whose agents are all blocked stops at once, whatever the limits.

use bwsim_isa::limits::{Limit, Limits};
use bwsim_isa::{Diagnostic, Span};
use std::time::{Duration, Instant};

/// The limits of one run, resolved, with the clock started.
#[derive(Clone, Debug)]
pub struct Guard {
    steps: u64,
    deadline: Option<Instant>,
    wall: Option<Duration>,
    trace_events: u64,
    /// How many checks to skip between clock reads (the clock costs more than a step check).
    tick: u32,
}

/// Clock reads happen on every 64th check.
const CLOCK_EVERY: u32 = 64;

impl Guard {
    /// Start the clock for `limits` (defaults where unset).
    pub fn start(limits: &Limits) -> Guard {
        let wall = limits.wall_time_or_default();
        Guard {
            steps: limits.steps_or_default(),
            deadline: wall.and_then(|w| Instant::now().checked_add(w)),
            wall,
            trace_events: limits.trace_events_or_default(),
            tick: 0,
        }
    }

    /// The limit reached after `steps` steps with `trace_events` events recorded, if any.
    pub fn check(&mut self, steps: u64, trace_events: usize) -> Option<Limit> {
        if steps >= self.steps {
            return Some(Limit::Steps);
        }
        if trace_events as u64 > self.trace_events {
            return Some(Limit::TraceEvents);
        }
        if let Some(d) = self.deadline {
            self.tick = self.tick.wrapping_add(1);
            if self.tick.is_multiple_of(CLOCK_EVERY) && Instant::now() >= d {
                return Some(Limit::WallTime);
            }
        }
        None
    }

    /// The value of `limit` in its unit (steps, milliseconds, events).
    pub fn value(&self, limit: Limit) -> u64 {
        match limit {
            Limit::Steps => self.steps,
            Limit::WallTime => self
                .wall
                .map_or(u64::MAX, |w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX)),
            Limit::TraceEvents => self.trace_events,
            Limit::Memory => u64::MAX,
        }
    }

    /// Trace events to keep when the trace limit stops a run.
    pub fn trace_cap(&self) -> usize {
        usize::try_from(self.trace_events).unwrap_or(usize::MAX)
    }
}

/// Where the run was when it stopped.
#[derive(Clone, Debug, Default)]
pub struct Where {
    pub steps: u64,
    pub time: u64,
    pub ctas_done: u64,
    pub ctas_total: u64,
    /// Each live agent: the span of its next instruction and a line saying who and how.
    pub agents: Vec<(Span, String)>,
}

/// At most this many agents get a label of their own (all are listed in notes up to twice as
/// many).
const MAX_LABELS: usize = 8;

/// The diagnostic of a run stopped by `limit`: which limit, where every live agent was, and how
/// to raise it.
pub fn limit_diagnostic(limit: Limit, guard: &Guard, at: &Where) -> Diagnostic {
    let value = guard.value(limit);
    let amount = match limit {
        Limit::WallTime => format!("{:.1}s", value as f64 / 1000.0),
        _ => format!("{value}"),
    };
    let (span, label) = at
        .agents
        .first()
        .cloned()
        .unwrap_or((Span::DUMMY, "no agent was running".to_string()));
    let mut d = Diagnostic::error(
        limit.code(),
        format!(
            "the run reached the limit of {amount} {} before finishing",
            limit.what()
        ),
        span,
        label,
    );
    for (sp, l) in at.agents.iter().skip(1).take(MAX_LABELS) {
        d = d.with_label(*sp, l.clone());
    }
    d = d.with_note(format!(
        "stopped after {} steps at logical time {}, with {} of {} CTAs finished",
        at.steps, at.time, at.ctas_done, at.ctas_total
    ));
    for (_, l) in at.agents.iter().skip(1 + MAX_LABELS).take(MAX_LABELS) {
        d = d.with_note(l.clone());
    }
    if at.agents.len() > 1 + 2 * MAX_LABELS {
        d = d.with_note(format!(
            "... and {} more agents",
            at.agents.len() - 1 - 2 * MAX_LABELS
        ));
    }
    if limit == Limit::TraceEvents {
        d = d.with_note("the trace holds the events up to the limit");
    }
    let wanted = value.saturating_mul(4);
    let mut help = limit.raise_help(Some(wanted));
    match limit {
        Limit::Steps => help.push_str(
            "; if the kernel should have finished, a partition may spin forever (e.g. polling `mbar.test_wait` in a loop)",
        ),
        Limit::TraceEvents => help.push_str(", or run without recording a trace"),
        _ => {}
    }
    d.with_help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_trace_fire_at_their_values() {
        let mut g = Guard::start(&Limits {
            steps: Some(10),
            trace_events: Some(5),
            ..Limits::default()
        });
        assert_eq!(g.check(9, 5), None);
        assert_eq!(g.check(10, 0), Some(Limit::Steps));
        assert_eq!(g.check(3, 6), Some(Limit::TraceEvents));
    }

    #[test]
    fn wall_time_fires_after_the_deadline() {
        let mut g = Guard::start(&Limits {
            wall_time: Some(Duration::ZERO),
            ..Limits::default()
        });
        let fired = (0..CLOCK_EVERY * 2).any(|_| g.check(0, 0) == Some(Limit::WallTime));
        assert!(fired);
        let mut g = Guard::start(&Limits::default());
        assert!((0..CLOCK_EVERY * 2).all(|_| g.check(0, 0).is_none()));
    }

    #[test]
    fn diagnostic_names_the_limit_the_agents_and_the_way_to_raise_it() {
        let g = Guard::start(&Limits {
            steps: Some(100),
            ..Limits::default()
        });
        let at = Where {
            steps: 100,
            time: 140,
            ctas_done: 1,
            ctas_total: 4,
            agents: vec![
                (Span::new(10, 20), "cta1.default at `mbar.test_wait`".into()),
                (Span::new(30, 40), "cta1.worker.load blocked".into()),
            ],
        };
        let d = limit_diagnostic(Limit::Steps, &g, &at);
        assert_eq!(d.code, "step-limit");
        assert!(
            d.message.contains("limit of 100 simulated steps"),
            "{}",
            d.message
        );
        assert_eq!(d.primary.span.start, 10);
        assert_eq!(d.labels.len(), 1);
        assert!(d.notes[0].contains("1 of 4 CTAs"), "{:?}", d.notes);
        let help = d.help.unwrap_or_default();
        assert!(help.contains("--max-steps 400"), "{help}");
        assert!(help.contains("limit steps = N"), "{help}");
    }
}
