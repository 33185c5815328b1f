//! Phase aliasing of the mbarrier waits: a `mbarrier.try_wait.parity` / `test_wait.parity`
//! whose parity means a phase the barrier has already moved two completions past (parity
//! then shows the later phase, so the wait passes or blocks on the wrong one). The checker
//! decides it as it does for the tile machine's waits ([`CtaHb::aliasing`]: what the waiting
//! warp knows of the barrier's completions, by happens-before) and the finding is the tile
//! machine's diagnostic ([`bwsim_sim::diagnostics::phase_aliasing`]), its labels on the PTX.
//!
//! [`CtaHb::aliasing`]: bwsim_sim::check::hazards::CtaHb::aliasing

use super::{Finding, Machine};
use bwsim_isa::Code;

impl Machine<'_, '_> {
    /// Checks warp `w`'s wait at `pc` with `parity` on the mbarrier at shared byte `bar`, now
    /// in phase `phase`: a `phase-aliasing` finding (once per wait instruction) when the
    /// checker says the wait means a phase the barrier has moved past. Needs the checker.
    pub(super) fn check_aliasing(&mut self, w: usize, pc: usize, bar: u32, phase: u64, parity: u32) {
        let Some(hb) = self.hb.as_ref() else { return };
        let Some(al) = hb.aliasing(w, bar, phase, parity) else {
            return;
        };
        if (self.findings.iter()).any(|f| f.code == Code::PhaseAliasing && f.pc == pc) {
            return;
        }
        let with: Vec<usize> = al.missed.iter().flatten().map(|m| m.instr as usize).collect();
        let diagnostic = bwsim_sim::diagnostics::phase_aliasing(
            |i| self.span(i as usize),
            &al,
            &format!("warp {w}"),
            &format!("the mbarrier at shared byte {bar}"),
            self.span(pc),
            phase,
            parity,
        );
        self.findings.push(Finding {
            code: Code::PhaseAliasing,
            pc,
            with,
            diagnostic,
        });
    }
}
