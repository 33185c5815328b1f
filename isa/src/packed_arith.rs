//! Four-lane fp8 arithmetic: sm_100a's `add`, `sub`, `mul` and `fma` on `.e4m3x4`/`.e5m2x4`
//! results (operands `.e4m3x4`, `.e5m2x4` or `.e2m1x4`), what Gluon's `add2`, `sub2`, `mul2`
//! and `fma2` of fp8 tensors lower to (Triton 3.9) and what the tile language's `add4`,
//! `sub4`, `mul4` and `fma4` compute. One lane's rule lives here, once, for the simulator,
//! the inline-PTX interpreter and the PTX front end (docs/semantics.md#numerics).
//!
//! A lane is computed exactly (every operand is a small float whose products and sums are
//! exact in f64: at most 48 significant bits between the largest and the smallest term) and
//! rounded once to nearest even into the result's format, subnormals included (PTX ISA: the
//! only rounding these instructions take is `.rn`; ptxas 13.5 assembles the form without a
//! modifier to the same machine code as `.rn`). What the hardware gives when a lane's exact
//! result rounds past the format's largest finite value, or when an operand is a NaN or an
//! infinity, is stated by no public source bwsim knows: such a lane has no defined result
//! here ([`Unspecified`]), and the simulator reports it as `unspecified-result` rather than
//! guess.

use crate::numeric;
use crate::types::DType;
use std::fmt;

/// The operation of a four-lane instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PackedOp {
    Add,
    Sub,
    Mul,
    Fma,
}

impl PackedOp {
    /// The PTX opcode (`add`, ...), also Triton's `ttng.packed_arith` keyword.
    pub fn ptx(self) -> &'static str {
        match self {
            PackedOp::Add => "add",
            PackedOp::Sub => "sub",
            PackedOp::Mul => "mul",
            PackedOp::Fma => "fma",
        }
    }

    /// The tile language's builtin (`add4`, ...).
    pub fn tile_name(self) -> &'static str {
        match self {
            PackedOp::Add => "add4",
            PackedOp::Sub => "sub4",
            PackedOp::Mul => "mul4",
            PackedOp::Fma => "fma4",
        }
    }

    /// The operation of a PTX opcode or Triton keyword.
    pub fn from_ptx(s: &str) -> Option<PackedOp> {
        Some(match s {
            "add" => PackedOp::Add,
            "sub" => PackedOp::Sub,
            "mul" => PackedOp::Mul,
            "fma" => PackedOp::Fma,
            _ => return None,
        })
    }

    /// The operation of a tile-language builtin name.
    pub fn from_tile_name(s: &str) -> Option<PackedOp> {
        [PackedOp::Add, PackedOp::Sub, PackedOp::Mul, PackedOp::Fma]
            .into_iter()
            .find(|o| o.tile_name() == s)
    }

    /// The number of operands (3 for `fma`).
    pub fn arity(self) -> usize {
        if self == PackedOp::Fma {
            3
        } else {
            2
        }
    }
}

/// A result format of the four-lane instructions.
pub fn is_result_type(d: DType) -> bool {
    matches!(d, DType::F8E4M3 | DType::F8E5M2)
}

/// An operand format of the four-lane instructions.
pub fn is_operand_type(d: DType) -> bool {
    matches!(d, DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1)
}

/// The PTX type of four lanes of `d` (`e4m3x4`, ...).
pub fn ptx_type(d: DType) -> &'static str {
    match d {
        DType::F8E5M2 => "e5m2x4",
        DType::F4E2M1 => "e2m1x4",
        _ => "e4m3x4",
    }
}

/// Why a lane has no defined result.
#[derive(Clone, Debug, PartialEq)]
pub struct Unspecified {
    /// The lane's operand values, in operand order.
    pub operands: Vec<f64>,
    /// What makes the result unstated: an operand NaN or infinite, or the exact result.
    pub why: String,
}

impl fmt::Display for Unspecified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ops: Vec<String> = self.operands.iter().map(|v| format!("{v}")).collect();
        write!(f, "operands ({}): {}", ops.join(", "), self.why)
    }
}

/// The largest finite value of a result format and its unit in the last place.
fn max_finite(d: DType) -> (f64, f64) {
    // (largest finite, its unit in the last place): e4m3 1.75 * 2^8 with 3 fraction bits,
    // e5m2 1.75 * 2^15 with 2 (PTX ISA, "Alternate Floating-Point Data Formats").
    match d {
        DType::F8E5M2 => (57344.0, 8192.0),
        _ => (448.0, 32.0),
    }
}

/// One lane: the operands' values (decoded from their formats) combined exactly and rounded to
/// nearest even into `dtype`'s bits, or [`Unspecified`].
pub fn lane(op: PackedOp, dtype: DType, operands: &[f64]) -> Result<u64, Unspecified> {
    let unspecified = |why: String| Unspecified {
        operands: operands.to_vec(),
        why,
    };
    if let Some(v) = operands.iter().find(|v| !v.is_finite()) {
        return Err(unspecified(format!(
            "an operand is {v}; what the instruction gives for it is not stated"
        )));
    }
    let (a, b) = (operands[0], operands[1]);
    let exact = match op {
        PackedOp::Add => a + b,
        PackedOp::Sub => a - b,
        PackedOp::Mul => a * b,
        PackedOp::Fma => a.mul_add(b, operands[2]),
    };
    let (max, ulp) = max_finite(dtype);
    // Rounded with an unbounded exponent, the result passes the largest finite value when it
    // lies above the midpoint to the next step, or on it when the largest code is odd (e5m2's
    // 0x7b; e4m3's 0x7e is even).
    let mid = max + ulp / 2.0;
    let max_code_odd = numeric::encode(dtype, max) & 1 == 1;
    if exact.abs() > mid || (exact.abs() == mid && max_code_odd) {
        return Err(unspecified(format!(
            "the exact result {exact} rounds past the largest finite {dtype} ({max}); the result of \
             an overflow is not stated"
        )));
    }
    // An exact zero keeps its sign as IEEE round-to-nearest gives it: a product's sign, and +0
    // for a sum of opposite terms (x - x, a * b + c cancelling), -0 only when both terms are -0.
    let zero_sign = exact == 0.0 && exact.is_sign_negative();
    let bits = numeric::encode(dtype, exact);
    Ok(if zero_sign { bits | 0x80 } else { bits })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e4(v: f64) -> u64 {
        numeric::encode(DType::F8E4M3, v)
    }

    #[test]
    fn lanes_round_to_nearest_even() {
        // 1 + 1.125 = 2.125: between 2 and 2.25 (e4m3 steps of 0.25 above 2), ties to 2 (even).
        assert_eq!(lane(PackedOp::Add, DType::F8E4M3, &[1.0, 1.125]), Ok(e4(2.0)));
        // 1.125 * 1.125 = 1.265625: nearest e4m3 is 1.25.
        assert_eq!(lane(PackedOp::Mul, DType::F8E4M3, &[1.125, 1.125]), Ok(0x3a));
        // fma rounds once: 1.125 * 1.125 - 1.25 = 0.015625 = 2^-6, exact.
        assert_eq!(
            lane(PackedOp::Fma, DType::F8E4M3, &[1.125, 1.125, -1.25]),
            Ok(0x08)
        );
        // e4m3 subnormals: 1.5 * 2^-9 ties between 1 and 2 steps of 2^-9: the even code (2);
        // 2.5 * 2^-9 between 2 and 3: 2 again.
        assert_eq!(
            lane(PackedOp::Mul, DType::F8E4M3, &[2f64.powi(-9), 1.5]),
            Ok(0x02)
        );
        assert_eq!(
            lane(PackedOp::Mul, DType::F8E4M3, &[2f64.powi(-8), 1.25]),
            Ok(0x02)
        );
        // e5m2 result from e4m3 operands: 448 + 448 = 896 = 1.75 * 2^9 (0x62... in e5m2).
        assert_eq!(
            lane(PackedOp::Add, DType::F8E5M2, &[448.0, 448.0]),
            Ok(numeric::encode(DType::F8E5M2, 896.0))
        );
        // Signed zeros: -1 * 0 is -0; 1 - 1 is +0.
        assert_eq!(lane(PackedOp::Mul, DType::F8E4M3, &[-1.0, 0.0]), Ok(0x80));
        assert_eq!(lane(PackedOp::Sub, DType::F8E4M3, &[1.0, 1.0]), Ok(0x00));
    }

    #[test]
    fn overflow_and_nan_are_unspecified() {
        // e4m3: 464 is the midpoint between 448 and 480 and ties to 448 (even code 0x7e).
        assert_eq!(lane(PackedOp::Add, DType::F8E4M3, &[448.0, 16.0]), Ok(0x7e));
        assert!(lane(PackedOp::Add, DType::F8E4M3, &[448.0, 20.0]).is_err());
        assert!(lane(PackedOp::Mul, DType::F8E4M3, &[-32.0, 16.0]).is_err());
        // e5m2: 61440, the midpoint above 57344 (odd code 0x7b), rounds up: overflow.
        assert!(lane(PackedOp::Add, DType::F8E5M2, &[57344.0, 4096.0]).is_err());
        assert_eq!(lane(PackedOp::Add, DType::F8E5M2, &[57344.0, 2048.0]), Ok(0x7b));
        let e = lane(PackedOp::Fma, DType::F8E4M3, &[f64::NAN, 1.0, 1.0]).unwrap_err();
        assert!(e.to_string().contains("NaN"), "{e}");
        assert!(lane(PackedOp::Add, DType::F8E5M2, &[f64::INFINITY, 1.0]).is_err());
    }
}
