//! Clusters beyond CTA pairs: the split cluster barrier (`cluster.arrive` / `cluster.wait`),
//! distributed shared memory (`smem.load`/`smem.store ..., cta=R`) and remote mbarrier
//! arrivals (`mbar.arrive ..., cta=R`), in clusters of 2 and 4 CTAs.

mod common;
use bwsim_sim::{RunResult, What};
use common::*;

/// A cluster of CLUSTER CTAs (two clusters): rank 0 loops before it arrives, so the others
/// reach `cluster.wait` first; then each reads what its left neighbour stored into it.
const SPLIT: &str = "kernel split {
  target sm_100a, sm_90a
  num_warps 4
  const CLUSTER: int = 4
  param x: ptr(f32)
  param out: ptr(f32)
  layout l = blocked([1], [32], [4], [0])
  let offs = program_id(0) * 128 + arange(0, 128, l)
  let buf = smem.alloc f32[128], plain
  let v = global.load x, offs
  let right = (cluster_rank() + 1) % cluster_size()
  smem.store buf, v, cta=right
  if cluster_rank() == 0 {
    for i in 0..20 {
      let w = global.load x, offs
    }
  }
  cluster.arrive
  cluster.wait
  let got = smem.load buf, layout=l
  global.store out, offs, got
  launch {
    grid = [2 * CLUSTER]
    cluster = [CLUSTER]
    tensor a: f32[256 * CLUSTER] = randn()
    tensor b: f32[256 * CLUSTER] = zeros()
    x = a
    out = b
    outputs = [b]
  }
}
";

fn f32s(t: &bwsim_isa::launch::HostTensor) -> Vec<f32> {
    (0..t.shape[0])
        .map(|i| f32::from_bits(t.get_bits(i) as u32))
        .collect()
}

/// Each CTA's 128 outputs are the inputs of its left neighbour in its cluster of `size`.
fn assert_holds_left_neighbours(r: &RunResult, size: usize) {
    let (x, out) = (f32s(tensor(r, "a")), f32s(tensor(r, "b")));
    for p in 0..2 * size {
        let base = p - p % size;
        let from = base + (p - base + size - 1) % size;
        assert_eq!(
            out[p * 128..(p + 1) * 128],
            x[from * 128..(from + 1) * 128],
            "CTA {p}"
        );
    }
}

/// `src` in clusters of 2 fails with a diagnostic whose message contains `text`.
fn assert_fails_with(src: &str, text: &str) {
    let r = run(src, &[("CLUSTER", "2")]);
    assert!(!r.ok());
    assert!(
        r.diagnostics.iter().any(|d| d.message.contains(text)),
        "{}",
        rendered(src, &r)
    );
}

#[test]
fn split_cluster_barrier_holds_every_cta_until_its_cluster_arrived() {
    for size in [2, 4] {
        let r = run_ok(SPLIT, &[("CLUSTER", &size.to_string())]);
        let arrived = |cta| {
            cta_event_at(&r, cta, |w| matches!(w, What::Fence { op: "cluster.arrive" })).expect("arrived")
        };
        for base in [0, size] {
            let last = (base..base + size).map(arrived).max().expect("CTAs");
            for cta in base..base + size {
                if arrived(cta) < last {
                    let passed = cta_event_at(&r, cta, |w| matches!(w, What::Resumed { on: "cluster.wait" }))
                        .expect("an early arriver waits");
                    assert!(
                        passed >= last,
                        "CTA {cta} passed at {passed}, last arrival at {last}"
                    );
                }
            }
        }
        // Each CTA holds its left neighbour's values.
        assert_holds_left_neighbours(&r, size as usize);
    }
}

#[test]
fn a_rank_outside_the_cluster_traps() {
    assert_fails_with(
        &SPLIT.replace("cta=right", "cta=right + CLUSTER"),
        "names CTA rank",
    );
}

#[test]
fn a_cluster_wait_without_its_arrive_traps() {
    assert_fails_with(&SPLIT.replace("  cluster.arrive\n", ""), "has not arrived");
}

#[test]
fn remote_arrivals_complete_the_peers_phase() {
    // Each CTA's barrier is arrived on only by its left neighbour.
    let src = SPLIT
        .replace(
            "  smem.store buf, v, cta=right\n",
            "  let bar = mbar.alloc 1\n  mbar.init bar[0], 1\n  fence.mbarrier_init\n  cluster.sync\n  smem.store buf, v, cta=right\n  mbar.arrive bar[0], cta=right\n  mbar.wait bar[0], 0\n",
        )
        .replace("  cluster.arrive\n  cluster.wait\n", "");
    let r = run_ok(&src, &[("CLUSTER", "4")]);
    assert_holds_left_neighbours(&r, 4);
    // The arrival on CTA p's barrier comes from CTA p - 1's code: one per CTA.
    let arrivals = r
        .trace
        .events
        .iter()
        .filter(|e| matches!(e.what, What::Arrive { .. }))
        .count();
    assert_eq!(arrivals, 8);
    // And the checker orders the hand-off through it.
    let found = explore(&src, &[("CLUSTER", "4")], 16);
    let codes: Vec<String> = found.iter().map(|f| f.diagnostic.message.clone()).collect();
    assert!(found.is_empty(), "{codes:?}");
}

/// A multicast copy from rank 0 into every CTA of a cluster of four. `SYNC=1` releases the
/// barriers' initialisation to the cluster first (`fence.mbarrier_init`, then a relaxed cluster
/// barrier); `SYNC=0` does not. The peers initialise late (a loop before `mbar.init`), so the
/// copy usually reaches initialised barriers: only the checker's happens-before, not the
/// schedule, can tell that nothing ordered the inits before the multicast.
const MULTICAST: &str = "kernel mc {
  target sm_100a, sm_90a
  num_warps 4
  const SYNC: int = 1
  param src: tensor_desc(f32[32, 32], nvmma(128))
  param x: ptr(f32)
  param out: ptr(f32)
  layout l = blocked([1, 4], [4, 8], [4, 1], [1, 0])
  let offs = expand_dims(arange(0, 32, slice(1, l)), 1) * 32 + expand_dims(arange(0, 32, slice(0, l)), 0)
  let buf = smem.alloc f32[32, 32], nvmma(128)
  let bar = mbar.alloc 1
  if cluster_rank() != 0 {
    for i in 0..4 {
      let w = global.load x, offs
    }
  }
  mbar.init bar[0], 1
  if SYNC == 1 {
    fence.mbarrier_init
    cluster.arrive relaxed=true
    cluster.wait
  } else {
    for i in 0..8 {
      let w = global.load x, offs
    }
  }
  mbar.expect bar[0], 4096
  tma.load src[0, 0], buf, bar[0], pred=cluster_rank() == 0, multicast=15
  mbar.wait bar[0], 0
  let got = smem.load buf, layout=l
  global.store out, program_id(0) * 1024 + offs, got
  cluster.arrive
  cluster.wait
  launch {
    grid = [4]
    cluster = [4]
    tensor a: f32[32, 32] = randn()
    tensor b: f32[1024] = zeros()
    tensor c: f32[4096] = zeros()
    src = a
    x = b
    out = c
    outputs = [c]
  }
}
";

#[test]
fn a_multicast_needs_the_peers_inits_released_to_the_cluster() {
    // Released: clean, and every CTA holds the tile.
    let found = explore(MULTICAST, &[("SYNC", "1")], 16);
    let msgs: Vec<String> = found.iter().map(|f| f.diagnostic.message.clone()).collect();
    assert!(found.is_empty(), "{msgs:?}");
    let r = run_ok(MULTICAST, &[("SYNC", "1")]);
    let (a, c) = (values(tensor(&r, "a")), values(tensor(&r, "c")));
    for p in 0..4 {
        assert_eq!(c[p * 1024..(p + 1) * 1024], a[..], "CTA {p}");
    }
    // Not released: `barrier-misuse` at the multicast, naming the peer whose init it may pass.
    let found = explore(MULTICAST, &[("SYNC", "0")], 16);
    let hit = found
        .iter()
        .find(|f| {
            f.diagnostic
                .message
                .starts_with("multicasts onto `bar[0]` of CTA")
        })
        .unwrap_or_else(|| {
            panic!(
                "{:?}",
                found.iter().map(|f| &f.diagnostic.message).collect::<Vec<_>>()
            )
        });
    assert_eq!(hit.diagnostic.code, bwsim_isa::Code::BarrierMisuse);
    assert_eq!(hit.count, 16, "every schedule, whatever the timing");
    let (line, _) = line_col_of(MULTICAST, "tma.load src");
    let at = hit.diagnostic.primary.span;
    assert_eq!(line_col_of_span(MULTICAST, at), line);
}

fn line_col_of_span(src: &str, s: bwsim_isa::Span) -> usize {
    src[..s.start as usize].lines().count()
}
