//! The tensor cores' floating-point arithmetic: how one MMA instruction adds its products
//! into an f32 accumulator.
//!
//! Measured on the H100 (docs/hardware/wgmma-numerics.md, 196,608 dot products per input
//! type, every one bit-exact): one wgmma instruction computes, for each accumulator element,
//! a single *block fused multiply-add* over its `k` products (16 for f16/bf16, 32 for
//! e4m3/e5m2, 8 for tf32) and the incoming accumulator `c`:
//!
//! 1. every product is exact;
//! 2. the reference exponent `E` is the largest of the products' *nominal* exponents (the sum
//!    of the two operands' exponents, so a product whose significand is in [2, 4) counts one
//!    below its true leading bit) and `c`'s exponent; zeros do not take part;
//! 3. every product and `c` is truncated toward zero to a multiple of `2^(E - align_bits)`;
//! 4. the truncated terms are summed exactly and the sum is rounded toward zero to
//!    `result_bits` significant bits (24: an f32; 14 for fp8 inputs, whose results carry only
//!    13 fraction bits).
//!
//! A tile-level MMA over a larger K is a chain of such steps, one per instruction, each
//! step's f32 result the next one's `c`. [`MmaNumerics`] says which parameters each MMA
//! family uses: wgmma gets the measured Hopper ones; tcgen05 (no Blackwell measured) assumes
//! the same step with the fp8 width a public B200 report gives ([`BLACKWELL_ASSUMED`]), and a
//! run can switch either to [`Arith::Wide`] (exact sum, one rounding) or to other parameters
//! ([`crate::RunOptions::mma`]).
//!
//! Into an f16 accumulator (measured too, 196,608 dot products each for f16, e4m3 and e5m2
//! operands): the same alignment and cut, the exact sum of the cut terms rounded once to the
//! nearest f16 ([`block_step_f16`]); a subnormal f16 accumulator counts with exponent -14.
//! Integer accumulators (s8/u8) are exact sums wrapped to 32 bits (measured), computed by
//! the caller.
//!
//! Not measured, modelled as stated: non-finite operands (an f64 sum, so inf and NaN
//! propagate as IEEE says), results beyond the f32 range (infinity), subnormal operands and
//! f32 accumulators (their exponent is that of their leading bit), the sign of an exact zero
//! (+0).

use bwsim_isa::types::DType;

/// One block fused multiply-add step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockFma {
    /// Fraction bits kept below the reference exponent when the terms are aligned.
    pub align_bits: u32,
    /// Significant bits of each step's result (rounded toward zero).
    pub result_bits: u32,
}

impl BlockFma {
    /// The step that keeps `align_bits` when aligning and rounds to `result_bits`.
    pub const fn new(align_bits: u32, result_bits: u32) -> BlockFma {
        BlockFma {
            align_bits,
            result_bits,
        }
    }
}

/// How one MMA family adds products into an f32 accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    /// The whole dot product summed exactly and rounded once to the accumulator type (no
    /// hardware detail: the simulator's arithmetic before the measurement).
    Wide,
    /// One block FMA per instruction; parameters per operand class.
    Block {
        /// f16 and bf16 operands.
        half: BlockFma,
        /// tf32 operands.
        tf32: BlockFma,
        /// fp8, fp6 and fp4 operands (e4m3, e5m2, e2m1).
        narrow: BlockFma,
    },
}

/// The Hopper tensor core, measured (docs/hardware/wgmma-numerics.md).
pub const HOPPER: Arith = Arith::Block {
    half: BlockFma::new(25, 24),
    tf32: BlockFma::new(25, 24),
    narrow: BlockFma::new(13, 14),
};

/// Blackwell's tcgen05.mma, ASSUMED (no B200 measured here): the Hopper block FMA with 25
/// alignment bits and f32 results for every kind, fp8/fp6/fp4 included. Hopper keeps only 13
/// bits for fp8; a public B200 report (DeepGEMM issue 176) found 25 for `kind::f8f6f4`, and
/// more, not pinned down, for the fp4 block-scaled kinds.
pub const BLACKWELL_ASSUMED: Arith = Arith::Block {
    half: BlockFma::new(25, 24),
    tf32: BlockFma::new(25, 24),
    narrow: BlockFma::new(25, 24),
};

/// The arithmetic of each MMA family in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaNumerics {
    /// Hopper wgmma.
    pub wgmma: Arith,
    /// Blackwell tcgen05.mma: [`BLACKWELL_ASSUMED`] until measured on a B200
    /// (docs/hardware/wgmma-numerics.md lists the assumptions and the probes that settle them).
    pub tcgen05: Arith,
}

impl Default for MmaNumerics {
    fn default() -> MmaNumerics {
        MmaNumerics {
            wgmma: HOPPER,
            tcgen05: BLACKWELL_ASSUMED,
        }
    }
}

impl Arith {
    /// The step parameters for operands of `dtype`, or `None` for the wide sum.
    pub fn block_for(&self, dtype: DType) -> Option<BlockFma> {
        match self {
            Arith::Wide => None,
            Arith::Block { half, tf32, narrow } => match dtype {
                DType::F16 | DType::BF16 => Some(*half),
                DType::TF32 | DType::F32 => Some(*tf32),
                DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1 => Some(*narrow),
                _ => None,
            },
        }
    }
}

/// K of one MMA instruction for operands of `dtype`: 32 bytes of K per row (16 f16, 32 fp8,
/// 8 tf32); fp4 operands of the block-scaled fp4 kinds take 64 (`scaled_fp4`), of
/// `kind::f8f6f4` 32 (they are stored padded to 8 bits).
pub fn instruction_k(dtype: DType, scaled_fp4: bool) -> usize {
    match dtype {
        DType::F4E2M1 if scaled_fp4 => 64,
        DType::F4E2M1 => 32,
        d => (256 / d.bits().max(1)) as usize,
    }
}

/// `floor(log2 |x|)` of a finite non-zero f64.
#[inline]
fn exponent(x: f64) -> i32 {
    let b = x.to_bits();
    let e = ((b >> 52) & 0x7ff) as i32;
    if e == 0 {
        // f64 subnormal (no tensor-core operand or f32 is one): leading bit of the fraction.
        let frac = b & ((1u64 << 52) - 1);
        -1074 + 63 - frac.leading_zeros() as i32
    } else {
        e - 1023
    }
}

/// `x = m * 2^e` exactly, `m` a signed integer of at most 53 bits (x finite, non-zero).
#[inline]
fn split(x: f64) -> (i64, i32) {
    let b = x.to_bits();
    let e = ((b >> 52) & 0x7ff) as i32;
    let frac = (b & ((1u64 << 52) - 1)) as i64;
    let (m, ex) = if e == 0 {
        (frac, -1074)
    } else {
        (frac | (1i64 << 52), e - 1075)
    };
    (if x < 0.0 { -m } else { m }, ex)
}

/// An operand decoded once for many products: `v = m * 2^e` with `m` odd (or 0), `lead` the
/// exponent of its leading bit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Operand {
    /// The value.
    pub v: f64,
    m: i64,
    e: i32,
    lead: i32,
}

impl Operand {
    /// Decode `v` (any f64; zeros and non-finite values are kept as they are).
    pub fn new(v: f64) -> Operand {
        if v == 0.0 || !v.is_finite() {
            return Operand {
                v,
                m: 0,
                e: 0,
                lead: 0,
            };
        }
        let (m, e) = split(v);
        let tz = m.trailing_zeros();
        Operand {
            v,
            m: m >> tz,
            e: e + tz as i32,
            lead: exponent(v),
        }
    }

    fn live(&self) -> bool {
        self.m != 0
    }
}

/// Decode a slice of values.
pub fn operands(vs: &[f64]) -> Vec<Operand> {
    vs.iter().map(|&v| Operand::new(v)).collect()
}

/// The sum of one block FMA step before its rounding: the cut terms' exact sum `s * 2^unit`,
/// or the f64 sum of a step with a non-finite operand or accumulator, or nothing non-zero.
enum StepSum {
    Cut(i64, i32),
    Special(f64),
    Zero,
}

/// One block FMA step: `sum(a_i * b_i) + c` (no `c` when the accumulator is not used) as the
/// tensor core computes it, its sum rounded toward zero to `p.result_bits`; `a` and `b` have
/// the same length.
pub fn block_step(a: &[Operand], b: &[Operand], c: Option<f32>, p: BlockFma) -> f32 {
    match block_sum(a, b, c.map(f64::from), p.align_bits, i32::MIN) {
        StepSum::Cut(s, unit) => round_toward_zero(s, unit, p.result_bits),
        StepSum::Special(v) => v as f32,
        StepSum::Zero => 0.0,
    }
}

/// One block FMA step into an f16 accumulator (measured on the H100 for f16 and fp8 operands,
/// docs/hardware/wgmma-numerics.md): the terms aligned and cut as for an f32 accumulator
/// (`align_bits`), their exact sum rounded once to the nearest f16, ties to even (subnormals
/// kept, beyond the largest f16 infinity, an exact zero +0). `c` is the incoming f16 value; a
/// subnormal one counts with the f16's smallest normal exponent, -14, in the reference
/// exponent (the exponent its field encodes; measured: with its leading bit's, 3 of 196,608
/// e5m2 dot products differ). Returns the f16 bits.
pub fn block_step_f16(a: &[Operand], b: &[Operand], c: Option<f32>, align_bits: u32) -> u16 {
    match block_sum(a, b, c.map(f64::from), align_bits, F16_MIN_EXP) {
        StepSum::Cut(s, unit) => round_nearest_f16(s, unit),
        StepSum::Special(v) => half::f16::from_f64(v).to_bits(),
        StepSum::Zero => 0,
    }
}

/// [`block_step_f16`] over a whole K: one step per `k` products, each step's f16 result the
/// next one's `c` (the f16 accumulator of `acc` bits dropped when not `use_acc`).
pub fn chain_f16(a: &[Operand], b: &[Operand], k: usize, acc: u16, use_acc: bool, align_bits: u32) -> u16 {
    let mut c = use_acc.then_some(acc);
    for (ra, rb) in a.chunks(k.max(1)).zip(b.chunks(k.max(1))) {
        let cv = c.map(|h| half::f16::from_bits(h).to_f32());
        c = Some(block_step_f16(ra, rb, cv, align_bits));
    }
    c.unwrap_or(0)
}

/// The smallest normal exponent of an f16.
const F16_MIN_EXP: i32 = -14;

/// The exact sum of one step's terms, each cut toward zero to a multiple of `2^unit` for
/// `unit` = the reference exponent minus `align_bits` (module doc); `c` takes part in the
/// reference with its leading bit's exponent, at least `c_min_exp`.
fn block_sum(a: &[Operand], b: &[Operand], c: Option<f64>, align_bits: u32, c_min_exp: i32) -> StepSum {
    // Pass 1: specials, and the reference exponent over the non-zero terms.
    let mut big = i32::MIN;
    let mut special = c.is_some_and(|c| !c.is_finite());
    for (x, y) in a.iter().zip(b) {
        if x.live() && y.live() {
            big = big.max(x.lead + y.lead);
        } else if !x.v.is_finite() || !y.v.is_finite() {
            special = true;
        }
    }
    if special {
        let s: f64 = a.iter().zip(b).map(|(x, y)| x.v * y.v).sum::<f64>() + c.unwrap_or(0.0);
        return StepSum::Special(s);
    }
    let c = c.filter(|c| *c != 0.0).map(Operand::new);
    if let Some(c) = &c {
        big = big.max(c.lead.max(c_min_exp));
    }
    if big == i32::MIN {
        return StepSum::Zero;
    }
    // Pass 2: every term cut toward zero to a multiple of 2^unit, summed exactly. A term
    // keeps at most align_bits + 2 bits above the unit, so the sum fits an i64.
    let unit = big - align_bits as i32;
    let cut = |m: i64, e: i32| -> i64 {
        let sh = unit - e;
        if sh <= 0 {
            m << (-sh).min(62)
        } else if sh >= 63 {
            0
        } else if m < 0 {
            -((-m) >> sh)
        } else {
            m >> sh
        }
    };
    let mut sum: i64 = c.map_or(0, |c| cut(c.m, c.e));
    for (x, y) in a.iter().zip(b) {
        if x.live() && y.live() {
            // Stripped significands of tensor-core operands have at most 24 bits; wider ones
            // (not produced by any decoder here) go through i128 and keep their top bits.
            let (m, e) = match x.m.checked_mul(y.m) {
                Some(m) => (m, x.e + y.e),
                None => {
                    let w = x.m as i128 * y.m as i128;
                    let drop = 128 - w.unsigned_abs().leading_zeros() as i32 - 62;
                    ((w >> drop) as i64, x.e + y.e + drop)
                }
            };
            sum += cut(m, e);
        }
    }
    StepSum::Cut(sum, unit)
}

/// `s * 2^unit` rounded to the nearest f16, ties to even: 11 significant bits, quantum at
/// least 2^-24 (subnormals), beyond the largest finite f16 (65504) infinity, a zero +0.
fn round_nearest_f16(s: i64, unit: i32) -> u16 {
    if s == 0 {
        return 0;
    }
    let neg = s < 0;
    let a = s.unsigned_abs();
    let lead = unit + 63 - a.leading_zeros() as i32;
    let q = (lead - 10).max(-24);
    let m = if q > unit {
        let sh = (q - unit) as u32;
        if sh > 64 {
            0
        } else {
            let (kept, rest) = if sh == 64 {
                (0, a)
            } else {
                (a >> sh, a & ((1u64 << sh) - 1))
            };
            let half_ulp = 1u64 << (sh - 1);
            let up = rest > half_ulp || (rest == half_ulp && kept & 1 == 1);
            kept + up as u64
        }
    } else {
        // unit >= q >= -24 and the value is at most 2^(q + 11): a fits.
        a << (unit - q) as u32
    };
    if m == 0 {
        return 0;
    }
    // m * 2^q is exact in f64; at most 11 significant bits, so the f16 conversion is exact
    // (or overflows to infinity beyond 65504).
    let v = m as f64 * f64::from_bits(((q + 1023) as u64) << 52);
    half::f16::from_f64(if neg { -v } else { v }).to_bits()
}

/// `s * 2^unit` rounded toward zero to `bits` significant bits within the f32 range
/// (subnormal quantum 2^-149; beyond the largest f32, infinity).
fn round_toward_zero(s: i64, unit: i32, bits: u32) -> f32 {
    if s == 0 {
        return 0.0;
    }
    let neg = s < 0;
    let mut a = s.unsigned_abs();
    let lead = unit + 63 - a.leading_zeros() as i32;
    if lead > 127 {
        return if neg { f32::NEG_INFINITY } else { f32::INFINITY };
    }
    let q = (lead - (bits as i32 - 1)).max(-149);
    if q > unit {
        let sh = (q - unit) as u32;
        a = if sh >= 64 { 0 } else { a >> sh };
    } else {
        a <<= (unit - q) as u32;
    }
    // a < 2^bits <= 2^24 and 2^q is an f64: the product is exact, and so is the f32 cast.
    // q >= -149 here, inside f64's normal range, so 2^q is built from its exponent field (a
    // `powi` call cost a tenth of an MMA-heavy run).
    let v = a as f64 * f64::from_bits(((q + 1023) as u64) << 52);
    (if neg { -v } else { v }) as f32
}

/// Zero's `lead` in a [`Packed`] operand: far enough below every real exponent that a
/// product with a zero factor never sets the reference exponent.
/// Leads are 16 bits wide (two zeros' sum, -2^15, still fits) so their maxima vectorise.
const ZERO_LEAD: i16 = -(1 << 14);

/// The exponent range of a packed operand: products of two stay normal f64 numbers with room
/// for the 2^-unit scale ([`block_step_packed`]).
const PACKED_LEAD: std::ops::RangeInclusive<i32> = -400..=400;

/// An operand in the fast path's form: its value `v` (at most 24 significant bits, so the
/// product of two is exact in an f64) and `lead` = `floor(log2 |v|)`. Every tensor-core
/// operand fits (f32 and narrower, block scales folded in); see [`Packed::new`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Packed {
    v: f64,
    lead: i16,
}

impl Packed {
    /// A zero.
    pub const ZERO: Packed = Packed {
        v: 0.0,
        lead: ZERO_LEAD,
    };

    /// `v` in packed form, or `None` when it is not finite, its exponent is outside
    /// [-400, 400], or its significand needs more than 24 bits (such an operand takes the
    /// reference path).
    pub fn new(v: f64) -> Option<Packed> {
        if v == 0.0 {
            return Some(Packed::ZERO);
        }
        if !v.is_finite() {
            return None;
        }
        let lead = exponent(v);
        if !PACKED_LEAD.contains(&lead) {
            return None;
        }
        // A normal f64 here: 52 fraction bits, of which at most 23 may be set.
        if v.to_bits().trailing_zeros() < 52 - 23 {
            return None;
        }
        Some(Packed { v, lead: lead as i16 })
    }

    /// The value (zeros as +0).
    fn value(self) -> f64 {
        if self.v == 0.0 {
            0.0
        } else {
            self.v
        }
    }
}

/// Whether [`chain_packed`] computes these parameters (every cut term stays below 2^48).
pub fn packed_supports(p: BlockFma) -> bool {
    p.align_bits <= 46
}

/// Lines of packed operands (rows of A or columns of B, `k` each) as a structure of arrays,
/// with which lines fit the packed form.
#[derive(Clone, Debug, Default)]
pub struct PackedLines {
    k: usize,
    v: Vec<f64>,
    lead: Vec<i16>,
    fits: Vec<bool>,
}

/// One line of [`PackedLines`].
#[derive(Clone, Copy, Debug)]
pub struct PackedLine<'a> {
    v: &'a [f64],
    lead: &'a [i16],
}

impl PackedLines {
    /// `lines` lines of `k` values each, row-major.
    pub fn new(vs: &[f64], lines: usize, k: usize) -> PackedLines {
        let mut out = PackedLines {
            k,
            v: Vec::with_capacity(vs.len()),
            lead: Vec::with_capacity(vs.len()),
            fits: vec![true; lines],
        };
        for (i, &v) in vs.iter().enumerate() {
            let p = Packed::new(v).unwrap_or_else(|| {
                if let Some(f) = out.fits.get_mut(i / k.max(1)) {
                    *f = false;
                }
                Packed::ZERO
            });
            out.v.push(p.v);
            out.lead.push(p.lead);
        }
        out
    }

    /// Line `i`, or `None` when one of its operands does not fit the packed form.
    pub fn line(&self, i: usize) -> Option<PackedLine<'_>> {
        let (v, lead) = group(self.k, &self.fits, (&self.v, &self.lead), i)?;
        Some(PackedLine { v, lead })
    }
}

/// Group `i` of a per-line operand form (entries `i * k..(i + 1) * k` of its two parallel
/// arrays), or `None` when line `i` does not fit the form.
pub(crate) fn group<'a, T, U>(
    k: usize,
    fits: &[bool],
    (x, y): (&'a [T], &'a [U]),
    i: usize,
) -> Option<(&'a [T], &'a [U])> {
    let r = i * k..(i + 1) * k;
    fits.get(i)
        .copied()
        .unwrap_or(false)
        .then(|| (&x[r.clone()], &y[r]))
}

/// [`block_step`] on packed operands with a finite `c`: the same arithmetic without the
/// per-term decoding. Cutting a term toward zero to a multiple of the unit `2^(E -
/// align_bits)` is `trunc(term * 2^-unit)`, and every step of that is exact in f64: the
/// product of two 24-bit significands has 48 bits, both exponents lie in [-400, 400] so it is
/// a normal number, scaling by a power of two is exact (a term that underflows is below one
/// unit and cuts to 0 either way), and the cut term is an integer below 2^(align_bits + 2).
/// When the step's terms cannot add up to 2^53 ([`sums_exact_in_f64`]), they are cut and
/// summed as f64 integers ([`trunc_small`], vector operations); otherwise as i64, where `as`
/// truncates toward zero. Inlined into [`block_step_fixed`], where the length is a constant
/// and the loops unroll.
#[inline(always)]
fn block_step_packed(a: PackedLine, b: PackedLine, c: Option<f32>, p: BlockFma) -> f32 {
    let n = a.v.len().min(b.v.len());
    let (av, alead) = (&a.v[..n], &a.lead[..n]);
    let (bv, blead) = (&b.v[..n], &b.lead[..n]);
    let c = c.map(f64::from).filter(|c| *c != 0.0);
    // A zero factor's ZERO_LEAD keeps the sum below every live term and below any ZERO_LEAD
    // start, so no branch on liveness; lanes of 16-bit maxima let the loop vectorise.
    let mut bigs = [ZERO_LEAD; LEAD_LANES];
    let (al, bl) = (alead.chunks_exact(LEAD_LANES), blead.chunks_exact(LEAD_LANES));
    for t in (n - n % LEAD_LANES)..n {
        bigs[0] = bigs[0].max(alead[t] + blead[t]);
    }
    for (ca, cb) in al.zip(bl) {
        for l in 0..LEAD_LANES {
            bigs[l] = bigs[l].max(ca[l] + cb[l]);
        }
    }
    let big = bigs
        .iter()
        .fold(c.map_or(i32::from(ZERO_LEAD), exponent), |m, &x| {
            m.max(i32::from(x))
        });
    if big <= i32::from(ZERO_LEAD) / 2 {
        return 0.0;
    }
    let unit = big - p.align_bits as i32;
    // 2^-unit: unit is within [-846, 800], a normal f64 built from its exponent field.
    let scale = f64::from_bits(((1023 - unit) as u64) << 52);
    let sum = if sums_exact_in_f64(n, p) {
        // Sums of integers below 2^53 are exact in any order: lanes of running sums.
        let mut sums = [0f64; LANES];
        let mut rest = c.map_or(0.0, |c| trunc_small(c * scale));
        for t in (n - n % LANES)..n {
            rest += trunc_small(av[t] * bv[t] * scale);
        }
        let (ac, bc) = (av.chunks_exact(LANES), bv.chunks_exact(LANES));
        for (ca, cb) in ac.zip(bc) {
            for l in 0..LANES {
                sums[l] += trunc_small(ca[l] * cb[l] * scale);
            }
        }
        (sums.iter().sum::<f64>() + rest) as i64
    } else {
        let mut sum: i64 = c.map_or(0, |c| (c * scale) as i64);
        for t in 0..n {
            sum += (av[t] * bv[t] * scale) as i64;
        }
        sum
    };
    round_toward_zero(sum, unit, p.result_bits)
}

/// Whether `n` cut terms and a cut `c`, each below `2^(align_bits + 2)`, add up below 2^53
/// however they are grouped (so an f64 sum of them is exact).
#[inline(always)]
fn sums_exact_in_f64(n: usize, p: BlockFma) -> bool {
    p.align_bits <= 50 && ((n as u128 + 1) << (p.align_bits + 2)) <= 1u128 << 53
}

/// 2^52: adding it to an f64 in [0, 2^51) rounds that to an integer (the sum's unit in the
/// last place is 1).
const TWO_52: f64 = 4_503_599_627_370_496.0;

/// `x` truncated toward zero for `|x| < 2^51`, in operations that vectorise (`f64::trunc`
/// is a library call on baseline x86-64): `|x|` rounded to the nearest integer through
/// `2^52`, one less when that went up, with `x`'s sign.
#[inline(always)]
fn trunc_small(x: f64) -> f64 {
    const SIGN: u64 = 1 << 63;
    let bits = x.to_bits();
    let a = f64::from_bits(bits & !SIGN);
    let r = (a + TWO_52) - TWO_52;
    // 1.0 where the rounding went up, else 0.0 (a mask, not a branch).
    let up = f64::from_bits(1f64.to_bits() & 0u64.wrapping_sub(u64::from(r > a)));
    f64::from_bits((r - up).to_bits() | (bits & SIGN))
}

/// Running sums of [`block_step_packed`]'s terms, and running maxima of its exponents.
const LANES: usize = 4;
const LEAD_LANES: usize = 8;

/// [`block_step_packed`] for lines of exactly `K` operands (the compiler sees the length).
fn block_step_fixed<const K: usize>(a: PackedLine, b: PackedLine, c: Option<f32>, p: BlockFma) -> f32 {
    match (
        <&[f64; K]>::try_from(a.v),
        <&[i16; K]>::try_from(a.lead),
        <&[f64; K]>::try_from(b.v),
        <&[i16; K]>::try_from(b.lead),
    ) {
        (Ok(av), Ok(alead), Ok(bv), Ok(blead)) => block_step_packed(
            PackedLine { v: av, lead: alead },
            PackedLine { v: bv, lead: blead },
            c,
            p,
        ),
        _ => block_step_packed(a, b, c, p),
    }
}

/// [`chain`] on packed operands ([`packed_supports`] must hold for `p`): the same result bit
/// for bit, one step per `k` products.
pub fn chain_packed(a: PackedLine, b: PackedLine, k: usize, acc: f32, use_acc: bool, p: BlockFma) -> f32 {
    let n = a.v.len().min(b.v.len());
    let [r] = chain_packed_cols(a.prefix(n), [b.prefix(n)], k, [acc], use_acc, p);
    r
}

/// [`chain_packed`] of one row against `W` columns, each column's result the one
/// [`chain_packed`] gives; the columns' chains are independent, so their steps run
/// interleaved (a step waits on the previous step's result, not on another column's).
/// Every line must have the row's length.
pub fn chain_packed_cols<const W: usize>(
    a: PackedLine,
    b: [PackedLine; W],
    k: usize,
    acc: [f32; W],
    use_acc: bool,
    p: BlockFma,
) -> [f32; W] {
    assert!(b.iter().all(|b| b.v.len() == a.v.len()), "lines of one length");
    let c = acc.map(|acc| use_acc.then_some(acc));
    match k {
        8 => chain_steps(a, b, k, c, p, block_step_fixed::<8>),
        16 => chain_steps(a, b, k, c, p, block_step_fixed::<16>),
        32 => chain_steps(a, b, k, c, p, block_step_fixed::<32>),
        64 => chain_steps(a, b, k, c, p, block_step_fixed::<64>),
        _ => chain_steps(a, b, k, c, p, block_step_packed),
    }
}

impl<'a> PackedLine<'a> {
    /// Operands `r` of the line.
    fn slice(self, r: std::ops::Range<usize>) -> PackedLine<'a> {
        PackedLine {
            v: &self.v[r.clone()],
            lead: &self.lead[r],
        }
    }
    /// The first `n` operands.
    fn prefix(self, n: usize) -> PackedLine<'a> {
        self.slice(0..n.min(self.v.len()))
    }
}

/// The steps of [`chain_packed_cols`], each by `step`, from the accumulators `c` (`None`:
/// none used).
#[inline(always)]
fn chain_steps<const W: usize>(
    a: PackedLine,
    b: [PackedLine; W],
    k: usize,
    mut c: [Option<f32>; W],
    p: BlockFma,
    step: impl Fn(PackedLine, PackedLine, Option<f32>, BlockFma) -> f32,
) -> [f32; W] {
    debug_assert!(packed_supports(p));
    let k = k.max(1);
    let n = a.v.len();
    for lo in (0..n).step_by(k) {
        let r = lo..(lo + k).min(n);
        let ra = a.slice(r.clone());
        for (c, b) in c.iter_mut().zip(&b) {
            let rb = b.slice(r.clone());
            *c = Some(match *c {
                // An infinite or NaN accumulator: [`block_step`]'s f64 sum, the same expression.
                Some(cv) if !cv.is_finite() => {
                    let value = |l: PackedLine, t: usize| {
                        Packed {
                            v: l.v[t],
                            lead: l.lead[t],
                        }
                        .value()
                    };
                    let s: f64 =
                        (0..ra.v.len()).map(|t| value(ra, t) * value(rb, t)).sum::<f64>() + f64::from(cv);
                    s as f32
                }
                _ => step(ra, rb, *c, p),
            });
        }
    }
    c.map(|c| c.unwrap_or(0.0))
}

/// A chain of steps over a whole K (one step per `k` products), starting from `acc` (unused
/// when `use_acc` is false): what a sequence of MMA instructions over consecutive K leaves in
/// an f32 accumulator. `a` is a row of A, `b` a column of B.
pub fn chain(a: &[Operand], b: &[Operand], k: usize, acc: f32, use_acc: bool, p: BlockFma) -> f32 {
    let mut c = use_acc.then_some(acc);
    for (ra, rb) in a.chunks(k.max(1)).zip(b.chunks(k.max(1))) {
        c = Some(block_step(ra, rb, c, p));
    }
    c.unwrap_or(0.0)
}

/// Proptest strategies the tests of the MMA arithmetic share.
#[cfg(test)]
pub(crate) mod strategies {
    use super::BlockFma;
    use crate::value::bits_to_f64;
    use bwsim_isa::types::DType;
    use proptest::prelude::*;

    /// The measured Hopper step for f16/bf16/tf32 (and the assumed Blackwell one).
    pub const HALF: BlockFma = BlockFma::new(25, 24);
    /// The measured Hopper step for fp8.
    pub const NARROW: BlockFma = BlockFma::new(13, 14);

    /// An f32 accumulator: random bits, the zeros, an infinity, NaN, the smallest subnormal,
    /// small values and tiny ones.
    pub fn accumulator() -> impl Strategy<Value = f32> {
        prop_oneof![
            any::<u32>().prop_map(f32::from_bits),
            Just(0.0f32),
            Just(-0.0f32),
            Just(f32::INFINITY),
            Just(f32::NAN),
            Just(f32::from_bits(1)),
            (-8.0f32..8.0),
            (-1e-36f32..1e-36),
        ]
    }

    /// A block-FMA step: the measured ones, or any with up to `max_align` alignment bits.
    pub fn params(max_align: u32) -> impl Strategy<Value = BlockFma> {
        prop_oneof![
            Just(HALF),
            Just(NARROW),
            (0u32..=max_align, 1u32..=24).prop_map(|(a, r)| BlockFma::new(a, r)),
        ]
    }

    /// A tensor-core operand: random bits of one operand type (NaN, infinities, zeros and
    /// subnormals included), tf32 as the tensor core reads an f32. Of `choices` equally likely
    /// cases one multiplies it by `2^e` for an `e` in `exps`, one by a ue4m3 factor; the
    /// others leave it as it is.
    pub fn operand(choices: u32, exps: std::ops::Range<i32>) -> impl Strategy<Value = f64> {
        let types = prop_oneof![
            Just(DType::F16),
            Just(DType::BF16),
            Just(DType::F32),
            Just(DType::F8E4M3),
            Just(DType::F8E5M2),
            Just(DType::F4E2M1),
        ];
        (types, any::<u32>(), 0u32..choices, exps, any::<u8>()).prop_map(|(d, bits, scale, e, s4)| {
            let bits = bits as u64 & ((1u64 << d.bits()) - 1);
            let bits = if d == DType::F32 { bits & !0x1fff } else { bits };
            let v = bits_to_f64(d, bits);
            match scale {
                0 => v * 2f64.powi(e),
                1 => v * bits_to_f64(DType::UE4M3, (s4 & 0x7f) as u64),
                _ => v,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::strategies::{HALF, NARROW};

    fn unzip(pairs: &[(f64, f64)]) -> (Vec<f64>, Vec<f64>) {
        pairs.iter().copied().unzip()
    }

    /// [`super::block_step`] over (a, b) pairs.
    fn block_step(pairs: &[(f64, f64)], c: Option<f32>, p: BlockFma) -> f32 {
        let (a, b) = unzip(pairs);
        super::block_step(&operands(&a), &operands(&b), c, p)
    }

    /// [`super::chain`] over (a, b) pairs.
    fn chain(pairs: &[(f64, f64)], k: usize, acc: f32, use_acc: bool, p: BlockFma) -> f32 {
        let (a, b) = unzip(pairs);
        super::chain(&operands(&a), &operands(&b), k, acc, use_acc, p)
    }

    fn plain_f32(pairs: &[(f64, f64)], c: f32) -> f32 {
        pairs.iter().fold(c, |s, (a, b)| s + (*a as f32) * (*b as f32))
    }

    #[test]
    fn exact_sums_are_exact() {
        let pairs = [(1.5, 2.0), (-0.25, 4.0), (3.0, 3.0)];
        assert_eq!(block_step(&pairs, Some(0.5), HALF), 3.0 - 1.0 + 9.0 + 0.5);
        assert_eq!(block_step(&pairs, None, HALF), 11.0);
        assert_eq!(block_step(&[], Some(-2.0), HALF), -2.0);
        assert_eq!(block_step(&[(0.0, 7.0)], None, HALF), 0.0);
    }

    #[test]
    fn the_sum_is_truncated_not_rounded() {
        // f16 operands 1.5 * 2^-12 and 2^-12: the product 1.5 * 2^-24 is kept exactly
        // (3 units of 2^-25), but 1 + 0.75 ulp rounds toward zero to 1; f32 round-to-nearest
        // gives 1 + 2^-23.
        let (a, b) = (1.5 * 2f64.powi(-12), 2f64.powi(-12));
        assert_eq!(block_step(&[(1.0, 1.0), (a, b)], None, HALF), 1.0);
        assert_eq!((1.0 + a * b) as f32, 1.0 + 2f32.powi(-23));
    }

    #[test]
    fn every_term_is_cut_below_the_largest_exponent() {
        // Products of 2^-27 next to c = 1 fall below the 2^-25 unit and vanish one by one,
        // even sixteen of them (an exact sum, 2^-23, is an f32 ulp of 1 and would be kept).
        let q = 2f64.powi(-13);
        let pairs = [(q, q * 0.5); 16];
        assert_eq!(block_step(&pairs, Some(1.0), HALF), 1.0);
        assert_eq!((1.0 + 16.0 * q * q * 0.5) as f32, 1.0 + 2f32.powi(-23));
    }

    #[test]
    fn the_reference_is_the_products_nominal_exponent() {
        // 1.5 * 1.5 = 2.25 has nominal exponent 0 (the operands' exponents summed) though its
        // leading bit is 2^1. The two products cancel; c = 1.5 * 2^-25 truncates to the
        // 2^-25 unit of the nominal reference (a 2^-24 unit from the true exponent would
        // leave 0, an exact sum 1.5 * 2^-25).
        let c = (1.5 * 2f64.powi(-25)) as f32;
        let r = block_step(&[(1.5, 1.5), (-1.5, 1.5)], Some(c), HALF);
        assert_eq!(r, 2f32.powi(-25));
    }

    #[test]
    fn fp8_steps_keep_13_fraction_bits() {
        // c = 1 + 2^-20 loses its low bits at the 2^-13 unit; plain f32 keeps them.
        let c = 1.0f32 + 2f32.powi(-20);
        assert_eq!(block_step(&[(0.5, 0.5)], Some(c), NARROW), 1.25);
        assert_eq!(plain_f32(&[(0.5, 0.5)], c), 1.25 + 2f32.powi(-20));
        // 3 * 2^-14 is 1.5 units of 2^-13: truncated to one unit (exact: 1 + 1.5 * 2^-13).
        let small = (0.75, 2f64.powi(-12));
        assert_eq!(
            block_step(&[(1.0, 1.0), small], None, NARROW),
            1.0 + 2f32.powi(-13)
        );
        // Negative terms truncate toward zero (magnitude down): -1.5 units become -1, not -2
        // as a two's-complement floor would make them.
        let r = block_step(
            &[(-1.0, 1.0), (-0.75, 2f64.powi(-12))],
            Some(-2f32.powi(-12)),
            NARROW,
        );
        assert_eq!(r, -1.0 - 3.0 * 2f32.powi(-13));
    }

    #[test]
    fn chains_one_step_per_instruction_and_use_acc_drops_c() {
        // 32 products of 2^-27 after c = 1: each k16 step drops its sixteen (a single wide
        // sum, 1 + 2^-22, would keep them).
        let q = 2f64.powi(-13);
        let pairs = vec![(q, q * 0.5); 32];
        assert_eq!(chain(&pairs, 16, 1.0, true, HALF), 1.0);
        // Without the accumulator the first step's reference is the products' own exponent:
        // every step is exact, 32 * 2^-27.
        assert_eq!(chain(&pairs, 16, 1.0, false, HALF), 2f32.powi(-22));
        assert_eq!(chain(&[], 16, 3.0, true, HALF), 3.0);
    }

    #[test]
    fn specials_and_overflow() {
        assert!(block_step(&[(f64::INFINITY, 0.0)], None, HALF).is_nan());
        assert_eq!(
            block_step(&[(f64::INFINITY, 1.0)], Some(1.0), HALF),
            f32::INFINITY
        );
        assert_eq!(block_step(&[(6e37, 6.0)], None, HALF), f32::INFINITY);
        assert_eq!(instruction_k(DType::F16, false), 16);
        assert_eq!(instruction_k(DType::F8E4M3, false), 32);
        assert_eq!(instruction_k(DType::TF32, false), 8);
        assert_eq!(instruction_k(DType::F4E2M1, true), 64);
    }

    mod fast_path {
        use super::super::*;
        use proptest::prelude::*;

        /// A tensor-core operand, sometimes multiplied by a block scale (a power of two or a
        /// ue4m3 factor).
        fn operand() -> impl Strategy<Value = f64> {
            super::super::strategies::operand(4, -127..128)
        }

        use super::super::strategies::{accumulator, params};

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4000))]

            /// The packed chain gives the reference chain's bits for every operand it accepts,
            /// and it accepts every finite tensor-core operand.
            #[test]
            fn packed_chain_matches_the_reference(
                pairs in proptest::collection::vec((operand(), operand()), 0..80),
                k in prop_oneof![Just(8usize), Just(16), Just(32), Just(64), 1usize..70],
                acc in accumulator(),
                use_acc in any::<bool>(),
                p in params(46),
            ) {
                let (a, b): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
                let (la, lb) = (PackedLines::new(&a, 1, a.len()), PackedLines::new(&b, 1, b.len()));
                let finite = a.iter().chain(&b).all(|v| v.is_finite());
                prop_assert_eq!(la.line(0).is_some() && lb.line(0).is_some(), finite);
                let reference = chain(&operands(&a), &operands(&b), k, acc, use_acc, p);
                if let (Some(pa), Some(pb)) = (la.line(0), lb.line(0)) {
                    let fast = chain_packed(pa, pb, k, acc, use_acc, p);
                    prop_assert_eq!(fast.to_bits(), reference.to_bits(), "{} vs {}", fast, reference);
                }
            }

            /// One row against four columns at once gives each column's reference chain.
            #[test]
            fn packed_columns_match_the_reference(
                row in proptest::collection::vec(operand(), 1..70),
                cols in proptest::collection::vec(proptest::collection::vec(operand(), 70), 4),
                k in prop_oneof![Just(8usize), Just(16), Just(32), Just(64), 1usize..70],
                accs in proptest::collection::vec(accumulator(), 4),
                use_acc in any::<bool>(),
                p in params(46),
            ) {
                // Non-finite operands take the reference path before this one: zero them.
                let finite = |v: &f64| if v.is_finite() { *v } else { 0.0 };
                let n = row.len();
                let row: Vec<f64> = row.iter().map(finite).collect();
                let cols: Vec<Vec<f64>> = cols.iter().map(|c| c[..n].iter().map(finite).collect()).collect();
                let la = PackedLines::new(&row, 1, n);
                let lb: Vec<PackedLines> = cols.iter().map(|c| PackedLines::new(c, 1, n)).collect();
                let a = la.line(0).expect("finite");
                let b: [PackedLine; 4] = std::array::from_fn(|w| lb[w].line(0).expect("finite"));
                let acc: [f32; 4] = std::array::from_fn(|w| accs[w]);
                let fast = chain_packed_cols(a, b, k, acc, use_acc, p);
                for w in 0..4 {
                    let reference = chain(&operands(&row), &operands(&cols[w]), k, acc[w], use_acc, p);
                    prop_assert_eq!(fast[w].to_bits(), reference.to_bits(), "column {}", w);
                }
            }

            /// The vectorisable truncation is `f64::trunc`, at every magnitude it is used for
            /// (integers, halves and ties included) and far below one.
            #[test]
            fn trunc_small_truncates(m in any::<u64>(), e in -1100i32..51, neg in any::<bool>()) {
                // A random 53-bit significand in [1, 2), scaled.
                let x = (1.0 + (m >> 12) as f64 * 2f64.powi(-52)) * 2f64.powi(e);
                let x = if neg { -x } else { x };
                prop_assume!(x.abs() < 2f64.powi(51));
                prop_assert_eq!(trunc_small(x).to_bits(), x.trunc().to_bits(), "{}", x);
                let half = (x * 2.0).trunc() / 2.0;
                prop_assert_eq!(trunc_small(half).to_bits(), half.trunc().to_bits(), "{}", half);
            }

            /// Extreme exponents within an MMA: products far apart, cancellation, results at
            /// the f32 range's ends.
            #[test]
            fn packed_chain_matches_at_extreme_exponents(
                terms in proptest::collection::vec(
                    (-1i32..2, 1u32..(1 << 24), -160i32..130, 1u32..(1 << 24), -160i32..130),
                    1..40,
                ),
                acc in accumulator(),
                p in params(46),
            ) {
                let (a, b): (Vec<f64>, Vec<f64>) = terms
                    .iter()
                    .map(|&(s, ma, ea, mb, eb)| {
                        (s as f64 * ma as f64 * 2f64.powi(ea - 23), mb as f64 * 2f64.powi(eb - 23))
                    })
                    .unzip();
                let (la, lb) = (PackedLines::new(&a, 1, a.len()), PackedLines::new(&b, 1, b.len()));
                let reference = chain(&operands(&a), &operands(&b), 16, acc, true, p);
                let fast = chain_packed(
                    la.line(0).expect("24-bit values"),
                    lb.line(0).expect("24-bit values"),
                    16,
                    acc,
                    true,
                    p,
                );
                prop_assert_eq!(fast.to_bits(), reference.to_bits(), "{} vs {}", fast, reference);
            }
        }

        #[test]
        fn packing_rejects_what_it_cannot_hold() {
            assert_eq!(Packed::new(f64::NAN), None);
            assert_eq!(Packed::new(f64::NEG_INFINITY), None);
            // 25 significant bits, and an exponent beyond any tensor-core operand.
            assert_eq!(Packed::new(1.0 + 2f64.powi(-24)), None);
            assert_eq!(Packed::new(2f64.powi(401)), None);
            assert_eq!(Packed::new(2f64.powi(-401)), None);
            assert_eq!(Packed::new(-0.0), Some(Packed::ZERO));
            let p = Packed::new(-1.5 * 2f64.powi(-140)).expect("fits");
            assert_eq!((p.v, p.lead), (-1.5 * 2f64.powi(-140), -140));
            assert_eq!(Packed::new(1.0 + 2f64.powi(-23)).map(|p| p.lead), Some(0));
        }
    }
}
