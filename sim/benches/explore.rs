//! Exploration throughput of the hazard checker on a small gather kernel (the bundled
//! `async_gather`: one CTA, 128 rows gathered by gather4 into shared memory, waited on, read
//! back and stored): schedules per second with the checker on, one thread and all threads.
//!
//! `cargo bench -p bwsim-sim --bench explore`

use bwsim_sim::check;
use bwsim_sim::explore::ExploreOptions;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const GATHER: &str = include_str!("../../kernels/tiles/async_gather.tile");

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
            assert!(e.findings.is_empty());
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = exploration
}
criterion_main!(benches);
