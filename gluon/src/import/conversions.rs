//! `tt.fp_to_fp`: conversions between float formats (f32, f16, bf16, fp8 e4m3 and e5m2), with
//! the rounding the operation names (`rounding = rtne | rtz`, Gluon's
//! `x.to(dtype, fp_downcast_rounding=...)`) or none (exact upcasts).
//!
//! Each conversion imports as the `inline_asm` operation running the PTX conversion that
//! Triton's NVIDIA lowering of `tt.fp_to_fp` emits for it (its `FpToFpOpConversion`), so the
//! simulator rounds the way the hardware does (the PTX-subset interpreter's `cvt`) and the PTX
//! backend emits the same instruction:
//!
//! - f32 -> f16 / bf16: `cvt.rn` or `cvt.rz` to the format;
//! - f32 -> fp8 to nearest even: `cvt.rn.satfinite.e4m3x2.f32` / `e5m2x2` (finite values
//!   beyond the format's largest saturate to it);
//! - f32 -> e5m2 toward zero: Triton goes through f16 toward zero and keeps the f16's high
//!   byte (e5m2 is f16 with 8 fewer significand bits), which is one rounding toward zero;
//! - f16 / bf16 -> fp8 to nearest even: through the saturating `cvt.rn.satfinite` (bf16 via
//!   its exact f32 value); f16 -> e5m2 toward zero: the high byte;
//! - f16 <-> bf16: `cvt.rn`; fp8 -> f16 / bf16 / f32 and f16 / bf16 -> f32: exact.
//!
//! Triton's compiler refuses the conversions it has no lowering for (e4m3 toward zero, a
//! toward-zero conversion from f16 or bf16 to e4m3); bwsim refuses them with that reason.
//! Conversions with an fp8 side take two elements a call (`pack = 2`, the pairwise `cvt ...
//! x2` forms), as Triton's lowering does; the others one.

use super::*;

/// A rounding a `tt.fp_to_fp` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rounding {
    Rtne,
    Rtz,
}

/// The PTX snippet, constraints and elements per call (`pack`) that convert `from` elements
/// to `to` with `rounding`, or why there is none. Conversions with an fp8 side take two
/// elements a call (a 16-bit register holds two fp8 values; bwsim binds no 8-bit registers),
/// as Triton's lowering does.
fn conversion(
    from: Elem,
    to: Elem,
    rounding: Option<Rounding>,
) -> Result<(String, &'static str, usize), String> {
    use Elem::*;
    let rnd = |r: Option<Rounding>| match r {
        Some(Rounding::Rtz) => "rz",
        _ => "rn",
    };
    let fp8 = |e: Elem| match e {
        F8E4M3 => Some("e4m3"),
        F8E5M2 => Some("e5m2"),
        _ => None,
    };
    // Two 16-bit values (`lo` the first element) of the 32-bit `$1`, widened to f32 by `cvt`
    // (`from`: f16 or bf16), converted as a pair to nearest even, saturating, into `$0`.
    let pair_to_fp8 = |from: &str, f: &str| {
        format!(
            "{{ .reg .b16 lo, hi; .reg .f32 a, b; mov.b32 {{lo, hi}}, $1; cvt.f32.{from} a, lo; cvt.f32.{from} b, hi; cvt.rn.satfinite.{f}x2.f32 $0, b, a; }}"
        )
    };
    // Two fp8 values of `$k` (16 bits) as two f16 in `lo` and `hi`, then `rest`.
    let fp8_pair = |f: &str, k: usize, rest: &str| {
        format!(
            "{{ .reg .b32 w; .reg .b16 lo, hi; cvt.rn.f16x2.{f}x2 w, ${k}; mov.b32 {{lo, hi}}, w; {rest} }}"
        )
    };
    Ok(match (from, to, rounding) {
        (F32, F16, r) => (format!("cvt.{}.f16.f32 $0, $1;", rnd(r)), "=h,r", 1),
        (F32, BF16, r) => (format!("cvt.{}.bf16.f32 $0, $1;", rnd(r)), "=h,r", 1),
        (F16, F32, None) => ("cvt.f32.f16 $0, $1;".to_string(), "=r,h", 1),
        (BF16, F32, None) => ("cvt.f32.bf16 $0, $1;".to_string(), "=r,h", 1),
        (F16, BF16, _) => ("cvt.rn.bf16.f16 $0, $1;".to_string(), "=h,h", 1),
        (BF16, F16, _) => ("cvt.rn.f16.bf16 $0, $1;".to_string(), "=h,h", 1),
        // Toward zero to e5m2: each value to f16 toward zero, its high byte kept.
        (F32, F8E5M2, Some(Rounding::Rtz)) => (
            "{ .reg .b16 a, b; cvt.rz.f16.f32 a, $1; cvt.rz.f16.f32 b, $2; shr.b16 a, a, 8; shr.b16 b, b, 8; shl.b16 b, b, 8; or.b16 $0, a, b; }"
                .to_string(),
            "=h,r,r",
            2,
        ),
        (F16, F8E5M2, Some(Rounding::Rtz)) => (
            "{ .reg .b32 w, v; .reg .b16 lo, hi; shl.b32 w, $1, 16; shr.b32 w, w, 24; shr.b32 v, $1, 24; shl.b32 v, v, 8; or.b32 w, w, v; mov.b32 {lo, hi}, w; mov.b16 $0, lo; }".to_string(),
            "=h,r",
            2,
        ),
        (F32, t, Some(Rounding::Rtne)) if fp8(t).is_some() => (
            format!("cvt.rn.satfinite.{}x2.f32 $0, $2, $1;", fp8(t).unwrap_or_default()),
            "=h,r,r",
            2,
        ),
        (F16, t, Some(Rounding::Rtne)) if fp8(t).is_some() => {
            (pair_to_fp8("f16", fp8(t).unwrap_or_default()), "=h,r", 2)
        }
        (BF16, t, Some(Rounding::Rtne)) if fp8(t).is_some() => {
            (pair_to_fp8("bf16", fp8(t).unwrap_or_default()), "=h,r", 2)
        }
        (f, F16, None) if fp8(f).is_some() => (
            fp8_pair(fp8(f).unwrap_or_default(), 1, "mov.b32 $0, {lo, hi};"),
            "=r,h",
            2,
        ),
        (f, BF16, None) if fp8(f).is_some() => (
            fp8_pair(
                fp8(f).unwrap_or_default(),
                1,
                ".reg .b16 x, y; cvt.rn.bf16.f16 x, lo; cvt.rn.bf16.f16 y, hi; mov.b32 $0, {x, y};",
            ),
            "=r,h",
            2,
        ),
        (f, F32, None) if fp8(f).is_some() => (
            fp8_pair(fp8(f).unwrap_or_default(), 2, "cvt.f32.f16 $0, lo; cvt.f32.f16 $1, hi;"),
            "=r,=r,h",
            2,
        ),
        (f, t, r) => {
            return Err(match r {
                Some(Rounding::Rtz) if fp8(t).is_some() => format!(
                    "a conversion from {f:?} to {t:?} toward zero (Triton's compiler lowers only f32 and f16 to e5m2 toward zero)"
                ),
                _ => format!(
                    "a conversion from {f:?} to {t:?}{}",
                    match r {
                        Some(Rounding::Rtz) => " toward zero",
                        Some(Rounding::Rtne) => " to nearest even",
                        None => " without a rounding",
                    }
                ),
            })
        }
    })
}

impl Cx<'_> {
    /// `%r = tt.fp_to_fp %x[, rounding = rtne|rtz] : T -> U` → the `inline_asm` operation
    /// running the PTX conversion Triton emits for it (see the module docs).
    pub(super) fn fp_to_fp(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let from = self.val_type(&v[0].0, v[0].1)?.elem();
        let to = self.result_type(op, 0)?.elem();
        let rounding = op.toks.iter().find_map(|t| match &t.tok {
            Tok::Ident(w) if w == "rtne" => Some(Rounding::Rtne),
            Tok::Ident(w) if w == "rtz" => Some(Rounding::Rtz),
            _ => None,
        });
        let (Some(from), Some(to)) = (from, to) else {
            return Err(self.misuse(op, "converts between float tensors or scalars"));
        };
        let (asm, cons, pack) = conversion(from, to, rounding).map_err(|why| self.unsupported(op, &why))?;
        self.ptx_elementwise(op, &asm, cons, pack, true, span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_snippet_is_in_the_ptx_subset() {
        use Elem::*;
        let fl = [F32, F16, BF16, F8E4M3, F8E5M2];
        let mut n = 0;
        for from in fl {
            for to in fl {
                for r in [None, Some(Rounding::Rtne), Some(Rounding::Rtz)] {
                    if from == to {
                        continue;
                    }
                    let Ok((asm, cons, pack)) = conversion(from, to, r) else {
                        continue;
                    };
                    let d = |e: Elem| e.dtype().unwrap_or(DType::I32);
                    if let Err(e) = bwsim_isa::inline_ptx::compile(&asm, cons, &[d(from)], &[d(to)], pack) {
                        panic!("{from:?} -> {to:?} {r:?}: `{asm}`: {}", e.message);
                    }
                    n += 1;
                }
            }
        }
        assert!(n >= 20, "{n} conversions");
    }

    /// Runs the snippet of `from -> to` (`rounding`) on one pack of element bits.
    fn convert(from: Elem, to: Elem, r: Option<Rounding>, input: &[u64]) -> Vec<u64> {
        let (asm, cons, pack) = conversion(from, to, r).expect("a conversion");
        let d = |e: Elem| e.dtype().unwrap_or(DType::I32);
        let p = bwsim_isa::inline_ptx::compile(&asm, cons, &[d(from)], &[d(to)], pack).expect("compiles");
        p.run(input).expect("runs")
    }

    #[test]
    fn toward_zero_to_e5m2_keeps_the_high_byte() {
        use Elem::*;
        let f = |x: f32| x.to_bits() as u64;
        let h = |x: f32| half::f16::from_f32(x).to_bits() as u64;
        // 1.375 = 1.011b: e5m2 keeps two fraction bits, toward zero 1.25 (0x3D); -2.75 = -1.011b
        // * 2: -2.5 (0xC1). To nearest even they round up: 1.5 (0x3E), -3.0 (0xC2). e4m3
        // saturates at 448 (0x7E); back to f32 exactly.
        let (rz, rn) = (Some(Rounding::Rtz), Some(Rounding::Rtne));
        let cases = [
            (F32, F8E5M2, rz, [f(1.375), f(-2.75)], [0x3D, 0xC1]),
            (F16, F8E5M2, rz, [h(1.375), h(-2.75)], [0x3D, 0xC1]),
            (F32, F8E5M2, rn, [f(1.375), f(-2.75)], [0x3E, 0xC2]),
            (F16, F8E4M3, rn, [h(500.0), h(-0.3)], [0x7E, 0xAA]),
            (F8E4M3, F32, None, [0x7E, 0xAA], [f(448.0), f(-0.3125)]),
        ];
        for (from, to, r, input, want) in cases {
            assert_eq!(convert(from, to, r, &input), want, "{from:?} -> {to:?} {r:?}");
        }
        // bf16 toward zero: 1 + 2^-7 + 2^-8 keeps 1 + 2^-7.
        let b = half::bf16::from_f32(1.0 + 2f32.powi(-7)).to_bits() as u64;
        assert_eq!(
            convert(F32, BF16, rz, &[f(1.0 + 2f32.powi(-7) + 2f32.powi(-8))]),
            vec![b]
        );
    }

    #[test]
    fn e4m3_toward_zero_is_refused_with_the_reason() {
        let e = conversion(Elem::F32, Elem::F8E4M3, Some(Rounding::Rtz)).unwrap_err();
        assert!(e.contains("toward zero"), "{e}");
        assert!(conversion(Elem::F32, Elem::F8E5M2, Some(Rounding::Rtz)).is_ok());
    }
}
