//! Resolving `wgmma` (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
//! Instructions": `wgmma.fence`, `wgmma.mma_async`, `wgmma.commit_group`, `wgmma.wait_group`)
//! into the [`WgOp`]s the machine runs ([`crate::machine`]'s `wgmma`).

use super::{AgentOp, Cx, Op, Val};
use crate::parse::{Instr, Operand};
use crate::Error;
use bwsim_isa::types::DType;

/// A `wgmma` instruction, run per warp by the machine.
#[derive(Clone, Debug, PartialEq)]
pub enum WgOp {
    /// `wgmma.fence.sync.aligned`.
    Fence,
    /// `wgmma.mma_async.sync.aligned.m64nNkK.D.A.B`.
    Mma(Box<WgMma>),
    /// `wgmma.commit_group.sync.aligned`.
    Commit,
    /// `wgmma.wait_group.sync.aligned N`.
    Wait(u64),
}

/// The A operand of a `wgmma.mma_async`.
#[derive(Clone, Debug, PartialEq)]
pub enum WgA {
    /// A shared-memory matrix descriptor.
    Desc(Val),
    /// The thread's fragment registers.
    Regs(Vec<u16>),
}

/// `wgmma.mma_async.sync.aligned.m64nNkK.D.A.B d, a, b-desc, scale-d[, imm-scale-a,
/// imm-scale-b[, imm-trans-a], imm-trans-b]`.
#[derive(Clone, Debug, PartialEq)]
pub struct WgMma {
    pub n: u32,
    pub k: u32,
    /// The accumulator's type and the operands' (A and B of one type).
    pub d_type: DType,
    pub ab_type: DType,
    /// The accumulator's registers (N/2 for 32-bit accumulators, N/4 for f16).
    pub d: Vec<u16>,
    pub a: WgA,
    pub b: Val,
    /// `scale-d`: false gives D = A·B.
    pub scale_d: Val,
    /// Negated A, B (`imm-scale-a/b` of -1).
    pub negate: [bool; 2],
    /// A and B transposed (MN-major; 16-bit types only).
    pub trans: [bool; 2],
}

fn dtype(s: &str) -> Option<DType> {
    Some(match s {
        "f32" => DType::F32,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        "tf32" => DType::TF32,
        "e4m3" => DType::F8E4M3,
        "e5m2" => DType::F8E5M2,
        "s32" => DType::I32,
        "s8" => DType::I8,
        "u8" => DType::U8,
        _ => return None,
    })
}

impl Cx<'_> {
    /// `wgmma.*`, as [`WgOp`].
    pub(super) fn wgmma(&self, i: &Instr, m: &[&str]) -> Result<Op, Error> {
        let o = &i.operands;
        let op = match m.first().copied() {
            Some("fence") => WgOp::Fence,
            Some("commit_group") => WgOp::Commit,
            Some("wait_group") => match o.first() {
                Some(Operand::Int(n)) => WgOp::Wait(*n),
                _ => return Err(self.invalid(i, "`wgmma.wait_group` takes an integer constant")),
            },
            Some("mma_async") => WgOp::Mma(Box::new(self.wgmma_mma(i, m)?)),
            _ => return Err(self.unsupported(i, "")),
        };
        Ok(Op::Agent(AgentOp::Wgmma(op)))
    }

    fn wgmma_mma(&self, i: &Instr, m: &[&str]) -> Result<WgMma, Error> {
        let o = &i.operands;
        if m.iter().any(|x| *x == "sp" || *x == "satfinite") {
            return Err(self.unsupported(i, "sparse and saturating forms"));
        }
        let shape = m
            .iter()
            .find_map(|x| x.strip_prefix("m64n"))
            .and_then(|x| x.split_once('k'))
            .and_then(|(n, k)| Some((n.parse::<u32>().ok()?, k.parse::<u32>().ok()?)))
            .ok_or_else(|| self.invalid(i, "expected a `.m64nNkK` shape"))?;
        let at = m.iter().position(|x| x.starts_with("m64n")).unwrap_or(0);
        let types: Vec<Option<DType>> = m[at + 1..].iter().map(|x| dtype(x)).collect();
        let [Some(d_type), Some(a_type), Some(b_type)] = types[..] else {
            return Err(self.invalid(i, "expected the accumulator's and the operands' types"));
        };
        if a_type != b_type {
            return Err(self.unsupported(i, "operands of two types"));
        }
        let (n, k) = shape;
        let want_k = 256 / a_type.bits();
        if k != want_k || n == 0 || n > 256 || n % 8 != 0 {
            return Err(self.invalid(i, format!("shape m64n{n}k{k} for `.{}` operands", m[at + 2])));
        }
        let regs = |x: Option<&Operand>| -> Result<Vec<u16>, Error> {
            match x {
                Some(Operand::Vec(v)) => v.iter().map(|r| self.reg(i, r)).collect(),
                _ => Err(self.invalid(i, "expected a vector of registers")),
            }
        };
        let d = regs(o.first())?;
        let want_d = if d_type == DType::F16 { n / 4 } else { n / 2 };
        if d.len() != want_d as usize {
            return Err(self.invalid(
                i,
                format!("{} accumulator registers, m64n{n} takes {want_d}", d.len()),
            ));
        }
        let a = match o.get(1) {
            Some(Operand::Vec(_)) => {
                let r = regs(o.get(1))?;
                if r.len() != 4 {
                    return Err(self.invalid(i, "an A fragment of 4 registers"));
                }
                WgA::Regs(r)
            }
            Some(x) => WgA::Desc(self.val(i, x)?),
            None => return Err(self.invalid(i, "expected the A operand")),
        };
        let val = |k: usize| match o.get(k) {
            Some(x) => self.val(i, x),
            None => Err(self.invalid(i, format!("expected operand {}", k + 1))),
        };
        let imm = |k: usize| -> Result<i64, Error> {
            match o.get(k) {
                Some(Operand::Int(v)) => Ok(*v as i64),
                _ => Err(self.invalid(i, format!("operand {} must be an immediate", k + 1))),
            }
        };
        let b = val(2)?;
        let scale_d = match o.get(3) {
            Some(Operand::Reg(r)) => Val::Reg(*r),
            Some(x) => self.val(i, x)?,
            None => return Err(self.invalid(i, "expected scale-d")),
        };
        // Integer forms take scale-d alone; the others the scales of A and B, and 16-bit
        // operands their transposes (B's alone when A is in registers).
        let int = d_type == DType::I32;
        let negate = if int {
            [false, false]
        } else {
            [imm(4)? == -1, imm(5)? == -1]
        };
        let sixteen = a_type.bits() == 16;
        let trans = match (&a, sixteen) {
            (WgA::Desc(_), true) => [imm(6)? != 0, imm(7)? != 0],
            (WgA::Regs(_), true) => [false, imm(6)? != 0],
            (_, false) => [false, false],
        };
        let operands = match (int, sixteen, &a) {
            (true, ..) => 4,
            (false, false, _) => 6,
            (false, true, WgA::Desc(_)) => 8,
            (false, true, WgA::Regs(_)) => 7,
        };
        if o.len() != operands {
            return Err(self.invalid(i, format!("{} operands, this form takes {operands}", o.len())));
        }
        Ok(WgMma {
            n,
            k,
            d_type,
            ab_type: a_type,
            d,
            a,
            b,
            scale_d,
            negate,
            trans,
        })
    }
}
