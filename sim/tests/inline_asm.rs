//! `inline_asm` in the simulator: paired f32 arithmetic through 64-bit registers, bit tricks
//! and packed halves, against values computed in plain Rust; scalar snippets; a run-time
//! error of a snippet; the type checker's refusal of `.f32x2` on sm_90a.

mod common;
use common::*;

const PAIRS: &str = r#"
kernel pairs {
  target sm_100a
  num_warps 4
  param out_ptr: ptr(f32)
  param bits_ptr: ptr(i32)
  layout l = blocked([2], [32], [4], [0])
  let offs = arange(0, 256, l)
  let x = cast(offs, f32) * 0.1 + 0.3
  let y = cast(offs, f32) * -0.7 + 1.0
  let p = inline_asm "mov.b64 $0, { $1, $2 };", "=l,r,r", [x, y], [i64]
  let q = inline_asm "mov.b64 $0, { $1, $2 };", "=l,r,r", [y, 2.5], [i64]
  let s = inline_asm "fma.rn.f32x2 $0, $1, $2, $2;", "=l,l,l", [p, q], [i64]
  let (lo, hi) = inline_asm "mov.b64 { $0, $1 }, $2;", "=r,=r,l", [s], [f32, f32]
  global.store out_ptr, offs, lo
  global.store out_ptr, 256 + offs, hi
  let k = offs * 16777619 + 12345
  let t = inline_asm "{ .reg .b32 t; prmt.b32 t, $1, 0, 0x0123; lop3.b32 $0, t, $1, 0xff00ff00, 0xE8; }", "=r,r", [k], [i32]
  global.store bits_ptr, offs, t
  let h = inline_asm "{ .reg .b32 u; cvt.rn.f16x2.f32 u, $2, $1; mov.b32 { $0, _ }, u; }", "=h,r,r", [x, y], [f16]
  let hh = inline_asm "mov.b32 $0, { $1, $1 };", "=r,h", [h], [i32]
  global.store bits_ptr, 256 + offs, hh
  let n = inline_asm "mad.lo.s32 $0, $1, $2, $3;", "=r,r,r,r", [7, 6, 1], [i32]
  global.store bits_ptr, 512 + offs, full([256], n, i32, l)
  launch {
    grid = [1]
    tensor out: f32[512] = zeros()
    tensor b: i32[768] = zeros()
    out_ptr = out
    bits_ptr = b
    outputs = [out, b]
  }
}
"#;

#[test]
fn paired_f32_bit_tricks_and_scalars_match_plain_rust() {
    let r = run(PAIRS, &[]);
    assert_ok(PAIRS, &r);
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
