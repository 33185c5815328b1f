//! TMA store bulk groups: `tma.store_wait N` (`cp.async.bulk.wait_group.read N`) and
//! `full=true` (`wait_group N`) exempt the N most RECENT groups and wait for every older one
//! (docs/semantics.md#bulk-groups), whatever order the groups finish in.

mod common;
use bwsim_sim::{AsyncKind, What};
use common::*;

const TWO_STORES: &str = include_str!("tiles/bulk_groups/two_stores.tile");

fn rows_value(r: &bwsim_sim::RunResult, rows: std::ops::Range<u64>) -> Vec<f64> {
    let t = tensor(r, "out");
    let mut v: Vec<f64> = rows
        .flat_map(|i| (0..32).map(move |j| i * 32 + j))
        .map(|l| t.get(l))
        .collect();
    v.dedup();
    v
}

/// The second store reads its buffer long before the first: `store_wait 1` must still wait
/// for the first (the older group), so the first store sees 1.0, never the later 3.0.
#[test]
fn store_wait_read_waits_for_the_oldest_groups_not_a_count() {
    let mut s = Scripted::default().with(AsyncKind::TmaStoreRead, &[300, 10]);
    let r = run_sched(TWO_STORES, &[], &mut s);
    assert_ok(TWO_STORES, &r);
    assert_eq!(
        rows_value(&r, 0..8),
        vec![1.0],
        "first store read the overwritten buffer"
    );
    assert_eq!(rows_value(&r, 8..16), vec![2.0]);
    // And when the groups finish in issue order the answer is the same.
    let mut s = Scripted::default().with(AsyncKind::TmaStoreRead, &[10, 300]);
    let r = run_sched(TWO_STORES, &[], &mut s);
    assert_eq!(rows_value(&r, 0..8), vec![1.0]);
}

/// `full=true` waits for the older group's global writes, not only its reads: the wait
/// resumes after the first store has completed.
#[test]
fn store_wait_full_waits_for_the_older_groups_writes() {
    let mut s = Scripted::default()
        .with(AsyncKind::TmaStoreRead, &[10, 10])
        .with(AsyncKind::TmaStoreWrite, &[500, 10]);
    let r = run_sched(TWO_STORES, &[("FULL", "true")], &mut s);
    assert_ok(TWO_STORES, &r);
    let ev = &r.trace.events;
    let first_id = ev
        .iter()
        .find_map(|e| match e.what {
            What::Issue { op: "tma.store", id } => Some(id),
            _ => None,
        })
        .expect("issued");
    let first_complete = ev
        .iter()
        .find(|e| matches!(e.what, What::Complete { op: "tma.store", id } if id == first_id))
        .map(|e| e.time)
        .expect("the first store completes");
    let resumed = resumed_at(&r, "tma.store_wait").expect("the wait blocked and resumed");
    // The second store (write latency 10) completed long before; the first takes 500.
    assert!(
        first_complete >= 500,
        "scripted latency not applied: {first_complete}"
    );
    assert!(
        resumed >= first_complete,
        "store_wait 1, full=true resumed at {resumed}, before the older store completed at {first_complete}"
    );
    assert_eq!(rows_value(&r, 0..8), vec![1.0]);
}
