//! The PTX front end against the TTGIR path: Triton 3.9's PTX of the Gluon softmax fixture,
//! run by bwsim-ptxfront, gives outputs within 2 ulps of `bwsim run` on the TTGIR Triton made
//! from the same kernel (tests/gluon/3.9/softmax.*.ttgir), from the same input (the row sums'
//! order differs, see `compare`), and within 2e-6 relative of a softmax computed here in f64.

mod common;
#[path = "../ptxfront/tests/common/mod.rs"]
mod ptx_common;

use common::{bwsim_says, fresh_scratch, save_npy};
use ptx_common::{
    reductions_inputs, run_reductions, run_softmax, triton_ptx, REDUCTIONS_COLS, REDUCTIONS_OUTPUTS,
    REDUCTIONS_ROWS, SOFTMAX_COLS as COLS, SOFTMAX_ROWS as ROWS,
};
use std::path::Path;

/// The ptxfront crate's folder, where the Triton PTX fixtures are.
const PTXFRONT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ptxfront");

fn load<T: npyz::Deserialize>(path: &Path) -> Vec<T> {
    let f = npyz::NpyFile::new(std::io::BufReader::new(
        std::fs::File::open(path).expect("output file"),
    ))
    .expect("a .npy file");
    f.into_vec::<T>().expect("the output's element type")
}

/// `bwsim run` on Triton 3.9's TTGIR of fixture `name` for `target`, with each `(NAME, FILE)`
/// of `inputs` given as `--input NAME=FILE` and the outputs saved to `out_dir`.
fn run_ttgir(name: &str, target: &str, inputs: &[(&str, &Path)], out_dir: &Path) {
    let ttgir = format!("tests/gluon/3.9/{name}.{target}.ttgir");
    let inputs: Vec<String> = inputs
        .iter()
        .map(|(n, p)| format!("{n}={}", p.display()))
        .collect();
    let mut args = vec!["run", &ttgir];
    for i in &inputs {
        args.extend(["--input", i]);
    }
    let out = out_dir.to_string_lossy();
    args.extend(["--save-outputs", &out]);
    bwsim_says(&args, 0, &[]);
}

fn compare(target: &str) {
    let dir = fresh_scratch(&format!("ptx-front-{target}"));
    let x = ptx_common::randn(ROWS * COLS, 7);
    let xp = dir.join("x.npy");
    save_npy(&xp, &[ROWS as u64, COLS as u64], &x);
    let out_dir = dir.join("out");
    run_ttgir("softmax", target, &[("x", &xp)], &out_dir);
    let sim: Vec<f32> = load(&out_dir.join("out.npy"));
    let src = triton_ptx(PTXFRONT, "softmax", target).unwrap_or_else(|e| panic!("{e}"));
    let ptx = run_softmax(&src, &x).unwrap_or_else(|e| panic!("{target}: {e}"));
    // The two paths agree to 2 ulps. They are not bit-identical: the PTX sums a row in the
    // order Triton's lowering chose (per thread (p0 + p2) + (p1 + p3), then a butterfly over
    // 16, 8, 4, 2, 1 lanes; ptxfront/tests/triton_softmax.rs checks that order bit for bit),
    // and the TTGIR path sums in another order.
    let ulps = |a: f32, b: f32| (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs();
    let worst = (0..ROWS * COLS).map(|i| ulps(sim[i], ptx[i])).max().unwrap_or(0);
    let differ = (0..ROWS * COLS)
        .filter(|&i| sim[i].to_bits() != ptx[i].to_bits())
        .count();
    eprintln!(
        "{target}: {differ} of {} elements differ between the paths, by at most {worst} ulp",
        ROWS * COLS
    );
    assert!(
        worst <= 2,
        "{target}: the TTGIR and PTX paths differ by {worst} ulps"
    );
    ptx_common::assert_softmax(target, &x, &ptx);
}

#[test]
fn softmax_ptx_equals_the_ttgir_path_sm_100a() {
    compare("sm_100a");
}

#[test]
fn softmax_ptx_equals_the_ttgir_path_sm_90a() {
    compare("sm_90a");
}

/// Triton's PTX of the reductions fixture (combiner reductions, a two-operand reduction, a
/// reverse scan) gives the TTGIR path's output bits exactly: the inputs are small integers, so
/// even the float sums do not depend on the order.
#[test]
fn reductions_ptx_equals_the_ttgir_path() {
    let (r, c) = (REDUCTIONS_ROWS as u64, REDUCTIONS_COLS as u64);
    for target in ["sm_100a", "sm_90a"] {
        let dir = fresh_scratch(&format!("ptx-front-red-{target}"));
        let (x, y) = reductions_inputs(5);
        let (xp, yp) = (dir.join("x.npy"), dir.join("y.npy"));
        save_npy(&xp, &[r, c], &x);
        save_npy(&yp, &[r, c], &y);
        let out_dir = dir.join("out");
        run_ttgir("reductions", target, &[("x", &xp), ("y", &yp)], &out_dir);
        let src = triton_ptx(PTXFRONT, "reductions", target).unwrap_or_else(|e| panic!("{e}"));
        let outs = run_reductions(&src, &x, &y).unwrap_or_else(|e| panic!("{target}: {e}"));
        for (n, buf) in REDUCTIONS_OUTPUTS.iter().zip(outs) {
            let path = out_dir.join(format!("{n}.npy"));
            // Compare raw 32-bit words (f32 or i32 alike).
            let sim: Vec<u32> = if matches!(*n, "vmax" | "sums") {
                load::<f32>(&path).iter().map(|v| v.to_bits()).collect()
            } else {
                load::<i32>(&path).iter().map(|v| *v as u32).collect()
            };
            let ptx: Vec<u32> = ptx_common::words(&buf).map(u32::from_le_bytes).collect();
            assert_eq!(sim, ptx, "{target}: output `{n}`");
        }
    }
}
