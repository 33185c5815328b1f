//! Timing-model speed: the seed's warp-specialized persistent matmul at 8192 x 8192 x 16384
//! on GB200's 148 SMs in timing-only mode (2048 tiles x 256 K steps), the attention forward at
//! full size (128 batch-heads, 8192 keys and queries, HEAD_D 128: 8192 CTAs of 128 K/V steps)
//! on GB200, and the seed's 32768 x 32768 warp-specialized elementwise add on H100.
//!
//! `cargo bench -p bwsim-sim --features bench --bench timing` (numbers in docs/timing.md, "Speed").
use bwsim_isa::consts::Override;
use bwsim_sim::chips::{Chip, GB200, H100};
use bwsim_sim::timing::{time_source, TimeOptions};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};

fn src(kernel: &str) -> String {
    let path = format!("{}/../kernels/tiles/{kernel}.tile", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn consts(c: &[(&str, i64)]) -> Vec<Override> {
    c.iter()
        .map(|(n, v)| Override {
            name: n.to_string(),
            value: v.to_string(),
        })
        .collect()
}

/// One benchmark, `name`: the timing model's prediction for `kernel` with constants `c` on
/// `chip`.
fn bench_time(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    kernel: &str,
    c: &[(&str, i64)],
    chip: &Chip,
) {
    let text = src(kernel);
    let o = consts(c);
    let opts = TimeOptions::new(chip);
    g.bench_function(name, |b| {
        b.iter(|| {
            time_source(&text, &o, &opts)
                .map(|t| t.report.cycles)
                .unwrap_or(0.0)
        })
    });
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("timing");
    g.sample_size(10);
    bench_time(
        &mut g,
        "matmul_warp_specialized 8192x8192x16384 gb200",
        "matmul_warp_specialized",
        &[
            ("M", 8192),
            ("N", 8192),
            ("K", 16384),
            ("SCHEDULER", 1),
            ("GROUP_SIZE_M", 8),
        ],
        &GB200,
    );
    bench_time(
        &mut g,
        "attention BH128 N8192 D128 gb200",
        "attention",
        &[("BH", 128), ("N_CTX", 8192), ("HEAD_D", 128)],
        &GB200,
    );
    bench_time(
        &mut g,
        "elementwise_add_ws 32768x32768 h100",
        "elementwise_add_ws",
        &[
            ("XNUMEL", 32768),
            ("YNUMEL", 32768),
            ("XBLOCK", 64),
            ("YBLOCK", 128),
            ("NUM_LOAD_BUFFERS", 3),
            ("NUM_STORE_BUFFERS", 1),
        ],
        &H100,
    );
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
