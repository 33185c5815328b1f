//! Cluster barriers in warp-specialized kernels: `barrier.cluster` completes once every
//! non-exited thread of the cluster has arrived (PTX ISA, "barrier.cluster"), so every warp of
//! a CTA (default partition, workers, and the warps that only round the block up to whole
//! warpgroups) must execute the same sequence of cluster barriers, in the default partition's
//! order, with the CTA barrier that opens the `warp_specialize` region between the ones before
//! and the ones after it.
//!
//! The check follows the emitted PTX per warp (`common::ptx_walk`).

mod common;

use bwsim_backends::{ptx, ptxas};
use bwsim_isa::{Code, Target};
use common::lower_source as lower;
use common::ptx_walk::synchronisations;

/// Every warp of the block executes `want`, in order.
fn every_warp_executes(m: &ptx::PtxModule, want: &[&str]) {
    let warps = u64::from(m.block_dim[0] / 32);
    for w in 0..warps {
        assert_eq!(
            synchronisations(&m.text, w),
            want,
            "{}: warp {w} of {warps}:\n{}",
            m.target,
            m.text
        );
    }
}

/// A producer worker and a consumer in the default partition hand a value over a barrier of
/// their CTA; the barrier's initialisation is published to the cluster before the region
/// (`fence.mbarrier_init` + a relaxed cluster barrier, twice through `static_for`), and the
/// kernel ends with a cluster barrier, split and whole. Workers of 4 and 1 warps: 9 warps,
/// rounded up to 12, so three warps run no partition.
const RELAY: &str = "kernel relay {
  target sm_100a, sm_90a
  num_warps 4
  param x: ptr(f32)
  param out: ptr(f32)
  layout l = blocked([1], [32], [4], [0])
  let buf = smem.alloc f32[128], plain
  let bar = mbar.alloc 1
  mbar.init bar[0], 1
  fence.mbarrier_init
  cluster.arrive relaxed=true
  cluster.wait
  static_for i in 0..2 {
    cluster.sync
  }
  warp_specialize {
    default {
      mbar.wait bar[0], 0
      let offs = program_id(0) * 128 + arange(0, 128, l)
      let v = smem.load buf, layout=l
      global.store out, offs, v
    }
    worker produce(warps=4, regs=32) {
      let offs = program_id(0) * 128 + arange(0, 128, l)
      let v = global.load x, offs
      smem.store buf, v
      mbar.arrive bar[0], count=1
    }
    worker idle(warps=1, regs=24) {
    }
  }
  cluster.arrive
  cluster.wait
  cluster.sync
}
";

#[test]
fn every_warp_executes_the_default_partitions_cluster_barriers_in_order() {
    for target in [Target::Sm100a, Target::Sm90a] {
        let m = lower(RELAY, target).unwrap_or_else(|e| panic!("{target}: {e}"));
        assert_eq!(m.block_dim[0], 12 * 32);
        assert!(m.explicit_cluster);
        every_warp_executes(
            &m,
            &[
                "barrier.cluster.arrive.relaxed.aligned",
                "barrier.cluster.wait.acquire.aligned",
                "barrier.cluster.arrive.release",
                "barrier.cluster.wait.acquire",
                "barrier.cluster.arrive.release",
                "barrier.cluster.wait.acquire",
                "bar.sync 0",
                "barrier.cluster.arrive.release.aligned",
                "barrier.cluster.wait.acquire.aligned",
                "barrier.cluster.arrive.release",
                "barrier.cluster.wait.acquire",
            ],
        );
        // Each of the ten instructions is written twice, once on the default partition's path
        // and once on the other warps', every line mapped to the operation it comes from.
        let lines: Vec<(usize, &str)> = m
            .text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with("barrier.cluster"))
            .collect();
        assert_eq!(lines.len(), 2 * 10, "{}", m.text);
        for (i, l) in lines {
            let o = m.origin_of_line(i + 1).map(|o| o.op.as_str());
            assert!(
                matches!(o, Some("cluster.arrive" | "cluster.wait" | "cluster.sync")),
                "{l}: {o:?}"
            );
        }
        if let Err(e) = ptxas::assemble(&m, true) {
            panic!("{target}: {e}");
        }
    }
}

/// Without cluster barriers around the region, workers still go to the region's entry and
/// leave through the kernel's end, executing no `barrier.cluster`.
#[test]
fn a_kernel_without_cluster_barriers_keeps_its_skeleton() {
    let src = RELAY
        .replace("  cluster.arrive relaxed=true\n  cluster.wait\n", "")
        .replace("  static_for i in 0..2 {\n    cluster.sync\n  }\n", "")
        .replace("  cluster.arrive\n  cluster.wait\n  cluster.sync\n", "");
    for target in [Target::Sm100a, Target::Sm90a] {
        let m = lower(&src, target).unwrap_or_else(|e| panic!("{target}: {e}"));
        assert!(!m.explicit_cluster);
        every_warp_executes(&m, &["bar.sync 0"]);
    }
}

/// Where worker warps cannot replay a cluster barrier (inside a partition, or a number of
/// times only known at run time), the backend refuses the kernel at that operation.
#[test]
fn cluster_barriers_workers_cannot_replay_are_refused() {
    let inside = RELAY.replace(
        "      mbar.arrive bar[0], count=1\n",
        "      mbar.arrive bar[0], count=1\n      cluster.arrive\n      cluster.wait\n",
    );
    let dynamic = RELAY.replace(
        "  static_for i in 0..2 {\n    cluster.sync\n  }\n",
        "  if program_id(0) > 0 {\n    cluster.sync\n  }\n",
    );
    let after_dynamic = RELAY.replace(
        "  cluster.arrive\n  cluster.wait\n  cluster.sync\n}",
        "  for i in 0..program_id(0) {\n    cluster.sync\n  }\n}",
    );
    for (src, op, text) in [
        (&inside, "cluster.arrive", "inside a warp_specialize partition"),
        (&dynamic, "cluster.sync", "under a dynamic `for`, `while` or `if`"),
        (
            &after_dynamic,
            "cluster.sync",
            "under a dynamic `for`, `while` or `if`",
        ),
    ] {
        let e = lower(src, Target::Sm90a).expect_err("refused");
        let d = e.to_diagnostic();
        assert!(d.code == Code::PtxUnsupported, "{e}");
        assert!(e.to_string().contains(text), "{e}");
        let span = e.span();
        assert_eq!(
            &src[span.start as usize..span.end as usize]
                .split_whitespace()
                .next(),
            &Some(op),
            "{e}"
        );
    }
}

/// A worker partition that ends with tensor-memory accesses (`tcgen05.st`) fences them before
/// the thread synchronisation of its replayed releasing arrive on sm_100a, as the default
/// partition does before its own (docs/semantics.md#completion-and-ordering).
#[test]
fn a_replayed_arrive_after_tensor_memory_accesses_is_fenced() {
    let src = RELAY
        .replacen("  target sm_100a, sm_90a\n", "  target sm_100a\n", 1)
        // Registers for a row of 32 values and its addresses.
        .replacen("produce(warps=4, regs=32)", "produce(warps=4, regs=96)", 1)
        .replacen(
            "  let bar = mbar.alloc 1\n",
            "  let bar = mbar.alloc 1\n  let tm = tmem.alloc f32[128, 32]\n",
            1,
        )
        .replacen(
            "      mbar.arrive bar[0], count=1\n",
            "      mbar.arrive bar[0], count=1\n      tmem.store tm, full([128, 32], 1.0, f32, tmem32x32b)\n",
            1,
        );
    let m = lower(&src, Target::Sm100a).unwrap_or_else(|e| panic!("{e}"));
    let text: Vec<&str> = m.text.lines().map(str::trim).collect();
    let exit = text
        .iter()
        .position(|l| *l == "$ws_workers_exit:")
        .expect("the workers' exit");
    let replay: Vec<&str> = text[exit + 1..]
        .iter()
        .copied()
        .filter(|l| !l.starts_with("//"))
        .take(6)
        .collect();
    assert_eq!(
        replay,
        [
            "tcgen05.fence::before_thread_sync;",
            "barrier.cluster.arrive.release.aligned;",
            "barrier.cluster.wait.acquire.aligned;",
            "barrier.cluster.arrive.release;",
            "barrier.cluster.wait.acquire;",
        ]
        .iter()
        .copied()
        .chain(
            text[exit + 1..]
                .iter()
                .copied()
                .filter(|l| l.ends_with("kernel_end:"))
                .take(1)
        )
        .collect::<Vec<_>>(),
        "{}",
        m.text
    );
    // Without the worker's accesses, no fence.
    let plain = lower(RELAY, Target::Sm100a).unwrap_or_else(|e| panic!("{e}"));
    let after = plain
        .text
        .split("$ws_workers_exit:")
        .nth(1)
        .expect("the workers' exit");
    assert!(!after.contains("tcgen05.fence"), "{}", plain.text);
    if let Err(e) = ptxas::assemble(&m, true) {
        panic!("{e:?}\n{}", m.text);
    }
}
