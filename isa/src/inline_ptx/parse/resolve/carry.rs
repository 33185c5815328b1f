//! Extended-precision integer arithmetic (PTX ISA, "Extended-Precision Integer Arithmetic
//! Instructions"): `add.cc`, `addc{.cc}`, `sub.cc`, `subc{.cc}`, `mad{.lo,.hi}.cc` and
//! `madc{.lo,.hi}{.cc}` on `.u32`, `.s32`, `.u64` and `.s64`, the forms that chain a carry
//! through the condition code's carry flag `CC.CF` (libdevice's `sin`/`cos` range reduction
//! multiplies with `mad.lo.cc.u32`/`madc.hi.u32`).
//!
//! The carry flag is a one-bit register named [`CARRY_FLAG`]: a snippet declares it the first
//! time an instruction names it; a whole-kernel front end declares it with the kernel's
//! registers (so each thread has its own, as each thread has its own condition code). An
//! instruction that reads it before any wrote it reads an undefined register.
//!
//! The semantics, as the ISA states them, on `n`-bit operands with `a`, `b`, `c` their bits:
//! - `add.cc`: `d = a + b`, carry-out into `CC.CF`; `addc`: `d = a + b + CC.CF`;
//! - `sub.cc`: `d = a - b`, borrow-out into `CC.CF`; `subc`: `d = a - (b + CC.CF)`;
//! - `mad.lo.cc`/`mad.hi.cc`: `d = (a * b).lo/hi + c`, carry-out of that addition;
//!   `madc.lo/hi`: `d = (a * b).lo/hi + c + CC.CF`.
//!
//! The carry (borrow) of a sum (difference) is that of the `n`-bit unsigned operation whatever
//! the type's signedness; the signedness chooses the product's high half only.

use super::{int_of, Resolve};
use crate::inline_ptx::parse::{mask, ITy, Op, Raw, RegId};
use crate::inline_ptx::PtxError;

/// The register name of the condition code's carry flag (not a PTX identifier, so that no
/// kernel register can take it).
pub const CARRY_FLAG: &str = "CC.CF";

/// Which extended-precision operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CarryOp {
    Add,
    Sub,
    /// `mad.lo`: the product's low half plus `c`.
    MadLo,
    /// `mad.hi`: the product's high half plus `c`.
    MadHi,
}

/// Whether `opcode` with `mods` is a carry-chain form (so that the parser declares the carry
/// flag before resolving it).
pub fn is_carry_form(opcode: &str, mods: &[String]) -> bool {
    matches!(opcode, "addc" | "subc" | "madc")
        || (matches!(opcode, "add" | "sub" | "mad") && mods.iter().any(|m| m == "cc"))
}

/// The result bits and the carry-out (borrow-out for `Sub`) of `op` on `ty` operands `s`
/// (`a, b` or `a, b, c`) with the carry-in `cin` (0 or 1).
pub fn carry_apply(op: CarryOp, ty: ITy, s: &[u64], cin: u64) -> (u64, u64) {
    let n = ty.bits;
    let m = mask(n) as u128;
    let u = |i: usize| s.get(i).copied().unwrap_or(0) as u128 & m;
    let (a, b, cin) = (u(0), u(1), (cin & 1) as u128);
    match op {
        CarryOp::Add => {
            let full = a + b + cin;
            ((full & m) as u64, (full >> n) as u64)
        }
        CarryOp::Sub => {
            let take = b + cin;
            (a.wrapping_sub(take) as u64 & m as u64, u64::from(a < take))
        }
        CarryOp::MadLo | CarryOp::MadHi => {
            let product = if ty.signed {
                let sx = |v: u128| (((v as u64) << (64 - n)) as i64 >> (64 - n)) as i128;
                (sx(a) * sx(b)) as u128
            } else {
                a * b
            };
            let half = if op == CarryOp::MadLo {
                product & m
            } else {
                (product >> n) & m
            };
            let full = half + u(2) + cin;
            ((full & m) as u64, (full >> n) as u64)
        }
    }
}

impl Resolve<'_, '_> {
    /// Resolves a carry-chain form (see [`is_carry_form`]); the carry flag is declared.
    pub(in crate::inline_ptx::parse) fn carry(
        &self,
        opcode: &str,
        mods: &[&str],
        ops: &[Raw],
    ) -> Result<Op, PtxError> {
        let Some((ty, rest)) = mods.split_last() else {
            return Err(self.err("needs a type (`.u32`, `.s32`, `.u64`, `.s64`)"));
        };
        let it = int_of(ty)
            .filter(|t| t.bits >= 32 && (ty.starts_with('u') || ty.starts_with('s')))
            .ok_or_else(|| {
                self.err(format!(
                    "`.{ty}` is not a type `{opcode}` takes (.u32, .s32, .u64, .s64)"
                ))
            })?;
        let chained = matches!(opcode, "addc" | "subc" | "madc");
        let mut cc = false;
        let mut half = None;
        for m in rest {
            match *m {
                "cc" if !cc => cc = true,
                "lo" | "hi" if matches!(opcode, "mad" | "madc") && half.is_none() => half = Some(*m),
                _ => return Err(self.err(format!("the modifier `.{m}` is not one `{opcode}` takes"))),
            }
        }
        let op = match (opcode, half) {
            ("add" | "addc", None) => CarryOp::Add,
            ("sub" | "subc", None) => CarryOp::Sub,
            ("mad" | "madc", Some("lo")) => CarryOp::MadLo,
            ("mad" | "madc", Some("hi")) => CarryOp::MadHi,
            ("mad" | "madc", _) => {
                return Err(self.err(format!("`{opcode}` with a carry needs `.lo` or `.hi`")))
            }
            _ => return Err(self.err(format!("`{opcode}` has no carry-chain form"))),
        };
        let nsrc = if matches!(op, CarryOp::MadLo | CarryOp::MadHi) {
            3
        } else {
            2
        };
        self.n(ops, nsrc + 1)?;
        let flag: RegId = self
            .p
            .lookup(CARRY_FLAG)
            .ok_or_else(|| self.err("the register file declares no carry flag (`CC.CF`)"))?;
        let s = ops[1..]
            .iter()
            .map(|o| self.src(o, it.bits, None, false))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Op::Carry {
            op,
            ty: it,
            d: self.dst(&ops[0], it.bits, false)?,
            s,
            cin: chained.then_some(flag),
            cout: cc.then_some(flag),
        })
    }
}
