//! Element encodings: every conversion between numbers and the bits of an element type,
//! rounding to nearest even (PTX `cvt.rn`, `.satfinite` for fp8/fp4 as the seeds' casts
//! lower). The simulator, the launch-data generator and the GPU harness all use these, so a
//! value means the same bits everywhere.

use crate::types::DType;
use half::{bf16, f16};
use std::sync::OnceLock;

/// Decode a value of `dtype` from its bits (low bits of `bits`).
pub fn decode(dtype: DType, bits: u64) -> f64 {
    match dtype {
        DType::F32 | DType::TF32 => f32::from_bits(bits as u32) as f64,
        DType::F16 => f16::from_bits(bits as u16).to_f64(),
        DType::BF16 => bf16::from_bits(bits as u16).to_f64(),
        DType::F8E4M3 => e4m3_decode(bits as u8, true),
        DType::UE4M3 => e4m3_decode(bits as u8 & 0x7f, false),
        DType::F8E5M2 => f16::from_bits(((bits as u8) as u16) << 8).to_f64(),
        DType::F4E2M1 => e2m1_decode(bits as u8 & 0xf),
        DType::UE8M0 => {
            let e = bits as u8;
            if e == 0xff {
                f64::NAN
            } else {
                2f64.powi(e as i32 - 127)
            }
        }
        DType::I1 => (bits & 1) as f64,
        DType::I8 => bits as u8 as i8 as f64,
        DType::I16 => bits as u16 as i16 as f64,
        DType::I32 => bits as u32 as i32 as f64,
        DType::I64 => bits as i64 as f64,
        DType::U8 => (bits as u8) as f64,
        DType::U16 => (bits as u16) as f64,
        DType::U32 => (bits as u32) as f64,
        DType::U64 => bits as f64,
    }
}

/// Encode `v` as `dtype` (round to nearest even; integers truncate toward zero and wrap like
/// `cvt.rzi` followed by a narrowing move; fp8/fp4 saturate to the largest finite value).
pub fn encode(dtype: DType, v: f64) -> u64 {
    match dtype {
        DType::F32 => (v as f32).to_bits() as u64,
        DType::TF32 => tf32_round(v as f32).to_bits() as u64,
        DType::F16 => f16::from_f32(v as f32).to_bits() as u64,
        DType::BF16 => bf16::from_f32(v as f32).to_bits() as u64,
        DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1 | DType::UE4M3 | DType::UE8M0 => {
            small_float_encode(dtype, v)
        }
        DType::I1 => (v != 0.0) as u64,
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            let i = if v.is_nan() { 0 } else { v.trunc() as i64 };
            (i as u64) & mask(dtype)
        }
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => {
            let i = if v.is_nan() { 0 } else { v.trunc() as i64 };
            (i as u64) & mask(dtype)
        }
    }
}

/// Round an f32 to tf32 (10 mantissa bits, nearest even), as `cvt.rna.tf32.f32` would but with ties to even.
pub fn tf32_round(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let b = x.to_bits();
    let lsb = (b >> 13) & 1;
    let r = b.wrapping_add(0xfff + lsb) & !0x1fff;
    f32::from_bits(r)
}

/// Bit mask of a type's storage.
pub fn mask(dtype: DType) -> u64 {
    match dtype.bits() {
        64 => u64::MAX,
        b => (1u64 << b) - 1,
    }
}

fn e4m3_decode(b: u8, signed: bool) -> f64 {
    let sign = if signed && b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = (b >> 3) & 0xf;
    let m = b & 7;
    if e == 0xf && m == 7 {
        return f64::NAN;
    }
    let mag = if e == 0 {
        (m as f64 / 8.0) * 2f64.powi(-6)
    } else {
        (1.0 + m as f64 / 8.0) * 2f64.powi(e as i32 - 7)
    };
    sign * mag
}

fn e2m1_decode(b: u8) -> f64 {
    const V: [f64; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let mag = V[(b & 7) as usize];
    if b & 8 != 0 {
        -mag
    } else {
        mag
    }
}

/// Sorted (value, code) tables of the non-negative finite codes of each small float format.
fn table(dtype: DType) -> &'static [(f64, u8)] {
    static T: OnceLock<Vec<Vec<(f64, u8)>>> = OnceLock::new();
    let all = T.get_or_init(|| {
        [
            DType::F8E4M3,
            DType::F8E5M2,
            DType::F4E2M1,
            DType::UE4M3,
            DType::UE8M0,
        ]
        .iter()
        .map(|&d| {
            let n = if d == DType::F4E2M1 {
                8
            } else if d == DType::UE8M0 {
                256
            } else {
                128
            };
            let mut v: Vec<(f64, u8)> = (0..n)
                .map(|c| (decode(d, c as u64), c as u8))
                .filter(|(x, _)| x.is_finite())
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v
        })
        .collect()
    });
    let i = match dtype {
        DType::F8E4M3 => 0,
        DType::F8E5M2 => 1,
        DType::F4E2M1 => 2,
        DType::UE4M3 => 3,
        _ => 4,
    };
    &all[i]
}

fn small_float_encode(dtype: DType, v: f64) -> u64 {
    let sign_bit: u8 = match dtype {
        DType::F8E4M3 | DType::F8E5M2 => 0x80,
        DType::F4E2M1 => 0x8,
        _ => 0,
    };
    if v.is_nan() {
        return match dtype {
            DType::F8E4M3 => 0x7f,
            DType::F8E5M2 => 0x7f,
            DType::UE8M0 => 0xff,
            DType::UE4M3 => 0x7f,
            _ => 0x7,
        };
    }
    let neg = v < 0.0 && sign_bit != 0;
    let a = if sign_bit == 0 { v.max(0.0) } else { v.abs() };
    let t = table(dtype);
    let code = match t.binary_search_by(|p| p.0.total_cmp(&a)) {
        Ok(i) => t[i].1,
        Err(0) => t[0].1,
        Err(i) if i >= t.len() => t[t.len() - 1].1, // saturate
        Err(i) => {
            let (lo, hi) = (t[i - 1], t[i]);
            let (dl, dh) = (a - lo.0, hi.0 - a);
            if dl < dh || (dl == dh && lo.1 % 2 == 0) {
                lo.1
            } else {
                hi.1
            }
        }
    };
    (if neg { code | sign_bit } else { code }) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_e4m3_known_values() {
        // max finite 448 = 0x7e; 1.0 = 0x38; saturating above max; NaN = 0x7f
        // (docs/semantics.md#numerics).
        assert_eq!(encode(DType::F8E4M3, 1.0), 0x38);
        assert_eq!(encode(DType::F8E4M3, 448.0), 0x7e);
        assert_eq!(encode(DType::F8E4M3, 1e9), 0x7e);
        assert_eq!(encode(DType::F8E4M3, -2.0), 0xc0);
        assert!(decode(DType::F8E4M3, 0x7f).is_nan());
        assert_eq!(decode(DType::F8E4M3, 0x01), 2f64.powi(-9));
    }

    #[test]
    fn fp8_e5m2_and_fp4_and_scales() {
        assert_eq!(decode(DType::F8E5M2, 0x7b), 57344.0);
        assert_eq!(encode(DType::F8E5M2, 1.0), 0x3c);
        assert_eq!(encode(DType::F4E2M1, 2.5), 0x4); // tie between 2 (0x4) and 3 (0x5): even code
        assert_eq!(encode(DType::F4E2M1, -6.0), 0xf);
        assert_eq!(decode(DType::UE8M0, 127), 1.0);
        assert_eq!(decode(DType::UE8M0, 130), 8.0);
    }

    #[test]
    fn half_types_round_to_nearest_even() {
        // 1 + 2^-11 is halfway between two f16 values: ties to even gives 1.0.
        assert_eq!(encode(DType::F16, 1.0 + 2f64.powi(-11)), 0x3c00);
        assert_eq!(encode(DType::BF16, 1.0), 0x3f80);
        assert_eq!(tf32_round(1.0 + 2f32.powi(-11)), 1.0);
        assert_eq!(encode(DType::I8, -1.0), 0xff);
    }
}
