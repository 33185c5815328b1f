//! `inline_asm` in the simulator: paired f32 arithmetic through 64-bit registers, bit tricks
//! and packed halves, against values computed in plain Rust; scalar snippets; a run-time
//! error of a snippet; the type checker's refusal of `.f32x2` on sm_90a.

mod common;
use common::*;

const PAIRS: &str = include_str!("tiles/inline_asm/pairs.tile");

#[test]
fn paired_f32_bit_tricks_and_scalars_match_plain_rust() {
    let r = run_ok(PAIRS, &[]);
    let out = bits(tensor(&r, "out"));
    let b = bits(tensor(&r, "b"));
    for i in 0..256usize {
        let x = i as f32 * 0.1 + 0.3;
        let y = i as f32 * -0.7 + 1.0;
        // (x, y) * (y, 2.5) + (y, 2.5), each lane one rounding.
        assert_eq!(out[i] as u32, x.mul_add(y, y).to_bits(), "lo {i}");
        assert_eq!(out[256 + i] as u32, y.mul_add(2.5, 2.5).to_bits(), "hi {i}");
        let k = (i as u32).wrapping_mul(16777619).wrapping_add(12345);
        // Byte-reversed k, then majority(t, k, 0xff00ff00) (lut 0xE8).
        let t = k.swap_bytes();
        let m = 0xff00_ff00u32;
        let want = (t & k) | (t & m) | (k & m);
        assert_eq!(b[i] as u32, want, "bits {i}");
        let hx = half::f16::from_f32(x).to_bits() as u32;
        assert_eq!(b[256 + i] as u32, hx << 16 | hx, "half {i}");
        assert_eq!(b[512 + i], 43);
    }
}

#[test]
fn an_undefined_output_stops_the_run_naming_the_snippet() {
    let src = r#"
kernel undef {
  target sm_100a
  num_warps 4
  param out_ptr: ptr(i32)
  layout l = blocked([1], [32], [4], [0])
  let offs = arange(0, 128, l)
  let v = inline_asm "{ .reg .pred p; setp.lt.s32 p, $1, 100; @p mov.b32 $0, $1; }", "=r,r", [offs], [i32]
  global.store out_ptr, offs, v
  launch {
    grid = [1]
    tensor o: i32[128] = zeros()
    out_ptr = o
    outputs = [o]
  }
}
"#;
    let r = run(src, &[]);
    let text = rendered(src, &r);
    assert!(
        text.contains("inline-asm") && text.contains("holds no value"),
        "{text}"
    );
}

#[test]
fn paired_f32_is_refused_on_sm90a() {
    let src = PAIRS.replace("target sm_100a", "target sm_90a");
    let Err(err) = bwsim_sim::run_source_with(&src, &[], None, &bwsim_sim::RunOptions::default()) else {
        panic!("refused");
    };
    let text = bwsim_isa::diag::render(&err, &bwsim_isa::SourceFile::new("t.tile", &src));
    assert!(text.contains("inline-asm") && text.contains("sm_100a"), "{text}");
}
