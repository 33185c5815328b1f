//! Hopper wgmma: results against an f64 reference written here (A from shared memory or
//! registers, accumulation across groups), and `wgmma.wait N` waiting for every group but the
//! N most recent, which complete in issue order.

mod common;
use bwsim_sim::{AsyncKind, What};
use common::*;
use half::f16;

const WG: &str = include_str!("tiles/wgmma/wg.tile");

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
    let resumed = resumed_at(&r, "wgmma.wait").expect("wgmma.wait 1 blocked");
    assert!(
        resumed >= done[0].1,
        "wait 1 resumed at {resumed} before the first group completed at {}",
        done[0].1
    );
    let w = worst(&values(tensor(&r, "out")), &want(1), 1e-3, 1e-4);
    assert!(w <= 1.0);
}
