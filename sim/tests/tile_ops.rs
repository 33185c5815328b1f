//! Generic tile operations against values computed by hand or in plain Rust: casts rounding
//! to nearest even (`cvt.rn`), arange / expand_dims / broadcasting arithmetic, where, fma,
//! sum, reshape / permute / split / join, constant sub-tiles, masked global loads, shared
//! memory round trips through a swizzled layout, and program_id / num_programs.

mod common;
use common::*;
use std::ops::Range;

/// `f(row, col)` over `rows` x `cols`, row-major: a tile's expected values.
fn tile(rows: Range<usize>, cols: Range<usize>, f: impl Fn(usize, usize) -> f64) -> Vec<f64> {
    rows.flat_map(|r| cols.clone().map(move |c| (r, c)))
        .map(|(r, c)| f(r, c))
        .collect()
}

const CASTS: &str = include_str!("tiles/tile_ops/casts.tile");

#[test]
fn casts_round_to_nearest_even() {
    let r = run_ok(CASTS, &[]);
    // Mantissa steps above 1.0 after rounding k half-steps to even (hand-computed).
    let steps = [0u64, 0, 1, 2, 2, 2, 3, 4];
    let h: Vec<u64> = steps.iter().map(|m| 0x3c00 + m).chain([0x7c00, 0x7bff]).collect();
    assert_eq!(bits(tensor(&r, "h")), h);
    let b: Vec<u64> = steps.iter().map(|m| 0x3f80 + m).collect();
    assert_eq!(bits(tensor(&r, "b")), b);
}

const MATH: &str = include_str!("tiles/tile_ops/math.tile");

#[test]
fn elementwise_math_reductions_and_reshapes() {
    let r = run_ok(MATH, &[]);
    let x = |i: usize, j: usize| -> f64 {
        let (fi, fj) = (i as f64, j as f64);
        if fi < fj {
            fi * fj + 0.5
        } else {
            (fj - fi) * 2.0
        }
    };
    assert_eq!(values(tensor(&r, "out")), tile(0..4, 0..8, x));
    let red = values(tensor(&r, "red"));
    for i in 0..4 {
        assert_eq!(red[i], (0..8).map(|j| x(i, j)).sum::<f64>(), "sum row {i}");
        // split of the reshape/permute: lo = columns 0..4, hi = columns 4..8.
        assert_eq!(red[4 + i], (0..4).map(|j| x(i, j + 4) - x(i, j)).sum::<f64>());
        assert_eq!(red[8 + i], 0.0, "join undoes split");
        assert_eq!(red[12 + i], (2..5).map(|j| x(i, j)).sum::<f64>(), "x[:, 2:5]");
    }
    let sw = values(tensor(&r, "sw"));
    let want = tile(1..3, 8..24, |i, j| (i * 32 + j) as f64);
    assert_eq!(sw, want, "buf[1:3, 8:24] of a swizzled buffer");
}

#[test]
fn tile_slices_out_of_range_are_rejected() {
    let bad = MATH.replace("x[:, 2:5]", "x[:, 6:9]");
    let d = rejected(&bad, "6:9");
    let bounds = |d: &&bwsim_isa::Diagnostic| d.code == "view-bounds" && d.message.contains("6:9");
    assert!(d.iter().any(|d| bounds(&d)), "{d:?}");
}

const MASKED: &str = include_str!("tiles/tile_ops/masked.tile");

#[test]
fn masked_global_loads_and_stores() {
    let r = run_ok(MASKED, &[]);
    let want: Vec<f64> = (0..12)
        .map(|i| if i < 10 { 2.0 * i as f64 } else { -6.0 })
        .collect();
    assert_eq!(values(tensor(&r, "b")), want);
}

const PIDS: &str = include_str!("tiles/tile_ops/pids.tile");

#[test]
fn program_ids_cover_the_grid() {
    for seed in 0..3 {
        let r = run_seed(PIDS, &[], seed);
        assert_ok(PIDS, &r);
        let want = tile(0..3, 0..2, |y, x| (x * 100 + y * 10 + 6) as f64);
        assert_eq!(values(tensor(&r, "o")), want);
    }
}

const INDEXED: &str = include_str!("tiles/tile_ops/indexed.tile");

/// `smem.gather`, `smem.scatter` and `smem.atomic` reach the element at each position with the
/// axis' coordinate replaced by the index (hand-computed), atomics returning the old values
/// (in element order: element i of bin i % 8 sees the i / 8 earlier ones) and 0 where masked;
/// the PTX backend lowers the kernel and ptxas assembles it where `BWSIM_CUDA_BIN` is set.
#[test]
fn indexed_shared_memory_accesses() {
    let r = run_ok(INDEXED, &[]);
    let x = |r: usize, c: usize| (r * 8 + c) as f64;
    let g = tile(0..4, 0..8, |r, c| x(r, (3 * c + r) % 8));
    assert_eq!(values(tensor(&r, "go")), g);
    let mut s = vec![0.0; 32];
    for row in 0..4 {
        for c in 0..8 {
            s[row * 8 + (5 * c + 1) % 8] = x(row, c);
        }
    }
    assert_eq!(values(tensor(&r, "so")), s);
    assert_eq!(values(tensor(&r, "cnt")), vec![15.0; 8]);
    let old: Vec<f64> = (0..128)
        .map(|i| if i < 120 { (i / 8) as f64 } else { 0.0 })
        .collect();
    assert_eq!(values(tensor(&r, "old")), old);
}

/// An index past the buffer's extent along the axis is a trap that names it, and an index
/// tile whose other extents differ from the buffer's is a type error.
#[test]
fn indexed_accesses_out_of_range_trap_and_misshapen_indices_are_rejected() {
    let bad = INDEXED.replace("(c * 3 + r) % 8, 1", "(c * 3 + r) % 8 + 1, 1");
    let r = run(&bad, &[]);
    assert!(!r.ok());
    let all = format!("{:?}", r.diagnostics);
    assert!(all.contains("index 8 outside 0..8 along axis 1"), "{all}");
    let bad = INDEXED.replace(
        "smem.gather buf, (c * 3 + r) % 8, 1",
        "smem.gather buf, arange(0, 8, l1), 1",
    );
    rejected(&bad, "along axis 1");
}

const INDEXED_SWIZZLED: &str = include_str!("tiles/tile_ops/indexed_swizzled.tile");

/// Gathers along the columns and along the rows of a swizzled buffer read the elements the
/// indices name, whatever the swizzle does to their addresses (hand-computed).
#[test]
fn indexed_gathers_through_a_swizzle() {
    let r = run_ok(INDEXED_SWIZZLED, &[]);
    let x = |r: usize, c: usize| (r * 32 + c) as f64;
    let want = tile(0..16, 0..32, |r, c| {
        x(r, (7 * c + r) % 32) + 1000.0 * x((5 * r + c) % 16, c)
    });
    assert_eq!(values(tensor(&r, "go")), want);
}
