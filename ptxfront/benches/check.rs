//! Checking throughput of the PTX front end's machine on a tutorial-size `tcgen05` matmul: the
//! CuTe DSL's PTX of CUTLASS's Blackwell dense GEMM (tests/fixtures/cute-dsl-4.8.1: one CTA of
//! 128 threads, a 128 x 128 f32 accumulator in tensor memory from f16 operands, K = 64 in four
//! MMAs, TMA loads and stores, mbarriers), 200 schedules with the hazard checker on 2 threads
//! (`machine::check_jobs`). The claim it checks: such a kernel checks 200 schedules in 10 s or
//! less on 2 threads. Measured 2026-12-07 on a 2-core x86-64 machine that other jobs kept busy
//! (load average 10): one iteration of 200 schedules cost 5.7 s of CPU time (user), 15 s of
//! wall time shared with those jobs, so about 3 s on two idle cores (`--profile-time 1` under
//! `/usr/bin/time`); criterion's estimate on the same busy machine (load average 8 to 10):
//! 11.3 s [10.1 s, 12.5 s] per 200 schedules. Since a warp step's shared-memory accesses are
//! recorded one access per instruction (`machine::record_generic`; before, one per element,
//! each granule a shadow state of its own, which the TMA store of C then walked granule by
//! granule): 3.2 s of CPU time against 5.3 s for the build before, measured in one run
//! alternating the two (2026-12-07, the same busy 2-core machine, load average 24; one
//! iteration each under `/usr/bin/time`, `--profile-time 1`), a ratio of 0.60.
//! On the same machine idle (load average under 1, 2026-12-07), criterion's estimate is 1.80 s
//! [1.74 s, 1.88 s] per 200 schedules on 2 threads.
//!
//! `cargo bench -p bwsim-ptxfront --features bench --bench check`

#[path = "../tests/cute/mod.rs"]
mod cute;

use bwsim_ptxfront::machine;
use criterion::{criterion_group, criterion_main, Criterion};

fn check_200(c: &mut Criterion) {
    let src = cute::fixture();
    let (p, l, bufs) = cute::gemm_launch(&src);
    let mut g = c.benchmark_group("check_cute_dsl_gemm");
    g.sample_size(10);
    g.bench_function("200_schedules_2_threads", |b| {
        b.iter(|| {
            let f = machine::check_jobs(&p, &l, &bufs, 200, 2).expect("runs");
            assert!(f.is_empty());
        })
    });
    g.finish();
}

criterion_group!(benches, check_200);
criterion_main!(benches);
