//! TMA through the simulator: round trips, out-of-bounds boxes at negative and far-out
//! coordinates, the NaN fill pattern, stores that drop out-of-bounds elements, early phase
//! completion when `expect` is short, gather4 and scatter4. Every expected value is computed in
//! the test from the inputs.

mod common;
use common::*;

/// TMA load of a BM x BN tile into shared memory, then a TMA store of it.
const ROUND_TRIP: &str = include_str!("tiles/tma/round_trip.tile");

#[test]
fn round_trip_is_bit_exact() {
    for (bm, bn, n) in [("64", "32", "96"), ("32", "64", "128"), ("16", "16", "48")] {
        let r = run_ok(ROUND_TRIP, &[("BM", bm), ("BN", bn), ("N", n)]);
        assert_eq!(
            bits(tensor(&r, "output")),
            bits(tensor(&r, "input")),
            "BM={bm} BN={bn}"
        );
    }
}

/// One TMA load of a box at (X, Y) of a 20 x 40 tensor, read back through registers.
const OOB: &str = include_str!("tiles/tma/oob.tile");

fn oob_kernel(nan: bool) -> String {
    // `param` cannot sit inside `if`; pick the declaration textually.
    let decl = if nan {
        "param src: tensor_desc(DT[8, 32], nvmma(0), oob=nan)"
    } else {
        "param src: tensor_desc(DT[8, 32], nvmma(0))"
    };
    let start = OOB.find("  if NAN {").expect("template");
    let end = OOB.find("  param out").expect("template");
    format!("{}  {decl}\n{}", &OOB[..start], &OOB[end..])
}

fn expected_box(x: i64, y: i64, fill: impl Fn() -> u64, encode: impl Fn(f64) -> u64) -> Vec<u64> {
    let mut want = Vec::new();
    for i in 0..8i64 {
        for j in 0..32i64 {
            let (gx, gy) = (x + i, y + j);
            want.push(if (0..20).contains(&gx) && (0..40).contains(&gy) {
                encode((gx * 40 + gy) as f64)
            } else {
                fill()
            });
        }
    }
    want
}

#[test]
fn oob_boxes_at_negative_and_far_out_coordinates_fill_zeros() {
    let src = oob_kernel(false);
    for (x, y) in [
        (0, 0),
        (-4, -8),
        (16, 32),
        (-7, 36),
        (100000, 8),
        (3, -1000),
        (-2147483, 2147480),
    ] {
        let (xs, ys) = (x.to_string(), y.to_string());
        let r = run(&src, &[("X", &xs), ("Y", &ys)]);
        assert_ok(&src, &r);
        let want = expected_box(x, y, || 0, |v| (v as f32).to_bits() as u64);
        assert_eq!(bits(tensor(&r, "o")), want, "box at ({x}, {y})");
    }
}

#[test]
fn oob_nan_fill_is_0x7ff7_repeated() {
    let src = oob_kernel(true);
    let r = run(&src, &[("X", "-4"), ("Y", "-8")]);
    assert_ok(&src, &r);
    let o = bits(tensor(&r, "o"));
    assert_eq!(o[0], 0x7FF7_7FF7, "an f32 OOB element reads 0x7FF77FF7");
    assert_eq!(
        o,
        expected_box(-4, -8, || 0x7FF7_7FF7, |v| (v as f32).to_bits() as u64)
    );
    // 16-bit elements read the 16-bit pattern.
    let r = run(&src, &[("X", "-4"), ("Y", "-8"), ("DT", "bf16")]);
    assert_ok(&src, &r);
    let want = expected_box(
        -4,
        -8,
        || 0x7FF7,
        |v| bwsim_isa::numeric::encode(bwsim_isa::DType::BF16, v),
    );
    assert_eq!(bits(tensor(&r, "o")), want);
}

/// A TMA store of a 32x8 box (8 rows of 32) at column 48, row 60 of a 64 x 64 tensor.
const STORE_OOB: &str = include_str!("tiles/tma/store_oob.tile");

#[test]
fn store_writes_only_in_bounds_elements() {
    let r = run_ok(STORE_OOB, &[]);
    let t = values(tensor(&r, "t"));
    let written: Vec<(usize, usize)> = (0..64 * 64)
        .filter(|&i| t[i] == 1.5)
        .map(|i| (i / 64, i % 64))
        .collect();
    assert_eq!(written.len(), 16 * 4, "exactly the 16x4 in-bounds part");
    assert!(written
        .iter()
        .all(|&(r, c)| (60..64).contains(&r) && (48..64).contains(&c)));
    assert_eq!(t.iter().filter(|&&v| v == -1.0).count(), 64 * 64 - 64);
}

/// `expect` smaller than the copy: the phase completes early, the surplus goes negative.
const SHORT_EXPECT: &str = include_str!("tiles/tma/short_expect.tile");

#[test]
fn short_expect_completes_the_phase_early_and_surplus_goes_negative() {
    for seed in 0..8 {
        let r = run_seed(SHORT_EXPECT, &[], seed);
        assert_eq!(
            r.outcome,
            bwsim_sim::Outcome::Completed,
            "{}",
            rendered(SHORT_EXPECT, &r)
        );
        assert!(
            r.diagnostics.iter().any(|d| d.code == "tx-mismatch"),
            "tx-mismatch reported"
        );
        let text = r.trace.render(None);
        assert!(
            text.lines()
                .any(|l| l.contains(" phase bar=") && l.contains("-> 1")),
            "phase 0 completed:\n{text}"
        );
        assert!(
            text.contains("tx=-512"),
            "1024-byte copy on a 512-byte expect leaves -512:\n{text}"
        );
    }
}

/// gather4: rows `x_offsets` of columns `Y_OFFSET..+BLOCK_Y`, OOB rows/columns read zeros.
const GATHER: &str = include_str!("tiles/tma/gather.tile");

#[test]
fn gather_matches_reference() {
    for (dt, y) in [
        ("bf16", "48"),
        ("bf16", "-16"),
        ("f32", "0"),
        ("f32", "80"),
        ("bf16", "1000"),
    ] {
        let c = [("DTYPE", dt), ("Y_OFFSET", y)];
        let r = run(GATHER, &c);
        assert_ok(GATHER, &r);
        let input = tensor(&r, "input");
        let xs = values(tensor(&r, "x_offsets"));
        let y0: i64 = y.parse().expect("int");
        let mut want = Vec::new();
        for &x in &xs {
            for j in 0..64i64 {
                let (x, gy) = (x as i64, y0 + j);
                want.push(if (0..40).contains(&x) && (0..96).contains(&gy) {
                    input.get_bits((x * 96 + gy) as u64)
                } else {
                    0
                });
            }
        }
        assert_eq!(bits(tensor(&r, "out")), want, "DTYPE={dt} Y_OFFSET={y}");
        // tx bytes: BLOCK_X / 4 messages of 4 rows x BLOCK_Y elements.
        let pieces: Vec<_> = r
            .trace
            .events
            .iter()
            .filter(|e| matches!(e.what, bwsim_sim::What::Piece { .. }))
            .collect();
        assert_eq!(pieces.len(), 4, "16 rows = 4 gather4 messages");
    }
}

/// scatter4: out[x_offsets, Y_OFFSET..] = src; rows/columns past the end dropped.
const SCATTER: &str = include_str!("tiles/tma/scatter.tile");

#[test]
fn scatter_matches_reference() {
    let r = run_ok(SCATTER, &[]);
    let xs = values(tensor(&r, "x_offsets"));
    let src = tensor(&r, "src");
    let mut want = vec![0u64; 24 * 40];
    for (i, &x) in xs.iter().enumerate() {
        for j in 0..32usize {
            let (x, gy) = (x as usize, 16 + j);
            if x < 24 && gy < 40 {
                want[x * 40 + gy] = src.get_bits((i * 32 + j) as u64);
            }
        }
    }
    assert_eq!(bits(tensor(&r, "input")), want);
}

/// A rank-3 load: a [2, 4, 16] box at (1, -1, 8) of a [3, 5, 24] tensor.
const RANK3: &str = include_str!("tiles/tma/rank3.tile");

#[test]
fn rank3_box_with_oob_dims() {
    let r = run_ok(RANK3, &[]);
    let mut want = Vec::new();
    for i in 0..2i64 {
        for j in 0..4i64 {
            for k in 0..16i64 {
                let (a, b, c) = (1 + i, -1 + j, 8 + k);
                let inb = (0..3).contains(&a) && (0..5).contains(&b) && (0..24).contains(&c);
                want.push(if inb { (a * 120 + b * 24 + c) as f64 } else { 0.0 });
            }
        }
    }
    assert_eq!(values(tensor(&r, "o")), want);
}

/// A copy whose buffer's piece is not the descriptor's box runs as the hardware runs it
/// (docs/hardware/tma-messages.md): a `[64, 64]` buffer loaded through a descriptor whose box is
/// `[128, 64]` is one message, and that message moves all 128 rows from the buffer's first byte,
/// the second half into the next ring slot. The verifier's `tma-buffer-box` is reported with the
/// run, which completes (the `expect` is the 16384 bytes the message delivers).
const PIECE_NOT_BOX: &str = include_str!("tiles/tma/piece_not_box.tile");

#[test]
fn a_piece_that_is_not_the_box_moves_the_whole_box_from_the_piece() {
    let r = run(PIECE_NOT_BOX, &[]);
    assert_eq!(
        r.outcome,
        bwsim_sim::Outcome::Completed,
        "{}",
        rendered(PIECE_NOT_BOX, &r)
    );
    let codes: Vec<&str> = (r.diagnostics.iter())
        .filter(|d| d.is_error())
        .map(|d| d.code.as_str())
        .collect();
    assert_eq!(codes, ["tma-buffer-box"], "{}", rendered(PIECE_NOT_BOX, &r));
    assert_eq!(bits(tensor(&r, "o")), bits(tensor(&r, "a")));
}

/// tests/fail/tma_dtype_race.tile: an f32 buffer stored through an f16 descriptor, and
/// overwritten before `tma.store_wait`.
fn dtype_race_src() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fail/tma_dtype_race.tile"
    ))
    .expect("tests/fail/tma_dtype_race.tile")
}

/// One check reports everything: the element-type mismatch (`tma-dtype`, a verifier error
/// whose hardware behaviour is defined) does not stop the analysis, so the overwrite of the
/// buffer the store may still read (`write-while-in-flight`) is reported in the same pass.
#[test]
fn a_tma_dtype_mismatch_is_reported_together_with_the_race() {
    let src = dtype_race_src();
    let p = bwsim_sim::check::prepare(&src, &[], None).unwrap_or_else(|d| {
        panic!(
            "the check stops:\n{}",
            bwsim_isa::diag::render(&d, &bwsim_isa::SourceFile::new("t.tile", src.clone()))
        )
    });
    let e = p.explore(
        &bwsim_sim::explore::ExploreOptions {
            first_seed: 0,
            schedules: 4,
            jobs: 1,
            stop_on_first_error: false,
        },
        |_, _| {},
    );
    let codes: std::collections::BTreeSet<&str> = (e.findings.iter())
        .filter(|f| f.diagnostic.is_error())
        .map(|f| f.diagnostic.code.as_str())
        .collect();
    assert_eq!(
        codes,
        ["tma-dtype", "write-while-in-flight"].into_iter().collect(),
        "{:?}",
        e.findings
            .iter()
            .map(|f| &f.diagnostic.message)
            .collect::<Vec<_>>()
    );
}

/// What the hardware does with that store: the f16 box [64, 64] (64 rows of 128 bytes) moved from
/// the f32 buffer's first byte. Under the 128-byte swizzle an f32 row of 64 elements is two
/// column blocks of 32 (8 KiB each), and the swizzle permutes the same 16-byte chunks of each
/// 128-byte row for both views, so f16 element (R, C) is the low (C even) or high (C odd) half
/// of f32 element (R, C / 2): of `a`, or of `a + a` where the racing overwrite landed first.
#[test]
fn a_tma_dtype_mismatch_moves_the_descriptors_type_from_the_buffer() {
    let src = dtype_race_src();
    let r = run(&src, &[]);
    assert_eq!(r.outcome, bwsim_sim::Outcome::Completed, "{}", rendered(&src, &r));
    assert!(
        r.diagnostics.iter().any(|d| d.code == "tma-dtype"),
        "{}",
        rendered(&src, &r)
    );
    let a = bits(tensor(&r, "a"));
    let out = bits(tensor(&r, "out"));
    let half = |v: u32, hi: bool| if hi { v >> 16 } else { v & 0xffff } as u64;
    for (i, &got) in out.iter().enumerate() {
        let (row, col) = (i / 64, i % 64);
        let x = a[row * 64 + col / 2] as u32;
        let twice = (f32::from_bits(x) * 2.0).to_bits();
        let hi = col % 2 == 1;
        assert!(
            got == half(x, hi) || got == half(twice, hi),
            "out[{row}, {col}] = {got:#06x}, a = {x:#010x}"
        );
    }
}

const STORE_REDUCE: &str = include_str!("tiles/tma/store_reduce.tile");

/// `tma.store ..., reduce=OP` combines each element into global memory (PTX
/// `cp.reduce.async.bulk.tensor`): `add` sums with the old value, `max` keeps the larger
/// (signed); the element type's table refuses `max` of f32 and an unknown reduction.
#[test]
fn reducing_stores_combine_into_global_memory() {
    let r = run_ok(STORE_REDUCE, &[]);
    let t = values(tensor(&r, "t"));
    for (i, &got) in t.iter().enumerate() {
        let v = ((i % 256) as f64) - 100.0;
        let want = if i < 256 { 5.0 + v } else { v.max(5.0) };
        assert_eq!(got, want, "element {i}");
    }
    for (from, to, says) in [
        (
            "i32[8, 32], nvmma(128))",
            "f32[8, 32], nvmma(128))",
            "no `cp.reduce.async.bulk.tensor` `.max` of f32",
        ),
        ("reduce=add", "reduce=mul", "a TMA reduction is one of"),
    ] {
        let mut bad = STORE_REDUCE.replace(from, to);
        if from.starts_with("i32") {
            bad = bad
                .replace("smem.alloc i32", "smem.alloc f32")
                .replace(
                    "smem.store buf, r * 32 + c - 100",
                    "smem.store buf, cast(r * 32 + c - 100, f32)",
                )
                .replace("t: i32[16, 32]", "t: f32[16, 32]");
        }
        rejected(&bad, says);
    }
}

/// Descriptors built in the kernel (`tma.make_desc`): a load through a map with its own base,
/// dimensions and row stride, stored through a second map.
const DEVICE_DESC: &str = include_str!("tiles/tma/device_desc.tile");

#[test]
fn device_built_descriptors_copy_their_own_rows_and_columns() {
    for (row0, rows, col0) in [(8i64, 24i64, 4i64), (0, 32, 0), (16, 10, 32)] {
        let (r0, n, c0) = (row0.to_string(), rows.to_string(), col0.to_string());
        let r = run_ok(DEVICE_DESC, &[("ROW0", &r0), ("ROWS", &n), ("COL0", &c0)]);
        // out[ROW0 + i, j] = x[ROW0 + i, COL0 + j] for the map's rows and the block's 32
        // columns (x is iota: element k holds k); everything else keeps its zero.
        let mut want = vec![0u64; 40 * 64];
        for i in 0..rows.min(32) {
            for j in 0..32 {
                let v = ((row0 + i) * 64 + col0 + j) as f32;
                want[((row0 + i) * 64 + j) as usize] = v.to_bits() as u64;
            }
        }
        assert_eq!(bits(tensor(&r, "o")), want, "ROW0={row0} ROWS={rows} COL0={col0}");
    }
}

#[test]
fn device_built_descriptor_faults() {
    // A base 8 bytes into a row: `tensormap.replace` takes 16-byte aligned addresses only.
    let r = run(DEVICE_DESC, &[("COL0", "2")]);
    let t = r.trap.as_ref().expect("a misaligned base traps");
    assert_eq!(t.error, bwsim_sim::CudaError::IllegalInstruction, "{}", t.reason);
    assert!(t.reason.contains("not 16-byte aligned"), "{}", t.reason);
    // 24 rows from row 20 of a 40-row tensor: past its end.
    let r = run(DEVICE_DESC, &[("ROW0", "20")]);
    let t = r.trap.as_ref().expect("a map past its tensor traps");
    assert_eq!(t.error, bwsim_sim::CudaError::IllegalAddress, "{}", t.reason);
    assert!(
        t.reason.contains("reaches past the end of tensor `t`"),
        "{}",
        t.reason
    );
}
