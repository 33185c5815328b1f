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
//!   integer (adding and subtracting 1.5 * 2^52) gives; the cut terms (and `c`'s, an f32 of
//!   24 bits) are integers below 2^27, so their f64 sum is exact in any order;
//! - the reference exponent is that of the largest product of the operands' leading powers of
//!   two (exact, and a normal f64);
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

use crate::mma_numerics::{group, BlockFma};

/// Exponents of narrow operands: products of two are normal f64 numbers with room for the
/// 2^-unit scale ([`narrow`]).
pub const NARROW_LEAD: std::ops::RangeInclusive<i32> = -400..=400;

/// Significant bits of a narrow operand: the product of two has at most 24.
const NARROW_BITS: u32 = 12;

/// Accumulator columns computed together: the width of one panel of B.
pub const COLS: usize = 16;

/// Whether [`chain_cols`] computes these parameters.
pub fn narrow_supports(p: BlockFma) -> bool {
    p.align_bits <= 25 && (1..=24).contains(&p.result_bits)
}

/// `v` in the narrow form: `(v, 2^floor(log2 |v|))` (zeros `(0, 0)`), or `None` when it is
/// not finite, has more than [`NARROW_BITS`] significant bits or an exponent outside
/// [`NARROW_LEAD`].
fn narrow(v: f64) -> Option<(f64, f64)> {
    if v == 0.0 {
        return Some((0.0, 0.0));
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
    Some((v, f64::from_bits(bits & (0x7ff << 52))))
}

/// The rows of A (`k` operands each) in the narrow form, with which rows fit it.
#[derive(Clone, Debug, Default)]
pub struct NarrowRows {
    k: usize,
    v: Vec<f64>,
    pow: Vec<f64>,
    fits: Vec<bool>,
}

impl NarrowRows {
    /// `rows` rows of `k` values, `vs` row-major.
    pub fn new(vs: &[f64], rows: usize, k: usize) -> NarrowRows {
        let mut out = NarrowRows {
            k,
            v: Vec::with_capacity(rows * k),
            pow: Vec::with_capacity(rows * k),
            fits: vec![true; rows],
        };
        for (i, &v) in vs.iter().take(rows * k).enumerate() {
            let (v, pow) = narrow_or_unfit(v, &mut out.fits, i / k);
            out.v.push(v);
            out.pow.push(pow);
        }
        out
    }

    /// Row `i`, or `None` when one of its operands does not fit.
    pub fn row(&self, i: usize) -> Option<NarrowRow<'_>> {
        let (v, pow) = group(self.k, &self.fits, (&self.v, &self.pow), i)?;
        Some(NarrowRow { v, pow })
    }
}

/// `narrow(v)`, or zeros with `fits[at]` cleared when `v` does not fit the narrow form (the
/// flag is indexed only then: this runs once per operand).
#[inline(always)]
fn narrow_or_unfit(v: f64, fits: &mut [bool], at: usize) -> (f64, f64) {
    narrow(v).unwrap_or_else(|| {
        fits[at] = false;
        (0.0, 0.0)
    })
}

/// One row of [`NarrowRows`]: values, and the power of two of each one's leading bit.
#[derive(Clone, Copy, Debug)]
pub struct NarrowRow<'a> {
    v: &'a [f64],
    pow: &'a [f64],
}

impl<'a> NarrowRow<'a> {
    /// Operands `r` of the row.
    fn slice(self, r: std::ops::Range<usize>) -> NarrowRow<'a> {
        NarrowRow {
            v: &self.v[r.clone()],
            pow: &self.pow[r],
        }
    }
}

/// The columns of B (`k` operands each) in the narrow form, in panels of [`COLS`] columns:
/// panel `p` holds, for each K index, the operands of columns `p * COLS..(p + 1) * COLS` side
/// by side, so a step reads whole vectors. A panel fits when all its columns exist and every
/// operand fits.
#[derive(Clone, Debug, Default)]
pub struct NarrowPanels {
    k: usize,
    v: Vec<[f64; COLS]>,
    pow: Vec<[f64; COLS]>,
    fits: Vec<bool>,
}

impl NarrowPanels {
    /// `cols` columns of `k` values, `vs` column after column (B transposed, `[N, K]`).
    pub fn new(vs: &[f64], cols: usize, k: usize) -> NarrowPanels {
        let panels = cols.div_ceil(COLS);
        let mut out = NarrowPanels {
            k,
            v: vec![[0.0; COLS]; panels * k],
            pow: vec![[0.0; COLS]; panels * k],
            fits: (0..panels).map(|p| (p + 1) * COLS <= cols).collect(),
        };
        for (c, col) in vs.chunks_exact(k.max(1)).take(cols).enumerate() {
            let (p, w) = (c / COLS, c % COLS);
            for (t, &v) in col.iter().enumerate() {
                let (v, pow) = narrow_or_unfit(v, &mut out.fits, p);
                out.v[p * k + t][w] = v;
                out.pow[p * k + t][w] = pow;
            }
        }
        out
    }

    /// Panel `p` (columns `p * COLS..(p + 1) * COLS`), or `None` when it does not fit.
    pub fn panel(&self, p: usize) -> Option<NarrowPanel<'_>> {
        let (v, pow) = group(self.k, &self.fits, (&self.v, &self.pow), p)?;
        Some(NarrowPanel { v, pow })
    }
}

/// One panel of [`NarrowPanels`].
#[derive(Clone, Copy, Debug)]
pub struct NarrowPanel<'a> {
    v: &'a [[f64; COLS]],
    pow: &'a [[f64; COLS]],
}

impl<'a> NarrowPanel<'a> {
    /// Products `r` of the panel (its rows `r`).
    fn slice(self, r: std::ops::Range<usize>) -> NarrowPanel<'a> {
        NarrowPanel {
            v: &self.v[r.clone()],
            pow: &self.pow[r],
        }
    }
}

/// [`crate::mma_numerics::chain`] of row `a` against the [`COLS`] columns of panel `b` (of
/// `a`'s length; [`narrow_supports`] must hold for `p`), one step per `k` products, starting
/// from `acc` (unused when `use_acc` is false). A column's step that the narrow arithmetic
/// cannot compute is `general(w, terms, c)`: [`crate::mma_numerics::block_step`] of the
/// panel's column `w` over the products `terms` from `c`.
#[inline(always)]
pub fn chain_cols(
    a: NarrowRow,
    b: NarrowPanel,
    k: usize,
    acc: [f32; COLS],
    use_acc: bool,
    p: BlockFma,
    mut general: impl FnMut(usize, std::ops::Range<usize>, Option<f32>) -> f32,
) -> [f32; COLS] {
    assert!(narrow_supports(p), "narrow arithmetic for {p:?}");
    assert_eq!(a.v.len(), b.v.len(), "a row and a panel of one length");
    let k = k.max(1);
    let n = a.v.len();
    // Without the accumulator the first step has no `c`, which a step treats as a zero `c`.
    let mut c = if use_acc { acc } else { [0.0; COLS] };
    for lo in (0..n).step_by(k) {
        let r = lo..(lo + k).min(n);
        let (ar, br) = (a.slice(r.clone()), b.slice(r.clone()));
        let (out, bad) = match r.len() {
            8 => step_fixed::<8>(ar, br, c, p),
            16 => step_fixed::<16>(ar, br, c, p),
            32 => step_fixed::<32>(ar, br, c, p),
            64 => step_fixed::<64>(ar, br, c, p),
            _ => step_cols(ar.v, ar.pow, br.v, br.pow, c, p),
        };
        for w in 0..COLS {
            c[w] = if bad[w] {
                general(w, r.clone(), Some(c[w]))
            } else {
                out[w]
            };
        }
    }
    c
}

/// [`step_cols`] of the row `a` against the panel `b`, both of exactly `S` products (the
/// compiler sees the length).
#[inline(always)]
fn step_fixed<const S: usize>(
    a: NarrowRow,
    b: NarrowPanel,
    c: [f32; COLS],
    p: BlockFma,
) -> ([f32; COLS], [bool; COLS]) {
    match (
        <&[f64; S]>::try_from(a.v),
        <&[f64; S]>::try_from(a.pow),
        <&[[f64; COLS]; S]>::try_from(b.v),
        <&[[f64; COLS]; S]>::try_from(b.pow),
    ) {
        (Ok(av), Ok(ap), Ok(bv), Ok(bp)) => step_cols(av, ap, bv, bp, c, p),
        _ => step_cols(a.v, a.pow, b.v, b.pow, c, p),
    }
}

/// One block FMA step of the row's operands `av` (powers of two `ap`) against a panel's `bv`
/// (`bp`), from accumulators `c`: each column's result, and which columns the narrow
/// arithmetic could not compute (their results are meaningless). Every loop runs over the
/// columns, every operation one vector operation on them; the running maxima and sums are
/// f64 operations, which the compiler keeps in order over K (so it vectorises across the
/// columns, not along K).
#[inline(always)]
fn step_cols(
    av: &[f64],
    ap: &[f64],
    bv: &[[f64; COLS]],
    bp: &[[f64; COLS]],
    c: [f32; COLS],
    p: BlockFma,
) -> ([f32; COLS], [bool; COLS]) {
    // Pass 1: 2^E for the largest product exponent E per column: the largest product of the
    // operands' leading powers of two (exact, normal: exponents within [-800, 800]; 0 when
    // every product has a zero factor).
    let mut top = [0f64; COLS];
    for (&ap, bp) in ap.iter().zip(bp) {
        for w in 0..COLS {
            let x = ap * bp[w];
            top[w] = if x > top[w] { x } else { top[w] };
        }
    }
    // The reference exponent with the accumulator's (an f32 is a normal f64, its leading
    // power of two its exponent field), as powers of two: 2^-unit and 2^unit are that of E
    // with align_bits taken from or added to the exponent field. A column without live terms
    // computes nothing: its E is taken as 2^FLOOR, which keeps both scales finite.
    let cf: [f64; COLS] = c.map(f64::from);
    let align = u64::from(p.align_bits) << 52;
    let mut bad = [false; COLS];
    let mut live = [false; COLS];
    let mut scale = [0f64; COLS];
    let mut unit = [0f64; COLS];
    for w in 0..COLS {
        // An infinite or NaN accumulator takes the general path.
        bad[w] = !cf[w].is_finite();
        let c_pow = f64::from_bits(cf[w].to_bits() & EXPONENT);
        let big = if c_pow > top[w] { c_pow } else { top[w] };
        live[w] = big > 0.0;
        let big = if big > FLOOR { big } else { FLOOR }.to_bits();
        scale[w] = f64::from_bits(((2046 << 52) + align).wrapping_sub(big));
        unit[w] = f64::from_bits(big.wrapping_sub(align));
    }
    // Pass 2: every product cut toward zero to the unit, summed exactly (integers below
    // 2^53): `y - copysign(HALF, y)` rounded to the nearest integer through MAGIC is
    // `trunc(y)`.
    let mut sums = [0f64; COLS];
    for (&a, bv) in av.iter().zip(bv) {
        for w in 0..COLS {
            let y = a * bv[w] * scale[w];
            let d = y - HALF.copysign(y);
            sums[w] += (d + MAGIC) - MAGIC;
        }
    }
    // Rounding toward zero to result_bits, scaled back by 2^unit.
    let keep = !((1u64 << (53 - p.result_bits)) - 1);
    let mut out = [0f32; COLS];
    for w in 0..COLS {
        let y = cf[w] * scale[w];
        let d = y - HALF.copysign(y);
        let s = sums[w] + ((d + MAGIC) - MAGIC);
        let cut = f64::from_bits(s.to_bits() & keep);
        let v = cut * unit[w];
        let zero = !live[w] || s == 0.0;
        bad[w] |= !zero && v.abs() < f64::from(f32::MIN_POSITIVE);
        out[w] = if zero { 0.0 } else { v as f32 };
    }
    (out, bad)
}

/// The exponent field of an f64.
const EXPONENT: u64 = 0x7ff << 52;

/// 2^-900: below every reference exponent (products' exponents are at least -800, an f32's
/// -149), and 2^(align_bits + 900) is still a finite f64.
const FLOOR: f64 = 1.183_052_186_166_774_7e-271;

/// 1.5 * 2^52: adding it to an f64 of magnitude below 2^51 rounds that to the nearest integer
/// (subtracting it again is exact).
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// 1/2 less 2^-25: a cut term `y` (|y| < 2^27, fraction bits down to 2^-24 at least where
/// |y| >= 1/2) less `copysign(HALF, y)` is exact and never half an integer away from the next
/// one, so rounding it to the nearest integer truncates `y` toward zero.
const HALF: f64 = 0.5 - 1.0 / 33_554_432.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mma_numerics::{block_step, chain, operands};
    use proptest::prelude::*;

    use crate::mma_numerics::strategies::HALF;

    /// A narrow tensor-core operand (zeros, subnormals, NaN and infinities included),
    /// sometimes scaled by a power of two (out of the narrow range at times) or a ue4m3 block
    /// scale.
    fn operand() -> impl Strategy<Value = f64> {
        crate::mma_numerics::strategies::operand(6, -420..420)
    }

    use crate::mma_numerics::strategies::accumulator;

    fn params() -> impl Strategy<Value = BlockFma> {
        crate::mma_numerics::strategies::params(25)
    }

    /// [`chain_cols`] over `row` and the columns `cols` (each the row's length), the general
    /// step being the reference [`block_step`]; also how many column steps took it.
    fn narrow_chain(
        row: &[f64],
        cols: &[Vec<f64>],
        k: usize,
        acc: [f32; COLS],
        use_acc: bool,
        p: BlockFma,
    ) -> Option<([f32; COLS], usize)> {
        let n = row.len();
        let flat: Vec<f64> = cols.iter().flatten().copied().collect();
        let a = NarrowRows::new(row, 1, n);
        let b = NarrowPanels::new(&flat, cols.len(), n);
        let ra = operands(row);
        let rb: Vec<_> = cols.iter().map(|c| operands(c)).collect();
        let mut general_steps = 0;
        let (row, panel) = (a.row(0)?, b.panel(0)?);
        let r = chain_cols(row, panel, k, acc, use_acc, p, |w, r, c| {
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
            cols in proptest::collection::vec(proptest::collection::vec(operand(), 70), COLS),
            k in prop_oneof![Just(8usize), Just(16), Just(32), Just(64), 1usize..70],
            accs in proptest::collection::vec(accumulator(), COLS),
            use_acc in any::<bool>(),
            p in params(),
        ) {
            let n = row.len();
            let cols: Vec<Vec<f64>> = cols.iter().map(|c| c[..n].to_vec()).collect();
            let acc: [f32; COLS] = std::array::from_fn(|w| accs[w]);
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
                    for w in 0..COLS {
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
            let cols = vec![col; COLS];
            let (fast, _) = narrow_chain(&row, &cols, 16, [acc; COLS], true, p).expect("12-bit operands fit");
            let reference = chain(&operands(&row), &operands(&cols[0]), 16, acc, true, p);
            for f in fast {
                prop_assert_eq!(f.to_bits(), reference.to_bits(), "{} vs {}", f, reference);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Terms right at the unit: products of two 12-bit significands and accumulators of 24
        /// bits placed around the unit, where their lowest bits are the fraction that the
        /// truncation must drop (an accumulator of 1 - 2^-24 units cuts to 0).
        #[test]
        fn narrow_columns_match_at_the_unit(
            tail in proptest::collection::vec((any::<bool>(), 0u32..2048, 0u32..2048, -2i32..4), 1..16),
            c in (any::<bool>(), 0u32..(1 << 23), -2i32..3, any::<bool>()),
            p in params(),
        ) {
            // c: 24 significant bits (all ones at times), its units' place d binades below
            // the unit (1 - 2^-24 units for d = 0 and all ones).
            let (neg, low, d, ones) = c;
            let m = if ones { (1u32 << 24) - 1 } else { (1 << 23) | low };
            let acc = (if neg { -1.0 } else { 1.0 }) * m as f32 * 2f32.powi(-(p.align_bits as i32) - 24 - d);
            // The first product, 1, sets the reference exponent 0 (unless c is larger).
            let mut row = vec![1.0];
            let mut col = vec![1.0];
            for &(neg, ma, mb, d) in &tail {
                // 12-bit significands with their top bits set: 4095 * 4095 has 24 bits.
                let (ma, mb) = (f64::from(ma | 0xf80 | 1), f64::from(mb | 0xf80 | 1));
                let e = -(p.align_bits as i32) - d;
                row.push(if neg { -ma } else { ma } * 2f64.powi(e - 11));
                col.push(mb * 2f64.powi(-11));
            }
            let cols = vec![col; COLS];
            let (fast, _) = narrow_chain(&row, &cols, 16, [acc; COLS], true, p).expect("12-bit operands fit");
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
        let cols: Vec<Vec<f64>> = (0..COLS as i32)
            .map(|w| {
                (0..64)
                    .map(|t| if t % 5 == w { 0.0 } else { f64::from(w - 3) * 0.5 })
                    .collect()
            })
            .collect();
        let (fast, general) =
            narrow_chain(&row, &cols, 16, [1.0; COLS], true, HALF).expect("bf16 values fit");
        assert_eq!(general, 0);
        for w in 0..COLS {
            // Every product and partial sum is a multiple of 2^-4 below 2^10: exact.
            let exact: f64 = 1.0 + row.iter().zip(&cols[w]).map(|(a, b)| a * b).sum::<f64>();
            assert_eq!(fast[w], exact as f32, "column {w}");
        }
        let (fresh, _) = narrow_chain(&row, &cols, 16, [5.0; COLS], false, HALF).expect("fits");
        assert_eq!(fresh[0] + 1.0, fast[0]);
        // A NaN accumulator takes the general step, and propagates.
        let (nan, general) = narrow_chain(&row, &cols, 16, [f32::NAN; COLS], true, HALF).expect("fits");
        assert!(nan.iter().all(|v| v.is_nan()));
        assert_eq!(general, COLS * 4);
    }

    #[test]
    fn constants_are_what_they_say() {
        assert_eq!(FLOOR, 2f64.powi(-900));
        assert_eq!(MAGIC, 1.5 * 2f64.powi(52));
        assert_eq!(super::HALF, 0.5 - 2f64.powi(-25));
        assert_eq!(f64::from_bits(EXPONENT), f64::INFINITY);
    }

    #[test]
    fn narrow_form_refuses_what_it_cannot_hold() {
        assert_eq!(narrow(0.0), Some((0.0, 0.0)));
        assert_eq!(
            narrow(-1.5 * 2f64.powi(-400)),
            Some((-1.5 * 2f64.powi(-400), 2f64.powi(-400)))
        );
        assert_eq!(narrow(2f64.powi(401)), None);
        assert_eq!(narrow(2f64.powi(-401)), None);
        assert_eq!(narrow(-3.0 + 2f64.powi(-10)).map(|n| n.1), Some(2.0));
        assert_eq!(narrow(1.0 + 2f64.powi(-12)), None);
        assert_eq!(narrow(f64::INFINITY), None);
        let m = NarrowRows::new(&[1.0, 2.0, 1.0 + 2f64.powi(-20), 4.0], 2, 2);
        assert!(m.row(0).is_some() && m.row(1).is_none() && m.row(2).is_none());
        // Three panels of columns of K = 2: the second holds a 13-bit operand, the third is
        // short of columns.
        let mut cols = vec![0.5; (2 * COLS + 3) * 2];
        cols[COLS * 2 + 5] = 1.0 + 2f64.powi(-12);
        let b = NarrowPanels::new(&cols, 2 * COLS + 3, 2);
        assert!(b.panel(0).is_some() && b.panel(1).is_none() && b.panel(2).is_none());
    }
}
