//! The run-time math functions and reductions of tile expressions: their `.tile` names and
//! what they compute, once, for the type checker, the simulator and the backends.
//!
//! Math functions take a float tile (or a float scalar) and return the same type. Their
//! semantics are the mathematical function rounded to the element type (the simulator
//! computes in f64 and rounds once); the PTX backend uses the hardware's forms, some of which
//! are approximations (`ex2.approx`, `lg2.approx`, `rsqrt.approx`, `sin.approx`,
//! `tanh.approx`): see
//! [`MathFn::ptx_note`] and docs/tile-format.md for their documented error bounds.
//!
//! Reductions fold one axis of a tile with a combiner: `sum`, `prod`, `reduce_max`,
//! `reduce_min`, `reduce_and`, `reduce_or`, `reduce_xor`, and `argmax` / `argmin`, which give
//! the i32 position along the axis of the first maximum (minimum), as Triton's `argmax` with
//! its default left tie-break does (a number beats a NaN). Scans (`cumsum`, `cumprod`,
//! `cummax`, `cummin`) keep the shape: element i is the fold of elements 0..=i along the axis;
//! with `reverse=true` (`cumsum(x, axis, reverse=true)`), of elements i.. to the end.

/// A unary math function on float elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    Exp,
    Exp2,
    Log,
    Log2,
    Sqrt,
    Rsqrt,
    Erf,
    Floor,
    Ceil,
    Sin,
    Cos,
    Tanh,
    Exp10,
    Log10,
    Log1p,
    Expm1,
    Tan,
    Atan,
}

impl MathFn {
    pub const ALL: [MathFn; 18] = [
        MathFn::Exp,
        MathFn::Exp2,
        MathFn::Log,
        MathFn::Log2,
        MathFn::Sqrt,
        MathFn::Rsqrt,
        MathFn::Erf,
        MathFn::Floor,
        MathFn::Ceil,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Tanh,
        MathFn::Exp10,
        MathFn::Log10,
        MathFn::Log1p,
        MathFn::Expm1,
        MathFn::Tan,
        MathFn::Atan,
    ];

    /// The function's `.tile` name. `log2` of an integer constant is the constant function
    /// (floor of the base-2 logarithm); of a float value it is this one.
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Exp => "exp",
            MathFn::Exp2 => "exp2",
            MathFn::Log => "log",
            MathFn::Log2 => "log2",
            MathFn::Sqrt => "sqrt",
            MathFn::Rsqrt => "rsqrt",
            MathFn::Erf => "erf",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tanh => "tanh",
            MathFn::Exp10 => "exp10",
            MathFn::Log10 => "log10",
            MathFn::Log1p => "log1p",
            MathFn::Expm1 => "expm1",
            MathFn::Tan => "tan",
            MathFn::Atan => "atan",
        }
    }

    pub fn from_name(name: &str) -> Option<MathFn> {
        MathFn::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The exact value of the function at `x` (IEEE semantics for the special values).
    pub fn eval(self, x: f64) -> f64 {
        match self {
            MathFn::Exp => x.exp(),
            MathFn::Exp2 => x.exp2(),
            MathFn::Log => x.ln(),
            MathFn::Log2 => x.log2(),
            MathFn::Sqrt => x.sqrt(),
            MathFn::Rsqrt => 1.0 / x.sqrt(),
            MathFn::Erf => libm::erf(x),
            MathFn::Floor => x.floor(),
            MathFn::Ceil => x.ceil(),
            MathFn::Sin => x.sin(),
            MathFn::Cos => x.cos(),
            MathFn::Tanh => x.tanh(),
            MathFn::Exp10 => 10f64.powf(x),
            MathFn::Log10 => x.log10(),
            MathFn::Log1p => x.ln_1p(),
            MathFn::Expm1 => x.exp_m1(),
            MathFn::Tan => x.tan(),
            MathFn::Atan => x.atan(),
        }
    }

    /// Whether the function runs on the SM's special-function unit (MUFU: 16 results per
    /// clock per SM on sm_90 and sm_100, an eighth of the FP32 pipe) rather than the FMA pipe.
    pub fn is_sfu(self) -> bool {
        !matches!(self, MathFn::Floor | MathFn::Ceil)
    }
}

/// The combiner of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    And,
    Or,
    Xor,
    /// Position of the first maximum along the axis (i32).
    Argmax,
    /// Position of the first minimum along the axis (i32).
    Argmin,
}

impl ReduceOp {
    pub const ALL: [ReduceOp; 9] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::And,
        ReduceOp::Or,
        ReduceOp::Xor,
        ReduceOp::Argmax,
        ReduceOp::Argmin,
    ];

    /// The reduction's `.tile` function name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "reduce_max",
            ReduceOp::Min => "reduce_min",
            ReduceOp::And => "reduce_and",
            ReduceOp::Or => "reduce_or",
            ReduceOp::Xor => "reduce_xor",
            ReduceOp::Argmax => "argmax",
            ReduceOp::Argmin => "argmin",
        }
    }

    pub fn from_name(name: &str) -> Option<ReduceOp> {
        ReduceOp::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The inclusive scan (`cumsum`, `cumprod`, `cummax`, `cummin`) of this combiner, by name.
    pub fn scan_from_name(name: &str) -> Option<ReduceOp> {
        Some(match name {
            "cumsum" => ReduceOp::Sum,
            "cumprod" => ReduceOp::Prod,
            "cummax" => ReduceOp::Max,
            "cummin" => ReduceOp::Min,
            _ => return None,
        })
    }

    /// Bitwise combiners apply to integer (and i1) tiles only.
    pub fn is_bitwise(self) -> bool {
        matches!(self, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor)
    }

    /// The result is the position along the axis, not an element.
    pub fn is_arg(self) -> bool {
        matches!(self, ReduceOp::Argmax | ReduceOp::Argmin)
    }

    /// `a op b` for a float fold (IEEE maxNum/minNum); `None` for the integer-only combiners.
    pub fn fold_float(self, a: f64, b: f64) -> Option<f64> {
        Some(match self {
            ReduceOp::Sum => a + b,
            ReduceOp::Prod => a * b,
            ReduceOp::Max => a.max(b),
            ReduceOp::Min => a.min(b),
            _ => return None,
        })
    }

    /// `a op b` for an integer fold (wrapping); argmax/argmin keep `a` (they fold positions).
    pub fn fold_int(self, a: i64, b: i64) -> i64 {
        match self {
            ReduceOp::Sum => a.wrapping_add(b),
            ReduceOp::Prod => a.wrapping_mul(b),
            ReduceOp::Max => a.max(b),
            ReduceOp::Min => a.min(b),
            ReduceOp::And => a & b,
            ReduceOp::Or => a | b,
            ReduceOp::Xor => a ^ b,
            ReduceOp::Argmax | ReduceOp::Argmin => a,
        }
    }
}

/// The `reverse=` flag of a scan call (`cumsum(x, axis, reverse=true)`): false when absent.
/// Another keyword, or a value other than `true`/`false`, is an error naming it (with its
/// span).
pub fn scan_reverse(args: &[crate::ir::Arg]) -> Result<bool, (crate::Span, String)> {
    let mut reverse = false;
    for a in args {
        let Some(k) = &a.key else { continue };
        if k.name != "reverse" {
            return Err((
                k.span,
                format!("a scan takes `reverse=true|false`, not `{}=`", k.name),
            ));
        }
        match a.value.kind {
            crate::ir::ExprKind::Bool(b) => reverse = b,
            _ => return Err((a.value.span, "`reverse=` takes `true` or `false`".into())),
        }
    }
    Ok(reverse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in MathFn::ALL {
            assert_eq!(MathFn::from_name(f.name()), Some(f));
        }
        for r in ReduceOp::ALL {
            assert_eq!(ReduceOp::from_name(r.name()), Some(r));
        }
        assert_eq!(MathFn::from_name("max"), None);
        assert_eq!(ReduceOp::from_name("max"), None);
    }

    #[test]
    fn math_values_are_the_textbook_ones() {
        assert_eq!(MathFn::Exp2.eval(3.0), 8.0);
        assert_eq!(MathFn::Log2.eval(0.25), -2.0);
        assert_eq!(MathFn::Rsqrt.eval(16.0), 0.25);
        assert_eq!(MathFn::Floor.eval(-1.5), -2.0);
        assert_eq!(MathFn::Ceil.eval(-1.5), -1.0);
        assert!((MathFn::Erf.eval(1.0) - 0.842_700_792_949_714_9).abs() < 1e-15);
        assert_eq!(MathFn::Erf.eval(0.0), 0.0);
        assert!(MathFn::Log.eval(-1.0).is_nan());
        assert_eq!(MathFn::Rsqrt.eval(0.0), f64::INFINITY);
        assert_eq!(MathFn::Exp10.eval(3.0), 1000.0);
        assert_eq!(MathFn::Log10.eval(0.001), -3.0);
        assert_eq!(MathFn::Tanh.eval(0.0), 0.0);
        assert_eq!(MathFn::Tanh.eval(f64::INFINITY), 1.0);
        assert!((MathFn::Tanh.eval(0.5) - 0.462_117_157_260_009_8).abs() < 1e-15);
        // log1p keeps the digits of a small argument that log(1 + x) would lose.
        assert_eq!(MathFn::Log1p.eval(1e-20), 1e-20);
        assert_eq!(MathFn::Log1p.eval(-1.0), f64::NEG_INFINITY);
        assert!(MathFn::Log1p.eval(-2.0).is_nan());
        assert_eq!(MathFn::Expm1.eval(1e-20), 1e-20);
        assert_eq!(MathFn::Expm1.eval(f64::NEG_INFINITY), -1.0);
        assert_eq!(MathFn::Tan.eval(0.0), 0.0);
        assert!((MathFn::Tan.eval(std::f64::consts::FRAC_PI_4) - 1.0).abs() < 1e-15);
        assert_eq!(MathFn::Atan.eval(f64::INFINITY), std::f64::consts::FRAC_PI_2);
        assert!((MathFn::Atan.eval(1.0) - std::f64::consts::FRAC_PI_4).abs() < 1e-15);
        assert_eq!(MathFn::Atan.eval(-0.0).to_bits(), (-0.0f64).to_bits());
    }
}
