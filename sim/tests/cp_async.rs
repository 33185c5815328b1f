//! `cp.async`, `cp.async.commit` and `cp.async.wait`: what lands where (masked elements as
//! zeros, any shared layout), and the completion rules of the hazard checker: a copy's bytes
//! are the partition's only after a `cp.async.wait` retires the copy's group (the groups a
//! wait leaves in flight are the newest N committed ones; an uncommitted copy is in no group a
//! wait covers), and overwriting them earlier is a write while the copy is in flight.

mod common;
use common::*;

/// x = [0, 1, ..., 255] as an [8, 32] f32 matrix, copied with a mask (columns below 20) into a
/// swizzled buffer and through a second group into a plain one; read back in another layout.
const COPY: &str = include_str!("tiles/cp_async/copy.tile");

#[test]
fn copies_land_masked_elements_as_zeros_in_any_layout() {
    let r = run_ok(COPY, &[]);
    let out = values(tensor(&r, "out"));
    for i in 0..256 {
        let want = if i % 32 < 20 { i as f64 } else { 0.0 };
        assert_eq!(out[i], want, "masked copy, element {i}");
        assert_eq!(out[256 + i], (255 - i) as f64, "second copy, element {i}");
    }
}

/// The distinct error codes over `n` schedules of COPY with `CASE=case`.
fn codes(case: i64, n: u64) -> Vec<String> {
    let mut v: Vec<String> = explore(COPY, &[("CASE", &case.to_string())], n)
        .iter()
        .filter(|f| f.diagnostic.is_error())
        .map(|f| f.diagnostic.code.to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn a_copy_is_visible_only_after_a_wait_retires_its_group() {
    // wait 0 after both commits: clean.
    assert_eq!(codes(0, 8), Vec::<String>::new());
    // wait 1 leaves the second group in flight: its buffer is read before it completes (and,
    // where it has not landed at all, read uninitialised).
    let c = codes(1, 8);
    assert!(c.contains(&"read-before-complete".to_string()), "{c:?}");
    assert!(
        c.iter()
            .all(|x| x == "read-before-complete" || x == "uninit-read"),
        "{c:?}"
    );
    // An uncommitted copy is in no group: wait 0 does not retire it.
    let c = codes(3, 8);
    assert!(c.contains(&"read-before-complete".to_string()), "{c:?}");
}

#[test]
fn overwriting_an_in_flight_copy_is_a_write_while_in_flight() {
    assert_eq!(codes(2, 8), ["write-while-in-flight"]);
}
