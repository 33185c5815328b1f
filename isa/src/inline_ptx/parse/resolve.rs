//! Resolving one instruction's form: its opcode, modifiers and type suffix checked against the
//! subset, and its raw operands checked against the widths and kinds the form reads and writes.
//! Every refusal names the instruction's text and the reason.

pub(super) mod carry;

use super::super::float::{Fmt, Rnd, BF16, E2M1, E4M3, E5M2, F16, F32, F64};
use super::super::lex::Literal;
use super::super::PtxError;
use crate::packed_arith::{self, PackedOp};
use crate::types::DType;

/// The lane type of a four-lane fp8/fp4 PTX type name (`e4m3x4`, `e5m2x4`, `e2m1x4`).
fn packed_type(t: &str) -> Option<DType> {
    Some(match t {
        "e4m3x4" => DType::F8E4M3,
        "e5m2x4" => DType::F8E5M2,
        "e2m1x4" => DType::F4E2M1,
        _ => return None,
    })
}
use super::{mask, BOp, Cmp, CvtMods, FMods, FOp, FTy, IOp, ITy, Op, Raw, RegId, Src, Ty, OPCODES, P};

fn fmt_of(t: &str) -> Option<(Fmt, u32)> {
    Some(match t {
        "f16" => (F16, 1),
        "f16x2" => (F16, 2),
        "bf16" => (BF16, 1),
        "bf16x2" => (BF16, 2),
        "f32" => (F32, 1),
        "f32x2" => (F32, 2),
        "f64" => (F64, 1),
        _ => return None,
    })
}

fn int_of(t: &str) -> Option<ITy> {
    let (signed, n) = if let Some(n) = t.strip_prefix('s') {
        (true, n)
    } else if let Some(n) = t.strip_prefix('u').or_else(|| t.strip_prefix('b')) {
        (false, n)
    } else {
        return None;
    };
    let bits = n.parse::<u32>().ok()?;
    matches!(bits, 8 | 16 | 32 | 64).then_some(ITy { bits, signed })
}

fn scalar_of(t: &str) -> Option<Ty> {
    match t {
        "f16" => Some(Ty::Float(F16)),
        "bf16" => Some(Ty::Float(BF16)),
        "f32" => Some(Ty::Float(F32)),
        "f64" => Some(Ty::Float(F64)),
        _ => int_of(t).map(Ty::Int),
    }
}

fn rnd_of(m: &str) -> Option<Rnd> {
    Some(match m {
        "rn" => Rnd::Rn,
        "rz" => Rnd::Rz,
        "rm" => Rnd::Rm,
        "rp" => Rnd::Rp,
        _ => return None,
    })
}

fn cmp_of(m: &str) -> Option<Cmp> {
    Some(match m {
        "eq" => Cmp::Eq,
        "ne" => Cmp::Ne,
        "lt" => Cmp::Lt,
        "le" => Cmp::Le,
        "gt" => Cmp::Gt,
        "ge" => Cmp::Ge,
        "lo" => Cmp::Lo,
        "ls" => Cmp::Ls,
        "hi" => Cmp::Hi,
        "hs" => Cmp::Hs,
        "equ" => Cmp::Equ,
        "neu" => Cmp::Neu,
        "ltu" => Cmp::Ltu,
        "leu" => Cmp::Leu,
        "gtu" => Cmp::Gtu,
        "geu" => Cmp::Geu,
        "num" => Cmp::Num,
        "nan" => Cmp::Nan,
        _ => return None,
    })
}

pub(super) struct Resolve<'a, 's> {
    pub(super) p: &'a P<'s>,
    pub(super) text: &'a str,
    pub(super) at: (usize, usize),
}

impl Resolve<'_, '_> {
    fn err(&self, why: impl std::fmt::Display) -> PtxError {
        PtxError::at(self.p.src, self.at, format!("`{}`: {why}", self.text))
    }

    fn bits(&self, r: RegId) -> u32 {
        self.p.reg_bits[r as usize]
    }

    fn name(&self, r: RegId) -> &str {
        &self.p.reg_names[r as usize]
    }

    /// A destination register of exactly `bits` bits (`wider`: at least).
    fn dst(&self, o: &Raw, bits: u32, wider: bool) -> Result<RegId, PtxError> {
        match o {
            Raw::Reg(r) => {
                let b = self.bits(*r);
                if b == bits || (wider && b > bits && bits > 1) {
                    Ok(*r)
                } else {
                    Err(self.err(format!(
                        "`{}` is a {b}-bit register; the instruction writes {bits} bits",
                        self.name(*r)
                    )))
                }
            }
            _ => Err(self.err("the destination must be a register")),
        }
    }

    /// A source of `bits` bits of type `ty` (a float format: immediates are converted to it).
    fn src(&self, o: &Raw, bits: u32, float: Option<Fmt>, wider: bool) -> Result<Src, PtxError> {
        match o {
            Raw::Reg(r) => {
                let b = self.bits(*r);
                if b == bits || (wider && b > bits && bits > 1) {
                    Ok(Src::Reg(*r))
                } else {
                    Err(self.err(format!("`{}` is a {b}-bit register; the instruction reads {bits} bits", self.name(*r))))
                }
            }
            Raw::Lit(Literal::Int(v)) => match float {
                Some(f) if f.bits >= 32 => Err(self.err(format!("the integer `{}` where a .f{} value is read (write floats as `0f...`, `0d...` or with a decimal point)", *v as i64, f.bits))),
                // An integer read as a predicate is true when it is not zero, as ptxas takes it
                // (the CuTe DSL writes `mov.pred %p, -1;`).
                _ if bits == 1 => Ok(Src::Imm(u64::from(*v != 0))),
                _ => Ok(Src::Imm(*v & mask(bits))),
            },
            Raw::Lit(Literal::F32(b)) => match float {
                Some(f) if f == F32 => Ok(Src::Imm(*b as u64)),
                Some(f) if f == F64 => Ok(Src::Imm((f32::from_bits(*b) as f64).to_bits())),
                // A `0f` literal read as 32 untyped bits is its bit pattern, as ptxas takes
                // it (Triton writes `mov.b32 %r, 0fFF800000;` for -inf).
                None if bits == 32 => Ok(Src::Imm(*b as u64)),
                _ => Err(self.err("a float immediate where an integer or a packed value is read")),
            },
            Raw::Lit(Literal::F64(b)) => match float {
                Some(f) if f == F32 => Ok(Src::Imm((f64::from_bits(*b) as f32).to_bits() as u64)),
                Some(f) if f == F64 => Ok(Src::Imm(*b)),
                None if bits == 64 => Ok(Src::Imm(*b)),
                _ => Err(self.err("a float immediate where an integer or a packed value is read")),
            },
            Raw::NotReg(_) => Err(self.err("`!` negates predicate operands of `setp` and of predicate logic only")),
            Raw::Vec(_) => Err(self.err("a vector operand `{..}` is read by `mov` only")),
            Raw::Pair(..) => Err(self.err("`p|q` is a destination of `setp` only")),
        }
    }

    fn n(&self, ops: &[Raw], n: usize) -> Result<(), PtxError> {
        if ops.len() == n {
            Ok(())
        } else {
            Err(self.err(format!("takes {n} operands, found {}", ops.len())))
        }
    }

    pub(super) fn resolve(&self, opcode: &str, mods: &[String], ops: &[Raw]) -> Result<Op, PtxError> {
        let m: Vec<&str> = mods.iter().map(|s| s.as_str()).collect();
        let Some((ty, rest)) = m.split_last() else {
            return Err(self.err("needs a type (`.b32`, `.f32`, ...)"));
        };
        if let Some(op) = PackedOp::from_ptx(opcode).filter(|_| m.iter().any(|t| packed_type(t).is_some())) {
            return self.packed(op, &m, ops);
        }
        if carry::is_carry_form(opcode, mods) {
            return self.carry(opcode, &m, ops);
        }
        match opcode {
            "mov" => self.mov(ty, rest, ops),
            "add" | "sub" | "mul" | "mad" | "fma" | "div" | "rem" | "min" | "max" | "abs" | "neg" | "rcp"
            | "sqrt" | "ex2" | "popc" | "clz" | "brev" => self.arith(opcode, ty, rest, ops),
            "and" | "or" | "xor" | "not" | "cnot" => self.bitwise(opcode, ty, rest, ops),
            "shl" | "shr" => {
                self.none(rest)?;
                self.n(ops, 3)?;
                let it = int_of(ty).filter(|t| t.bits >= 16).ok_or_else(|| {
                    self.err(format!("`.{ty}`: shifts take .b16/.b32/.b64 (.u/.s for shr)"))
                })?;
                if opcode == "shl" && it.signed {
                    return Err(self.err("`shl` takes .b16, .b32 or .b64"));
                }
                Ok(Op::Shift {
                    left: opcode == "shl",
                    arith: it.signed,
                    bits: it.bits,
                    d: self.dst(&ops[0], it.bits, false)?,
                    a: self.src(&ops[1], it.bits, None, false)?,
                    b: self.src(&ops[2], 32, None, false)?,
                })
            }
            "shf" => {
                self.n(ops, 4)?;
                let (dir, mode) = match rest {
                    [d @ ("l" | "r"), md @ ("clamp" | "wrap")] => (*d, *md),
                    _ => return Err(self.err("`shf` is `shf.{l,r}.{clamp,wrap}.b32`")),
                };
                if *ty != "b32" {
                    return Err(self.err("`shf` is `shf.{l,r}.{clamp,wrap}.b32`"));
                }
                Ok(Op::Shf {
                    left: dir == "l",
                    clamp: mode == "clamp",
                    d: self.dst(&ops[0], 32, false)?,
                    a: self.src(&ops[1], 32, None, false)?,
                    b: self.src(&ops[2], 32, None, false)?,
                    c: self.src(&ops[3], 32, None, false)?,
                })
            }
            "prmt" => {
                self.n(ops, 4)?;
                if !rest.is_empty() || *ty != "b32" {
                    return Err(self.err("bwsim interprets `prmt.b32` (the generic byte permute); its `.f4e`/`.b4e`/`.rc8`/`.ecl`/`.ecr`/`.rc16` modes are outside the subset"));
                }
                Ok(Op::Prmt {
                    d: self.dst(&ops[0], 32, false)?,
                    a: self.src(&ops[1], 32, None, false)?,
                    b: self.src(&ops[2], 32, None, false)?,
                    c: self.src(&ops[3], 32, None, false)?,
                })
            }
            "lop3" => {
                self.n(ops, 5)?;
                if !rest.is_empty() || *ty != "b32" {
                    return Err(
                        self.err("bwsim interprets `lop3.b32 d, a, b, c, lut` (not the predicate forms)")
                    );
                }
                let lut = match &ops[4] {
                    Raw::Lit(Literal::Int(v)) if *v <= 255 => *v as u8,
                    _ => return Err(self.err("the lookup table of `lop3` is an immediate 0..255")),
                };
                Ok(Op::Lop3 {
                    d: self.dst(&ops[0], 32, false)?,
                    a: self.src(&ops[1], 32, None, false)?,
                    b: self.src(&ops[2], 32, None, false)?,
                    c: self.src(&ops[3], 32, None, false)?,
                    lut,
                })
            }
            "bfe" => {
                self.none(rest)?;
                self.n(ops, 4)?;
                let it = int_of(ty)
                    .filter(|t| t.bits >= 32 && !ty.starts_with('b'))
                    .ok_or_else(|| self.err("`bfe` takes .u32, .s32, .u64 or .s64"))?;
                Ok(Op::Bfe {
                    signed: it.signed,
                    bits: it.bits,
                    d: self.dst(&ops[0], it.bits, false)?,
                    a: self.src(&ops[1], it.bits, None, false)?,
                    b: self.src(&ops[2], 32, None, false)?,
                    c: self.src(&ops[3], 32, None, false)?,
                })
            }
            "bfi" => {
                self.none(rest)?;
                self.n(ops, 5)?;
                let bits = match *ty {
                    "b32" => 32,
                    "b64" => 64,
                    _ => return Err(self.err("`bfi` takes .b32 or .b64")),
                };
                Ok(Op::Bfi {
                    bits,
                    d: self.dst(&ops[0], bits, false)?,
                    a: self.src(&ops[1], bits, None, false)?,
                    b: self.src(&ops[2], bits, None, false)?,
                    c: self.src(&ops[3], 32, None, false)?,
                    e: self.src(&ops[4], 32, None, false)?,
                })
            }
            "selp" => {
                self.none(rest)?;
                self.n(ops, 4)?;
                let (bits, f) = match scalar_of(ty) {
                    Some(Ty::Int(i)) if i.bits >= 16 => (i.bits, None),
                    Some(Ty::Float(f)) if f.bits >= 32 => (f.bits, Some(f)),
                    _ => {
                        return Err(self.err(format!(
                            "`selp.{ty}`: selp takes 16-, 32- or 64-bit integer types, .f32 or .f64"
                        )))
                    }
                };
                Ok(Op::Selp {
                    d: self.dst(&ops[0], bits, false)?,
                    a: self.src(&ops[1], bits, f, false)?,
                    b: self.src(&ops[2], bits, f, false)?,
                    c: self.pred_src(&ops[3])?,
                })
            }
            "setp" => self.setp(ty, rest, ops),
            "cvt" => self.cvt(mods, ops),
            _ => Err(self.err(format!(
                "`{opcode}` is outside the inline-PTX subset bwsim interprets ({})",
                OPCODES.join(", ")
            ))),
        }
    }

    fn none(&self, rest: &[&str]) -> Result<(), PtxError> {
        match rest.first() {
            None => Ok(()),
            Some(m) => Err(self.err(format!("the modifier `.{m}` is not one this instruction takes"))),
        }
    }

    fn pred_src(&self, o: &Raw) -> Result<Src, PtxError> {
        match o {
            Raw::Reg(r) if self.bits(*r) == 1 => Ok(Src::Reg(*r)),
            _ => Err(self.err("expected a predicate register")),
        }
    }

    fn mov(&self, ty: &str, rest: &[&str], ops: &[Raw]) -> Result<Op, PtxError> {
        self.none(rest)?;
        self.n(ops, 2)?;
        let (bits, f) = if ty == "pred" {
            (1, None)
        } else {
            match scalar_of(ty) {
                Some(Ty::Int(i)) if i.bits >= 16 => (i.bits, None),
                Some(Ty::Float(f)) if f.bits >= 32 => (f.bits, Some(f)),
                _ => {
                    return Err(self.err(format!(
                        "`mov.{ty}`: mov takes .pred, .b16/.b32/.b64, .u/.s of those, .f32 or .f64"
                    )))
                }
            }
        };
        if let Raw::Vec(parts) = &ops[1] {
            if !ty.starts_with('b') {
                return Err(self.err("packing `{..}` takes a .b16/.b32/.b64 mov"));
            }
            let pb = self.part_bits(bits, parts.len())?;
            let parts = parts
                .iter()
                .map(|p| match p {
                    Some(r) => self.src(&Raw::Reg(*r), pb, None, false),
                    None => Err(self.err("`_` cannot be read")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Op::Pack {
                d: self.dst(&ops[0], bits, false)?,
                parts,
                bits: pb,
            });
        }
        if let Raw::Vec(parts) = &ops[0] {
            if !ty.starts_with('b') {
                return Err(self.err("unpacking `{..}` takes a .b16/.b32/.b64 mov"));
            }
            let pb = self.part_bits(bits, parts.len())?;
            let ds = parts
                .iter()
                .map(|p| p.map(|r| self.dst(&Raw::Reg(r), pb, false)).transpose())
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Op::Unpack {
                ds,
                a: self.src(&ops[1], bits, None, false)?,
                bits: pb,
            });
        }
        Ok(Op::Mov {
            d: self.dst(&ops[0], bits, false)?,
            a: self.src(&ops[1], bits, f, false)?,
        })
    }

    fn part_bits(&self, bits: u32, n: usize) -> Result<u32, PtxError> {
        let pb = bits / n.max(1) as u32;
        if n < 2 || pb < 8 || pb * n as u32 != bits || !(n == 2 || n == 4) {
            return Err(self.err(format!("a {bits}-bit register packs 2 or 4 parts of equal width")));
        }
        Ok(pb)
    }

    fn bitwise(&self, opcode: &str, ty: &str, rest: &[&str], ops: &[Raw]) -> Result<Op, PtxError> {
        self.none(rest)?;
        let bits = if ty == "pred" {
            1
        } else {
            match int_of(ty) {
                Some(i) if ty.starts_with('b') && i.bits >= 16 => i.bits,
                _ => return Err(self.err(format!("`{opcode}.{ty}`: logic takes .pred, .b16, .b32 or .b64"))),
            }
        };
        let op = match opcode {
            "and" => BOp::And,
            "or" => BOp::Or,
            "xor" => BOp::Xor,
            "not" => BOp::Not,
            _ => BOp::Cnot,
        };
        let nsrc = if matches!(op, BOp::Not | BOp::Cnot) { 1 } else { 2 };
        if op == BOp::Cnot && bits == 1 {
            return Err(self.err("`cnot` takes .b16, .b32 or .b64"));
        }
        self.n(ops, nsrc + 1)?;
        let s = ops[1..]
            .iter()
            .map(|o| self.src(o, bits, None, false))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Op::Bit {
            op,
            bits,
            d: self.dst(&ops[0], bits, false)?,
            s,
        })
    }

    fn arith(&self, opcode: &str, ty: &str, rest: &[&str], ops: &[Raw]) -> Result<Op, PtxError> {
        if let Some((fmt, lanes)) = fmt_of(ty) {
            return self.float(opcode, FTy { fmt, lanes }, ty, rest, ops);
        }
        let it = int_of(ty)
            .filter(|i| i.bits >= 16)
            .ok_or_else(|| self.err(format!("`.{ty}` is not a type `{opcode}` takes in the subset")))?;
        if ty.starts_with('b') && !matches!(opcode, "popc" | "clz" | "brev") {
            return Err(self.err(format!("`{opcode}` takes .u or .s types, not `.{ty}`")));
        }
        let mut sat = false;
        let mut shape = None;
        for m in rest {
            match *m {
                "sat" if it.bits == 32 && it.signed && matches!(opcode, "add" | "sub" | "mad") => sat = true,
                "lo" | "hi" | "wide" if matches!(opcode, "mul" | "mad") && shape.is_none() => {
                    shape = Some(*m)
                }
                _ => return Err(self.err(format!("the modifier `.{m}` is not one integer `{opcode}` takes"))),
            }
        }
        let (op, nsrc) = match opcode {
            "add" => (IOp::Add, 2),
            "sub" => (IOp::Sub, 2),
            "mul" | "mad" => {
                let mad = opcode == "mad";
                let op = match (shape, mad) {
                    (Some("lo"), false) => IOp::MulLo,
                    (Some("hi"), false) => IOp::MulHi,
                    (Some("wide"), false) => IOp::MulWide,
                    (Some("lo"), true) => IOp::MadLo,
                    (Some("hi"), true) => IOp::MadHi,
                    (Some("wide"), true) => IOp::MadWide,
                    _ => return Err(self.err(format!("integer `{opcode}` needs `.lo`, `.hi` or `.wide`"))),
                };
                if sat && op != IOp::MadHi {
                    return Err(self.err("`.sat` goes with `mad.hi.s32` only"));
                }
                (op, if mad { 3 } else { 2 })
            }
            "div" => (IOp::Div, 2),
            "rem" => (IOp::Rem, 2),
            "min" => (IOp::Min, 2),
            "max" => (IOp::Max, 2),
            "abs" => (IOp::Abs, 1),
            "neg" => (IOp::Neg, 1),
            "popc" => (IOp::Popc, 1),
            "clz" => (IOp::Clz, 1),
            "brev" => (IOp::Brev, 1),
            _ => return Err(self.err(format!("`{opcode}` has no integer form"))),
        };
        if matches!(op, IOp::Abs | IOp::Neg) && !it.signed {
            return Err(self.err(format!("`{opcode}` takes .s16, .s32 or .s64")));
        }
        if matches!(op, IOp::Popc | IOp::Clz | IOp::Brev) && !(ty.starts_with('b') && it.bits >= 32) {
            return Err(self.err(format!("`{opcode}` takes .b32 or .b64")));
        }
        if matches!(op, IOp::MulWide | IOp::MadWide) && it.bits == 64 {
            return Err(self.err("`.wide` takes 16- or 32-bit operands"));
        }
        self.n(ops, nsrc + 1)?;
        let wide = matches!(op, IOp::MulWide | IOp::MadWide);
        let dbits = match op {
            _ if wide => it.bits * 2,
            IOp::Popc | IOp::Clz => 32,
            _ => it.bits,
        };
        let mut s = Vec::new();
        for (k, o) in ops[1..].iter().enumerate() {
            // mad.wide adds a double-width c.
            let b = if op == IOp::MadWide && k == 2 {
                dbits
            } else {
                it.bits
            };
            s.push(self.src(o, b, None, false)?);
        }
        Ok(Op::Int {
            op,
            ty: it,
            sat,
            d: self.dst(&ops[0], dbits, false)?,
            s,
        })
    }

    fn float(&self, opcode: &str, ty: FTy, tyname: &str, rest: &[&str], ops: &[Raw]) -> Result<Op, PtxError> {
        let mut m = FMods::rounded(Rnd::Rn);
        let mut rnd_given = false;
        let mut abs = false;
        let mut full = false;
        let f32ish = ty.fmt == F32;
        let f16 = ty.fmt == F16;
        let half = ty.fmt == F16 || ty.fmt == BF16;
        for md in rest {
            let ok = match *md {
                r if rnd_of(r).is_some() && !rnd_given => {
                    m.rnd = rnd_of(r).unwrap_or(Rnd::Rn);
                    rnd_given = true;
                    !half || m.rnd == Rnd::Rn
                }
                "approx" => {
                    m.approx = true;
                    matches!(opcode, "ex2" | "rcp" | "div" | "sqrt")
                        && (f32ish && ty.lanes == 1 || (ty.fmt == F64 && opcode == "rcp"))
                }
                "full" => {
                    full = true;
                    opcode == "div" && f32ish && ty.lanes == 1
                }
                "ftz" => {
                    m.ftz = true;
                    f32ish || f16
                }
                "sat" => {
                    m.sat = true;
                    (f32ish || f16) && matches!(opcode, "add" | "sub" | "mul" | "fma" | "mad")
                }
                "NaN" => {
                    m.nan = true;
                    matches!(opcode, "min" | "max") && ty.fmt != F64
                }
                "relu" => {
                    m.relu = true;
                    half && opcode == "fma"
                }
                // `{.xorsign.abs}` is one qualifier of the two-operand float min/max.
                "xorsign" => {
                    m.xorsign = true;
                    matches!(opcode, "min" | "max") && ty.fmt != F64
                }
                "abs" => {
                    abs = true;
                    matches!(opcode, "min" | "max") && ty.fmt != F64
                }
                _ => false,
            };
            if !ok {
                return Err(self.err(format!(
                    "the modifier `.{md}` is not one `{opcode}.{tyname}` takes"
                )));
            }
        }
        if m.sat && m.relu {
            return Err(self.err("`.sat` and `.relu` exclude each other"));
        }
        if m.xorsign != abs || (m.xorsign && ops.len() != 3) {
            return Err(self.err(format!(
                "`{opcode}` takes `.abs` as `{opcode}.xorsign.abs` of two operands here"
            )));
        }
        let (op, nsrc) = match opcode {
            "add" => (FOp::Add, 2),
            "sub" => (FOp::Sub, 2),
            "mul" => (FOp::Mul, 2),
            "fma" | "mad" => (FOp::Fma, 3),
            "div" => (FOp::Div, 2),
            "rcp" => (FOp::Rcp, 1),
            "sqrt" => (FOp::Sqrt, 1),
            "ex2" => (FOp::Ex2, 1),
            "min" => (FOp::Min, 2),
            "max" => (FOp::Max, 2),
            "neg" => (FOp::Neg, 1),
            "abs" => (FOp::Abs, 1),
            _ => return Err(self.err(format!("`{opcode}` has no float form"))),
        };
        // Which type each instruction takes, and the modifiers PTX requires.
        let allowed = match op {
            FOp::Add | FOp::Sub | FOp::Mul | FOp::Fma | FOp::Min | FOp::Max | FOp::Neg | FOp::Abs => true,
            FOp::Div | FOp::Sqrt | FOp::Rcp => ty.lanes == 1 && (f32ish || ty.fmt == F64),
            FOp::Ex2 => f32ish && ty.lanes == 1,
        };
        if !allowed
            || (ty.lanes == 2 && ty.fmt == F32 && matches!(op, FOp::Min | FOp::Max | FOp::Neg | FOp::Abs))
        {
            return Err(self.err(format!(
                "`{opcode}.{tyname}` is not a PTX instruction bwsim interprets"
            )));
        }
        if opcode == "mad" && (half || ty.lanes != 1) {
            return Err(self.err("float `mad` takes .f32 or .f64 (use `fma`)"));
        }
        match op {
            FOp::Fma if !rnd_given => {
                return Err(self.err(format!(
                    "`{opcode}.{tyname}` needs a rounding modifier (`.rn`, `.rz`, `.rm`, `.rp`)"
                )))
            }
            FOp::Ex2 if !m.approx => return Err(self.err("`ex2.f32` needs `.approx`")),
            FOp::Div | FOp::Sqrt | FOp::Rcp if !(m.approx || full || rnd_given) => {
                return Err(self.err(format!(
                    "`{opcode}.{tyname}` needs `.approx`, `.rn`, `.rz`, `.rm` or `.rp`"
                )))
            }
            FOp::Div | FOp::Sqrt | FOp::Rcp if (m.approx || full) && rnd_given => {
                return Err(self.err("`.approx` and a rounding modifier exclude each other"))
            }
            FOp::Rcp if ty.fmt == F64 && m.approx && !m.ftz => {
                return Err(self.err("`rcp.approx.f64` needs `.ftz`"))
            }
            FOp::Ex2 | FOp::Min | FOp::Max | FOp::Neg | FOp::Abs if rnd_given => {
                return Err(self.err(format!("`{opcode}` takes no rounding modifier")))
            }
            _ => {}
        }
        if full {
            m.approx = true;
        }
        let nsrc = if matches!(op, FOp::Min | FOp::Max) && ops.len() == 4 && f32ish && ty.lanes == 1 {
            3
        } else {
            nsrc
        };
        self.n(ops, nsrc + 1)?;
        let scalar = (ty.lanes == 1).then_some(ty.fmt);
        let s = ops[1..]
            .iter()
            .map(|o| self.src(o, ty.bits(), scalar, false))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Op::Float {
            op,
            ty,
            m,
            d: self.dst(&ops[0], ty.bits(), false)?,
            s,
        })
    }

    /// `add{.rn}.dtype.atype d, a, b` (b of dtype), `sub` likewise, `mul{.rn}.dtype.atype.btype`
    /// and `fma{.rn}.dtype.atype.btype d, a, b, c` (c of dtype): dtype `.e4m3x4` or `.e5m2x4`,
    /// the sources also `.e2m1x4` (16 bits; the others 32). `.rn` is the only rounding the
    /// instructions take and the form without it rounds the same way; `.satfinite` is refused
    /// (what it does to these instructions' overflow is not stated).
    fn packed(&self, op: PackedOp, m: &[&str], ops: &[Raw]) -> Result<Op, PtxError> {
        let name = op.ptx();
        let mut types = Vec::new();
        for md in m {
            match (*md, packed_type(md)) {
                ("rn", _) if types.is_empty() => {}
                (_, Some(d)) => types.push(d),
                _ => {
                    return Err(self.err(format!(
                        "the modifier `.{md}` is not one the four-lane fp8 `{name}` takes in bwsim's subset \
                         (`{name}{{.rn}}.dtype.atype{}`)",
                        if matches!(op, PackedOp::Add | PackedOp::Sub) {
                            ""
                        } else {
                            ".btype"
                        }
                    )))
                }
            }
        }
        let named = if matches!(op, PackedOp::Add | PackedOp::Sub) {
            2
        } else {
            3
        };
        if types.len() != named || !packed_arith::is_result_type(types[0]) {
            return Err(self.err(format!(
                "four-lane fp8 `{name}` names {named} types, the result's (`.e4m3x4` or `.e5m2x4`) first"
            )));
        }
        let dtype = types[0];
        let mut srcs: Vec<_> = types[1..].to_vec();
        srcs.resize(op.arity(), dtype);
        self.n(ops, op.arity() + 1)?;
        let s = ops[1..]
            .iter()
            .zip(&srcs)
            .map(|(o, &t)| self.src(o, if t == DType::F4E2M1 { 16 } else { 32 }, None, false))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Op::Packed {
            op,
            dtype,
            types: srcs,
            d: self.dst(&ops[0], 32, false)?,
            s,
        })
    }

    fn setp(&self, ty: &str, rest: &[&str], ops: &[Raw]) -> Result<Op, PtxError> {
        let (sty, lanes) = match fmt_of(ty) {
            Some((f, l)) if f != F32 || l == 1 => (Ty::Float(f), l),
            _ => match int_of(ty) {
                Some(i) if i.bits >= 16 => (Ty::Int(i), 1),
                _ => return Err(self.err(format!("`setp.{ty}` is not a comparison bwsim interprets"))),
            },
        };
        let mut it = rest.iter();
        let cmp = it
            .next()
            .and_then(|c| cmp_of(c))
            .ok_or_else(|| self.err("`setp` needs a comparison (`.eq`, `.lt`, ...)"))?;
        let mut combine = None;
        let mut ftz = false;
        for md in it {
            match *md {
                "and" | "or" | "xor" if combine.is_none() => {
                    combine = Some(match *md {
                        "and" => BOp::And,
                        "or" => BOp::Or,
                        _ => BOp::Xor,
                    })
                }
                "ftz" if matches!(sty, Ty::Float(f) if f == F32 || f == F16) => ftz = true,
                _ => return Err(self.err(format!("the modifier `.{md}` is not one `setp.{ty}` takes"))),
            }
        }
        let ok = match (sty, cmp) {
            (Ty::Int(_), Cmp::Eq | Cmp::Ne) => true,
            (Ty::Int(_), Cmp::Lt | Cmp::Le | Cmp::Gt | Cmp::Ge) => !ty.starts_with('b'),
            (Ty::Int(i), Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs) => !i.signed && !ty.starts_with('b'),
            (Ty::Float(_), Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs) => false,
            (Ty::Float(_), _) => true,
            (Ty::Int(_), _) => false,
        };
        if !ok {
            return Err(self.err(format!("`setp.{}.{ty}` is not a PTX comparison", rest[0])));
        }
        self.n(ops, if combine.is_some() { 4 } else { 3 })?;
        let (p, q) = match &ops[0] {
            Raw::Reg(r) => (Some(*r), None),
            Raw::Pair(r, q) => (Some(*r), *q),
            _ => return Err(self.err("`setp` writes a predicate or `p|q`")),
        };
        for r in [p, q].into_iter().flatten() {
            if self.bits(r) != 1 {
                return Err(self.err(format!("`{}` is not a predicate", self.name(r))));
            }
        }
        if lanes == 2 && q.is_none() {
            return Err(self.err("a `.x2` comparison writes two predicates `p|q`"));
        }
        let bits = sty.bits() * lanes;
        let f = match sty {
            Ty::Float(f) if lanes == 1 => Some(f),
            _ => None,
        };
        let combine = match combine {
            None => None,
            Some(b) => Some(match &ops[3] {
                Raw::Reg(r) if self.bits(*r) == 1 => (b, Src::Reg(*r), false),
                Raw::NotReg(r) if self.bits(*r) == 1 => (b, Src::Reg(*r), true),
                _ => return Err(self.err("the combined operand of `setp` is a predicate")),
            }),
        };
        Ok(Op::Setp {
            cmp,
            ty: sty,
            lanes,
            ftz,
            p,
            q,
            a: self.src(&ops[1], bits, f, false)?,
            b: self.src(&ops[2], bits, f, false)?,
            combine,
        })
    }

    fn cvt(&self, mods: &[String], ops: &[Raw]) -> Result<Op, PtxError> {
        let m: Vec<&str> = mods.iter().map(|s| s.as_str()).collect();
        if m.len() < 2 {
            return Err(self.err("`cvt` names a destination and a source type"));
        }
        let (dname, sname) = (m[m.len() - 2], m[m.len() - 1]);
        let mut cm = CvtMods {
            rnd: None,
            int_rnd: false,
            ftz: false,
            sat: false,
            relu: false,
            satfinite: false,
        };
        for md in &m[..m.len() - 2] {
            match *md {
                r if rnd_of(r).is_some() && cm.rnd.is_none() => cm.rnd = rnd_of(r),
                "rni" | "rzi" | "rmi" | "rpi" if cm.rnd.is_none() => {
                    cm.rnd = rnd_of(&md[..2]);
                    cm.int_rnd = true;
                }
                "ftz" => cm.ftz = true,
                "sat" => cm.sat = true,
                "relu" => cm.relu = true,
                "satfinite" => cm.satfinite = true,
                _ => return Err(self.err(format!("the modifier `.{md}` is not one `cvt` takes"))),
            }
        }
        let f8 = |n: &str| match n {
            "e4m3x2" => Some(E4M3),
            "e5m2x2" => Some(E5M2),
            _ => None,
        };
        // Packing conversions.
        if let (Some((df, 2)), Some((F32, 1))) = (fmt_of(dname).filter(|f| f.0 != F32), fmt_of(sname)) {
            if !matches!(cm.rnd, Some(Rnd::Rn | Rnd::Rz)) || cm.int_rnd || cm.ftz || cm.sat {
                return Err(self.err(format!(
                    "`cvt.{dname}.f32` takes `.rn` or `.rz`, optionally `.relu` and `.satfinite`"
                )));
            }
            self.n(ops, 3)?;
            return Ok(Op::CvtPack {
                dst: df,
                src: F32,
                m: cm,
                d: self.dst(&ops[0], 32, false)?,
                a: self.src(&ops[1], 32, Some(F32), false)?,
                b: self.src(&ops[2], 32, Some(F32), false)?,
            });
        }
        if let Some(df) = f8(dname) {
            if cm.rnd != Some(Rnd::Rn) || cm.int_rnd || !cm.satfinite || cm.ftz || cm.sat {
                return Err(self.err(format!(
                    "`cvt` to `.{dname}` is `cvt.rn.satfinite{{.relu}}.{dname}.f32`, `.f16x2` or `.bf16x2`"
                )));
            }
            return match sname {
                "f32" => {
                    self.n(ops, 3)?;
                    Ok(Op::CvtPack {
                        dst: df,
                        src: F32,
                        m: cm,
                        d: self.dst(&ops[0], 16, false)?,
                        a: self.src(&ops[1], 32, Some(F32), false)?,
                        b: self.src(&ops[2], 32, Some(F32), false)?,
                    })
                }
                "f16x2" | "bf16x2" => {
                    self.n(ops, 2)?;
                    Ok(Op::CvtPack {
                        dst: df,
                        src: if sname == "f16x2" { F16 } else { BF16 },
                        m: cm,
                        d: self.dst(&ops[0], 16, false)?,
                        a: self.src(&ops[1], 32, None, false)?,
                        b: Src::Imm(0),
                    })
                }
                _ => Err(self.err(format!(
                    "`cvt.{dname}.{sname}` is not a conversion bwsim interprets"
                ))),
            };
        }
        // Unpacking: `cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2}` of a 16-bit register, and
        // `cvt.rn{.relu}.{f16x2,bf16x2}.e2m1x2` of an 8-bit one; the high lane into the high half.
        let unpack = match sname {
            "e2m1x2" => Some((E2M1, 8, &["f16x2", "bf16x2"][..])),
            _ => f8(sname).map(|sf| (sf, 16, &["f16x2"][..])),
        };
        if let Some((sf, src_bits, dsts)) = unpack {
            if !dsts.contains(&dname)
                || cm.rnd != Some(Rnd::Rn)
                || cm.int_rnd
                || cm.satfinite
                || cm.ftz
                || cm.sat
            {
                return Err(self.err(format!(
                    "`cvt` from `.{sname}` is `cvt.rn{{.relu}}.{}.{sname}`",
                    dsts.join("|")
                )));
            }
            self.n(ops, 2)?;
            return Ok(Op::CvtUnpack {
                dst: if dname == "bf16x2" { BF16 } else { F16 },
                src: sf,
                relu: cm.relu,
                d: self.dst(&ops[0], 32, false)?,
                a: self.src(&ops[1], src_bits, None, false)?,
            });
        }
        let (Some(dt), Some(st)) = (scalar_of(dname), scalar_of(sname)) else {
            return Err(self.err(format!(
                "`cvt.{dname}.{sname}` is not a conversion bwsim interprets"
            )));
        };
        // Untyped bits (`.b16`, ...) are not numbers to convert; `.bf16` is a float.
        let bits_ty = |n: &str| n.starts_with('b') && !n.starts_with("bf");
        if bits_ty(dname) || bits_ty(sname) {
            return Err(self.err("`cvt` takes .u, .s and float types, not .b"));
        }
        // The rounding PTX requires (and allows) for each pair of types.
        let need = match (dt, st) {
            (Ty::Float(d), Ty::Float(s))
                if d.bits < s.bits || (d == BF16 && s == F16) || (d == F16 && s == BF16) =>
            {
                "float"
            }
            (Ty::Float(d), Ty::Float(s)) if d == s => "optional-int",
            (Ty::Float(_), Ty::Float(_)) => "none-or-int",
            (Ty::Float(_), Ty::Int(_)) => "float",
            (Ty::Int(_), Ty::Float(_)) => "int",
            (Ty::Int(_), Ty::Int(_)) => "none",
        };
        let ok = matches!(
            (need, cm.rnd, cm.int_rnd),
            ("float", Some(_), false)
                | ("int", Some(_), true)
                | ("optional-int" | "none-or-int", None, _)
                | ("optional-int" | "none-or-int", Some(_), true)
                | ("none", None, _)
        );
        if !ok {
            let want = match need {
                "float" => "a float rounding (`.rn`, `.rz`, `.rm`, `.rp`)",
                "int" => "an integer rounding (`.rni`, `.rzi`, `.rmi`, `.rpi`)",
                "none" => "no rounding",
                _ => "no rounding or an integer rounding (`.rni`, ...)",
            };
            return Err(self.err(format!("`cvt.{dname}.{sname}` takes {want}")));
        }
        let half = |t: Ty| matches!(t, Ty::Float(f) if f == F16 || f == BF16);
        if cm.relu && !(half(dt) && st == Ty::Float(F32)) {
            return Err(self.err("`.relu` goes with conversions from .f32 to .f16/.bf16"));
        }
        if cm.satfinite && !(half(dt) && st == Ty::Float(F32)) {
            return Err(self.err("`.satfinite` goes with conversions from .f32 to .f16/.bf16 here"));
        }
        if cm.ftz && !(dt == Ty::Float(F32) || st == Ty::Float(F32)) {
            return Err(self.err("`.ftz` goes with .f32 conversions"));
        }
        self.n(ops, 2)?;
        let sf = match st {
            Ty::Float(f) => Some(f),
            _ => None,
        };
        Ok(Op::Cvt {
            dst: dt,
            src: st,
            m: cm,
            d: self.dst(&ops[0], dt.bits().max(16), matches!(dt, Ty::Int(_)))?,
            a: self.src(&ops[1], st.bits().max(16), sf, matches!(st, Ty::Int(_)))?,
        })
    }
}
