//! `cp.async`, `cp.async.commit` and `cp.async.wait`: what lands where (masked elements as
//! zeros, any shared layout), and the completion rules of the hazard checker: a copy's bytes
//! are the partition's only after a `cp.async.wait` retires the copy's group (the groups a
//! wait leaves in flight are the newest N committed ones; an uncommitted copy is in no group a
//! wait covers), and overwriting them earlier is a write while the copy is in flight.

mod common;
use common::*;

/// x = [0, 1, ..., 255] as an [8, 32] f32 matrix, copied with a mask (columns below 20) into a
/// swizzled buffer and through a second group into a plain one; read back in another layout.
const COPY: &str = r#"
kernel cp_async_copy {
  target sm_100a, sm_90a
  num_warps 4
  const CASE: int = 0
  param x_ptr: ptr(f32)
  param out_ptr: ptr(f32)
  layout rows = blocked([1, 1], [1, 32], [4, 1], [1, 0])
  layout cols = blocked([4, 1], [8, 4], [1, 4], [0, 1])
  let offs = broadcast(expand_dims(arange(0, 8, slice(1, rows)), 1) * 32, [8, 32]) + broadcast(expand_dims(arange(0, 32, slice(0, rows)), 0), [8, 32])
  let masked = smem.alloc f32[8, 32], swizzled(4, 2, 4)
  let whole = smem.alloc f32[8, 32], plain
  cp.async masked, x_ptr, offs, mask=offs % 32 < 20
  cp.async.commit
  cp.async whole, x_ptr, 255 - offs
  if CASE != 3 {
    cp.async.commit
  }
  if CASE == 2 {
    smem.store whole, full([8, 32], 1.0, f32, rows)
  }
  if CASE == 1 {
    cp.async.wait 1
  } else {
    cp.async.wait 0
  }
  let o = broadcast(expand_dims(arange(0, 8, slice(1, cols)), 1) * 32, [8, 32]) + broadcast(expand_dims(arange(0, 32, slice(0, cols)), 0), [8, 32])
  let m = smem.load masked, layout=cols
  let w = smem.load whole, layout=cols
  global.store out_ptr, o, m
  global.store out_ptr, o + 256, w
  launch {
    grid = [1]
    tensor x: f32[256] = iota()
    tensor out: f32[512] = fill(-1)
    x_ptr = x
    out_ptr = out
    outputs = [out]
  }
}
"#;

#[test]
fn copies_land_masked_elements_as_zeros_in_any_layout() {
    let r = run(COPY, &[]);
    assert_ok(COPY, &r);
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
