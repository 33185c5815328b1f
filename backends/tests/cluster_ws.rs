//! Cluster barriers in warp-specialized kernels: `barrier.cluster` completes once every
//! non-exited thread of the cluster has arrived (PTX ISA, "barrier.cluster"), so every warp of
//! a CTA (default partition, workers, and the warps that only round the block up to whole
//! warpgroups) must execute the same sequence of cluster barriers, in the default partition's
//! order, with the CTA barrier that opens the `warp_specialize` region between the ones before
//! and the ones after it.
//!
//! The check follows the emitted PTX per warp: a small walker of the kernel's control flow
//! that knows each warp's `%tid.x` (its lane 0), evaluates the integer and predicate arithmetic
//! the dispatch uses, takes a branch whose predicate it cannot evaluate as not taken (the wait
//! loops and the rank tests of the bodies), and records every `barrier.cluster` and `bar.sync 0`
//! the warp executes before `ret`.

use bwsim_backends::{ptx, ptxas};
use bwsim_isa::{Code, Target};
use std::collections::HashMap;

fn lower(src: &str, target: Target) -> Result<ptx::PtxModule, ptx::LowerError> {
    let k = bwsim_isa::parser::parse(src).unwrap_or_else(|d| panic!("parses: {d:?}"));
    let (checked, diags) = bwsim_isa::verify::verify(
        &k,
        &bwsim_isa::verify::VerifyOptions {
            target: Some(target),
            overrides: vec![],
        },
    );
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    ptx::lower(&checked)
}

/// A register's or an immediate's value, when the walker knows it.
fn value(regs: &HashMap<String, u64>, operand: &str) -> Option<u64> {
    let o = operand.trim();
    if o.starts_with('%') {
        regs.get(o).copied()
    } else {
        o.parse().ok()
    }
}

/// The `barrier.cluster` and `bar.sync 0` instructions warp `warp` executes in `text`, in order.
fn synchronisations(text: &str, warp: u64) -> Vec<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .collect();
    let labels: HashMap<&str, usize> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.strip_suffix(':').map(|n| (n, i)))
        .collect();
    let start = lines
        .iter()
        .position(|l| *l == "{")
        .expect("the entry's body");
    let mut regs: HashMap<String, u64> = HashMap::new();
    let mut preds: HashMap<String, bool> = HashMap::new();
    let mut seen = Vec::new();
    let mut pc = start + 1;
    for _ in 0..100_000 {
        let l = lines[pc];
        pc += 1;
        let ins = l.trim_end_matches(';');
        if ins.is_empty() || ins.ends_with(':') || ins.starts_with('.') {
            continue;
        }
        // The guard: `@%p` / `@!%p`, unknown predicates are false.
        let (guard, ins) = match ins.strip_prefix('@') {
            Some(r) => {
                let (g, rest) = r.split_once(' ').expect("a guarded instruction");
                let (neg, p) = g.strip_prefix('!').map_or((false, g), |p| (true, p));
                (preds.get(p).map(|v| *v != neg), rest.trim())
            }
            None => (Some(true), ins),
        };
        let (opcode, operands) = ins.split_once(' ').unwrap_or((ins, ""));
        let ops: Vec<&str> = operands.split(',').map(str::trim).collect();
        if opcode == "ret" {
            assert_eq!(guard, Some(true), "a guarded ret: {l}");
            return seen;
        }
        if opcode.starts_with("barrier.cluster") || ins == "bar.sync 0" {
            assert_eq!(guard, Some(true), "warp {warp}: a guarded synchronisation: {l}");
            seen.push(ins.to_string());
            continue;
        }
        if opcode == "bra" || opcode == "bra.uni" {
            if guard == Some(true) {
                pc = labels[ops[0]];
            }
            continue;
        }
        if guard != Some(true) {
            // Not executed, or not known to be: what it writes is unknown.
            regs.remove(ops[0]);
            preds.remove(ops[0]);
            continue;
        }
        let dst = ops[0].to_string();
        match opcode {
            "mov.u32" if ops[1] == "%tid.x" => {
                regs.insert(dst, 32 * warp);
            }
            "shr.u32" | "and.b32" | "sub.u32" | "add.u32" => {
                match (value(&regs, ops[1]), value(&regs, ops[2])) {
                    (Some(a), Some(b)) => {
                        let v = match opcode {
                            "shr.u32" => a >> b,
                            "and.b32" => a & b,
                            "sub.u32" => a.wrapping_sub(b) & 0xffff_ffff,
                            _ => (a + b) & 0xffff_ffff,
                        };
                        regs.insert(dst, v);
                    }
                    _ => {
                        regs.remove(&dst);
                    }
                }
            }
            _ if opcode.starts_with("setp.") && opcode.ends_with(".u32") => {
                let parts: Vec<&str> = opcode.split('.').collect();
                let cmp = match (value(&regs, ops[1]), value(&regs, ops[2])) {
                    (Some(a), Some(b)) => Some(match parts[1] {
                        "eq" => a == b,
                        "ne" => a != b,
                        "lt" => a < b,
                        "le" => a <= b,
                        "gt" => a > b,
                        "ge" => a >= b,
                        c => panic!("setp.{c}"),
                    }),
                    _ => None,
                };
                let v = if parts.get(2) == Some(&"and") {
                    cmp.zip(preds.get(ops[3]).copied()).map(|(a, b)| a && b)
                } else {
                    cmp
                };
                match v {
                    Some(v) => preds.insert(dst, v),
                    None => preds.remove(&dst),
                };
            }
            _ => {
                regs.remove(&dst);
                preds.remove(&dst);
            }
        }
    }
    panic!("warp {warp}: no `ret` within 100000 instructions")
}

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
        (&after_dynamic, "cluster.sync", "under a dynamic `for`, `while` or `if`"),
    ] {
        let e = lower(src, Target::Sm90a).expect_err("refused");
        let d = e.to_diagnostic();
        assert!(d.code == Code::PtxUnsupported, "{e}");
        assert!(e.to_string().contains(text), "{e}");
        let span = e.span();
        assert_eq!(&src[span.start as usize..span.end as usize].split_whitespace().next(), &Some(op), "{e}");
    }
}
