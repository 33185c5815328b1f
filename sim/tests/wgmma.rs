//! Hopper wgmma: results against an f64 reference written here (A from shared memory or
//! registers, accumulation across groups), and `wgmma.wait N` waiting for every group but the
//! N most recent, which complete in issue order.

mod common;
use bwsim_sim::{AsyncKind, What};
use common::*;
use half::f16;

const WG: &str = r#"
kernel wg {
  target sm_90a
  num_warps 4
  const M: int = 64
  const N: int = 64
  const K: int = 64
  const A_REGS: bool = false
  param a_desc: tensor_desc(f16[M, K], nvmma(128))
  param b_desc: tensor_desc(f16[K, N], nvmma(128))
  param out_ptr: ptr(f32)
  layout acc_l = wgmma(warps=[4, 1], n=N)
  layout row = blocked([1, 1], [1, 32], [4, 1], [1, 0])
  let a_smem = smem.alloc f16[M, K], nvmma(128)
  let b_smem = smem.alloc f16[K, N], nvmma(128)
  let bar = mbar.alloc 1
  mbar.init bar[0], 1
  mbar.expect bar[0], a_desc.nbytes + b_desc.nbytes
  tma.load a_desc[0, 0], a_smem, bar[0]
  tma.load b_desc[0, 0], b_smem, bar[0]
  mbar.wait bar[0], 0
  let acc0 = full([M, N], 0.0, f32, acc_l)
  if A_REGS {
    let a_regs = smem.load a_smem, layout=row
    let acc1 = wgmma a_regs, b_smem, acc0, use_acc=false
  } else {
    let acc1 = wgmma a_smem, b_smem, acc0, use_acc=false
  }
  // A second group accumulating on the first: D = 2 A B.
  let acc2 = wgmma a_smem, b_smem, acc1, use_acc=true
  wgmma.wait 1
  wgmma.wait 0
  let offs = expand_dims(arange(0, M, slice(1, row)), 1) * N + expand_dims(arange(0, N, slice(0, row)), 0)
  global.store out_ptr, offs, convert_layout(acc2, row)
  launch {
    grid = [1]
    tensor a: f16[M, K] = randn()
    tensor b: f16[K, N] = randn()
    tensor out: f32[M, N] = zeros()
    a_desc = a
    b_desc = b
    out_ptr = out
    outputs = [out]
  }
}
"#;

fn want(seed: u64) -> Vec<f64> {
    let inp = inputs(WG, &[], seed);
    let (a, b) = (&inp[0], &inp[1]);
    let f = |t: &bwsim_isa::launch::HostTensor, i: u64| f16::from_bits(t.get_bits(i) as u16).to_f64();
    let mut out = Vec::new();
    for i in 0..64 {
        for j in 0..64 {
            let s: f64 = (0..64).map(|k| f(a, i * 64 + k) * f(b, k * 64 + j)).sum();
            out.push(2.0 * s);
        }
    }
    out
}

#[test]
fn wgmma_from_shared_and_register_a_against_f64() {
    for c in [[("A_REGS", "false")], [("A_REGS", "true")]] {
        let r = run(WG, &c);
        assert_ok(WG, &r);
        let w = worst(&values(tensor(&r, "out")), &want(1), 1e-3, 1e-4);
        assert!(w <= 1.0, "{c:?}: worst error {w} of the tolerance");
    }
}

/// The first group is slow, the second fast: groups still complete in issue order, and
/// `wgmma.wait 1` resumes only once the first (older) group is done.
#[test]
fn wgmma_wait_n_waits_for_the_older_groups() {
    let mut s = Scripted::default().with(AsyncKind::Wgmma, &[500, 10]);
    let r = run_sched(WG, &[], &mut s);
    assert_ok(WG, &r);
    let ev = &r.trace.events;
    let issued: Vec<u64> = ev
        .iter()
        .filter_map(|e| match e.what {
            What::Issue { op: "wgmma", id } => Some(id),
            _ => None,
        })
        .collect();
    let done: Vec<(u64, u64)> = ev
        .iter()
        .filter_map(|e| match e.what {
            What::Complete { op: "wgmma", id } => Some((id, e.time)),
            _ => None,
        })
        .collect();
    assert_eq!(
        done.iter().map(|d| d.0).collect::<Vec<_>>(),
        issued,
        "completion order"
    );
    let resumed = ev
        .iter()
        .find(|e| matches!(e.what, What::Resumed { on: "wgmma.wait" }))
        .map(|e| e.time)
        .expect("wgmma.wait 1 blocked");
    assert!(
        resumed >= done[0].1,
        "wait 1 resumed at {resumed} before the first group completed at {}",
        done[0].1
    );
    let w = worst(&values(tensor(&r, "out")), &want(1), 1e-3, 1e-4);
    assert!(w <= 1.0);
}
