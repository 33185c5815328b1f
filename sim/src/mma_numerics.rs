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
//! Not measured, modelled as stated: non-finite operands (an f64 sum, so inf and NaN
//! propagate as IEEE says), results beyond the f32 range (infinity), subnormal operands
//! (their exponent is that of their leading bit), the sign of an exact zero (+0), non-f32
//! accumulators (the wide sum).

use bwsim_isa::types::DType;

/// One block fused multiply-add step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockFma {
    /// Fraction bits kept below the reference exponent when the terms are aligned.
    pub align_bits: u32,
    /// Significant bits of each step's result (rounded toward zero).
    pub result_bits: u32,
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
    half: BlockFma {
        align_bits: 25,
        result_bits: 24,
    },
    tf32: BlockFma {
        align_bits: 25,
        result_bits: 24,
    },
    narrow: BlockFma {
        align_bits: 13,
        result_bits: 14,
    },
};

/// Blackwell's tcgen05.mma, ASSUMED (no B200 measured here): the Hopper block FMA with 25
/// alignment bits and f32 results for every kind, fp8/fp6/fp4 included. Hopper keeps only 13
/// bits for fp8; a public B200 report (DeepGEMM issue 176) found 25 for `kind::f8f6f4`, and
/// more, not pinned down, for the fp4 block-scaled kinds.
pub const BLACKWELL_ASSUMED: Arith = Arith::Block {
    half: BlockFma {
        align_bits: 25,
        result_bits: 24,
    },
    tf32: BlockFma {
        align_bits: 25,
        result_bits: 24,
    },
    narrow: BlockFma {
        align_bits: 25,
        result_bits: 24,
    },
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

/// One block FMA step: `sum(a_i * b_i) + c` (no `c` when the accumulator is not used) as the
/// tensor core computes it; `a` and `b` have the same length.
pub fn block_step(a: &[Operand], b: &[Operand], c: Option<f32>, p: BlockFma) -> f32 {
    let c = c.map(f64::from);
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
        return s as f32;
    }
    let c = c.filter(|c| *c != 0.0).map(Operand::new);
    if let Some(c) = &c {
        big = big.max(c.lead);
    }
    if big == i32::MIN {
        return 0.0;
    }
    // Pass 2: every term cut toward zero to a multiple of 2^unit, summed exactly. A term
    // keeps at most align_bits + 2 bits above the unit, so the sum fits an i64.
    let unit = big - p.align_bits as i32;
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
    round_toward_zero(sum, unit, p.result_bits)
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

#[cfg(test)]
mod tests {
    use super::*;

    const HALF: BlockFma = BlockFma {
        align_bits: 25,
        result_bits: 24,
    };
    const NARROW: BlockFma = BlockFma {
        align_bits: 13,
        result_bits: 14,
    };

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
}
