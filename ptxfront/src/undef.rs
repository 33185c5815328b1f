//! Values LLVM leaves undefined. A register the PTX reads before any instruction wrote it
//! (LLVM's `undef`: the unused half of a packed `f32x2` operand, an inline-assembly block's
//! operand that has no element) is not an error by itself: the GPU moves whatever bits the
//! register holds, and a program is wrong only if those bits matter. The executor, as Miri
//! does with uninitialised bytes, carries them: each thread keeps the registers holding
//! undefined bits with their masks ([`crate::exec::Thread::undef`]), the inline-PTX
//! interpreter says which result bits an instruction makes undefined
//! ([`bwsim_isa::inline_ptx::undefined_bits`]: exact through moves, packs and unpacks,
//! bitwise logic, permutes and truncations; `shfl.sync` moves a lane's undefined bits to the
//! lanes that read it), and any other use of a register, which is where a
//! value becomes observable (stored to memory, an address, a predicate that guards or
//! branches, an operand of an asynchronous instruction such as an MMA descriptor), stops the
//! run with an error naming the register if it holds an undefined bit.

use crate::exec::{Cta, Thread};
use crate::program::Val;
use crate::Error;
use bwsim_isa::inline_ptx::{self, parse::Ins, parse::Src, RunError};

impl Cta<'_> {
    /// Runs arithmetic instruction `a` of thread `t`, some of whose registers may hold
    /// undefined bits: a never-written register it reads becomes all undefined (computed on as
    /// zeros), and the registers it writes take the undefined bits their inputs give them.
    pub(crate) fn step_undefined(&self, t: &mut Thread, a: &Ins) -> Result<(), RunError> {
        let regs = &self.p.regs;
        let (reads, _) = inline_ptx::operands(&a.op);
        for s in reads {
            if let Src::Reg(r) = s {
                let i = r as usize;
                if !t.def[i] {
                    t.def[i] = true;
                    t.v[i] = 0;
                    t.undef
                        .push((r, inline_ptx::parse::mask(regs.reg_bits[i].min(64))));
                }
            }
        }
        let undefined = inline_ptx::undefined_bits(regs, a, &t.undef);
        inline_ptx::step(a, regs, &self.p.src, &mut t.v, &mut t.def)?;
        for (r, m) in undefined {
            t.undef.retain(|&(x, _)| x != r);
            if m != 0 {
                t.undef.push((r, m));
            }
        }
        Ok(())
    }

    /// The bits of `v` in thread `t` and the mask of those that are undefined (all of a
    /// register no instruction wrote), for an instruction that moves them without using them
    /// (`shfl.sync`).
    pub(crate) fn read_carrying(&self, t: &Thread, v: Val) -> (u64, u64) {
        match v {
            Val::Imm(x) => (x, 0),
            Val::Reg(r) => {
                let i = r as usize;
                if t.def[i] {
                    let m = t.undef.iter().find(|&&(x, _)| x == r).map_or(0, |&(_, m)| m);
                    (t.v[i], m)
                } else {
                    (0, inline_ptx::parse::mask(self.p.regs.reg_bits[i].min(64)))
                }
            }
        }
    }

    /// Stops at instruction `pc` if register `r`, read where its value is observable, holds
    /// undefined bits.
    pub(crate) fn defined(&self, t: &Thread, r: u16, pc: usize) -> Result<(), Error> {
        match t.undef.iter().find(|&&(x, _)| x == r) {
            Some(&(_, m)) => Err(self.rt(
                pc,
                format!(
                    "`{}` holds undefined bits (mask {m:#x}: computed from a register no \
                     instruction wrote, LLVM's undef) where its value is used",
                    self.p.regs.reg_names[r as usize]
                ),
            )),
            None => Ok(()),
        }
    }
}
