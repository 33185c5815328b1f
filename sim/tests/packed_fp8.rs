//! Four-lane fp8 arithmetic (`add4`, `mul4`, `fma4`: sm_100a's `add.rn.e4m3x4.e4m3x4`, ...)
//! against values rounded by hand, a lane past e4m3's largest finite value reported as
//! `unspecified-result` at the operation, and the type checker's refusals.

mod common;
use common::*;

/// a = 1 + (k % 8) / 8 (e4m3, exact), b = 1.125: `add4`, `mul4`, `fma4` with an e5m2 addend
/// -1.25, and a times 128 (448 with the overflow), each stored as f32.
const SRC: &str = "kernel fp8x4 {
  target sm_100a
  num_warps 4
  param out_ptr: ptr(f32)
  layout l = blocked([4], [32], [4], [0])
  let k = arange(0, 512, l)
  let a = cast(1.0 + cast(k % 8, f32) * 0.125, f8e4m3)
  let b = cast(full([512], 1.125, f32, l), f8e4m3)
  let c = cast(full([512], 0.0 - 1.25, f32, l), f8e5m2)
  global.store out_ptr, k, cast(add4(a, b, f8e4m3), f32)
  global.store out_ptr, k + 512, cast(mul4(a, b, f8e4m3), f32)
  global.store out_ptr, k + 1024, cast(fma4(a, b, c, f8e5m2), f32)
  let big = mul4(a, cast(full([512], 128.0, f32, l), f8e4m3), f8e4m3)
  global.store out_ptr, k + 1536, cast(big, f32)
  launch {
    grid = [1]
    tensor out: f32[2048] = zeros()
    out_ptr = out
    outputs = [out]
  }
}
";

/// `v` (normal) rounded to nearest even with `frac` fraction bits.
fn rne(v: f64, frac: i32) -> f64 {
    let ulp = 2f64.powi(v.abs().log2().floor() as i32 - frac);
    (v / ulp).round_ties_even() * ulp
}

#[test]
fn lanes_round_once_to_nearest_even() {
    let r = run_ok(SRC, &[]);
    let o = values(tensor(&r, "out"));
    // The sums by hand: 2.125 + j / 8 in e4m3's steps of 0.25, ties to the even code.
    let sums = [2.0, 2.25, 2.5, 2.5, 2.5, 2.75, 3.0, 3.0];
    for k in 0..512 {
        let a = 1.0 + (k % 8) as f64 / 8.0;
        assert_eq!(o[k], sums[k % 8], "add4 at {k}");
        assert_eq!(o[512 + k], rne(a * 1.125, 3), "mul4 at {k}");
        assert_eq!(o[1024 + k], rne(a.mul_add(1.125, -1.25), 2), "fma4 at {k}");
        assert_eq!(o[1536 + k], a * 128.0, "mul4 by 128 at {k}");
    }
}

#[test]
fn a_lane_past_the_largest_finite_value_is_unspecified() {
    // 1.125 * 448 = 504, past 464 (the midpoint above 448): element [1].
    let src = SRC.replace("128.0", "448.0");
    let r = run(&src, &[]);
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.code == "unspecified-result")
        .unwrap_or_else(|| panic!("no unspecified-result:\n{}", rendered(&src, &r)));
    assert!(
        d.message.contains("element [1]") && d.message.contains("504"),
        "{}",
        d.message
    );
    let line = src[..d.primary.span.start as usize].lines().count();
    assert_eq!(line, 13, "{}", rendered(&src, &r));
}

#[test]
fn the_type_checker_refuses_other_types() {
    let body = |e: &str| SRC.replace("cast(add4(a, b, f8e4m3), f32)", e);
    for (e, says) in [
        ("cast(add4(a, b, f16), f32)", "gives f8e4m3 or f8e5m2 lanes"),
        (
            "cast(add4(cast(a, f16), b, f8e4m3), f32)",
            "takes f8e4m3, f8e5m2 or f4e2m1 tiles",
        ),
        ("cast(fma4(a, b, f8e4m3), f32)", "takes 4 arguments"),
    ] {
        rejected(&body(e), says);
    }
}
