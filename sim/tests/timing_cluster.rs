//! The timing model's clusters end to end, each value worked out by hand from the chip table and
//! the cost rules: a cluster's CTAs start together on SMs of one GPC and its slots free when the
//! last retires; a pair (`cta_group::2`) MMA keeps both SMs' tensor pipes busy for the time of one
//! CTA's M = 128 MMA; a multicast TMA load reads global memory once and lands in every CTA of its
//! mask, and a pair load (`bar_cta`) completes on the leader's barrier; a remote arrival, and a
//! multicast commit's arrival in another CTA, reach the peer's barrier the DSMEM latency after
//! their issue; the cluster barrier holds the faster CTAs until the slowest arrives.

mod common;

use bwsim_sim::chips::Chip;
use bwsim_sim::timing::cost::{self, MmaKind};
use bwsim_sim::timing::{time_source, TEvent, TUnit, TWhat, TimeOptions, Timing, TraceMode};
use common::{overrides, time_with};

/// The Blackwell figures of tests/timing.rs's hand computations: the rules are under test
/// here, not the table.
const B200: Chip = common::B200_HAND;

/// One 8 KiB box from HBM on [`B200`]: 840 cycles to the first byte, 8192 B / 128 B per cycle
/// through the SM's port; its waiter wakes `mbarrier_latency` = 40 later.
const BOX_LANDS: f64 = 840.0 + 64.0;
const WAKE: f64 = 40.0;
/// The cluster barrier's cross-SM cost (with `bar_sync_cycles` at 0).
const CLUSTER_BARRIER: f64 = cost::CLUSTER_BARRIER_EXTRA_CYCLES;

fn tile(dir: &str, name: &str) -> String {
    let path = format!("{}/{dir}/{name}.tile", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `quiet(base)`, traced.
fn quiet(base: &Chip) -> TimeOptions {
    let mut o = common::quiet(base);
    o.trace = TraceMode::All;
    o
}

fn events(t: &Timing) -> &[TEvent] {
    &t.trace.as_ref().expect("traced").events
}

/// When CTA `cta` started and ended, and on which SM.
fn cta_span(t: &Timing, cta: u32) -> (f64, f64, u32) {
    let at = |w: TWhat| {
        events(t)
            .iter()
            .find(|e| e.cta == cta && e.unit == TUnit::Cta && e.what == w)
            .unwrap_or_else(|| panic!("CTA {cta} has no {w:?}"))
    };
    let (s, e) = (at(TWhat::CtaStart), at(TWhat::CtaEnd));
    (s.t, e.t, s.sm)
}

/// When each wait of `op` that blocked in CTA `cta` went on.
fn waited(t: &Timing, cta: u32, op: &str) -> Vec<f64> {
    events(t)
        .iter()
        .filter(|e| e.cta == cta && matches!(e.what, TWhat::Waited { op: o, .. } if o == op))
        .map(|e| e.t)
        .collect()
}

#[test]
fn a_clusters_ctas_start_together_on_different_sms() {
    let t = time_with(&tile("tests/tiles/timing", "cluster_waves"), &[], &quiet(&B200));
    let (s0, e0, sm0) = cta_span(&t, 0);
    let (s1, e1, sm1) = cta_span(&t, 1);
    assert_eq!((s0, s1), (0.0, 0.0));
    assert_ne!(sm0, sm1);
    // Both in the first GPC (SMs 0..20 of the B200 table).
    assert!(sm0 < 20 && sm1 < 20, "{sm0} {sm1}");
    // Each loads its own box: both land together.
    assert_eq!((e0, e1), (BOX_LANDS + WAKE, BOX_LANDS + WAKE));
}

/// 8 CTAs in clusters of two, one CTA per SM (BIG), on a chip of the given GPCs: each wave
/// takes one box's round trip (944 cycles) and the next cluster starts 500 after one retires.
fn waves(gpc_sms: &'static [u32]) -> f64 {
    let mut o = quiet(&Chip {
        sms: gpc_sms.iter().sum(),
        gpc_sms,
        ..B200
    });
    o.chip.cta_launch_cycles = 500.0;
    let t = time_with(
        &tile("tests/tiles/timing", "cluster_waves"),
        &[("CTAS", 8), ("BIG", 1)],
        &o,
    );
    assert_eq!(t.report.occupancy.ctas_per_sm, 1);
    assert_eq!(t.report.ctas, 8);
    t.report.cycles
}

#[test]
fn clusters_need_their_sms_in_one_gpc() {
    let wave = BOX_LANDS + WAKE;
    // Two GPCs of 2 SMs: two clusters at a time, two waves.
    assert_eq!(waves(&[2, 2]), 2.0 * wave + 500.0);
    // One GPC of 3: one cluster at a time (the third SM idles), four waves.
    assert_eq!(waves(&[3]), 4.0 * wave + 3.0 * 500.0);
    // Four SMs again, but a GPC of 1 holds no cluster of two: four waves.
    assert_eq!(waves(&[3, 1]), 4.0 * wave + 3.0 * 500.0);
}

#[test]
fn a_cluster_larger_than_any_gpc_does_not_fit() {
    let o = quiet(&Chip {
        sms: 4,
        gpc_sms: &[2, 2],
        ..B200
    });
    let src = tile("tests/tiles/timing", "cluster_waves");
    let d = time_source(&src, &overrides(&[("CTAS", 4), ("CLUSTER", 4)]), &o)
        .expect_err("a cluster of 4 on GPCs of 2 does not fit");
    assert!(d[0].message.contains("GPC"), "{}", d[0].message);
}

#[test]
fn a_pair_mma_takes_one_ctas_m128_time_on_both_sms() {
    // tests/pass/two_cta_matmul.tile: one cluster of two, K = 256 in 4 steps of BLOCK_K = 64;
    // each step's pair MMA is M = 256 (128 rows per CTA) x N = 128 x K = 64, issued by CTA 0.
    let t = time_with(&tile("../tests/pass", "two_cta_matmul"), &[], &quiet(&B200));
    let one_cta = cost::tcgen05_mma_cycles(&B200, 128, 128, 64, MmaKind::F16);
    // 2 x 128 x 128 x 64 / 8192 = 256 cycles.
    assert_eq!(one_cta, 256.0);
    let mmas: Vec<_> = events(&t)
        .iter()
        .filter_map(|e| match e.what {
            TWhat::Mma {
                m, n, k, start, end, ..
            } if m > 0 => Some((e.cta, m, n, k, end - start)),
            _ => None,
        })
        .collect();
    assert_eq!(mmas.len(), 4);
    for (cta, m, n, k, dur) in mmas {
        assert_eq!((cta, m, n, k), (0, 256, 128, 64));
        assert_eq!(dur, one_cta);
    }
    // Twice the work of one CTA's M = 128 MMA in that time: both SMs' pipes were busy 4 x 256
    // cycles, and the FLOPs are the pair's.
    assert_eq!(t.report.mmas, 4);
    assert_eq!(t.report.flops, 4.0 * cost::flops(256, 128, 64));
    let sm_cycles = t.report.cycles * B200.sms as f64;
    let busy = t.report.utilisation.tensor * sm_cycles;
    assert!((busy - 2.0 * 4.0 * one_cta).abs() < 1e-6, "{busy}");
    // The pair's last commit arrives on acc_bar in both CTAs, in CTA 1 across the cluster's
    // network (DSMEM_EXTRA_LATENCY later): both read their accumulator and end.
    assert_eq!(t.report.ctas, 2);
    let last = |c| {
        waited(&t, c, "mbar.wait")
            .last()
            .copied()
            .expect("a blocked wait")
    };
    assert_eq!(last(1), last(0) + cost::DSMEM_EXTRA_LATENCY);
}

#[test]
fn a_multicast_load_reads_once_and_lands_in_every_cta() {
    // tests/pass/multicast_copy_expect_cluster_fixed.tile: two clusters; rank 0 of each loads a
    // 32 x 32 f32 box (4 KiB) for its cluster. The relaxed cluster barrier first: every CTA
    // arrives at 0, the wait ends 180 (CLUSTER_BARRIER_EXTRA_CYCLES) later; the load issued
    // then misses (840 to the first byte, 4096 / 128 = 32 through the port) and lands in every
    // CTA of the cluster at once; each CTA's waiter wakes 40 after.
    let src = tile("../tests/pass", "multicast_copy_expect_cluster_fixed");
    let lands = CLUSTER_BARRIER + 840.0 + 32.0;
    for cluster in [2u32, 4] {
        let t = time_with(&src, &[("CLUSTER", cluster as i64)], &quiet(&B200));
        let ctas = 2 * cluster;
        for c in 0..ctas {
            assert_eq!(waited(&t, c, "mbar.wait"), vec![lands + WAKE], "CTA {c}");
        }
        // One read per cluster, whatever its size: 2 x 4 KiB loaded, every CTA's 4 KiB stored.
        assert_eq!(t.report.tma_loads, 2);
        let loads = 2.0 * 4096.0;
        let stores = ctas as f64 * 4096.0;
        assert_eq!(t.report.global_bytes, loads + stores);
        assert_eq!(t.report.hbm_bytes, loads + stores);
        assert_eq!(t.report.l2_hit_rate, 0.0);
    }
}

#[test]
fn a_remote_arrival_takes_the_dsmem_latency() {
    // The cluster barrier after the inits ends at 180; CTA 0's box lands 904 later and its
    // waiter wakes 40 after: it arrives on CTA 1's barrier then, and the arrival lands
    // DSMEM_EXTRA_LATENCY later; CTA 1's waiter wakes 40 after that.
    let t = time_with(&tile("tests/tiles/timing", "remote_arrive"), &[], &quiet(&B200));
    let arrive = CLUSTER_BARRIER + BOX_LANDS + WAKE;
    let (_, end0, _) = cta_span(&t, 0);
    assert_eq!(end0, arrive);
    let got = waited(&t, 1, "mbar.wait");
    assert_eq!(got, vec![arrive + cost::DSMEM_EXTRA_LATENCY + WAKE]);
    assert!(got[0] >= arrive + cost::DSMEM_EXTRA_LATENCY);
    assert_eq!(t.report.cycles, arrive + cost::DSMEM_EXTRA_LATENCY + WAKE);
}

#[test]
fn the_cluster_barrier_waits_for_the_slowest_cta() {
    let src = tile("tests/tiles/timing", "cluster_barrier");
    // In a cluster: CTA 0 arrives when its box has landed and its waiter woke (944); CTA 1,
    // which arrived at 0, leaves with it 180 later.
    let t = time_with(&src, &[], &quiet(&B200));
    let slow = BOX_LANDS + WAKE;
    assert_eq!(cta_span(&t, 0).1, slow + CLUSTER_BARRIER);
    assert_eq!(cta_span(&t, 1).1, slow + CLUSTER_BARRIER);
    // Without clusters each CTA's barrier is its own: CTA 1 leaves at 180.
    let t = time_with(&src, &[("CLUSTER", 1)], &quiet(&B200));
    assert_eq!(cta_span(&t, 0).1, slow + CLUSTER_BARRIER);
    assert_eq!(cta_span(&t, 1).1, CLUSTER_BARRIER);
    // The CTA barrier before the cross-SM part is paid after the last arrival (no barriers
    // before CTA 0's single-thread issues, chips.rs issue_barriers, to keep its path as above).
    let mut o = quiet(&B200);
    o.chip.bar_sync_cycles = 10.0;
    o.chip.issue_barriers = 0.0;
    let t = time_with(&src, &[], &o);
    assert_eq!(cta_span(&t, 1).1, slow + 10.0 + CLUSTER_BARRIER);
}

#[test]
fn pair_loads_complete_on_the_leaders_barrier() {
    // After the cluster barrier (180), each CTA's box lands 904 later in its own shared memory;
    // both complete on CTA 0's barrier, whose waiter wakes 40 after the later: then the final
    // cluster barrier releases both 180 after CTA 0 arrives.
    let t = time_with(&tile("tests/tiles/timing", "pair_load"), &[], &quiet(&B200));
    let lands = CLUSTER_BARRIER + BOX_LANDS;
    assert_eq!(waited(&t, 0, "mbar.wait"), vec![lands + WAKE]);
    assert_eq!(t.report.tma_loads, 2);
    assert_eq!(t.report.cycles, lands + WAKE + CLUSTER_BARRIER);
    assert_eq!(cta_span(&t, 1).1, lands + WAKE + CLUSTER_BARRIER);
}

#[test]
fn a_multicast_commit_arrives_in_every_cta_of_its_mask() {
    // After the cluster barrier (180), CTA 0's 128 x 256 x 64 MMA takes 2 x 128 x 256 x 64 /
    // 8192 = 512 cycles on the pipe; its commit arrives mma_latency + commit_latency = 80 later
    // on CTA 0's barrier, and DSMEM_EXTRA_LATENCY after that on CTA 1's; each waiter wakes 40
    // after its arrival.
    let t = time_with(
        &tile("tests/tiles/timing", "commit_multicast"),
        &[],
        &quiet(&B200),
    );
    let own = CLUSTER_BARRIER + 512.0 + 64.0 + 16.0;
    assert_eq!(waited(&t, 0, "mbar.wait"), vec![own + WAKE]);
    assert_eq!(
        waited(&t, 1, "mbar.wait"),
        vec![own + cost::DSMEM_EXTRA_LATENCY + WAKE]
    );
}

#[test]
fn two_pairs_of_a_cluster_of_four_run_their_mmas_side_by_side() {
    // tests/tiles/tcgen05/pairs.tile in clusters of four: two clusters, four pairs, two K steps.
    // Each step's pair MMA (M = 256: 128 rows per CTA, N = 128, K = 64) is issued by the pair's
    // even CTA (ranks 0 and 2 of each cluster: CTAs 0, 2, 4, 6) and takes one CTA's M = 128
    // time, 2 x 128 x 128 x 64 / 8192 = 256 cycles, on both SMs of its pair.
    let t = time_with(
        &tile("tests/tiles/tcgen05", "pairs"),
        &[("CLUSTER", 4)],
        &quiet(&B200),
    );
    let one_cta = cost::tcgen05_mma_cycles(&B200, 128, 128, 64, MmaKind::F16);
    assert_eq!(one_cta, 256.0);
    let mut per_cta = [0u32; 8];
    for e in events(&t) {
        if let TWhat::Mma {
            m, n, k, start, end, ..
        } = e.what
        {
            if m > 0 {
                assert_eq!((m, n, k), (256, 128, 64), "CTA {}", e.cta);
                assert_eq!(end - start, one_cta);
                per_cta[e.cta as usize] += 1;
            }
        }
    }
    assert_eq!(per_cta, [2, 0, 2, 0, 2, 0, 2, 0]);
    assert_eq!(t.report.mmas, 8);
    assert_eq!(t.report.flops, 8.0 * cost::flops(256, 128, 64));
    let busy = t.report.utilisation.tensor * t.report.cycles * B200.sms as f64;
    assert!((busy - 2.0 * 8.0 * one_cta).abs() < 1e-6, "{busy}");
    // Per step, the two multicasts of A of each cluster (ranks 0 and 1) and one B half per CTA:
    // (2 x 2 + 8) x 2 reads of global memory.
    assert_eq!(t.report.tma_loads, 24);
    // Every CTA of a cluster waits on its `done` barrier for both pairs' commits of each step,
    // and leaves; the two pairs of a cluster run on four SMs.
    assert_eq!(t.report.ctas, 8);
    for cluster in 0..2u32 {
        let mut sms: Vec<u32> = (0..4).map(|r| cta_span(&t, cluster * 4 + r).2).collect();
        sms.sort();
        sms.dedup();
        assert_eq!(sms.len(), 4, "cluster {cluster}: {sms:?}");
    }
}
