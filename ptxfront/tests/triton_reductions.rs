//! Triton 3.9's own PTX for the Gluon reductions fixture (tests/gluon/reductions.py at ROWS=8,
//! COLS=64, 4 warps: reductions with combiner regions, a two-operand reduction and a reverse
//! scan, lowered to butterfly and `shfl.sync.up` shuffles), run by the PTX front end and compared
//! with the kernel's documented meaning computed here. The inputs are small integers (as the
//! fixture's launch draws them: x in [-3, 3) as f32, y in [-4, 4)), so every float sum is exact
//! and the comparison is bit for bit.

mod common;

use bwsim_ptxfront::{compile, run, Arg, Error, Launch};
use common::*;

const ROWS: usize = 8;
const COLS: usize = 64;

/// Outputs: vmax, imax, vmin, imin, sums, maxes, tails.
type Outs = (
    Vec<f32>,
    Vec<i32>,
    Vec<i32>,
    Vec<i32>,
    Vec<f32>,
    Vec<i32>,
    Vec<i32>,
);

fn run_reductions(target: &str, x: &[f32], y: &[i32]) -> Result<Outs, Error> {
    let path = format!(
        "{}/tests/fixtures/triton-3.9/reductions.{target}.ptx",
        env!("CARGO_MANIFEST_DIR")
    );
    let src = std::fs::read_to_string(&path).map_err(|e| Error::Launch(format!("{path}: {e}")))?;
    let p = compile(&src, "reductions_kernel")?;
    let mut bufs = vec![
        f32_bytes(x),
        i32_bytes(y),
        vec![0x55; 4 * ROWS],
        vec![0x55; 4 * ROWS],
        vec![0x55; 4 * ROWS],
        vec![0x55; 4 * ROWS],
        vec![0x55; 4 * ROWS],
        vec![0x55; 4 * ROWS],
        vec![0x55; 4 * ROWS * COLS],
    ];
    let mut args: Vec<Arg> = (0..9).map(Arg::Buffer).collect();
    args.extend([Arg::U64(0), Arg::U64(0)]);
    let stats = run(&p, &Launch::new([1, 1, 1], [128, 1, 1], args), &mut bufs)?;
    eprintln!("{target}: {stats:?}");
    Ok((
        bytes_f32(&bufs[2]),
        bytes_i32(&bufs[3]),
        bytes_i32(&bufs[4]),
        bytes_i32(&bufs[5]),
        bytes_f32(&bufs[6]),
        bytes_i32(&bufs[7]),
        bytes_i32(&bufs[8]),
    ))
}

fn check(target: &str, seed: u64) -> Result<(), Error> {
    // Small integers with many ties, as the fixture's launch draws them.
    let x: Vec<f32> = randn(ROWS * COLS, seed)
        .iter()
        .map(|v| (v * 0.75).floor().clamp(-3.0, 2.0))
        .collect();
    let y: Vec<i32> = randn(ROWS * COLS, seed + 1)
        .iter()
        .map(|v| v.floor() as i32)
        .collect();
    let (vmax, imax, vmin, imin, sums, maxes, tails) = run_reductions(target, &x, &y)?;
    for r in 0..ROWS {
        let xr = &x[r * COLS..(r + 1) * COLS];
        let yr = &y[r * COLS..(r + 1) * COLS];
        let m = xr.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let first = xr.iter().position(|&v| v == m).unwrap_or(COLS);
        let mn = yr.iter().copied().min().unwrap_or(0);
        let last = yr.iter().rposition(|&v| v == mn).unwrap_or(COLS);
        assert_eq!(
            (vmax[r], imax[r]),
            (m, first as i32),
            "{target} row {r}: max and its first position"
        );
        assert_eq!(
            (vmin[r], imin[r]),
            (mn, last as i32),
            "{target} row {r}: min and its last position"
        );
        assert_eq!(sums[r], xr.iter().sum::<f32>(), "{target} row {r}: sum");
        assert_eq!(
            maxes[r],
            yr.iter().copied().max().unwrap_or(0),
            "{target} row {r}: max of y"
        );
        for c in 0..COLS {
            assert_eq!(
                tails[r * COLS + c],
                yr[c..].iter().sum::<i32>(),
                "{target} row {r} col {c}: reverse scan"
            );
        }
    }
    Ok(())
}

#[test]
fn reductions_sm_100a_match_the_reference() -> Result<(), Error> {
    for seed in [1, 2, 3] {
        check("sm_100a", seed)?;
    }
    Ok(())
}

#[test]
fn reductions_sm_90a_match_the_reference() -> Result<(), Error> {
    for seed in [1, 2, 3] {
        check("sm_90a", seed)?;
    }
    Ok(())
}
