//! Triton 3.9's own PTX for the Gluon reductions fixture (tests/gluon/reductions.py at ROWS=8,
//! COLS=64, 4 warps: reductions with combiner regions, a two-operand reduction and a reverse
//! scan, lowered to butterfly and `shfl.sync.up` shuffles), run by the PTX front end and compared
//! with the kernel's documented meaning computed here. The inputs are small integers (as the
//! fixture's launch draws them: x in [-3, 3) as f32, y in [-4, 4)), so every float sum is exact
//! and the comparison is bit for bit.

mod common;

use bwsim_ptxfront::Error;
use common::*;

const ROWS: usize = REDUCTIONS_ROWS;
const COLS: usize = REDUCTIONS_COLS;

fn check(target: &str, seed: u64) -> Result<(), Error> {
    let (x, y) = reductions_inputs(seed);
    let src = triton_ptx(env!("CARGO_MANIFEST_DIR"), "reductions", target)?;
    let outs = run_reductions(&src, &x, &y)?;
    let (vmax, sums) = (bytes_f32(&outs[0]), bytes_f32(&outs[4]));
    let [imax, vmin, imin, maxes, tails] = [1, 2, 3, 5, 6].map(|k| bytes_i32(&outs[k]));
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
