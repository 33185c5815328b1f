//! The tensor-core model against outputs recorded on an H100: every dot product of six
//! wgmma instructions per input type (f16, bf16, e4m3, e5m2, tf32; 3,072 each), bit for bit;
//! of nine or twelve per input type into an f16 accumulator (f16, e4m3, e5m2), of three mixed
//! e4m3 x e5m2 into f32 and of two s8 x u8 into s32.
//!
//! The data (`tests/data/wgmma-h100/*.bin`) is an excerpt of the probe of
//! docs/hardware/wgmma-numerics.md (f32 set: its tests 2 to 7: wide exponent spreads,
//! cancellation, one large product among small ones, an accumulator far above the products,
//! `use_acc` off; `ext` set: tests 2 to 10, every category including the rounding ties, and for
//! e5m2 tests 115, 241 and 313, whose subnormal accumulators decide the reference exponent).
//! Per test, u32 words: use_acc, A [64, K] element bits, B [K, 8] element bits (row-major),
//! C [64, 8] bits, D [64, 8] bits as the H100 returned them (f16 in the low half of a word).
//! K is one instruction's.

use bwsim_isa::types::DType;
use bwsim_sim::mma_numerics::{self, Arith, BlockFma, HOPPER};
use bwsim_sim::value::bits_to_f64;

fn words(name: &str) -> Vec<u32> {
    let path = format!("{}/tests/data/wgmma-h100/{name}.bin", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// One test of a probe file: `use_acc`, then A, B, C and D (see the module doc).
struct Record<'w> {
    use_acc: bool,
    a: &'w [u32],
    b: &'w [u32],
    c: &'w [u32],
    d: &'w [u32],
}

/// The tests in the words `w` of probe file `name`, for an instruction of depth `k`.
fn records<'w>(w: &'w [u32], name: &str, k: usize) -> Vec<Record<'w>> {
    let per = 1 + 64 * k + k * 8 + 512 + 512;
    assert_eq!(w.len() % per, 0, "{name}: truncated data");
    w.chunks_exact(per)
        .map(|rec| {
            let (a, rest) = rec[1..].split_at(64 * k);
            let (b, rest) = rest.split_at(8 * k);
            let (c, d) = rest.split_at(512);
            Record {
                use_acc: rec[0] != 0,
                a,
                b,
                c,
                d,
            }
        })
        .collect()
}

/// An operand as the tensor core reads it (tf32: the low 13 bits of the f32 are ignored).
fn operand(dtype: DType, bits: u32) -> f64 {
    match dtype {
        DType::TF32 => f32::from_bits(bits & !0x1fff) as f64,
        d => bits_to_f64(d, bits as u64),
    }
}

struct Outcome {
    checked: usize,
    wrong: Vec<String>,
    /// Outputs where a plain f32 fold (products added in order, rounded to nearest) differs.
    plain_differs: usize,
}

fn check(name: &str, dtype: DType, k: usize, arith: &Arith) -> Outcome {
    let w = words(name);
    let p: BlockFma = arith.block_for(dtype).expect("a block model");
    let mut out = Outcome {
        checked: 0,
        wrong: vec![],
        plain_differs: 0,
    };
    for (t, Record { use_acc, a, b, c, d }) in records(&w, name, k).into_iter().enumerate() {
        for i in 0..64 {
            for j in 0..8 {
                let row: Vec<f64> = (0..k).map(|kk| operand(dtype, a[i * k + kk])).collect();
                let col: Vec<f64> = (0..k).map(|kk| operand(dtype, b[kk * 8 + j])).collect();
                let acc = f32::from_bits(c[i * 8 + j]);
                let (ra, cb) = (mma_numerics::operands(&row), mma_numerics::operands(&col));
                let got = mma_numerics::chain(&ra, &cb, k, acc, use_acc, p);
                let want = d[i * 8 + j];
                out.checked += 1;
                if got.to_bits() != want && out.wrong.len() < 5 {
                    out.wrong.push(format!(
                        "test {t} D[{i}][{j}]: model {:#010x} ({got:e}), H100 {want:#010x} ({:e})",
                        got.to_bits(),
                        f32::from_bits(want)
                    ));
                } else if got.to_bits() != want {
                    out.wrong.push(String::new());
                }
                let plain = row
                    .iter()
                    .zip(&col)
                    .fold(if use_acc { acc } else { 0.0 }, |s, (x, y)| s + (x * y) as f32);
                if plain.to_bits() != want {
                    out.plain_differs += 1;
                }
            }
        }
    }
    out
}

fn exact(name: &str, dtype: DType, k: usize) {
    let o = check(name, dtype, k, &HOPPER);
    assert_eq!(o.checked, 6 * 512, "{name}");
    assert!(
        o.wrong.is_empty(),
        "{name}: {} of {} outputs differ from the H100:\n{}",
        o.wrong.len(),
        o.checked,
        o.wrong.join("\n")
    );
    // The data distinguishes the model from plain f32 arithmetic.
    assert!(o.plain_differs > o.checked / 10, "{name}: {}", o.plain_differs);
}

/// One test per input type: `$test` checks `exact($name, DType::$dtype, $k)`.
macro_rules! matches_the_h100 {
    ($($test:ident: $name:literal, $dtype:ident, $k:literal;)*) => {
        $(
            #[test]
            fn $test() {
                exact($name, DType::$dtype, $k);
            }
        )*
    };
}

matches_the_h100! {
    f16_matches_the_h100: "f16", F16, 16;
    bf16_matches_the_h100: "bf16", BF16, 16;
    e4m3_matches_the_h100: "e4m3", F8E4M3, 32;
    e5m2_matches_the_h100: "e5m2", F8E5M2, 32;
    tf32_matches_the_h100: "tf32", TF32, 8;
}

#[test]
fn neighbouring_parameters_do_not() {
    // One more or one fewer alignment bit, or fp8 results at f32 width, each miss outputs.
    let tweak = |half: u32, narrow: (u32, u32)| Arith::Block {
        half: BlockFma {
            align_bits: half,
            result_bits: 24,
        },
        tf32: BlockFma {
            align_bits: half,
            result_bits: 24,
        },
        narrow: BlockFma {
            align_bits: narrow.0,
            result_bits: narrow.1,
        },
    };
    for arith in [tweak(24, (13, 14)), tweak(26, (13, 14))] {
        assert!(!check("f16", DType::F16, 16, &arith).wrong.is_empty());
        assert!(!check("bf16", DType::BF16, 16, &arith).wrong.is_empty());
    }
    for arith in [tweak(25, (12, 14)), tweak(25, (14, 14)), tweak(25, (13, 24))] {
        assert!(!check("e4m3", DType::F8E4M3, 32, &arith).wrong.is_empty());
    }
}

/// Every dot product of one file of the probe's `ext` set: `model(row, col, c bits, use_acc)`
/// against the H100's D bits; returns (checked, mismatches described).
fn check_ext(
    name: &str,
    (adt, bdt): (DType, DType),
    k: usize,
    model: impl Fn(&[f64], &[f64], u32, bool) -> u32,
) -> (usize, Vec<String>) {
    let w = words(name);
    let (mut checked, mut wrong) = (0, Vec::new());
    for (t, Record { use_acc, a, b, c, d }) in records(&w, name, k).into_iter().enumerate() {
        for i in 0..64 {
            for j in 0..8 {
                let row: Vec<f64> = (0..k).map(|kk| operand(adt, a[i * k + kk])).collect();
                let col: Vec<f64> = (0..k).map(|kk| operand(bdt, b[kk * 8 + j])).collect();
                let got = model(&row, &col, c[i * 8 + j], use_acc);
                checked += 1;
                if got != d[i * 8 + j] {
                    wrong.push(format!(
                        "test {t} D[{i}][{j}]: model {got:#x}, H100 {:#x}",
                        d[i * 8 + j]
                    ));
                }
            }
        }
    }
    (checked, wrong)
}

/// The f16-accumulator step with `align_bits`, over one instruction.
fn f16_step(align_bits: u32) -> impl Fn(&[f64], &[f64], u32, bool) -> u32 {
    move |row, col, c, use_acc| {
        let (ra, cb) = (mma_numerics::operands(row), mma_numerics::operands(col));
        mma_numerics::chain_f16(&ra, &cb, row.len(), c as u16, use_acc, align_bits) as u32
    }
}

#[test]
fn f16_accumulators_match_the_h100() {
    for (name, dtype, k, tests) in [
        ("f16_f16acc", DType::F16, 16, 9),
        ("e4m3_f16acc", DType::F8E4M3, 32, 9),
        ("e5m2_f16acc", DType::F8E5M2, 32, 12),
    ] {
        let align = HOPPER.block_for(dtype).expect("a block model").align_bits;
        let (checked, wrong) = check_ext(name, (dtype, dtype), k, f16_step(align));
        assert_eq!(checked, tests * 512, "{name}");
        assert!(
            wrong.is_empty(),
            "{name}: {} of {checked} differ from the H100:\n{}",
            wrong.len(),
            wrong[..wrong.len().min(5)].join("\n")
        );
        // One alignment bit fewer misses outputs; so does the exact sum rounded once to f16
        // (no cut), and the f32 accumulator's sum first cut to 24 bits (the rounding ties).
        let (_, fewer) = check_ext(name, (dtype, dtype), k, f16_step(align - 1));
        assert!(!fewer.is_empty(), "{name}: align {} fits too", align - 1);
        let exact = |row: &[f64], col: &[f64], c: u32, use_acc: bool| {
            let s: f64 = row.iter().zip(col).map(|(x, y)| x * y).sum::<f64>()
                + if use_acc {
                    half::f16::from_bits(c as u16).to_f64()
                } else {
                    0.0
                };
            half::f16::from_f64(s).to_bits() as u32
        };
        assert!(
            !check_ext(name, (dtype, dtype), k, exact).1.is_empty(),
            "{name}: exact fits"
        );
        let via_f32 = |row: &[f64], col: &[f64], c: u32, use_acc: bool| {
            let (ra, cb) = (mma_numerics::operands(row), mma_numerics::operands(col));
            let p = BlockFma {
                align_bits: align,
                result_bits: 24,
            };
            let acc = half::f16::from_bits(c as u16).to_f32();
            half::f16::from_f32(mma_numerics::chain(&ra, &cb, row.len(), acc, use_acc, p)).to_bits() as u32
        };
        if dtype == DType::F16 {
            assert!(
                !check_ext(name, (dtype, dtype), k, via_f32).1.is_empty(),
                "{name}: via f32 fits"
            );
        }
    }
}

#[test]
fn mixed_fp8_into_f32_matches_the_h100() {
    let p = HOPPER.block_for(DType::F8E4M3).expect("a block model");
    let model = |row: &[f64], col: &[f64], c: u32, use_acc: bool| {
        let (ra, cb) = (mma_numerics::operands(row), mma_numerics::operands(col));
        mma_numerics::chain(&ra, &cb, row.len(), f32::from_bits(c), use_acc, p).to_bits()
    };
    let (checked, wrong) = check_ext("e4m3_e5m2", (DType::F8E4M3, DType::F8E5M2), 32, model);
    assert_eq!(checked, 3 * 512);
    assert!(wrong.is_empty(), "{}", wrong[..wrong.len().min(5)].join("\n"));
}

#[test]
fn integer_accumulators_wrap_as_on_the_h100() {
    // s8 x u8 into s32 near INT_MAX and INT_MIN: the exact sum modulo 2^32, no saturation.
    let wrapped = std::cell::Cell::new(0);
    let model = |row: &[f64], col: &[f64], c: u32, use_acc: bool| {
        let s: i64 = row.iter().zip(col).map(|(x, y)| (x * y) as i64).sum::<i64>()
            + if use_acc { c as i32 as i64 } else { 0 };
        if i32::try_from(s).is_err() {
            wrapped.set(wrapped.get() + 1);
        }
        s as u32
    };
    let (checked, wrong) = check_ext("s8_u8", (DType::I8, DType::U8), 32, model);
    assert_eq!(checked, 2 * 512);
    assert!(wrong.is_empty(), "{}", wrong[..wrong.len().min(5)].join("\n"));
    assert!(wrapped.get() > 0, "the excerpt wraps");
}

mod common;

/// The fp8 matmul of the differential suite (a copy: A [M, K], B stored [N, K], f32 out).
const MATMUL_FP8: &str = include_str!("data/wgmma-h100/matmul_fp8.tile");

fn matmul_fp8(dtype: &str, k: &str, mma: bwsim_sim::mma_numerics::MmaNumerics) -> Vec<u32> {
    let r = common::run_opts(
        MATMUL_FP8,
        &[("DTYPE", dtype), ("K", k)],
        None,
        &bwsim_sim::RunOptions {
            seed: 3,
            mma,
            ..Default::default()
        },
    );
    common::assert_ok(MATMUL_FP8, &r);
    let c = r.tensor("c").expect("output c");
    (0..c.numel()).map(|i| c.get_bits(i) as u32).collect()
}

#[test]
fn the_simulator_runs_wgmma_through_the_model_and_run_options_switch_it() {
    use bwsim_sim::mma_numerics::MmaNumerics;
    let default = matmul_fp8("f8e4m3", "512", MmaNumerics::default());
    let hopper = matmul_fp8(
        "f8e4m3",
        "512",
        MmaNumerics {
            wgmma: HOPPER,
            ..MmaNumerics::default()
        },
    );
    let wide = matmul_fp8(
        "f8e4m3",
        "512",
        MmaNumerics {
            wgmma: Arith::Wide,
            ..MmaNumerics::default()
        },
    );
    assert_eq!(default, hopper, "wgmma defaults to the measured model");
    // Every fp8 result carries at most 13 fraction bits (sixteen k32 steps per element, each
    // cut to 14 significant bits); the exact sum has more in most elements.
    let short = |v: &[u32]| v.iter().filter(|b| *b & 0x3ff == 0).count();
    assert_eq!(short(&hopper), hopper.len());
    assert!(
        short(&wide) < wide.len() / 2,
        "{} of {}",
        short(&wide),
        wide.len()
    );
    // The two agree to the model's precision: partial sums stay below 2^7 here, so each of
    // the sixteen steps loses less than 33 units of 2^(7 - 13).
    for (h, w) in hopper.iter().zip(&wide) {
        let (h, w) = (f32::from_bits(*h) as f64, f32::from_bits(*w) as f64);
        assert!((h - w).abs() <= 16.0 * 33.0 * 2f64.powi(-6), "{h} vs {w}");
    }
    assert!(hopper != wide);
}
