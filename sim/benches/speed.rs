//! The simulator speed figures a kernel author waits on:
//! - a functional run of `matmul_fused_gather_scatter` at M = N = 1024, K = 2048 (64 CTAs,
//!   2048 tcgen05 MMAs of 128x128x64; the run `bwsim run` does, without the CPU reference and
//!   with every MMA on one thread, where `bwsim run` splits large MMAs over the cores);
//! - one checked schedule of the persistent warp-specialized tcgen05 matmul
//!   (`matmul_warp_specialized` at M = N = K = 256, BLOCK_N = 128, 3 load buffers, one CTA
//!   walking 4 tiles: what `bwsim check ... --jobs 1` repeats, its MMA memo warm after the
//!   first iteration as it is after a check's first schedule);
//! - one checked schedule of `elementwise_add_ws` at its 1000 x 2000 default.
//!
//! Sample sizes are criterion's minimum (10): the fused run alone takes seconds per sample.
//!
//! `cargo bench -p bwsim-sim --bench speed`

use bwsim_isa::consts::Override;
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
    let opts = RunOptions {
        trace: false,
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

criterion_group!(benches, fused_run, checked_schedules);
criterion_main!(benches);
