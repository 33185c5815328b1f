//! Generic tile operations against values computed by hand or in plain Rust: casts rounding
//! to nearest even (`cvt.rn`), arange / expand_dims / broadcasting arithmetic, where, fma,
//! sum, reshape / permute / split / join, constant sub-tiles, masked global loads, shared
//! memory round trips through a swizzled layout, and program_id / num_programs.

mod common;
use common::*;

const CASTS: &str = r#"
kernel casts {
  target sm_100a, sm_90a
  num_warps 4
  param h_ptr: ptr(f16)
  param b_ptr: ptr(bf16)
  layout l = blocked([1], [32], [4], [0])
  let k = cast(arange(0, 8, l), f32)
  // 1 + k * 2^-11: every other value is halfway between two f16 values.
  global.store h_ptr, arange(0, 8, l), cast(k * 0.00048828125 + 1.0, f16)
  // 1 + k * 2^-8: the same for bf16.
  global.store b_ptr, arange(0, 8, l), cast(k * 0.00390625 + 1.0, bf16)
  // 65520 is halfway between 65504 and 65536: rounds to the even one, +inf.
  global.store h_ptr, arange(8, 9, l), cast(full([1], 65520.0, f32, l), f16)
  global.store h_ptr, arange(9, 10, l), cast(full([1], 65519.0, f32, l), f16)
  launch {
    grid = [1]
    tensor h: f16[10] = zeros()
    tensor b: bf16[8] = zeros()
    h_ptr = h
    b_ptr = b
    outputs = [h, b]
  }
}
"#;

#[test]
fn casts_round_to_nearest_even() {
    let r = run(CASTS, &[]);
    assert_ok(CASTS, &r);
    // Mantissa steps above 1.0 after rounding k half-steps to even (hand-computed).
    let steps = [0u64, 0, 1, 2, 2, 2, 3, 4];
    let h: Vec<u64> = steps.iter().map(|m| 0x3c00 + m).chain([0x7c00, 0x7bff]).collect();
    assert_eq!(bits(tensor(&r, "h")), h);
    let b: Vec<u64> = steps.iter().map(|m| 0x3f80 + m).collect();
    assert_eq!(bits(tensor(&r, "b")), b);
}

const MATH: &str = r#"
kernel math {
  target sm_100a, sm_90a
  num_warps 4
  param out_ptr: ptr(f32)
  param red_ptr: ptr(f32)
  param sw_ptr: ptr(f32)
  layout l2 = blocked([1, 1], [1, 32], [4, 1], [1, 0])
  let i = expand_dims(cast(arange(0, 4, slice(1, l2)), f32), 1)
  let j = expand_dims(cast(arange(0, 8, slice(0, l2)), f32), 0)
  // [4, 8] by broadcasting: where(i < j, fma(i, j, 0.5), -(i - j) * 2.0)
  let x = where(i < j, fma(i, j, 0.5 + j * 0.0), (j - i) * 2.0)
  let offs = expand_dims(arange(0, 4, slice(1, l2)), 1) * 8 + expand_dims(arange(0, 8, slice(0, l2)), 0)
  global.store out_ptr, offs, x
  // Row sums, and the pieces of reshape / permute / split / join / sub-tile.
  global.store red_ptr, arange(0, 4, slice(1, l2)), sum(x, 1)
  let (lo, hi) = split(permute(reshape(x, [4, 2, 4]), [0, 2, 1]))
  global.store red_ptr, arange(4, 8, slice(1, l2)), sum(hi - lo, 1)
  let back = reshape(permute(join(lo, hi), [0, 2, 1]), [4, 8])
  global.store red_ptr, arange(8, 12, slice(1, l2)), sum(back - x, 1)
  let part = x[:, 2:5]
  global.store red_ptr, arange(12, 16, slice(1, l2)), sum(part, 1)
  // A 128B-swizzled shared buffer written and read back by the generic proxy.
  let buf = smem.alloc f32[4, 32], nvmma(128)
  let v = cast(expand_dims(arange(0, 4, slice(1, l2)), 1) * 32 + expand_dims(arange(0, 32, slice(0, l2)), 0), f32)
  smem.store buf, v
  let w = smem.load buf[1:3, 8:24], layout=l2
  let woffs = expand_dims(arange(0, 2, slice(1, l2)), 1) * 16 + expand_dims(arange(0, 16, slice(0, l2)), 0)
  global.store sw_ptr, woffs, w
  launch {
    grid = [1]
    tensor out: f32[4, 8] = zeros()
    tensor red: f32[16] = zeros()
    tensor sw: f32[2, 16] = zeros()
    out_ptr = out
    red_ptr = red
    sw_ptr = sw
    outputs = [out, red, sw]
  }
}
"#;

#[test]
fn elementwise_math_reductions_and_reshapes() {
    let r = run(MATH, &[]);
    assert_ok(MATH, &r);
    let x = |i: usize, j: usize| -> f64 {
        let (fi, fj) = (i as f64, j as f64);
        if fi < fj {
            fi * fj + 0.5
        } else {
            (fj - fi) * 2.0
        }
    };
    let want: Vec<f64> = (0..4).flat_map(|i| (0..8).map(move |j| x(i, j))).collect();
    assert_eq!(values(tensor(&r, "out")), want);
    let red = values(tensor(&r, "red"));
    for i in 0..4 {
        assert_eq!(red[i], (0..8).map(|j| x(i, j)).sum::<f64>(), "sum row {i}");
        // split of the reshape/permute: lo = columns 0..4, hi = columns 4..8.
        assert_eq!(red[4 + i], (0..4).map(|j| x(i, j + 4) - x(i, j)).sum::<f64>());
        assert_eq!(red[8 + i], 0.0, "join undoes split");
        assert_eq!(red[12 + i], (2..5).map(|j| x(i, j)).sum::<f64>(), "x[:, 2:5]");
    }
    let sw = values(tensor(&r, "sw"));
    let want: Vec<f64> = (1..3)
        .flat_map(|i| (8..24).map(move |j| (i * 32 + j) as f64))
        .collect();
    assert_eq!(sw, want, "buf[1:3, 8:24] of a swizzled buffer");
}

#[test]
fn tile_slices_out_of_range_are_rejected() {
    let bad = MATH.replace("x[:, 2:5]", "x[:, 6:9]");
    let k = bwsim_isa::parser::parse(&bad).expect("parses");
    let (c, d) = bwsim_isa::verify::verify(&k, &Default::default());
    assert!(c.is_none());
    assert!(
        d.iter()
            .any(|d| d.code == "view-bounds" && d.message.contains("6:9")),
        "{d:?}"
    );
}

const MASKED: &str = r#"
kernel masked {
  target sm_100a, sm_90a
  num_warps 4
  param src: ptr(f32)
  param dst: ptr(f32)
  layout l = blocked([1], [32], [4], [0])
  let offs = arange(0, 16, l)
  // Only 10 elements exist: the rest read `other` and are not stored.
  let v = global.load src, offs, mask=offs < 10, other=-3.0
  global.store dst, offs, v * 2.0, mask=offs < 12
  launch {
    grid = [1]
    tensor a: f32[10] = iota()
    tensor b: f32[12] = fill(9)
    src = a
    dst = b
    outputs = [b]
  }
}
"#;

#[test]
fn masked_global_loads_and_stores() {
    let r = run(MASKED, &[]);
    assert_ok(MASKED, &r);
    let want: Vec<f64> = (0..12)
        .map(|i| if i < 10 { 2.0 * i as f64 } else { -6.0 })
        .collect();
    assert_eq!(values(tensor(&r, "b")), want);
}

const PIDS: &str = r#"
kernel pids {
  target sm_100a, sm_90a
  num_warps 4
  param out: ptr(i32)
  layout l = blocked([1], [32], [4], [0])
  let lin = program_id(1) * num_programs(0) + program_id(0)
  let v = program_id(0) * 100 + program_id(1) * 10 + num_programs(0) * num_programs(1)
  global.store out, arange(0, 1, l) + lin, full([1], v, i32, l)
  launch {
    grid = [2, 3]
    tensor o: i32[6] = fill(-1)
    out = o
    outputs = [o]
  }
}
"#;

#[test]
fn program_ids_cover_the_grid() {
    for seed in 0..3 {
        let r = run_seed(PIDS, &[], seed);
        assert_ok(PIDS, &r);
        let want: Vec<f64> = (0..3)
            .flat_map(|y| (0..2).map(move |x| (x * 100 + y * 10 + 6) as f64))
            .collect();
        assert_eq!(values(tensor(&r, "o")), want);
    }
}
