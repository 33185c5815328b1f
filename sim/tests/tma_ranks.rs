//! TMA tile copies of every rank (1 to 5): a box at coordinates that are negative, in range
//! or past the end in each dimension is loaded (out-of-range elements zero-filled), stored back
//! whole, and compared with a box extraction written here. The transaction count is always
//! the full box, out-of-range part included [H100].

mod common;
use bwsim_sim::{RunResult, What};
use common::*;

fn list(v: &[i64]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

fn kernel(shape: &[i64], bx: &[i64], coords: &[i64]) -> String {
    let zeros = list(&vec![0; bx.len()]);
    format!(
        r#"
kernel rank{r} {{
  target sm_100a, sm_90a
  num_warps 4
  param src: tensor_desc(f32[{b}], nvmma(0))
  param dst: tensor_desc(f32[{b}], nvmma(0))
  let buf = smem.alloc f32[{b}], nvmma(0)
  let bar = mbar.alloc 1
  mbar.init bar[0], 1
  mbar.expect bar[0], src.nbytes
  tma.load src[{c}], buf, bar[0]
  mbar.wait bar[0], 0
  tma.store dst[{zeros}], buf
  tma.store_wait 0, full=true
  launch {{
    grid = [1]
    tensor t: f32[{s}] = iota()
    tensor o: f32[{b}] = fill(-1)
    src = t
    dst = o
    outputs = [o]
  }}
}}
"#,
        r = bx.len(),
        b = list(bx),
        c = list(coords),
        s = list(shape),
    )
}

/// The box at `coords`: iota values where in range, 0 elsewhere.
fn expected(shape: &[i64], bx: &[i64], coords: &[i64]) -> Vec<f64> {
    let n: i64 = bx.iter().product();
    let mut out = Vec::new();
    for lin in 0..n {
        let mut rem = lin;
        let mut idx = vec![0; bx.len()];
        for k in (0..bx.len()).rev() {
            idx[k] = rem % bx[k];
            rem /= bx[k];
        }
        let g: Vec<i64> = idx.iter().zip(coords).map(|(i, c)| i + c).collect();
        let inb = g.iter().zip(shape).all(|(x, d)| (0..*d).contains(x));
        out.push(if inb {
            g.iter().zip(shape).fold(0, |acc, (x, d)| acc * d + x) as f64
        } else {
            0.0
        });
    }
    out
}

/// The bytes the run's transactions completed on barriers, in all.
fn completed_tx_bytes(r: &RunResult) -> i64 {
    r.trace
        .events
        .iter()
        .filter_map(|e| match e.what {
            What::CompleteTx { bytes, .. } => Some(bytes),
            _ => None,
        })
        .sum()
}

fn check(shape: &[i64], bx: &[i64], coords: &[i64]) {
    let src = kernel(shape, bx, coords);
    let r = run(&src, &[]);
    assert_ok(&src, &r);
    assert_eq!(
        values(tensor(&r, "o")),
        expected(shape, bx, coords),
        "rank {} box {bx:?} at {coords:?} of {shape:?}",
        bx.len()
    );
    let delivered = completed_tx_bytes(&r);
    assert_eq!(delivered, 4 * bx.iter().product::<i64>(), "the full box counts");
}

#[test]
fn rank1() {
    check(&[40], &[16], &[-8]);
    check(&[40], &[16], &[32]);
    check(&[40], &[16], &[1000]);
}

#[test]
fn rank2() {
    check(&[5, 20], &[4, 8], &[-2, 16]);
    check(&[5, 20], &[4, 8], &[3, -4]);
}

#[test]
fn rank4() {
    check(&[2, 3, 4, 12], &[2, 2, 3, 8], &[1, -1, 2, 8]);
    check(&[2, 3, 4, 12], &[2, 2, 3, 8], &[-5, 2, -3, -8]);
}

#[test]
fn rank5() {
    check(&[2, 2, 3, 3, 16], &[2, 2, 2, 2, 8], &[0, 1, -1, 2, 12]);
    check(&[2, 2, 3, 3, 16], &[2, 2, 2, 2, 8], &[1, 0, 2, 0, -4]);
}

#[test]
fn a_box_entirely_out_of_range_still_delivers_its_bytes() {
    check(&[4, 16], &[4, 8], &[-100, 0]);
    check(&[2, 2, 3, 3, 16], &[2, 2, 2, 2, 8], &[5, 5, 5, 5, 64]);
}

/// `elementStrides`: an f32 box of 8 rows x 32 with stride S in the row dimension moves rows
/// R0, R0 + S, ... (ceil(8 / S) of them) packed densely, and completes that many bytes; a
/// stride in the innermost dimension has no effect [docs/semantics.md#tma, H100].
const STRIDED: &str = include_str!("tiles/tma_ranks/strided.tile");

#[test]
fn element_strides_shrink_the_box_and_its_byte_count() {
    // (S, SI, R0, rows moved, bytes) from docs/semantics.md#tma: stride 2 moves rows 0, 2, 4, 6 =
    // 512 bytes; stride 3 rows 0, 3, 6 = 384 bytes; an innermost stride moves and counts the full
    // box.
    for (s, si, r0, rows, bytes) in [
        (2, 1, 0, vec![0, 2, 4, 6], 512),
        (3, 1, 0, vec![0, 3, 6], 384),
        (1, 2, 0, (0..8).collect(), 1024),
        (8, 1, 3, vec![3], 128),
        // Rows 12, 14 in range, 16 and 18 past the end: zeros, still counted.
        (2, 1, 12, vec![12, 14, 16, 18], 512),
    ] {
        let c = [
            ("S", s.to_string()),
            ("SI", si.to_string()),
            ("R0", r0.to_string()),
        ];
        let c: Vec<(&str, &str)> = c.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let r = run(STRIDED, &c);
        assert_ok(STRIDED, &r);
        let want: Vec<f64> = rows
            .iter()
            .flat_map(|&row: &i64| (0..32).map(move |j| if row < 16 { (row * 32 + j) as f64 } else { 0.0 }))
            .collect();
        assert_eq!(values(tensor(&r, "o")), want, "S={s} SI={si} R0={r0}");
        let delivered = completed_tx_bytes(&r);
        assert_eq!(delivered, bytes, "S={s} SI={si}: tx bytes");
    }
}
