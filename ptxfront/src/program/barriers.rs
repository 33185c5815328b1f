//! Resolving the barrier instructions the machine runs: the `mbarrier` forms (init, arrive,
//! expect-tx, test and try-wait, with their scopes and completion) and the cluster launch
//! control queries (`clusterlaunchcontrol.try_cancel` / `.query_cancel`).

use super::{AgentOp, Cx, Op};
use crate::parse::{Instr, Operand};
use crate::Error;

impl Cx<'_> {
    /// `clusterlaunchcontrol.try_cancel` (an agent instruction) and `.query_cancel`.
    pub(super) fn clc(&self, i: &Instr, m: &[&str]) -> Result<Op, Error> {
        let o = &i.operands;
        match m.first().copied() {
            Some("try_cancel") => match (o.first(), o.get(1)) {
                (Some(Operand::Addr(d)), Some(Operand::Addr(b))) => Ok(Op::Agent(AgentOp::ClcTryCancel {
                    dst: self.memref(i, d)?,
                    bar: self.memref(i, b)?,
                    multicast: m.iter().any(|x| x.starts_with("multicast")),
                })),
                _ => Err(self.invalid(i, "expected [response], [mbarrier]")),
            },
            Some("query_cancel") => {
                let src = self.val(
                    i,
                    o.get(1).ok_or_else(|| self.invalid(i, "expected d, response"))?,
                )?;
                let dsts: Vec<u16> = match o.first() {
                    Some(Operand::Vec(v)) => v.iter().map(|x| self.reg(i, x)).collect::<Result<_, _>>()?,
                    Some(x) => vec![self.reg(i, x)?],
                    None => return Err(self.invalid(i, "expected d, response")),
                };
                let (canceled, dims) = match m.get(1).copied() {
                    Some("is_canceled") => (true, vec![]),
                    Some("get_first_ctaid::x") => (false, vec![0]),
                    Some("get_first_ctaid::y") => (false, vec![1]),
                    Some("get_first_ctaid::z") => (false, vec![2]),
                    Some("get_first_ctaid") if dsts.len() == 4 => (false, vec![0, 1, 2, 3]),
                    _ => return Err(self.unsupported(i, "")),
                };
                Ok(Op::ClcQuery {
                    canceled,
                    dims,
                    dsts,
                    src,
                })
            }
            _ => Err(self.unsupported(i, "")),
        }
    }

    /// The `mbarrier` forms the machine runs (on a CTA's own shared memory).
    pub(super) fn mbarrier(&self, i: &Instr, m: &[&str]) -> Result<Op, Error> {
        let o = &i.operands;
        if m.iter().any(|x| x.starts_with("shared::cluster"))
            && !matches!(m.first(), Some(&"arrive" | &"expect_tx"))
        {
            return Err(self.unsupported(i, "waits and inits on another CTA's barrier"));
        }
        let addr = |k: usize| match o.get(k) {
            Some(Operand::Addr(a)) => self.memref(i, a),
            _ => Err(self.invalid(i, "expected an mbarrier address")),
        };
        let op = match m.first().copied() {
            Some("init") => AgentOp::MbarInit {
                bar: addr(0)?,
                count: self.val(
                    i,
                    o.get(1)
                        .ok_or_else(|| self.invalid(i, "`mbarrier.init` needs a count"))?,
                )?,
            },
            Some("inval") => AgentOp::MbarInval { bar: addr(0)? },
            Some("arrive") => {
                if o.len() > 2 && !m.contains(&"expect_tx") {
                    return Err(self.unsupported(i, "arrivals with a count"));
                }
                let state = match o.first() {
                    Some(Operand::Reg(r)) => Some(*r),
                    Some(Operand::Sink) => None,
                    _ => return Err(self.invalid(i, "`mbarrier.arrive` takes state, [bar]")),
                };
                AgentOp::MbarArrive {
                    bar: addr(1)?,
                    tx: if m.contains(&"expect_tx") {
                        Some(
                            self.val(
                                i,
                                o.get(2)
                                    .ok_or_else(|| self.invalid(i, "`.expect_tx` needs a byte count"))?,
                            )?,
                        )
                    } else {
                        None
                    },
                    arrive: true,
                    state,
                }
            }
            Some("expect_tx") => AgentOp::MbarArrive {
                bar: addr(0)?,
                tx: Some(
                    self.val(
                        i,
                        o.get(1)
                            .ok_or_else(|| self.invalid(i, "`mbarrier.expect_tx` needs a byte count"))?,
                    )?,
                ),
                arrive: false,
                state: None,
            },
            Some("try_wait" | "test_wait") if m.contains(&"parity") => AgentOp::MbarWait {
                p: self.reg(
                    i,
                    o.first().ok_or_else(|| self.invalid(i, "expected a predicate"))?,
                )?,
                bar: addr(1)?,
                parity: self.val(i, o.get(2).ok_or_else(|| self.invalid(i, "expected a parity"))?)?,
            },
            _ => return Err(self.unsupported(i, "")),
        };
        Ok(Op::Agent(op))
    }
}
