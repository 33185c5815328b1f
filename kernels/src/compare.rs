//! The one element-wise comparison of a kernel's output with the values it should hold: the CPU
//! reference's ([`crate::reference::compare`]: `bwsim run`, the kernels' tests) or the
//! simulator's (the differential harness behind `bwsim gpu`, against the GPU's).
//!
//! An element `a` (actual) matches `b` (expected) under
//! - [`Tolerance::Exact`]: when their bits are the same (`-0.0` differs from `0.0`, and so
//!   do two NaNs of different payloads): data movement and arithmetic the hardware defines to
//!   the bit;
//! - [`Tolerance::Close`] `{ atol, rtol }`, for float element types: when they are equal as
//!   numbers (`-0.0 == 0.0`; an infinity equals the infinity of the same sign), when both are
//!   NaN, or when both are finite and `|a - b| <= atol + rtol * |b|` (`b`, the expected value,
//!   scales the relative part). An infinity matches nothing else whatever the tolerance: not a
//!   finite value, not the infinity of the other sign. Integer element types compare their bits
//!   under any tolerance: a tolerance allows float rounding, and integers do not round.
//!
//! Elements are decoded by the references' own decoder ([`crate::reference::value`], from the
//! formats' definitions). This module knows nothing of where either tensor came from.

use crate::reference::value;
use bwsim_isa::launch::HostTensor;
use bwsim_isa::DType;

/// How closely an output must match.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Bit for bit.
    Exact,
    /// |actual - expected| <= atol + rtol * |expected| for floats (MMA results: hardware
    /// accumulation order is unspecified, docs/semantics.md#numerics); integers bit for bit.
    Close { atol: f64, rtol: f64 },
}

/// Whether the float `actual` is within `atol + rtol * |expected|` of `expected`, equal to it,
/// or NaN as it is (the module's [`Tolerance::Close`] rule).
pub fn close(actual: f64, expected: f64, atol: f64, rtol: f64) -> bool {
    actual == expected
        || (actual.is_nan() && expected.is_nan())
        || (actual.is_finite()
            && expected.is_finite()
            && (actual - expected).abs() <= atol + rtol * expected.abs())
}

/// Whether element bits `actual` match `expected` of type `dtype` under `tol`.
pub fn matches(dtype: DType, actual: u64, expected: u64, tol: Tolerance) -> bool {
    match tol {
        Tolerance::Close { atol, rtol } if dtype.is_float() => {
            close(value(dtype, actual), value(dtype, expected), atol, rtol)
        }
        _ => actual == expected,
    }
}

/// How two tensors of one element type and size differ.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mismatches {
    /// Elements that do not match.
    pub count: u64,
    /// The largest |actual - expected| over elements that are both finite (0 when none is).
    pub max_abs_err: f64,
    /// The linear indices of the first mismatching elements, at most as many as asked for.
    pub first: Vec<u64>,
}

/// Compare `actual` with `expected` element by element under `tol`, keeping the indices of the
/// first `keep` mismatches. The tensors must have the same element type and number of elements
/// (the caller says what a difference there means); elements past the shorter are not read.
pub fn elements(actual: &HostTensor, expected: &HostTensor, tol: Tolerance, keep: usize) -> Mismatches {
    let mut m = Mismatches::default();
    let dtype = expected.dtype;
    for i in 0..expected.numel().min(actual.numel()) {
        let (ab, eb) = (actual.get_bits(i), expected.get_bits(i));
        let (a, x) = (value(dtype, ab), value(dtype, eb));
        if a.is_finite() && x.is_finite() {
            m.max_abs_err = m.max_abs_err.max((a - x).abs());
        }
        if !matches(dtype, ab, eb, tol) {
            m.count += 1;
            if m.first.len() < keep {
                m.first.push(i);
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: Tolerance = Tolerance::Close {
        atol: 0.01,
        rtol: 0.001,
    };

    fn f32s(vals: &[f32]) -> HostTensor {
        let mut t = HostTensor::zeros("x", DType::F32, vec![vals.len() as u64]);
        for (i, v) in vals.iter().enumerate() {
            t.set_bits(i as u64, v.to_bits() as u64);
        }
        t
    }

    fn f32_matches(a: f32, b: f32, tol: Tolerance) -> bool {
        matches(DType::F32, a.to_bits() as u64, b.to_bits() as u64, tol)
    }

    /// Infinities match the same-sign infinity only, under any tolerance (an infinite `rtol *
    /// |b|` must not let a finite value or the other infinity through).
    #[test]
    fn infinities_match_only_the_same_sign() {
        let (inf, ninf) = (f32::INFINITY, f32::NEG_INFINITY);
        let huge = Tolerance::Close {
            atol: 1e30,
            rtol: 1.0,
        };
        for tol in [Tolerance::Exact, TOL, huge] {
            assert!(f32_matches(inf, inf, tol));
            assert!(f32_matches(ninf, ninf, tol));
            assert!(!f32_matches(inf, ninf, tol));
            assert!(!f32_matches(ninf, inf, tol));
            assert!(!f32_matches(1.0, inf, tol));
            assert!(!f32_matches(inf, f32::MAX, tol));
        }
    }

    /// NaN matches NaN (any payload) under a tolerance; bit for bit it must be the same NaN.
    #[test]
    fn nan_matches_nan() {
        let (q, other) = (f32::NAN, f32::from_bits(0x7fc0_0001));
        assert!(f32_matches(q, other, TOL));
        assert!(f32_matches(q, q, Tolerance::Exact));
        assert!(!f32_matches(q, other, Tolerance::Exact));
        assert!(!f32_matches(q, 1.0, TOL));
        assert!(!f32_matches(0.0, q, TOL));
    }

    /// Tolerance edges, computed by hand with values exact in binary: atol 0.25, rtol 0.5 around
    /// 2.0 allow |a - 2| <= 1.25, so 3.25 and 0.75 match and 3.5 does not; the relative part
    /// scales with the expected value, not the actual one.
    #[test]
    fn tolerance_edges_are_inclusive_and_scale_with_the_expected_value() {
        let t = Tolerance::Close {
            atol: 0.25,
            rtol: 0.5,
        };
        assert!(f32_matches(3.25, 2.0, t));
        assert!(f32_matches(0.75, 2.0, t));
        assert!(!f32_matches(3.5, 2.0, t));
        assert!(!f32_matches(0.5, 2.0, t));
        // Expected 0.5: 0.25 + 0.25 = 0.5 allowed, so 1.0 matches; expected 1.0 would allow 0.75.
        assert!(f32_matches(1.0, 0.5, t));
        assert!(!f32_matches(
            0.0,
            1.0,
            Tolerance::Close {
                atol: 0.25,
                rtol: 0.5
            }
        ));
        // -0.0 equals 0.0 as a number, not as bits.
        assert!(f32_matches(-0.0, 0.0, Tolerance::Close { atol: 0.0, rtol: 0.0 }));
        assert!(!f32_matches(-0.0, 0.0, Tolerance::Exact));
    }

    /// Subnormals compare as their values: the smallest f32 subnormal (2^-149) and twice it
    /// differ by 2^-149, within an atol of 2^-149 and outside an atol of 0.
    #[test]
    fn subnormals_compare_by_value() {
        let (s1, s2) = (f32::from_bits(1), f32::from_bits(2));
        let tiny = 2f64.powi(-149);
        assert!(f32_matches(
            s2,
            s1,
            Tolerance::Close {
                atol: tiny,
                rtol: 0.0
            }
        ));
        assert!(!f32_matches(s2, s1, Tolerance::Close { atol: 0.0, rtol: 0.0 }));
        // rtol 1.0 of 2^-149 allows 2^-149: 2^-148 against 2^-149 matches.
        assert!(f32_matches(s2, s1, Tolerance::Close { atol: 0.0, rtol: 1.0 }));
        // A subnormal against zero is outside a zero tolerance, inside atol 2^-149.
        assert!(!f32_matches(s1, 0.0, Tolerance::Close { atol: 0.0, rtol: 0.0 }));
        assert!(f32_matches(
            s1,
            0.0,
            Tolerance::Close {
                atol: tiny,
                rtol: 0.0
            }
        ));
    }

    /// Integer elements compare their bits under any tolerance.
    #[test]
    fn integers_are_exact_under_a_tolerance() {
        let t = Tolerance::Close {
            atol: 10.0,
            rtol: 0.5,
        };
        assert!(matches(DType::I32, 7, 7, t));
        assert!(!matches(DType::I32, 100_001, 100_000, t));
        assert!(!matches(DType::U8, 1, 2, t));
    }

    /// Narrow floats are decoded before the comparison: e4m3 0x38 (1.0) and 0x39 (1.125) differ
    /// by 0.125.
    #[test]
    fn narrow_floats_compare_as_values() {
        assert!(matches(
            DType::F8E4M3,
            0x39,
            0x38,
            Tolerance::Close {
                atol: 0.125,
                rtol: 0.0
            }
        ));
        assert!(!matches(
            DType::F8E4M3,
            0x39,
            0x38,
            Tolerance::Close { atol: 0.1, rtol: 0.0 }
        ));
    }

    /// The tensor comparison counts mismatches, keeps the first indices asked for and takes
    /// the largest error over finite pairs only.
    #[test]
    fn elements_count_keep_and_measure() {
        let want = f32s(&[1.0, 2.0, f32::INFINITY, 4.0, 5.0]);
        let got = f32s(&[1.0, 2.5, f32::NEG_INFINITY, 4.0, 5.75]);
        let m = elements(&got, &want, TOL, 1);
        assert_eq!(m.count, 3);
        assert_eq!(m.first, vec![1]);
        assert_eq!(m.max_abs_err, 0.75);
        let m = elements(&got, &want, TOL, 5);
        assert_eq!(m.first, vec![1, 2, 4]);
        assert_eq!(
            elements(&want, &want.clone(), Tolerance::Exact, 5),
            Mismatches::default()
        );
    }
}
