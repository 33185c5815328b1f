//! The simulator speed figures a kernel author waits on:
//! - a functional run of `matmul_fused_gather_scatter` at M = N = 1024, K = 2048 (64 CTAs,
//!   2048 tcgen05 MMAs of 128x128x64; the run `bwsim run` does, without the CPU reference and
//!   with every MMA on one thread, where `bwsim run` splits large MMAs over the cores);
//! - one checked schedule of the persistent warp-specialized tcgen05 matmul
//!   (`matmul_warp_specialized` at M = N = K = 256, BLOCK_N = 128, 3 load buffers, one CTA
//!   walking 4 tiles: what `bwsim check ... --jobs 1` repeats, its MMA memo warm after the
//!   first iteration as it is after a check's first schedule);
//! - one checked schedule of `elementwise_add_ws` at its 1000 x 2000 default;
//! - the block-FMA arithmetic of one 128x128x64 bf16 tcgen05 MMA (f32 accumulator, four
//!   k16 steps per element) by the packed chain (4 columns at a time) and by the narrow chain
//!   (a panel of columns at a time), the same bits, no memory or operand decoding.
//!
//! Sample sizes are criterion's minimum (10): the fused run alone takes seconds per sample.
//!
//! `cargo bench -p bwsim-sim --features bench --bench speed`

use bwsim_isa::consts::Override;
use bwsim_sim::mma_narrow::{self, NarrowPanels, NarrowRows};
use bwsim_sim::mma_numerics::{self, PackedLines, BLACKWELL_ASSUMED};
use bwsim_sim::{check, Outcome, RunOptions};
use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

const FUSED: &str = include_str!("../../kernels/tiles/matmul_fused_gather_scatter.tile");
const WS_MATMUL: &str = include_str!("../../kernels/tiles/matmul_warp_specialized.tile");
const WS_ADD: &str = include_str!("../../kernels/tiles/elementwise_add_ws.tile");

fn consts(pairs: &[(&str, u32)]) -> Vec<Override> {
    pairs
        .iter()
        .map(|(name, value)| Override {
            name: name.to_string(),
            value: value.to_string(),
        })
        .collect()
}

fn fused_run(c: &mut Criterion) {
    let overrides = consts(&[("M", 1024), ("N", 1024), ("K", 2048)]);
    // As `bwsim run` executes it: large MMAs split over the cores and computed ahead.
    let opts = RunOptions {
        trace: false,
        mma_exec: bwsim_sim::mma::MmaExec {
            memo: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ahead: true,
        },
        ..RunOptions::default()
    };
    let mut g = c.benchmark_group("speed");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("fused_gather_scatter_run_1024x1024x2048", |b| {
        b.iter(|| {
            let r = bwsim_sim::run_source_with(FUSED, &overrides, None, &opts).expect("kernel runs");
            assert_eq!(r.outcome, Outcome::Completed);
        })
    });
    g.finish();
}

fn checked_schedules(c: &mut Criterion) {
    let ws = consts(&[
        ("M", 256),
        ("N", 256),
        ("K", 256),
        ("BLOCK_N", 128),
        ("NUM_BUFFERS", 3),
        ("NUM_SMS", 1),
    ]);
    let mut g = c.benchmark_group("speed");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for (name, src, overrides) in [
        ("ws_tcgen05_matmul_check_one_schedule", WS_MATMUL, ws),
        ("elementwise_add_ws_check_one_schedule", WS_ADD, Vec::new()),
    ] {
        let p = check::prepare(src, &overrides, None).expect("kernel prepares");
        g.bench_function(name, |b| {
            let mut seed = 0;
            b.iter(|| {
                seed += 1;
                let r = p.run(seed, false);
                assert!(r.diagnostics.is_empty(), "{name}: {:?}", r.diagnostics);
            })
        });
    }
    g.finish();
}

fn mma_arithmetic(c: &mut Criterion) {
    let (m, n, k) = (128, 128, 64);
    let p = BLACKWELL_ASSUMED
        .block_for(bwsim_isa::types::DType::BF16)
        .expect("bf16 takes the block FMA");
    // bf16 values from a fixed LCG: 8 significant bits, exponents within [-8, 3], zeros.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut value = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1442695040888963407);
        let r = state >> 32;
        let mantissa = (r & 0xff) as f64 - 128.0;
        mantissa * 2f64.powi((r >> 8) as i32 % 12 - 15)
    };
    let a: Vec<f64> = (0..m * k).map(|_| value()).collect();
    let bt: Vec<f64> = (0..n * k).map(|_| value()).collect();
    let acc: Vec<f32> = (0..m * n).map(|_| value() as f32).collect();
    let (pa, pb) = (PackedLines::new(&a, m, k), PackedLines::new(&bt, n, k));
    let (na, nb) = (NarrowRows::new(&a, m, k), NarrowPanels::new(&bt, n, k));
    let (oa, ob) = (mma_numerics::operands(&a), mma_numerics::operands(&bt));
    let packed = || {
        let mut out = Vec::with_capacity(m * n);
        for i in 0..m {
            let row = pa.line(i).expect("packed row");
            for j in (0..n).step_by(4) {
                let cols = std::array::from_fn(|w| pb.line(j + w).expect("packed column"));
                let acc = std::array::from_fn(|w| acc[i * n + j + w]);
                out.extend(mma_numerics::chain_packed_cols::<4>(row, cols, 16, acc, true, p));
            }
        }
        out
    };
    let narrow = || {
        let mut out = Vec::with_capacity(m * n);
        for i in 0..m {
            let row = na.row(i).expect("narrow row");
            for j in (0..n).step_by(mma_narrow::COLS) {
                let panel = nb.panel(j / mma_narrow::COLS).expect("narrow panel");
                let acc = std::array::from_fn(|w| acc[i * n + j + w]);
                // Not taken with these operands (no subnormal results): the reference step.
                let general = |w: usize, r: std::ops::Range<usize>, c: Option<f32>| {
                    let col = &ob[(j + w) * k..(j + w + 1) * k];
                    mma_numerics::block_step(&oa[i * k..(i + 1) * k][r.clone()], &col[r], c, p)
                };
                out.extend(mma_narrow::chain_cols(row, panel, 16, acc, true, p, general));
            }
        }
        out
    };
    let (x, y) = (packed(), narrow());
    assert!(
        x.iter().zip(&y).all(|(x, y)| x.to_bits() == y.to_bits()),
        "the same bits"
    );
    let mut g = c.benchmark_group("speed");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    g.bench_function("mma_128x128x64_bf16_packed_chain", |b| b.iter(packed));
    g.bench_function("mma_128x128x64_bf16_narrow_chain", |b| b.iter(narrow));
    g.finish();
}

criterion_group!(benches, fused_run, checked_schedules, mma_arithmetic);
criterion_main!(benches);
