//! What the machine says when a CTA cannot go on: no warp can step and nothing is in flight,
//! yet some thread has not exited. The run stops with [`Error::Stuck`], whose finding is the
//! `deadlock`, as the tile machine's run stops: a wait parked on a barrier whose transaction
//! count can never reach zero any more (nothing left in flight delivers bytes to it) is first
//! reported as a `tx-mismatch` finding, and the findings made before the stop are kept
//! ([`super::run_to_stop`]). Also the `tx-mismatch` of a copy whose bytes land after the phase
//! it was issued in completed.

use super::{Finding, Machine};
use crate::exec::St;
use crate::Error;
use bwsim_isa::{Code, Diagnostic, Span};
use std::collections::BTreeSet;

impl Machine<'_, '_> {
    /// The error that stops a CTA in which no warp can step and nothing is in flight: its
    /// `deadlock`, after the `tx-mismatch` finding of a barrier that can never complete (as
    /// the tile machine reports the two, docs/semantics.md#transaction-bytes).
    pub(super) fn stuck(&mut self) -> Error {
        if let Some(f) = self.tx_mismatch() {
            if !(self.findings.iter()).any(|g| g.code == f.code && g.pc == f.pc && g.with == f.with) {
                self.findings.push(f);
            }
        }
        Error::Stuck(Box::new(self.deadlock()))
    }

    /// The `deadlock` finding: every thread still running, where it waits. As the tile
    /// machine's wait-for diagnosis labels its agents, the primary label is where the first
    /// warp that has not finished waits (its first unfinished lane), and a label marks each
    /// other place such a warp waits, in warp order; the warps at a CTA barrier (`bar.sync`,
    /// which waits for the others: the warps a compiler adds to round a warp-specialized
    /// kernel's warps up, which no partition of the TTGIR stands for) come last.
    fn deadlock(&self) -> Finding {
        let p = self.cta.p;
        let waiting: BTreeSet<String> = self
            .th
            .iter()
            .filter(|t| t.st != St::Done)
            .map(|t| p.place(t.pc))
            .collect();
        let mut places: Vec<(bool, usize)> = Vec::new();
        for w in 0..self.warps {
            let lane = self.lanes(w).find(|&t| self.th[t].st != St::Done);
            if let Some(t) = lane.map(|t| &self.th[t]) {
                let at_barrier = matches!(t.st, St::Sync(Some(_)));
                if !places.iter().any(|&(_, pc)| pc == t.pc) {
                    places.push((at_barrier, t.pc));
                }
            }
        }
        places.sort_by_key(|&(at_barrier, _)| at_barrier);
        let places: Vec<usize> = places.into_iter().map(|(_, pc)| pc).collect();
        let pc = places.first().copied().unwrap_or(0);
        let message = format!(
            "deadlock in CTA {:?}: no warp can go on and nothing is in flight (waiting at {})",
            self.cta.ctaid,
            waiting.into_iter().collect::<Vec<_>>().join("; ")
        );
        let mut diagnostic =
            Diagnostic::error(Code::Deadlock, message, self.span(pc), "the run stopped here");
        for &w in &places[1.min(places.len())..] {
            diagnostic = diagnostic.with_label(self.span(w), format!("a warp waits here ({})", p.place(w)));
        }
        Finding {
            code: Code::Deadlock,
            pc,
            with: places.into_iter().skip(1).collect(),
            diagnostic,
        }
    }

    /// A `tx-mismatch` finding for the first parked wait (by warp, then pc) whose barrier's
    /// transaction count is not zero: with nothing in flight no copy can complete it, so its
    /// phase never completes. The primary label is the expect-tx that set the count (else the
    /// first copy that delivered bytes), the others are the copies that delivered bytes in
    /// this phase. Needs the checker, which records who expected and who delivered.
    fn tx_mismatch(&self) -> Option<Finding> {
        let hb = self.hb.as_ref()?;
        let p = self.cta.p;
        let waiting = |w: usize, pc: usize| {
            self.lanes(w)
                .any(|t| self.th[t].st == St::Agent && self.th[t].pc == pc)
        };
        let (bar, tx) = (self.parked.iter().enumerate())
            .flat_map(|(w, m)| m.iter().map(move |(&pc, &(bar, _))| (w, pc, bar)))
            .filter(|&(w, pc, _)| waiting(w, pc))
            .find_map(|(_, _, bar)| {
                let tx = self.bars.get(&bar)?.tx;
                (tx != 0).then_some((bar, tx))
            })?;
        let b = hb.bar(bar)?;
        let expects: Vec<usize> = b.expect_at.iter().map(|&pc| pc as usize).collect();
        let mut delivers: Vec<usize> = b.deliver_at.iter().map(|&pc| pc as usize).collect();
        delivers.sort_unstable();
        let pc = *expects.first().or(delivers.first())?;
        let with: Vec<usize> = delivers.iter().copied().filter(|&d| d != pc).collect();
        let name = format!("the mbarrier at shared byte {bar}");
        let message = if tx < 0 {
            format!(
                "{name} received {} bytes more than its phase expects ({} expected, {} delivered): \
                 the phase can never complete",
                -tx, b.expected, b.delivered
            )
        } else {
            format!(
                "{name} still expects {tx} bytes that no copy in flight will deliver ({} \
                 expected, {} delivered): the phase can never complete",
                b.expected, b.delivered
            )
        };
        let label = if expects.is_empty() {
            "delivers bytes to it"
        } else {
            "expects the bytes"
        };
        let mut d = Diagnostic::error(Code::TxMismatch, message, self.span(pc), label);
        for &w in &with {
            d = d.with_label(self.span(w), format!("delivers bytes to it ({})", p.place(w)));
        }
        d = d
            .with_note("the run stopped: no warp can go on and nothing is in flight")
            .with_help("expect exactly the bytes the copies on this barrier deliver: the full box of each");
        Some(Finding {
            code: Code::TxMismatch,
            pc,
            with,
            diagnostic: d,
        })
    }

    /// The `tx-mismatch` of a copy (at `pc`) whose `bytes` land on `bar` after the phase it
    /// was issued in completed: the phase's expect was short, so it completed early, and these
    /// bytes count against the next phase. Labelled at the expects of the completed phase, as
    /// the tile machine reports it (docs/semantics.md#transaction-bytes). Needs the checker.
    pub(super) fn overshoot(&mut self, pc: usize, bar: u32, bytes: i64) {
        let Some(hb) = self.hb.as_ref() else { return };
        if self
            .findings
            .iter()
            .any(|f| f.code == Code::TxMismatch && f.pc == pc)
        {
            return;
        }
        let p = self.cta.p;
        let expects: Vec<usize> = hb
            .bar(bar)
            .map(|b| b.prev_expect_at.iter().map(|&pc| pc as usize).collect())
            .unwrap_or_default();
        let name = format!("the mbarrier at shared byte {bar}");
        let mut d = Diagnostic::error(
            Code::TxMismatch,
            format!("{name} completed its phase before this copy's bytes had all landed: {bytes} bytes overshoot the expect"),
            self.span(pc),
            format!("delivers {bytes} bytes to it after the phase it was issued in completed"),
        );
        for &e in &expects {
            d = d.with_label(
                self.span(e),
                format!("expects the phase's bytes ({})", p.place(e)),
            );
        }
        d = d
            .with_note("the phase completed early (waiters may read bytes that have not landed) and the surplus drives the next phase's transaction count negative")
            .with_help("expect exactly the bytes the copies deliver: the full box of each");
        self.findings.push(Finding {
            code: Code::TxMismatch,
            pc,
            with: expects,
            diagnostic: d,
        });
    }

    pub(super) fn span(&self, pc: usize) -> Span {
        self.cta.p.ins.get(pc).map_or(Span::DUMMY, |i| i.span)
    }
}
