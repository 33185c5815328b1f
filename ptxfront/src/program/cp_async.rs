//! Resolving the non-bulk `cp.async` family (PTX ISA, "Data Movement and Conversion
//! Instructions: cp.async", "cp.async.commit_group", "cp.async.wait_group / cp.async.wait_all",
//! and "Parallel Synchronization and Communication Instructions: cp.async.mbarrier.arrive")
//! into the [`CpOp`]s the machine runs ([`crate::machine`]'s `cp_async`).

use super::{AgentOp, Cx, MemRef, Op, Val};
use crate::parse::{Instr, Operand};
use crate::Error;

/// A non-bulk `cp.async` instruction, run per warp by the machine.
#[derive(Clone, Debug, PartialEq)]
pub enum CpOp {
    /// `cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size | ignore-src}`:
    /// `bytes` (4, 8 or 16) from global `src` to shared `dst`; the first `src_size` bytes come
    /// from `src` (none when `ignore` holds), the rest are zeros.
    Copy {
        dst: MemRef,
        src: MemRef,
        bytes: u32,
        src_size: Option<Val>,
        /// The `ignore-src` predicate and whether it is negated (`!p`).
        ignore: Option<(u16, bool)>,
    },
    /// `cp.async.commit_group`: the thread's uncommitted copies become one group.
    Commit,
    /// `cp.async.wait_group N` (`Some(N)`): all but the N most recent committed groups are
    /// complete; `cp.async.wait_all` (`None`): a commit, then `wait_group 0`.
    Wait(Option<u64>),
    /// `cp.async.mbarrier.arrive[.noinc].shared{::cta}.b64 [bar]`: an arrival on `bar` once
    /// the thread's earlier copies are complete; without `.noinc` the barrier's pending count
    /// is raised by one at once.
    Arrive { bar: MemRef, noinc: bool },
}

/// Whether `cp` with modifiers `m` is of the non-bulk family.
pub(super) fn is_cp_async(m: &[&str]) -> bool {
    m.first() == Some(&"async")
        && matches!(
            m.get(1).copied(),
            Some("ca" | "cg" | "commit_group" | "wait_group" | "wait_all" | "mbarrier")
        )
}

impl Cx<'_> {
    /// `cp.async.*` (not `.bulk`), as [`CpOp`].
    pub(super) fn cp_async(&self, i: &Instr, m: &[&str]) -> Result<Op, Error> {
        let o = &i.operands;
        let op = match m.get(1).copied() {
            Some("commit_group") => CpOp::Commit,
            Some("wait_all") => CpOp::Wait(None),
            Some("wait_group") => match o.first() {
                Some(Operand::Int(n)) => CpOp::Wait(Some(*n)),
                _ => return Err(self.invalid(i, "`cp.async.wait_group` takes an integer constant")),
            },
            Some("mbarrier") => {
                if m.get(2) != Some(&"arrive") || !m.iter().any(|x| x.starts_with("shared")) {
                    return Err(self.unsupported(i, ""));
                }
                if m.contains(&"shared::cluster") {
                    return Err(self.unsupported(i, "barriers of another CTA of the cluster"));
                }
                let Some(Operand::Addr(a)) = o.first() else {
                    return Err(self.invalid(i, "expected an mbarrier address"));
                };
                CpOp::Arrive {
                    bar: self.memref(i, a)?,
                    noinc: m.contains(&"noinc"),
                }
            }
            Some(level @ ("ca" | "cg")) => self.cp_async_copy(i, m, level == "cg")?,
            _ => return Err(self.unsupported(i, "")),
        };
        Ok(Op::Agent(AgentOp::CpAsync(op)))
    }

    /// `cp.async.{ca,cg}.shared{::cta}.global[.hints] [dst], [src], cp-size{, src-size |
    /// ignore-src}{, cache-policy}`.
    fn cp_async_copy(&self, i: &Instr, m: &[&str], cg: bool) -> Result<CpOp, Error> {
        let o = &i.operands;
        if m.get(2).is_none_or(|s| !s.starts_with("shared")) || m.get(3) != Some(&"global") {
            return Err(self.unsupported(i, "state spaces other than `.shared.global`"));
        }
        if m.contains(&"shared::cluster") {
            return Err(self.unsupported(i, "copies into another CTA of the cluster"));
        }
        let (Some(Operand::Addr(d)), Some(Operand::Addr(s)), Some(Operand::Int(n))) =
            (o.first(), o.get(1), o.get(2))
        else {
            return Err(self.invalid(i, "`cp.async` takes [dst], [src], cp-size"));
        };
        let bytes = *n as u32;
        if !matches!(*n, 4 | 8 | 16) || (cg && bytes != 16) {
            return Err(self.invalid(i, format!("cp-size {n}: `.ca` copies 4, 8 or 16 bytes, `.cg` 16")));
        }
        // The fourth operand: a predicate is `ignore-src`, anything else `src-size`.
        let (mut src_size, mut ignore) = (None, None);
        let cache_hint = m.iter().any(|x| x.starts_with("L2::cache_hint"));
        let rest = &o[3..];
        if rest.len() > 1 + cache_hint as usize {
            return Err(self.invalid(i, "too many operands for `cp.async`"));
        }
        if rest.len() == 1 + cache_hint as usize {
            match &rest[0] {
                Operand::Reg(r) if self.regs.reg_bits[*r as usize] == 1 => ignore = Some((*r, false)),
                Operand::NotReg(r) if self.regs.reg_bits[*r as usize] == 1 => ignore = Some((*r, true)),
                x => src_size = Some(self.val(i, x)?),
            }
        }
        let src = MemRef {
            base: self.base(i, s, Some(crate::parse::Space::Global))?,
            offset: s.offset,
        };
        Ok(CpOp::Copy {
            dst: self.memref(i, d)?,
            src,
            bytes,
            src_size,
            ignore,
        })
    }
}
