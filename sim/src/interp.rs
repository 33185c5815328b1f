//! The interpreter core: one step of one partition over the lowered program
//! ([`crate::lower::Program`]), written once for the functional machine and the timing engine.
//!
//! It owns the control flow of a partition: jumps, `if` branches, dynamic `for` loops (their
//! bounds, test and step), the fork and join of `warp_specialize` partitions, the end of a
//! partition, and binding every result into its slots. What an instruction *does* beyond that
//! (values in memory, hazards, undefined-value tracking, time and unit queues, waking other
//! partitions) is an [`Effects`] handler's: the functional machine (`machine/exec.rs`) and the
//! timing engine (`timing/engine/mod.rs`) each implement it.
//!
//! It must not know about scheduling: which partition steps next, how a blocked partition is
//! resumed, and what a [`Flow`] does to a partition's state stay with the caller.

use crate::lower::{loop_continues, loop_next, CExpr, IKind, Instr, LOp, Slot, WorkerSpec};
use crate::trap::{Fault, OpResult};
use crate::value::Value;
use bwsim_isa::{Code, Span};

/// Where a partition goes after one step.
#[derive(Debug)]
pub enum Flow<W> {
    /// On to the next instruction.
    Next,
    /// To instruction `.0`.
    Jump(u32),
    /// Stays at this instruction, which runs again when the partition resumes (a wait of the
    /// handler's kind: a barrier, a join, or the timing engine yielding to earlier events).
    Wait(W),
    /// The partition has ended.
    Done,
}

/// What an operation did, as its [`Effects`] handler reports it.
#[derive(Debug)]
pub enum OpDone<W> {
    /// A result, bound to the operation's names.
    Value(Value),
    /// No result.
    Next,
    /// Not done: the partition waits at the operation.
    Wait(W),
}

/// Where a value bound into slots came from (for [`Effects::bound`]).
#[derive(Clone, Copy, Debug)]
pub enum Bound<'a> {
    /// A `let` of this expression.
    Expr(&'a CExpr),
    /// The operation just executed.
    Op,
}

/// A control instruction, for what it costs ([`Effects::control`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// An `if` condition evaluated (charged before it is read as a boolean).
    Branch,
    /// A `for` loop's bounds evaluated.
    LoopInit,
    /// A `for` loop's test.
    LoopTest,
    /// A `for` loop's counter stepped.
    LoopNext,
}

/// The side effects of executing a lowered program, as one engine models them. `pc` is the
/// index of the instruction being executed.
pub trait Effects {
    /// Why a partition stops at an instruction without finishing it.
    type Wait;

    /// The value of a `let` (the engine may charge its cost, or wait before computing it).
    fn eval(&mut self, pc: u32, expr: &CExpr, frame: &[Value]) -> OpResult<Result<Value, Self::Wait>>;

    /// Execute operation `op` (its `.tile` name is `name`).
    fn op(&mut self, pc: u32, op: &LOp, name: &'static str, frame: &[Value]) -> OpResult<OpDone<Self::Wait>>;

    /// A value from `from` was bound into `dsts`.
    fn bound(&mut self, _dsts: &[Slot], _from: Bound<'_>) {}

    /// The value of a scalar operand of control flow (an `if` condition, a loop bound).
    fn scalar(&mut self, e: &CExpr, frame: &[Value]) -> OpResult<Value>;

    /// The partition branches on `cond` (evaluated, not yet read as a boolean).
    fn branch_on(&mut self, _pc: u32, _cond: &CExpr) {}

    /// A control instruction was executed.
    fn control(&mut self, _pc: u32, _c: Control) {}

    /// Start worker partition `w` with a copy of the forking partition's `frame`.
    fn spawn(&mut self, w: &WorkerSpec, frame: &[Value], span: Span);

    /// The default partition joins its workers: `None` when every one has ended.
    fn join(&mut self) -> Option<Self::Wait>;

    /// The partition ends (`None`), or must wait before it may.
    fn end(&mut self, span: Span) -> Option<Self::Wait>;
}

/// Execute instruction `instr` (at `pc`) of a partition whose slots are `frame`.
///
/// Inlined into each engine's own step, so that a handler's results are built in place (a
/// [`Value`] is about a hundred bytes; moved through a call it is copied twice).
#[inline(always)]
pub fn step<F: Effects>(fx: &mut F, pc: u32, instr: &Instr, frame: &mut [Value]) -> OpResult<Flow<F::Wait>> {
    match &instr.kind {
        IKind::Eval { dsts, expr } => match fx.eval(pc, expr, frame)? {
            Ok(v) => {
                bind(frame, dsts, v)?;
                fx.bound(dsts, Bound::Expr(expr));
                Ok(Flow::Next)
            }
            Err(w) => Ok(Flow::Wait(w)),
        },
        IKind::Op { op, name, dsts } => match fx.op(pc, op, name, frame)? {
            OpDone::Value(v) => {
                bind(frame, dsts, v)?;
                fx.bound(dsts, Bound::Op);
                Ok(Flow::Next)
            }
            OpDone::Next => Ok(Flow::Next),
            OpDone::Wait(w) => Ok(Flow::Wait(w)),
        },
        IKind::Jump(t) => Ok(Flow::Jump(*t)),
        IKind::BranchIfNot { cond, target } => {
            let v = fx.scalar(cond, frame)?;
            fx.branch_on(pc, cond);
            fx.control(pc, Control::Branch);
            let taken = v.as_bool().ok_or_else(|| {
                Fault::unsupported(format!("an `if` condition must be a boolean, found {}", v.kind()))
            })?;
            Ok(if taken { Flow::Next } else { Flow::Jump(*target) })
        }
        IKind::LoopInit {
            ctr,
            end,
            step,
            start_e,
            end_e,
            step_e,
        } => {
            let st = int_of(&fx.scalar(step_e, frame)?, "the loop step")?;
            if st == 0 {
                return Err(Fault::error(Code::SimError, "`for` loop with step 0 never ends"));
            }
            let s0 = int_of(&fx.scalar(start_e, frame)?, "the loop start")?;
            let e0 = int_of(&fx.scalar(end_e, frame)?, "the loop end")?;
            frame[*ctr as usize] = Value::Int(s0);
            frame[*end as usize] = Value::Int(e0);
            frame[*step as usize] = Value::Int(st);
            fx.control(pc, Control::LoopInit);
            Ok(Flow::Next)
        }
        IKind::LoopTest {
            ctr,
            end,
            step,
            var,
            exit,
        } => {
            let c = frame[*ctr as usize].as_int().unwrap_or(0);
            let e = frame[*end as usize].as_int().unwrap_or(0);
            let st = frame[*step as usize].as_int().unwrap_or(1);
            fx.control(pc, Control::LoopTest);
            if loop_continues(c, e, st) {
                frame[*var as usize] = Value::Int(c);
                Ok(Flow::Next)
            } else {
                Ok(Flow::Jump(*exit))
            }
        }
        IKind::LoopNext { ctr, step, head } => {
            let c = frame[*ctr as usize].as_int().unwrap_or(0);
            let st = frame[*step as usize].as_int().unwrap_or(1);
            frame[*ctr as usize] = Value::Int(loop_next(c, st));
            fx.control(pc, Control::LoopNext);
            Ok(Flow::Jump(*head))
        }
        IKind::Fork { workers } => {
            for w in workers {
                fx.spawn(w, frame, instr.span);
            }
            Ok(Flow::Next)
        }
        IKind::Join => Ok(match fx.join() {
            None => Flow::Next,
            Some(w) => Flow::Wait(w),
        }),
        IKind::EndPartition | IKind::Exit => Ok(match fx.end(instr.span) {
            None => Flow::Done,
            Some(w) => Flow::Wait(w),
        }),
    }
}

/// Where control can go from instruction `pc` of kind `kind`, as [`step`] moves it (for
/// analyses that follow a partition's code): nothing after the end of a partition, the
/// fall-through first where there are two.
pub fn successors(pc: u32, kind: &IKind) -> impl Iterator<Item = u32> {
    let next = pc + 1;
    let (first, second) = match kind {
        IKind::Jump(t) => (Some(*t), None),
        IKind::BranchIfNot { target, .. } => (Some(next), Some(*target)),
        IKind::LoopTest { exit, .. } => (Some(next), Some(*exit)),
        IKind::LoopNext { head, .. } => (Some(*head), None),
        IKind::EndPartition | IKind::Exit => (None, None),
        IKind::Eval { .. } | IKind::Op { .. } | IKind::LoopInit { .. } | IKind::Fork { .. } | IKind::Join => {
            (Some(next), None)
        }
    };
    first.into_iter().chain(second)
}

fn int_of(v: &Value, what: &str) -> OpResult<i64> {
    v.as_int()
        .ok_or_else(|| Fault::unsupported(format!("{what} must be an integer, found {}", v.kind())))
}

/// The arrival count of an `mbar.arrive` from its operand's value (absent: 1): a count that does
/// not fit a `u32` fails the launch (`mbarrier::arrive_count`). The functional machine and the
/// timing engine read it alike.
pub(crate) fn arrive_count(count: Option<&Value>) -> OpResult<u32> {
    let n = match count {
        Some(v) => int_of(v, "the arrival count")?,
        None => 1,
    };
    crate::mbarrier::arrive_count(n).map_err(|m| Fault::trap(crate::trap::CudaError::LaunchFailure, m))
}

/// Bind `v` to `dsts`: one name takes the value, several destructure a tuple of as many parts.
#[inline]
pub fn bind(frame: &mut [Value], dsts: &[Slot], v: Value) -> OpResult<()> {
    match dsts {
        [] => Ok(()),
        [d] => {
            frame[*d as usize] = v;
            Ok(())
        }
        many => match v {
            Value::Tuple(parts) if parts.len() == many.len() => {
                for (d, p) in many.iter().zip(parts.iter()) {
                    frame[*d as usize] = p.clone();
                }
                Ok(())
            }
            other => Err(Fault::unsupported(format!(
                "{} names bound to {}",
                many.len(),
                other.kind()
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successors_follow_the_stepping() {
        let succ = |kind: IKind| successors(4, &kind).collect::<Vec<_>>();
        let cond = CExpr::Const(Value::Bool(true));
        assert_eq!(succ(IKind::BranchIfNot { cond, target: 9 }), [5, 9]);
        assert_eq!(succ(IKind::Jump(2)), [2]);
        assert_eq!(succ(IKind::Join), [5]);
        assert_eq!(succ(IKind::EndPartition), [] as [u32; 0]);
    }
}
