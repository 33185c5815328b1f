//! References of float conversions with an explicit rounding (tests/gluon/fp_rounding.py) and
//! of bytes read as fp8 values (tests/gluon/3.9/bitcast_fp8.py) and of four-lane fp8
//! arithmetic with fp8 and fp4 operands (tests/gluon/3.9/fp8_arith.py),
//! computed from the formats' definitions: a value is rounded at its format's precision
//! (the significand bits, the smallest normal exponent for subnormals) toward zero or to
//! nearest even, and the saturating conversions clamp a finite result to the largest finite
//! value (PTX ISA, `cvt`: `.satfinite`; the fp8 formats of the OCP 8-bit float
//! specification: e4m3 largest 448, e5m2 largest 57344; f16 largest 65504; bf16 as f32's
//! exponent range with 8 significant bits).

use super::{f32_at, put, tensor, tensors, value, Expected, RefError};
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::DType;

/// A float format: significand bits after the leading one, the smallest normal exponent and
/// the largest finite value.
#[derive(Clone, Copy)]
struct Fmt {
    frac: i32,
    emin: i32,
    max: f64,
}

impl Fmt {
    const fn new(frac: i32, emin: i32, max: f64) -> Fmt {
        Fmt { frac, emin, max }
    }
}

// (significand bits after the leading one, smallest normal exponent, largest finite value)
const F16: Fmt = Fmt::new(10, -14, 65504.0);
const BF16: Fmt = Fmt::new(7, -126, 3.3895313892515355e38);
const E5M2: Fmt = Fmt::new(2, -14, 57344.0);
const E4M3: Fmt = Fmt::new(3, -6, 448.0);

/// `v` (finite) rounded to `f`, toward zero (`rtz`) or to nearest even; a result beyond the
/// largest finite value is that value (toward zero never passes it; the nearest-even
/// conversions here are the saturating ones). The sign of a zero is kept.
fn round(v: f64, f: Fmt, rtz: bool) -> f64 {
    if v == 0.0 {
        return v;
    }
    let a = v.abs();
    // The exponent of a (every input is a normal f64): floor(log2(a)) from its bits.
    let e = (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(f.emin);
    let ulp = 2f64.powi(e - f.frac);
    let q = a / ulp;
    let r = if rtz { q.trunc() } else { q.round_ties_even() };
    let m = (r * ulp).min(f.max);
    if v < 0.0 {
        -m
    } else {
        m
    }
}

/// `v` rounded to nearest even in `f`, for a launch whose values stay inside the format: a
/// value past its largest finite one is an error (what the four-lane instructions give then is
/// not stated).
fn nearest(v: f64, f: Fmt) -> Result<f64, RefError> {
    if v.abs() > f.max {
        return Err(format!("{v} is past the format's largest finite value {}", f.max).into());
    }
    Ok(round(v, f, false))
}

/// The input `x` of kernel `what`, which must be a one-dimensional `dtype` tensor, and its length.
fn vector_x<'a>(
    plan: &LaunchPlan,
    inputs: &'a [HostTensor],
    dtype: DType,
    what: &str,
) -> Result<(&'a HostTensor, u64), RefError> {
    let x = tensor(plan, inputs, "x")?;
    if x.dtype != dtype || x.shape.len() != 1 {
        return Err(format!("{what} takes a one-dimensional {dtype} x").into());
    }
    Ok((x, x.numel()))
}

/// tests/gluon/fp_rounding.py: for the values x and x * 2^-13, the eight conversions of its
/// table (rows 0..8 and 8..16 of `out`), each value back in f32 (exactly).
pub(super) fn fp_rounding(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (x, n) = vector_x(plan, inputs, DType::F32, "fp_rounding")?;
    let mut out = HostTensor::zeros("out", DType::F32, vec![16, n]);
    for (half, scale) in [(0u64, 1.0), (8, 2f64.powi(-13))] {
        for i in 0..n {
            let v = f32_at(x, i) as f64 * scale;
            let h = round(v, F16, true);
            let b = round(v, BF16, true);
            let rows = [
                h,
                b,
                round(v, E5M2, true),
                round(v, E5M2, false),
                round(v, E4M3, false),
                round(h, BF16, false),
                round(h, E4M3, false),
                round(b, E5M2, false),
            ];
            for (r, y) in rows.into_iter().enumerate() {
                put(&mut out, (half + r as u64) * n + i, y)?;
            }
        }
    }
    Ok(vec![Expected::exact("out", out)])
}

/// tests/gluon/3.9/bitcast_fp8.py over the bytes x: `out` row 0 each byte read as e4m3, row 1
/// as e5m2 (the formats' definitions, [`value`]), as f32 (every fp8 value is one exactly);
/// `back` at every third position the byte there, elsewhere the byte at the mirrored position
/// `n - 1 - i` (e4m3 values selected, their bits written back). `out` compares with no tolerance, so that the NaN codes
/// match any NaN; `back` bit for bit.
pub(super) fn bitcast_fp8(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (x, n) = vector_x(plan, inputs, DType::I8, "bitcast_fp8")?;
    let mut out = HostTensor::zeros("out", DType::F32, vec![2, n]);
    let mut back = HostTensor::zeros("back", DType::I8, vec![n]);
    for i in 0..n {
        let byte = x.get_bits(i) & 0xff;
        for (r, d) in [DType::F8E4M3, DType::F8E5M2].into_iter().enumerate() {
            out.set_bits(r as u64 * n + i, (value(d, byte) as f32).to_bits() as u64);
        }
        let kept = if i % 3 == 0 {
            byte
        } else {
            x.get_bits(n - 1 - i) & 0xff
        };
        back.set_bits(i, kept);
    }
    Ok(vec![
        Expected::close("out", out, 0.0, 0.0),
        Expected::exact("back", back),
    ])
}

/// tests/gluon/3.9/fp8_arith.py: per element, `s = x + y` and `p = s * y` rounded to e4m3,
/// `out = p * x + z` rounded once to e5m2 (each exact in f64 before its rounding: the
/// instructions round each lane once to nearest even), stored as f32 exactly. The launch keeps
/// every value inside the formats' finite range; a value past it is an error here, since what
/// the hardware gives then is not stated.
pub(super) fn fp8_arith(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [x, y, z] = tensors(plan, inputs, ["x", "y", "z"])?;
    if x.dtype != DType::F8E4M3 || y.dtype != DType::F8E4M3 || z.dtype != DType::F8E5M2 {
        return Err("fp8_arith takes e4m3 x and y and an e5m2 z".into());
    }
    let n = x.numel();
    if y.numel() != n || z.numel() != n {
        return Err("fp8_arith takes x, y and z of one length".into());
    }
    let mut out = HostTensor::zeros("out", DType::F32, vec![n]);
    for i in 0..n {
        let (a, b, c) = (
            value(DType::F8E4M3, x.get_bits(i)),
            value(DType::F8E4M3, y.get_bits(i)),
            value(DType::F8E5M2, z.get_bits(i)),
        );
        let s = nearest(a + b, E4M3)?;
        let p = nearest(s * b, E4M3)?;
        put(&mut out, i, nearest(p.mul_add(a, c), E5M2)?)?;
    }
    Ok(vec![Expected::exact("out", out)])
}

/// An e2m1 value from its 4 bits: sign bit 3, exponent bits 2:1, mantissa bit 0 (`m / 2` for
/// exponent 0, else `(1 + m / 2) * 2^(e - 1)`: 0, 0.5, 1, 1.5, 2, 3, 4, 6).
fn e2m1(nibble: u64) -> f64 {
    let (e, m) = ((nibble >> 1) & 3, nibble & 1);
    let mag = if e == 0 {
        m as f64 / 2.0
    } else {
        (1.0 + m as f64 / 2.0) * 2f64.powi(e as i32 - 1)
    };
    if nibble & 8 != 0 {
        -mag
    } else {
        mag
    }
}

/// tests/gluon/3.9/fp8_arith.py's fp4_fma_kernel: element i of w (e2m1) is the low nibble of
/// byte i / 2 for even i, the high one for odd i; `out = w * y + z` rounded once to e4m3
/// (exact in f64 before), stored as f32 exactly.
pub(super) fn fp4_fma(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [w, y, z] = tensors(plan, inputs, ["w", "y", "z"])?;
    let n = y.numel();
    if w.dtype != DType::I8 || y.dtype != DType::F8E4M3 || z.dtype != DType::F8E4M3 {
        return Err("fp4_fma takes an i8 w and e4m3 y and z".into());
    }
    if w.numel() * 2 != n || z.numel() != n {
        return Err("fp4_fma takes y and z of one length and w of half of it".into());
    }
    let mut out = HostTensor::zeros("out", DType::F32, vec![n]);
    for i in 0..n {
        let nibble = (w.get_bits(i / 2) >> (4 * (i % 2))) & 15;
        let v = e2m1(nibble).mul_add(
            value(DType::F8E4M3, y.get_bits(i)),
            value(DType::F8E4M3, z.get_bits(i)),
        );
        put(&mut out, i, nearest(v, E4M3)?)?;
    }
    Ok(vec![Expected::exact("out", out)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundings_by_hand() {
        // 1 + 2^-10 + 2^-11 in f16: toward zero 1 + 2^-10, to nearest even 1 + 2^-9.
        let v = 1.0 + 2f64.powi(-10) + 2f64.powi(-11);
        assert_eq!(round(v, F16, true), 1.0 + 2f64.powi(-10));
        assert_eq!(round(v, F16, false), 1.0 + 2f64.powi(-9));
        // e4m3: 0.3 to 0.3125 (nearest), 0.28125 toward zero; 500 saturates to 448.
        assert_eq!(round(0.3, E4M3, false), 0.3125);
        assert_eq!(round(0.3, E4M3, true), 0.28125);
        assert_eq!(round(-500.0, E4M3, false), -448.0);
        // e5m2 subnormals: steps of 2^-16; 3 * 2^-17 ties to the even 2 * 2^-16.
        assert_eq!(round(3.0 * 2f64.powi(-17), E5M2, false), 2f64.powi(-15));
        assert_eq!(round(-2f64.powi(-20), E5M2, true), -0.0);
        assert!(round(-2f64.powi(-20), E5M2, true).is_sign_negative());
        // bf16 toward zero of 1 + 2^-7 + 2^-9: 1 + 2^-7.
        assert_eq!(
            round(1.0 + 2f64.powi(-7) + 2f64.powi(-9), BF16, true),
            1.0 + 2f64.powi(-7)
        );
    }
}
