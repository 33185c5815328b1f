//! The block FMA chain of [`crate::mma_numerics`] for narrow operands (f16, bf16, tf32, fp8,
//! fp4, block scales folded in: at most 12 significant bits), computed for several
//! accumulator columns at once with every operation a vector operation across the columns:
//! the same bits as [`crate::mma_numerics::chain`], faster.
//!
//! Why the arithmetic is exact (each step as [`crate::mma_numerics::block_step`] states it):
//! - a product of two operands of at most 12 significant bits has at most 24: exact in f64,
//!   and a normal number with every operand's exponent in [`NARROW_LEAD`];
//! - cutting a term toward zero to a multiple of the unit `2^(E - align_bits)` is
//!   `trunc(term * 2^-unit)`: the scale is a power of two, so the product is exact unless it
//!   underflows, and a term that underflows is below one unit and cuts to 0 either way;
//! - with `align_bits <= 25` a scaled term `y` is below 2^27, and where `|y| >= 1/2` its 24
//!   significant bits reach no lower than 2^-24; so `y - copysign(1/2 - 2^-25, y)` is exact
//!   and lies strictly within half an integer of `trunc(y)`, which rounding it to the nearest
//!   integer (adding 1.5 * 2^52) gives, as the low bits of the f64 sum: integer sums of those
//!   bits are the exact sum of the cut terms (the same for `c`, an f32 of 24 bits);
//! - the sum `s * 2^unit` rounded toward zero to `result_bits` significant bits is `s` (an
//!   integer below 2^51, so an exact f64) with its low fraction bits cleared, scaled by
//!   `2^unit`; when the result is a normal f32 (or beyond the f32 range, where the cast gives
//!   the infinity that the reference gives) the cast to f32 is exact. Results below the f32
//!   normal range (where the quantum is fixed at 2^-149) take the general path.
//!
//! A column whose step the narrow arithmetic cannot compute (a non-finite accumulator, a
//! subnormal result) takes the caller's general step for that step only; the next step
//! continues here. Every operation is exact, so the results depend neither on the order of
//! the lanes nor on the CPU's vector width.

use crate::mma_numerics::BlockFma;

/// Exponents of narrow operands: products of two are normal f64 numbers with room for the
/// 2^-unit scale ([`NarrowLines::new`]).
pub const NARROW_LEAD: std::ops::RangeInclusive<i32> = -400..=400;

/// Significant bits of a narrow operand: the product of two has at most 24.
const NARROW_BITS: u32 = 12;

/// A zero operand's exponent: far enough below every real exponent that a product with a
/// zero factor never sets the reference exponent, and the sum of two still fits an i16.
const ZERO_LEAD: i16 = -(1 << 14);

/// Whether [`chain_cols`] computes these parameters.
pub fn narrow_supports(p: BlockFma) -> bool {
    p.align_bits <= 25 && (1..=24).contains(&p.result_bits)
}

/// A matrix of operands in the narrow form, row-major: values, exponents
/// (`floor(log2 |v|)`, zeros [`ZERO_LEAD`]) as i16, and which rows and columns hold only
/// operands that fit the form.
#[derive(Clone, Debug, Default)]
pub struct NarrowLines {
    rows: usize,
    cols: usize,
    v: Vec<f64>,
    lead: Vec<i16>,
    row_fits: Vec<bool>,
    col_fits: Vec<bool>,
}

/// `v` in the narrow form: `(value, exponent)`, or `None` when it is not finite, has more
/// than [`NARROW_BITS`] significant bits or an exponent outside [`NARROW_LEAD`].
fn narrow(v: f64) -> Option<(f64, i16)> {
    if v == 0.0 {
        return Some((0.0, ZERO_LEAD));
    }
    if !v.is_finite() {
        return None;
    }
    let bits = v.to_bits();
    let lead = ((bits >> 52) & 0x7ff) as i32 - 1023;
    // A normal f64 in this range: 52 fraction bits, the low 52 - (NARROW_BITS - 1) zero.
    if !NARROW_LEAD.contains(&lead) || bits.trailing_zeros() < 52 - (NARROW_BITS - 1) {
        return None;
    }
    Some((v, lead as i16))
}

impl NarrowLines {
    /// A `rows x cols` matrix, `vs` row-major.
    pub fn new(vs: &[f64], rows: usize, cols: usize) -> NarrowLines {
        NarrowLines::build(rows, cols, |r, c| vs[r * cols + c])
    }

    /// The `rows x cols` matrix whose transpose `vs` is (row-major `cols x rows`): B's
    /// `[K, N]` form from its columns.
    pub fn transposed(vs: &[f64], rows: usize, cols: usize) -> NarrowLines {
        NarrowLines::build(rows, cols, |r, c| vs[c * rows + r])
    }

    fn build(rows: usize, cols: usize, at: impl Fn(usize, usize) -> f64) -> NarrowLines {
        let mut out = NarrowLines {
            rows,
            cols,
            v: Vec::with_capacity(rows * cols),
            lead: Vec::with_capacity(rows * cols),
            row_fits: vec![true; rows],
            col_fits: vec![true; cols],
        };
        for r in 0..rows {
            for c in 0..cols {
                let (v, lead) = narrow(at(r, c)).unwrap_or_else(|| {
                    out.row_fits[r] = false;
                    out.col_fits[c] = false;
                    (0.0, ZERO_LEAD)
                });
                out.v.push(v);
                out.lead.push(lead);
            }
        }
        out
    }

    /// Row `i` as a line of operands, or `None` when one of them does not fit.
    pub fn row(&self, i: usize) -> Option<NarrowRow<'_>> {
        let r = i * self.cols..(i + 1) * self.cols;
        self.row_fits.get(i).copied().unwrap_or(false).then(|| NarrowRow {
            v: &self.v[r.clone()],
            lead: &self.lead[r],
        })
    }

    /// Whether columns `cols` exist and hold only operands that fit.
    pub fn cols_fit(&self, cols: std::ops::Range<usize>) -> bool {
        self.col_fits.get(cols).is_some_and(|f| f.iter().all(|&f| f))
    }
}

/// One row of [`NarrowLines`].
#[derive(Clone, Copy, Debug)]
pub struct NarrowRow<'a> {
    v: &'a [f64],
    lead: &'a [i16],
}

/// [`crate::mma_numerics::chain`] of row `a` against columns `j0..j0 + W` of `b` (`b` has
/// `a`'s length in rows; [`narrow_supports`] must hold for `p`, and the columns must fit,
/// [`NarrowLines::cols_fit`]), one step per `k` products, starting from `acc` (unused when
/// `use_acc` is false). A column's step that the narrow arithmetic cannot compute is
/// `general(w, terms, c)`: [`crate::mma_numerics::block_step`] of column `j0 + w` over the
/// products `terms` from `c`.
#[allow(clippy::too_many_arguments)] // a chain's operands, accumulators, model and fallback
pub fn chain_cols<const W: usize>(
    a: NarrowRow,
    b: &NarrowLines,
    j0: usize,
    k: usize,
    acc: [f32; W],
    use_acc: bool,
    p: BlockFma,
    mut general: impl FnMut(usize, std::ops::Range<usize>, Option<f32>) -> f32,
) -> [f32; W] {
    assert!(narrow_supports(p), "narrow arithmetic for {p:?}");
    assert!(
        b.rows == a.v.len() && b.cols_fit(j0..j0 + W),
        "columns of the row's length that fit"
    );
    let k = k.max(1);
    let n = a.v.len();
    let mut c: [Option<f32>; W] = acc.map(|acc| use_acc.then_some(acc));
    for lo in (0..n).step_by(k) {
        let r = lo..(lo + k).min(n);
        let (out, bad) = step_cols::<W>(a, b, j0, r.clone(), c, p);
        for w in 0..W {
            c[w] = Some(if bad[w] {
                general(w, r.clone(), c[w])
            } else {
                out[w]
            });
        }
    }
    c.map(|c| c.unwrap_or(0.0))
}

/// One block FMA step of row `a` against columns `j0..j0 + W` over the products `r`, from
/// accumulators `c`: each column's result, and which columns the narrow arithmetic could not
/// compute (their results are meaningless). Loops over the columns, so that every operation
/// is one vector operation on the lanes.
#[inline(always)]
fn step_cols<const W: usize>(
    a: NarrowRow,
    b: &NarrowLines,
    j0: usize,
    r: std::ops::Range<usize>,
    c: [Option<f32>; W],
    p: BlockFma,
) -> ([f32; W], [bool; W]) {
    let stride = b.cols;
    // Pass 1: the largest product exponent per column (16-bit lanes).
    let mut leads = [i16::MIN; W];
    for t in r.clone() {
        let al = a.lead[t];
        let bl = &b.lead[t * stride + j0..t * stride + j0 + W];
        for w in 0..W {
            leads[w] = leads[w].max(al + bl[w]);
        }
    }
    // The accumulators: exponent (an f32 is a normal f64), and whether they are finite.
    let cf: [f64; W] = c.map(|c| f64::from(c.unwrap_or(0.0)));
    let mut bad = [false; W];
    let mut unit = [0i64; W];
    let mut live = [false; W];
    let mut scale = [0f64; W];
    for w in 0..W {
        let cb = cf[w].to_bits();
        let field = ((cb >> 52) & 0x7ff) as i64;
        let c_live = cb << 1 != 0;
        bad[w] = field == 0x7ff;
        let c_lead = if c_live { field - 1023 } else { i64::MIN / 2 };
        let big = i64::from(leads[w]).max(c_lead);
        live[w] = big > i64::from(ZERO_LEAD) / 2;
        // A column without live terms computes nothing: any unit in range will do.
        unit[w] = if live[w] { big - i64::from(p.align_bits) } else { 0 };
        // 2^-unit: unit is within [-850, 800], a normal f64 built from its exponent field.
        scale[w] = f64::from_bits(((1023 - unit[w]) as u64) << 52);
    }
    // Pass 2: every product cut toward zero to the unit, summed exactly: `y - copysign(HALF,
    // y)` rounded to the nearest integer through MAGIC is `trunc(y)`, its bits MAGIC's bits
    // plus that integer.
    let mut sums = [0u64; W];
    for t in r.clone() {
        let av = a.v[t];
        let bv = &b.v[t * stride + j0..t * stride + j0 + W];
        for w in 0..W {
            let y = av * bv[w] * scale[w];
            let d = y - HALF.copysign(y);
            sums[w] = sums[w].wrapping_add((d + MAGIC).to_bits());
        }
    }
    let bias = MAGIC.to_bits().wrapping_mul(r.len() as u64);
    // Rounding toward zero to result_bits, scaled back by 2^unit.
    let keep = !((1u64 << (53 - p.result_bits)) - 1);
    let mut out = [0f32; W];
    for w in 0..W {
        let y = cf[w] * scale[w];
        let d = y - HALF.copysign(y);
        // MAGIC's bits plus the sum s (|s| < 2^51): s + MAGIC as an f64, so s exactly.
        let s = f64::from_bits(sums[w].wrapping_sub(bias).wrapping_add((d + MAGIC).to_bits())) - MAGIC;
        let cut = f64::from_bits(s.to_bits() & keep);
        let v = cut * f64::from_bits(((unit[w] + 1023) as u64) << 52);
        let zero = !live[w] || s == 0.0;
        bad[w] |= !zero && v.abs() < f64::from(f32::MIN_POSITIVE);
        out[w] = if zero { 0.0 } else { v as f32 };
    }
    (out, bad)
}

/// 1.5 * 2^52: adding it to an f64 of magnitude below 2^51 rounds that to the nearest integer,
/// which the sum's low bits then hold (two's complement).
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// 1/2 less 2^-25: a cut term `y` (|y| < 2^27, fraction bits down to 2^-24 at least where
/// |y| >= 1/2) less `copysign(HALF, y)` is exact and never half an integer away from the next
/// one, so rounding it to the nearest integer truncates `y` toward zero.
const HALF: f64 = 0.5 - 1.0 / 33_554_432.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mma_numerics::{block_step, chain, operands};
    use crate::value::bits_to_f64;
    use bwsim_isa::types::DType;
    use proptest::prelude::*;

    const HALF: BlockFma = BlockFma {
        align_bits: 25,
        result_bits: 24,
    };
    const NARROW: BlockFma = BlockFma {
        align_bits: 13,
        result_bits: 14,
    };

    /// A narrow tensor-core operand: random bits of one operand type (zeros, subnormals,
    /// NaN and infinities included), tf32 as the tensor core reads an f32, sometimes scaled
    /// by a power of two (out of the narrow range at times) or a ue4m3 block scale.
    fn operand() -> impl Strategy<Value = f64> {
        let types = prop_oneof![
            Just(DType::F16),
            Just(DType::BF16),
            Just(DType::F32),
            Just(DType::F8E4M3),
            Just(DType::F8E5M2),
            Just(DType::F4E2M1),
        ];
        (types, any::<u32>(), 0u32..6, -420i32..420, any::<u8>()).prop_map(|(d, bits, scale, e, s4)| {
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

    fn accumulator() -> impl Strategy<Value = f32> {
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

    fn params() -> impl Strategy<Value = BlockFma> {
        prop_oneof![
            Just(HALF),
            Just(NARROW),
            (0u32..=25, 1u32..=24).prop_map(|(align_bits, result_bits)| BlockFma {
                align_bits,
                result_bits
            }),
        ]
    }

    /// [`chain_cols`] over `row` and the columns `cols` (each the row's length), the general
    /// step being the reference [`block_step`]; also how many column steps took it.
    fn narrow_chain<const W: usize>(
        row: &[f64],
        cols: &[Vec<f64>],
        k: usize,
        acc: [f32; W],
        use_acc: bool,
        p: BlockFma,
    ) -> Option<([f32; W], usize)> {
        let n = row.len();
        let flat: Vec<f64> = cols.iter().flatten().copied().collect();
        let a = NarrowLines::new(row, 1, n);
        let b = NarrowLines::transposed(&flat, n, cols.len());
        let ra = operands(row);
        let rb: Vec<_> = cols.iter().map(|c| operands(c)).collect();
        let mut general_steps = 0;
        let row = a.row(0)?;
        if !b.cols_fit(0..W) {
            return None;
        }
        let r = chain_cols(row, &b, 0, k, acc, use_acc, p, |w, r, c| {
            general_steps += 1;
            block_step(&ra[r.clone()], &rb[w][r], c, p)
        });
        Some((r, general_steps))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Every column's chain is the reference chain's bits, whatever the operands (those
        /// that do not fit are refused, and only those), accumulators and parameters.
        #[test]
        fn narrow_columns_match_the_reference(
            row in proptest::collection::vec(operand(), 1..70),
            cols in proptest::collection::vec(proptest::collection::vec(operand(), 70), 8),
            k in prop_oneof![Just(8usize), Just(16), Just(32), Just(64), 1usize..70],
            accs in proptest::collection::vec(accumulator(), 8),
            use_acc in any::<bool>(),
            p in params(),
        ) {
            let n = row.len();
            let cols: Vec<Vec<f64>> = cols.iter().map(|c| c[..n].to_vec()).collect();
            let acc: [f32; 8] = std::array::from_fn(|w| accs[w]);
            let fits = |v: &f64| {
                *v == 0.0
                    || (v.is_finite()
                        && NARROW_LEAD.contains(&(((v.to_bits() >> 52) & 0x7ff) as i32 - 1023))
                        && (v.to_bits() & ((1u64 << 41) - 1)) == 0)
            };
            let all_fit = row.iter().chain(cols.iter().flatten()).all(fits);
            match narrow_chain(&row, &cols, k, acc, use_acc, p) {
                Some((fast, _)) => {
                    prop_assert!(all_fit);
                    for w in 0..8 {
                        let reference = chain(&operands(&row), &operands(&cols[w]), k, acc[w], use_acc, p);
                        prop_assert_eq!(fast[w].to_bits(), reference.to_bits(), "column {}: {} vs {}", w, fast[w], reference);
                    }
                }
                None => prop_assert!(!all_fit),
            }
        }

        /// Extreme exponents at the narrow range's ends, sums near the i32 bound (16 products
        /// of nearly 4 times the reference), cancellation, results below the f32 normal range.
        #[test]
        fn narrow_columns_match_at_extreme_exponents(
            terms in proptest::collection::vec(
                (any::<bool>(), 2048u32..4096, -400i32..401, 2048u32..4096, -400i32..401),
                16..48,
            ),
            near in any::<bool>(),
            acc in accumulator(),
            p in params(),
        ) {
            // 12-bit significands; with `near`, every product at the same exponent and close
            // to its top (the largest cut terms).
            let (row, col): (Vec<f64>, Vec<f64>) = terms
                .iter()
                .map(|&(neg, ma, ea, mb, eb)| {
                    let (ma, ea, mb, eb) = if near { (ma | 0xfc0, 0, mb | 0xfc0, 0) } else { (ma, ea, mb, eb) };
                    let a = ma as f64 * 2f64.powi(ea - 11);
                    (if neg && !near { -a } else { a }, mb as f64 * 2f64.powi(eb - 11))
                })
                .unzip();
            let cols = vec![col; 4];
            let (fast, _) = narrow_chain::<4>(&row, &cols, 16, [acc; 4], true, p).expect("12-bit operands fit");
            let reference = chain(&operands(&row), &operands(&cols[0]), 16, acc, true, p);
            for f in fast {
                prop_assert_eq!(f.to_bits(), reference.to_bits(), "{} vs {}", f, reference);
            }
        }
    }

    /// Ordinary bf16 data with finite accumulators never leaves the narrow arithmetic (the
    /// fast path is the path taken), and zeros, sign mixes and `use_acc` false give the
    /// hand-computed sums.
    #[test]
    fn bf16_data_stays_narrow() {
        let row: Vec<f64> = (0..64).map(|t| f64::from(t - 20) * 0.125).collect();
        let cols: Vec<Vec<f64>> = (0..8)
            .map(|w| {
                (0..64)
                    .map(|t| if t % 5 == w { 0.0 } else { f64::from(w - 3) * 0.5 })
                    .collect()
            })
            .collect();
        let (fast, general) =
            narrow_chain::<8>(&row, &cols, 16, [1.0; 8], true, HALF).expect("bf16 values fit");
        assert_eq!(general, 0);
        for w in 0..8 {
            // Every product and partial sum is a multiple of 2^-4 below 2^10: exact.
            let exact: f64 = 1.0 + row.iter().zip(&cols[w]).map(|(a, b)| a * b).sum::<f64>();
            assert_eq!(fast[w], exact as f32, "column {w}");
        }
        let (fresh, _) = narrow_chain::<8>(&row, &cols, 16, [5.0; 8], false, HALF).expect("fits");
        assert_eq!(fresh[0] + 1.0, fast[0]);
        // A NaN accumulator takes the general step, and propagates.
        let (nan, general) = narrow_chain::<8>(&row, &cols, 16, [f32::NAN; 8], true, HALF).expect("fits");
        assert!(nan.iter().all(|v| v.is_nan()));
        assert_eq!(general, 8 * 4);
    }

    #[test]
    fn narrow_form_refuses_what_it_cannot_hold() {
        assert_eq!(narrow(0.0), Some((0.0, ZERO_LEAD)));
        assert_eq!(
            narrow(-1.5 * 2f64.powi(-400)),
            Some((-1.5 * 2f64.powi(-400), -400))
        );
        assert_eq!(narrow(2f64.powi(401)), None);
        assert_eq!(narrow(2f64.powi(-401)), None);
        assert_eq!(narrow(1.0 + 2f64.powi(-11)).map(|n| n.1), Some(0));
        assert_eq!(narrow(1.0 + 2f64.powi(-12)), None);
        assert_eq!(narrow(f64::INFINITY), None);
        let m = NarrowLines::new(&[1.0, 2.0, 1.0 + 2f64.powi(-20), 4.0], 2, 2);
        assert!(m.row(0).is_some() && m.row(1).is_none());
        assert!(m.cols_fit(1..2) && !m.cols_fit(0..2) && !m.cols_fit(1..3));
    }
}
