//! Exploration throughput of the hazard checker, schedules per second with the checker on:
//! - a small gather kernel (the bundled `async_gather`: one CTA, 128 rows gathered by gather4
//!   into shared memory, waited on, read back and stored), one thread and all threads;
//! - a two-CTA tutorial-size matmul (tests/pass/two_cta_matmul.tile: one cluster of two CTAs
//!   computing a [256, 128] f32 tile of C = A @ B from f16 operands, K = 256 in four TMA-loaded
//!   steps of 64 through two stages, `cta_group=2` MMAs issued by the even CTA, remote arrivals
//!   and pair commits), batches of 64 schedules on 2 threads. The claim it checks: such a kernel
//!   checks at 1000 schedules per minute or more on 2 threads. Measured 2026-12-06 on a 2-core
//!   x86-64 machine that other jobs kept busy (load average 4): `thrpt` 45.8 elements (=
//!   schedules) per second, 2,750 schedules per minute; one schedule costs 22 ms of CPU time
//!   (`bwsim check tests/pass/two_cta_matmul.tile --jobs 1`), about 5,400 per minute on two idle
//!   cores. Some 85% of a schedule was then the pair MMAs' arithmetic (`mma::mma_pair`); since
//!   the pair MMAs use the schedules' shared MMA memo too, the same kernel checks 3.3 to 3.7 times
//!   as fast (`bwsim check tests/pass/two_cta_matmul.tile`, debug build, one session, old binary
//!   against new: 3,389 against 11,155 and 12,618 schedules per minute on 2 threads).
//!
//! Global memory in the checker (the launch's shadow of the tensors the program writes,
//! sim/src/check/global.rs) was measured against the binary before it, release builds, one
//! session, alternating old and new, on the same busy 2-core machine (2026-12-06), CPU time
//! (user + system) of `bwsim check FILE --schedules N --jobs 1`:
//! tests/gluon/3.9/matmul_pipelined.sm_100a.ttgir (60 schedules) 1.36 s before, 1.27 s after
//! (0.93x; user time alone 1.02x); kernels/tiles/matmul_pipelined.tile (40) 0.95 s against
//! 0.88 s, persistent_matmul.tile 0.97 s against 1.00 s, matmul_warp_specialized.tile 1.03 s
//! against 1.10 s: at most 1.07x, under the 1.3x budget. The inputs cost nothing (nothing
//! writes them); the output tile's shadow pages are reused across a thread's schedules, and the
//! shared-memory granule list of `CtaHb::smem_access` is filled outside `self` (a codegen change
//! had made that loop 3x slower once the checker grew).
//!
//! The exhaustive search of the warp-specialized elementwise add within one delay (below),
//! measured 2026-12-07 on the same 2-core machine kept busy by other jobs (load average 16):
//! 144 cluster schedules (classes) in 144 runs per search, 289 ms a search, `thrpt` 498
//! classes per second (461 to 539); `... --bench explore -- exhaustive_ws_add`.
//! The search's workload, counted by callgrind (`bwsim check
//! tests/pass/ws_add_wrong_parity_fixed.tile --exhaustive --delays 1 --jobs 1`, the whole
//! command, release builds, 2026-12-07): 924,328,419 instructions before the runs reused the
//! thread's tensor buffers and 923,464,426 after (ratio 0.999): the classes per second are
//! unchanged; the default bound and the thread-independent run limit do not touch this path.
//!
//! `cargo bench -p bwsim-sim --features bench --bench explore` (the matmul alone: `... --bench
//! explore -- explore_two_cta_matmul`)

use bwsim_sim::check::{self, exhaustive};
use bwsim_sim::explore::ExploreOptions;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::sync::atomic::AtomicBool;

const GATHER: &str = include_str!("../../kernels/tiles/async_gather.tile");
const TWO_CTA_MATMUL: &str = include_str!("../../tests/pass/two_cta_matmul.tile");
const WS_ADD_FIXED: &str = include_str!("../../tests/pass/ws_add_wrong_parity_fixed.tile");

fn exploration(c: &mut Criterion) {
    let p = check::prepare(GATHER, &[], None).expect("async_gather prepares");
    let mut g = c.benchmark_group("explore_async_gather");
    g.throughput(Throughput::Elements(1));
    g.bench_function("one_schedule", |b| {
        let mut seed = 0;
        b.iter(|| {
            seed += 1;
            let r = p.run(seed, false);
            assert!(r.diagnostics.is_empty());
        })
    });
    let jobs = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    batches(&mut g, &p, jobs);
    g.finish();
}

/// Batches of 64 schedules of `p` explored on `jobs` threads, in seed order as `bwsim check`
/// runs them; every batch finds nothing.
fn batches(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    p: &check::Prepared,
    jobs: usize,
) {
    const BATCH: u64 = 64;
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function(format!("batch_of_{BATCH}_on_{jobs}_threads"), |b| {
        let mut first = 0;
        b.iter(|| {
            let e = p.explore(
                &ExploreOptions {
                    first_seed: first,
                    schedules: BATCH,
                    jobs,
                    stop_on_first_error: false,
                },
                |_, _| {},
            );
            first += BATCH;
            assert!(e.findings.is_empty(), "{:?}", e.findings);
        })
    });
}

/// Schedules of the two-CTA matmul explored on 2 threads, in batches as `bwsim check` runs them.
fn two_cta_matmul(c: &mut Criterion) {
    let p = check::prepare(TWO_CTA_MATMUL, &[], None).expect("two_cta_matmul prepares");
    let mut g = c.benchmark_group("explore_two_cta_matmul");
    batches(&mut g, &p, 2);
    g.finish();
}

/// The exhaustive search (`bwsim check --exhaustive`) of the warp-specialized elementwise add
/// (tests/pass/ws_add_wrong_parity_fixed.tile: a loader, a consumer and a storer partition
/// over a two-slot ring) within 1 delay on 2 threads: every schedule of the bound per
/// iteration; the throughput is cluster schedules (the classes of interleavings the bound
/// tells apart, one per cluster and run) per second.
fn exhaustive_ws_add(c: &mut Criterion) {
    let p = check::prepare(WS_ADD_FIXED, &[], None).expect("ws_add prepares");
    let opts = exhaustive::Options {
        delays: 1,
        max_schedules: 1_000_000,
        jobs: 2,
        step_budget: None,
    };
    let first = exhaustive::search(&p, &opts, &AtomicBool::new(false), |_| {});
    let classes: u64 = first.cluster_schedules.iter().sum();
    let mut g = c.benchmark_group("exhaustive_ws_add");
    g.throughput(Throughput::Elements(classes));
    g.bench_function(
        format!(
            "{classes}_classes_in_{}_runs_within_1_delay_on_2_threads",
            first.schedules
        ),
        |b| {
            b.iter(|| {
                let s = exhaustive::search(&p, &opts, &AtomicBool::new(false), |_| {});
                assert!(s.complete && s.findings.is_empty(), "{:?}", s.findings);
            })
        },
    );
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = exploration, two_cta_matmul, exhaustive_ws_add
}
criterion_main!(benches);
