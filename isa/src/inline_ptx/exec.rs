//! Executing checked instructions on bits: one call of a snippet, its registers a vector of
//! 64-bit words (predicates are 0 or 1), each instruction with the PTX ISA's semantics.
//!
//! Float rules beyond rounding (which `float` owns): a NaN result is the canonical NaN (all
//! bits but the sign set); `.ftz` flushes subnormal inputs and subnormal results to zeros of
//! the same sign; `.sat` clamps to [+0, 1] and turns NaN into +0; `.relu` turns negative
//! results into +0; `min`/`max` return the non-NaN operand unless `.NaN` is given, and order
//! -0 below +0; `.approx` instructions (`ex2`, `rcp`, `div`, `sqrt`, and `div.full`) return
//! the correctly rounded result, the one value inside every error bound PTX states.

use super::float::{self, decode, Exact, Fmt, Rnd, Val, E4M3, F32};
use super::parse::{
    carry_apply, mask, BOp, Cmp, CvtMods, FMods, FOp, FTy, IOp, ITy, Ins, Op, Parsed, RegId, Src, Ty,
};
use super::RunError;

pub(super) struct Regs<'p> {
    pub v: Vec<u64>,
    pub def: Vec<bool>,
    pub p: &'p Parsed,
    pub text: &'p str,
}

impl Regs<'_> {
    fn read(&self, s: Src, ins: &Ins) -> Result<u64, RunError> {
        match s {
            Src::Imm(v) => Ok(v),
            Src::Reg(r) => {
                if self.def[r as usize] {
                    Ok(self.v[r as usize])
                } else {
                    Err(RunError::Undefined {
                        reg: self.p.reg_names[r as usize].clone(),
                        ins: self.text[ins.at.0..ins.at.1].to_string(),
                    })
                }
            }
        }
    }
    fn write(&mut self, r: RegId, v: u64) {
        let b = self.p.reg_bits[r as usize];
        self.v[r as usize] = v & mask(b);
        self.def[r as usize] = true;
    }

    pub fn run(&mut self) -> Result<(), RunError> {
        let p = self.p;
        for ins in &p.ins {
            if let Some((g, neg)) = ins.guard {
                let v = self.read(Src::Reg(g), ins)? != 0;
                if v == neg {
                    continue;
                }
            }
            self.step(ins)?;
        }
        Ok(())
    }

    pub(super) fn step(&mut self, ins: &Ins) -> Result<(), RunError> {
        let rd = |s: &Self, x: Src| s.read(x, ins);
        match &ins.op {
            Op::Mov { d, a } => {
                let v = rd(self, *a)?;
                self.write(*d, v);
            }
            Op::Pack { d, parts, bits } => {
                let mut v = 0u64;
                for (k, p) in parts.iter().enumerate() {
                    v |= (rd(self, *p)? & mask(*bits)) << (k as u32 * bits);
                }
                self.write(*d, v);
            }
            Op::Unpack { ds, a, bits } => {
                let v = rd(self, *a)?;
                for (k, d) in ds.iter().enumerate() {
                    if let Some(d) = d {
                        self.write(*d, v >> (k as u32 * bits));
                    }
                }
            }
            Op::Int { op, ty, sat, d, s } => {
                let vals = s.iter().map(|x| rd(self, *x)).collect::<Result<Vec<_>, _>>()?;
                let v = int_op(*op, *ty, *sat, &vals).ok_or_else(|| RunError::DivideByZero {
                    ins: self.text[ins.at.0..ins.at.1].to_string(),
                })?;
                self.write(*d, v);
            }
            Op::Carry {
                op,
                ty,
                d,
                s,
                cin,
                cout,
            } => {
                let vals = s.iter().map(|x| rd(self, *x)).collect::<Result<Vec<_>, _>>()?;
                let c = match cin {
                    Some(f) => rd(self, Src::Reg(*f))?,
                    None => 0,
                };
                let (v, carry) = carry_apply(*op, *ty, &vals, c);
                self.write(*d, v);
                if let Some(f) = cout {
                    self.write(*f, carry);
                }
            }
            Op::Bit { op, bits, d, s } => {
                let a = rd(self, s[0])?;
                let v = match op {
                    BOp::And => a & rd(self, s[1])?,
                    BOp::Or => a | rd(self, s[1])?,
                    BOp::Xor => a ^ rd(self, s[1])?,
                    BOp::Not => !a,
                    BOp::Cnot => (a & mask(*bits) == 0) as u64,
                };
                self.write(*d, v);
            }
            Op::Shift {
                left,
                arith,
                bits,
                d,
                a,
                b,
            } => {
                let (a, n) = (rd(self, *a)? & mask(*bits), rd(self, *b)? & 0xffff_ffff);
                let v = if *left {
                    if n >= *bits as u64 {
                        0
                    } else {
                        a << n
                    }
                } else if *arith {
                    let sa = sext(a, *bits);
                    (sa >> n.min(63)) as u64
                } else if n >= *bits as u64 {
                    0
                } else {
                    a >> n
                };
                self.write(*d, v);
            }
            Op::Float { op, ty, m, d, s } => {
                let vals = s.iter().map(|x| rd(self, *x)).collect::<Result<Vec<_>, _>>()?;
                let fb = ty.fmt.bits;
                let mut v = 0u64;
                for lane in 0..ty.lanes {
                    let l: Vec<u64> = vals.iter().map(|x| (x >> (lane * fb)) & mask(fb)).collect();
                    v |= float_op(*op, ty.fmt, *m, &l) << (lane * fb);
                }
                let _: FTy = *ty;
                self.write(*d, v);
            }
            Op::Packed {
                op,
                dtype,
                types,
                d,
                s,
            } => {
                let vals = s.iter().map(|x| rd(self, *x)).collect::<Result<Vec<_>, _>>()?;
                let mut v = 0u64;
                let mut lane_vals = Vec::with_capacity(vals.len());
                for lane in 0..4u32 {
                    lane_vals.clear();
                    for (x, &t) in vals.iter().zip(types) {
                        let w = t.bits();
                        lane_vals.push(crate::numeric::decode(t, (x >> (lane * w)) & mask(w)));
                    }
                    let bits = crate::packed_arith::lane(*op, *dtype, &lane_vals).map_err(|u| {
                        RunError::Unspecified {
                            ins: self.text[ins.at.0..ins.at.1].to_string(),
                            lane,
                            why: u.to_string(),
                        }
                    })?;
                    v |= bits << (lane * 8);
                }
                self.write(*d, v);
            }
            Op::Setp {
                cmp,
                ty,
                lanes,
                ftz,
                p,
                q,
                a,
                b,
                combine,
            } => {
                let (a, b) = (rd(self, *a)?, rd(self, *b)?);
                let c = match combine {
                    Some((op, src, neg)) => Some((*op, (rd(self, *src)? != 0) != *neg)),
                    None => None,
                };
                let comb = |t: bool| match c {
                    None => t,
                    Some((BOp::And, c)) => t && c,
                    Some((BOp::Or, c)) => t || c,
                    Some((_, c)) => t != c,
                };
                if *lanes == 2 {
                    let w = ty.bits();
                    let t0 = compare(*cmp, *ty, *ftz, a & mask(w), b & mask(w));
                    let t1 = compare(*cmp, *ty, *ftz, (a >> w) & mask(w), (b >> w) & mask(w));
                    if let Some(p) = p {
                        self.write(*p, comb(t0) as u64);
                    }
                    if let Some(q) = q {
                        self.write(*q, comb(t1) as u64);
                    }
                } else {
                    let t = compare(*cmp, *ty, *ftz, a, b);
                    if let Some(p) = p {
                        self.write(*p, comb(t) as u64);
                    }
                    if let Some(q) = q {
                        self.write(*q, comb(!t) as u64);
                    }
                }
            }
            Op::Selp { d, a, b, c } => {
                let v = if rd(self, *c)? != 0 {
                    rd(self, *a)?
                } else {
                    rd(self, *b)?
                };
                self.write(*d, v);
            }
            Op::Cvt { dst, src, m, d, a } => {
                let v = cvt(*dst, *src, *m, rd(self, *a)? & mask(src.bits()));
                // A wider destination register gets the value extended by its type.
                let w = self.p.reg_bits[*d as usize];
                let v = match dst {
                    Ty::Int(i) if i.signed && w > i.bits => sext(v, i.bits) as u64,
                    _ => v,
                };
                self.write(*d, v);
            }
            Op::CvtPack { dst, src, m, d, a, b } => {
                let fm = |x: u64, s: Fmt| cvt(Ty::Float(*dst), Ty::Float(s), *m, x);
                let (a, b) = (rd(self, *a)?, rd(self, *b)?);
                let v = if *src != F32 {
                    // f16x2 or bf16x2 to an fp8 pair: the high lane to the high byte.
                    fm((a >> 16) & 0xffff, *src) << dst.bits | fm(a & 0xffff, *src)
                } else {
                    fm(a & 0xffff_ffff, F32) << dst.bits | fm(b & 0xffff_ffff, F32)
                };
                self.write(*d, v);
            }
            Op::CvtUnpack { dst, src, relu, d, a } => {
                let a = rd(self, *a)?;
                let m = CvtMods {
                    rnd: Some(Rnd::Rn),
                    int_rnd: false,
                    ftz: false,
                    sat: false,
                    relu: *relu,
                    satfinite: false,
                };
                let sb = src.bits;
                let lo = cvt(Ty::Float(*dst), Ty::Float(*src), m, a & mask(sb));
                let hi = cvt(Ty::Float(*dst), Ty::Float(*src), m, (a >> sb) & mask(sb));
                self.write(*d, hi << dst.bits | lo);
            }
            Op::Prmt { d, a, b, c } => {
                let src = (rd(self, *b)? & 0xffff_ffff) << 32 | (rd(self, *a)? & 0xffff_ffff);
                let c = rd(self, *c)?;
                let mut v = 0u64;
                for k in 0..4 {
                    let sel = (c >> (4 * k)) & 0xf;
                    let byte = (src >> (8 * (sel & 7))) & 0xff;
                    let byte = if sel & 8 != 0 {
                        if byte & 0x80 != 0 {
                            0xff
                        } else {
                            0
                        }
                    } else {
                        byte
                    };
                    v |= byte << (8 * k);
                }
                self.write(*d, v);
            }
            Op::Lop3 { d, a, b, c, lut } => {
                let (a, b, c) = (rd(self, *a)?, rd(self, *b)?, rd(self, *c)?);
                let mut v = 0u64;
                for i in 0..32 {
                    let idx = ((a >> i) & 1) << 2 | ((b >> i) & 1) << 1 | ((c >> i) & 1);
                    v |= ((*lut as u64 >> idx) & 1) << i;
                }
                self.write(*d, v);
            }
            Op::Shf {
                left,
                clamp,
                d,
                a,
                b,
                c,
            } => {
                let (a, b, c) = (
                    rd(self, *a)? & 0xffff_ffff,
                    rd(self, *b)? & 0xffff_ffff,
                    rd(self, *c)? & 0xffff_ffff,
                );
                let n = if *clamp { c.min(32) } else { c & 31 };
                let wide = b << 32 | a;
                let v = if *left {
                    ((wide << n) >> 32) as u32 as u64
                } else {
                    (wide >> n) as u32 as u64
                };
                self.write(*d, v);
            }
            Op::Bfe {
                signed,
                bits,
                d,
                a,
                b,
                c,
            } => {
                let (a, pos, len) = (rd(self, *a)?, rd(self, *b)? & 0xff, rd(self, *c)? & 0xff);
                let msb = *bits as u64 - 1;
                let sbit = if !*signed || len == 0 {
                    0
                } else {
                    (a >> (pos + len - 1).min(msb)) & 1
                };
                let mut v = 0u64;
                for i in 0..=msb {
                    let bit = if i < len && pos + i <= msb {
                        (a >> (pos + i)) & 1
                    } else {
                        sbit
                    };
                    v |= bit << i;
                }
                self.write(*d, v);
            }
            Op::Bfi { bits, d, a, b, c, e } => {
                let (a, mut f) = (rd(self, *a)?, rd(self, *b)?);
                let (pos, len) = (rd(self, *c)? & 0xff, rd(self, *e)? & 0xff);
                let msb = *bits as u64 - 1;
                let mut i = 0;
                while i < len && pos + i <= msb {
                    f = (f & !(1 << (pos + i))) | (((a >> i) & 1) << (pos + i));
                    i += 1;
                }
                self.write(*d, f);
            }
        }
        Ok(())
    }
}

/// `v`'s low `bits` bits as a signed number.
pub(super) fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

fn ival(v: u64, t: ITy) -> i128 {
    if t.signed {
        sext(v, t.bits) as i128
    } else {
        (v & mask(t.bits)) as i128
    }
}

/// An integer instruction; `None` for a division by zero (PTX leaves its result unspecified).
fn int_op(op: IOp, t: ITy, sat: bool, s: &[u64]) -> Option<u64> {
    let a = ival(s[0], t);
    let b = s.get(1).map(|&x| ival(x, t)).unwrap_or(0);
    let n = t.bits;
    let clamp32 = |x: i128| x.clamp(i32::MIN as i128, i32::MAX as i128);
    let v: i128 = match op {
        IOp::Add if sat => clamp32(a + b),
        IOp::Sub if sat => clamp32(a - b),
        IOp::Add => a.wrapping_add(b),
        IOp::Sub => a.wrapping_sub(b),
        IOp::MulLo => a.wrapping_mul(b),
        IOp::MulHi => wide_mul(a, b, n) >> n,
        IOp::MulWide => wide_mul(a, b, n),
        IOp::MadLo => a.wrapping_mul(b).wrapping_add(ival(s[2], t)),
        IOp::MadHi => {
            let hi = wide_mul(a, b, n) >> n;
            let c = ival(s[2], t);
            if sat {
                clamp32(hi + c)
            } else {
                hi.wrapping_add(c)
            }
        }
        IOp::MadWide => {
            let wt = ITy {
                bits: 2 * n,
                signed: t.signed,
            };
            wide_mul(a, b, n).wrapping_add(ival(s[2], wt))
        }
        IOp::Min => a.min(b),
        IOp::Max => a.max(b),
        IOp::Div | IOp::Rem => {
            if b == 0 {
                return None;
            }
            // Wrapping in the type's width: MIN / -1 is MIN.
            let (q, r) = (a / b, a % b);
            if op == IOp::Div {
                q
            } else {
                r
            }
        }
        IOp::Abs => a.abs(),
        IOp::Neg => -a,
        IOp::Popc => (s[0] & mask(n)).count_ones() as i128,
        IOp::Clz => ((s[0] & mask(n)).leading_zeros() - (64 - n)) as i128,
        IOp::Brev => ((s[0] & mask(n)).reverse_bits() >> (64 - n)) as i128,
    };
    Some(v as u64)
}

/// The exact `2n`-bit product of two `n`-bit values (as signed or unsigned i128).
fn wide_mul(a: i128, b: i128, n: u32) -> i128 {
    if n == 64 {
        // Both fit in 64 bits: the product fits in i128 unless both are unsigned and large;
        // compute it on u128 bits then.
        (a as u128).wrapping_mul(b as u128) as i128
    } else {
        a * b
    }
}

fn signed_zero_sum(a_neg: bool, b_neg: bool, r: Rnd) -> bool {
    if r == Rnd::Rm {
        a_neg || b_neg
    } else {
        a_neg && b_neg
    }
}

/// Round an exact result, with the sign rule for an exact zero of a sum (`zero_neg`).
fn rnd(f: Fmt, x: Exact, r: Rnd, zero_neg: bool) -> u64 {
    if x.is_zero() {
        return f.zero(zero_neg);
    }
    float::round(x, f, r, false).bits
}

/// One lane of a float instruction.
pub(super) fn float_op(op: FOp, f: Fmt, m: FMods, s: &[u64]) -> u64 {
    let nan = f.canonical_nan();
    let s: Vec<u64> = s.iter().map(|&x| if m.ftz { f.flush(x) } else { x }).collect();
    let d: Vec<Val> = s.iter().map(|&x| decode(f, x)).collect();
    let r = m.rnd;
    let any_nan = d.iter().any(|v| matches!(v, Val::Nan));
    let out = match op {
        FOp::Min | FOp::Max if m.xorsign => {
            // The PTX ISA: the min (max) of |a| and |b|, with the XOR of their sign bits; a
            // NaN result ignores `.xorsign.abs`.
            let r = min_max(
                op == FOp::Max,
                f,
                m.nan,
                s[0] & !f.sign_bit(),
                s[1] & !f.sign_bit(),
            );
            if f.is_nan(r) {
                r
            } else {
                r | ((s[0] ^ s[1]) & f.sign_bit())
            }
        }
        FOp::Min | FOp::Max => {
            let mut acc = s[0];
            for &x in &s[1..] {
                acc = min_max(op == FOp::Max, f, m.nan, acc, x);
            }
            acc
        }
        _ if any_nan => nan,
        FOp::Neg => s[0] ^ f.sign_bit(),
        FOp::Abs => s[0] & !f.sign_bit(),
        FOp::Add | FOp::Sub => {
            let b = if op == FOp::Sub { neg(d[1]) } else { d[1] };
            add_vals(f, d[0], b, r)
        }
        FOp::Mul => match (d[0], d[1]) {
            (Val::Inf(a), Val::Fin(x)) | (Val::Fin(x), Val::Inf(a)) => {
                if x.is_zero() {
                    nan
                } else {
                    f.inf(a != x.neg)
                }
            }
            (Val::Inf(a), Val::Inf(b)) => f.inf(a != b),
            (Val::Fin(x), Val::Fin(y)) => rnd(f, float::mul(x, y), r, x.neg != y.neg),
            _ => nan,
        },
        FOp::Fma => {
            let p = match (d[0], d[1]) {
                (Val::Inf(a), Val::Fin(x)) | (Val::Fin(x), Val::Inf(a)) => {
                    if x.is_zero() {
                        return finish(f, m, nan);
                    }
                    Val::Inf(a != x.neg)
                }
                (Val::Inf(a), Val::Inf(b)) => Val::Inf(a != b),
                (Val::Fin(x), Val::Fin(y)) => Val::Fin(float::mul(x, y)),
                _ => Val::Nan,
            };
            match (p, d[2]) {
                (Val::Fin(p), Val::Fin(c)) => {
                    let sum = float::add(p, c);
                    let zn = if p.is_zero() && c.is_zero() {
                        signed_zero_sum(p.neg, c.neg, r)
                    } else {
                        r == Rnd::Rm
                    };
                    rnd(f, sum, r, zn)
                }
                (p, c) => add_vals(f, p, c, r),
            }
        }
        FOp::Div | FOp::Rcp => {
            let (a, b) = if op == FOp::Rcp {
                (Val::Fin(Exact::int(1)), d[0])
            } else {
                (d[0], d[1])
            };
            match (a, b) {
                (Val::Inf(_), Val::Inf(_)) => nan,
                (Val::Inf(x), Val::Fin(y)) => f.inf(x != y.neg),
                (Val::Fin(x), Val::Inf(y)) => f.zero(x.neg != y),
                (Val::Fin(x), Val::Fin(y)) if y.is_zero() => {
                    if x.is_zero() {
                        nan
                    } else {
                        f.inf(x.neg != y.neg)
                    }
                }
                (Val::Fin(x), Val::Fin(y)) => rnd(
                    f,
                    float::div(x, y),
                    if m.approx { Rnd::Rn } else { r },
                    x.neg != y.neg,
                ),
                _ => nan,
            }
        }
        FOp::Sqrt => match d[0] {
            Val::Inf(false) => f.inf(false),
            Val::Fin(x) if x.is_zero() => s[0],
            Val::Fin(x) if !x.neg => rnd(f, float::sqrt(x), if m.approx { Rnd::Rn } else { r }, false),
            _ => nan,
        },
        FOp::Ex2 => match d[0] {
            Val::Inf(false) => f.inf(false),
            Val::Inf(true) => 0,
            _ => float::exp2_f32(f32::from_bits(s[0] as u32)) as u64,
        },
    };
    finish(f, m, out)
}

fn neg(v: Val) -> Val {
    match v {
        Val::Nan => Val::Nan,
        Val::Inf(n) => Val::Inf(!n),
        Val::Fin(x) => Val::Fin(x.neg()),
    }
}

fn add_vals(f: Fmt, a: Val, b: Val, r: Rnd) -> u64 {
    match (a, b) {
        (Val::Inf(x), Val::Inf(y)) => {
            if x == y {
                f.inf(x)
            } else {
                f.canonical_nan()
            }
        }
        (Val::Inf(x), _) | (_, Val::Inf(x)) => f.inf(x),
        (Val::Fin(x), Val::Fin(y)) => {
            let zn = if x.is_zero() && y.is_zero() {
                signed_zero_sum(x.neg, y.neg, r)
            } else {
                r == Rnd::Rm
            };
            rnd(f, float::add(x, y), r, zn)
        }
        _ => f.canonical_nan(),
    }
}

/// `.sat`, `.relu` and the flush of subnormal results.
fn finish(f: Fmt, m: FMods, v: u64) -> u64 {
    let mut v = v;
    if m.ftz {
        v = f.flush(v);
    }
    if m.sat {
        v = match decode(f, v) {
            Val::Nan => 0,
            Val::Inf(true) => 0,
            Val::Inf(false) => one(f),
            Val::Fin(x) if x.neg => 0,
            Val::Fin(_) if v > one(f) => one(f),
            _ => v,
        };
    }
    if m.relu {
        v = match decode(f, v) {
            Val::Nan => f.canonical_nan(),
            Val::Inf(true) => 0,
            Val::Fin(x) if x.neg => 0,
            _ => v,
        };
    }
    v
}

fn one(f: Fmt) -> u64 {
    (f.bias() as u64) << f.man
}

/// PTX float `min`/`max` of two operands.
fn min_max(max: bool, f: Fmt, nan_prop: bool, a: u64, b: u64) -> u64 {
    let (na, nb) = (f.is_nan(a), f.is_nan(b));
    if (na && nb) || (nan_prop && (na || nb)) {
        return f.canonical_nan();
    }
    if na {
        return b;
    }
    if nb {
        return a;
    }
    // Order by value with -0 below +0: the sign-magnitude bits as a total order.
    let key = |x: u64| -> i128 {
        let mag = (x & !f.sign_bit()) as i128;
        if x & f.sign_bit() != 0 {
            -mag - 1
        } else {
            mag
        }
    };
    let a_less = key(a) < key(b);
    if a_less != max {
        a
    } else {
        b
    }
}

/// A comparison of `setp`.
fn compare(c: Cmp, t: Ty, ftz: bool, a: u64, b: u64) -> bool {
    match t {
        Ty::Int(i) => {
            let (x, y) = (ival(a, i), ival(b, i));
            let (ux, uy) = (a & mask(i.bits), b & mask(i.bits));
            match c {
                Cmp::Eq => ux == uy,
                Cmp::Ne => ux != uy,
                Cmp::Lt => x < y,
                Cmp::Le => x <= y,
                Cmp::Gt => x > y,
                Cmp::Ge => x >= y,
                Cmp::Lo => ux < uy,
                Cmp::Ls => ux <= uy,
                Cmp::Hi => ux > uy,
                Cmp::Hs => ux >= uy,
                _ => false,
            }
        }
        Ty::Float(f) => {
            let (a, b) = if ftz { (f.flush(a), f.flush(b)) } else { (a, b) };
            let unordered = f.is_nan(a) || f.is_nan(b);
            let ord = if unordered { None } else { Some(fcmp(f, a, b)) };
            use std::cmp::Ordering::*;
            match (c, ord) {
                (Cmp::Num, o) => o.is_some(),
                (Cmp::Nan, o) => o.is_none(),
                (Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu, None) => true,
                (_, None) => false,
                (Cmp::Eq | Cmp::Equ, Some(o)) => o == Equal,
                (Cmp::Ne | Cmp::Neu, Some(o)) => o != Equal,
                (Cmp::Lt | Cmp::Ltu, Some(o)) => o == Less,
                (Cmp::Le | Cmp::Leu, Some(o)) => o != Greater,
                (Cmp::Gt | Cmp::Gtu, Some(o)) => o == Greater,
                (Cmp::Ge | Cmp::Geu, Some(o)) => o != Less,
                _ => false,
            }
        }
    }
}

/// Numeric order of two non-NaN values (-0 equals +0).
fn fcmp(f: Fmt, a: u64, b: u64) -> std::cmp::Ordering {
    let key = |x: u64| -> i128 {
        let mag = (x & !f.sign_bit()) as i128;
        if x & f.sign_bit() != 0 {
            -mag
        } else {
            mag
        }
    };
    key(a).cmp(&key(b))
}

/// The modifiers [`finish`] applies to a `cvt` result of float type `df`: `.ftz` for f32,
/// `.sat`, and `.relu` where the conversion takes it.
fn cvt_result_mods(m: &CvtMods, df: Fmt, relu: bool) -> FMods {
    FMods {
        rnd: Rnd::Rn,
        approx: false,
        ftz: m.ftz && df == F32,
        sat: m.sat,
        nan: false,
        relu,
        xorsign: false,
    }
}

/// One `cvt` of a scalar (`a` holds the source type's bits).
pub(super) fn cvt(dst: Ty, src: Ty, m: CvtMods, a: u64) -> u64 {
    match (dst, src) {
        (Ty::Int(d), Ty::Int(s)) => {
            let v = ival(a, s);
            let v = if m.sat { clamp_int(v, d) } else { v };
            v as u64 & mask(d.bits)
        }
        (Ty::Int(d), Ty::Float(sf)) => {
            let a = if m.ftz && sf == F32 { sf.flush(a) } else { a };
            let v = match decode(sf, a) {
                Val::Nan => 0,
                Val::Inf(n) => {
                    if n {
                        i128::MIN
                    } else {
                        i128::MAX
                    }
                }
                Val::Fin(x) => {
                    let (k, _) = float::round_at(x, 0, m.rnd.unwrap_or(Rnd::Rz));
                    let k = k.min(i128::MAX as u128) as i128;
                    if x.neg {
                        -k
                    } else {
                        k
                    }
                }
            };
            clamp_int(v, d) as u64 & mask(d.bits)
        }
        (Ty::Float(df), Ty::Int(s)) => {
            let x = Exact::int(ival(a, s));
            let v = float::round(x, df, m.rnd.unwrap_or(Rnd::Rn), false).bits;
            finish(df, cvt_result_mods(&m, df, false), v)
        }
        (Ty::Float(df), Ty::Float(sf)) => {
            let a = if m.ftz && sf == F32 { sf.flush(a) } else { a };
            let v = match decode(sf, a) {
                Val::Nan => df.canonical_nan(),
                Val::Inf(n) => {
                    if m.satfinite {
                        df.max_finite(n)
                    } else if df.ieee {
                        df.inf(n)
                    } else {
                        df.canonical_nan()
                    }
                }
                Val::Fin(x) if m.int_rnd => {
                    let (k, _) = float::round_at(x, 0, m.rnd.unwrap_or(Rnd::Rn));
                    let e = Exact {
                        neg: x.neg,
                        mant: k,
                        exp: 0,
                        sticky: false,
                    };
                    float::round(e, df, Rnd::Rn, false).bits
                }
                Val::Fin(x) => {
                    if x.is_zero() {
                        df.zero(x.neg)
                    } else {
                        float::round(x, df, m.rnd.unwrap_or(Rnd::Rn), m.satfinite).bits
                    }
                }
            };
            let v = if df == E4M3 && !m.satfinite && v & 0x7f == 0x7f {
                df.canonical_nan()
            } else {
                v
            };
            finish(df, cvt_result_mods(&m, df, m.relu), v)
        }
    }
}

fn clamp_int(v: i128, t: ITy) -> i128 {
    let (lo, hi) = if t.signed {
        (-(1i128 << (t.bits - 1)), (1i128 << (t.bits - 1)) - 1)
    } else {
        (0, (1i128 << t.bits) - 1)
    };
    v.clamp(lo, hi)
}
