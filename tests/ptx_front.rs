//! The PTX front end against the TTGIR path: Triton 3.9's PTX of the Gluon softmax fixture,
//! run by bwsim-ptxfront, gives outputs within 2 ulps of `bwsim run` on the TTGIR Triton made
//! from the same kernel (tests/gluon/3.9/softmax.*.ttgir), from the same input (the row sums'
//! order differs, see `compare`), and within 2e-6 relative of a softmax computed here in f64.

mod common;

use bwsim_ptxfront::{compile, run, Arg, Launch};
use common::{bwsim, fresh_scratch};
use std::path::Path;

const ROWS: usize = 60;
const COLS: usize = 128;

fn save(path: &Path, data: &[f32]) {
    save_shaped(path, &[ROWS as u64, COLS as u64], data)
}

fn save_shaped<T: npyz::Serialize + npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], data: &[T]) {
    use npyz::WriterBuilder;
    let f = std::io::BufWriter::new(std::fs::File::create(path).expect("create .npy"));
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(f)
        .begin_nd()
        .expect("npy header");
    w.extend(data.iter().copied()).expect("npy data");
    w.finish().expect("npy end");
}

fn load(path: &Path) -> Vec<f32> {
    let f = npyz::NpyFile::new(std::io::BufReader::new(
        std::fs::File::open(path).expect("output file"),
    ))
    .expect("a .npy file");
    f.into_vec::<f32>().expect("f32 data")
}

fn input() -> Vec<f32> {
    // Deterministic values in [-4, 4), different in every element.
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..ROWS * COLS)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f64 / (1u64 << 24) as f64 * 8.0 - 4.0) as f32
        })
        .collect()
}

fn ptx_softmax(target: &str, x: &[f32]) -> Vec<f32> {
    let path = format!(
        "{}/ptxfront/tests/fixtures/triton-3.9/softmax.{target}.ptx",
        env!("CARGO_MANIFEST_DIR")
    );
    let src = std::fs::read_to_string(&path).expect("the PTX fixture");
    let p = compile(&src, "softmax_kernel").unwrap_or_else(|e| panic!("{path}: {e}"));
    let args = vec![
        Arg::Buffer(0),
        Arg::Buffer(1),
        Arg::U32(ROWS as u32),
        Arg::U64(0),
        Arg::U64(0),
    ];
    let mut bufs = vec![
        x.iter().flat_map(|v| v.to_le_bytes()).collect(),
        [7f32; ROWS * COLS]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    ];
    run(&p, &Launch::new([8, 1, 1], [128, 1, 1], args), &mut bufs).unwrap_or_else(|e| panic!("{path}: {e}"));
    bufs[1]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn compare(target: &str) {
    let dir = fresh_scratch(&format!("ptx-front-{target}"));
    let x = input();
    let xp = dir.join("x.npy");
    save(&xp, &x);
    let out_dir = dir.join("out");
    let ttgir = format!("tests/gluon/3.9/softmax.{target}.ttgir");
    let (code, _, err) = bwsim(&[
        "run",
        &ttgir,
        "--input",
        &format!("x={}", xp.display()),
        "--save-outputs",
        &out_dir.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{err}");
    let sim = load(&out_dir.join("out.npy"));
    let ptx = ptx_softmax(target, &x);
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
    for r in 0..ROWS {
        let row = &x[r * COLS..(r + 1) * COLS];
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
        let e: Vec<f64> = row.iter().map(|&v| (v as f64 - m).exp()).collect();
        let s: f64 = e.iter().sum();
        for c in 0..COLS {
            let want = e[c] / s;
            let got = ptx[r * COLS + c] as f64;
            assert!(
                (got - want).abs() / want < 2e-6,
                "{target}: row {r} col {c}: {got} against {want}"
            );
        }
    }
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
    const R: usize = 8;
    const C: usize = 64;
    for target in ["sm_100a", "sm_90a"] {
        let dir = fresh_scratch(&format!("ptx-front-red-{target}"));
        let x: Vec<f32> = input()[..R * C]
            .iter()
            .map(|v| (v * 0.75).floor().clamp(-3.0, 2.0))
            .collect();
        let y: Vec<i32> = input()[R * C..2 * R * C]
            .iter()
            .map(|v| v.floor() as i32)
            .collect();
        let (xp, yp) = (dir.join("x.npy"), dir.join("y.npy"));
        save_shaped(&xp, &[R as u64, C as u64], &x);
        save_shaped(&yp, &[R as u64, C as u64], &y);
        let out_dir = dir.join("out");
        let ttgir = format!("tests/gluon/3.9/reductions.{target}.ttgir");
        let (code, _, err) = bwsim(&[
            "run",
            &ttgir,
            "--input",
            &format!("x={}", xp.display()),
            "--input",
            &format!("y={}", yp.display()),
            "--save-outputs",
            &out_dir.to_string_lossy(),
        ]);
        assert_eq!(code, 0, "{err}");
        let path = format!(
            "{}/ptxfront/tests/fixtures/triton-3.9/reductions.{target}.ptx",
            env!("CARGO_MANIFEST_DIR")
        );
        let src = std::fs::read_to_string(&path).expect("the PTX fixture");
        let p = compile(&src, "reductions_kernel").unwrap_or_else(|e| panic!("{path}: {e}"));
        let names = ["vmax", "imax", "vmin", "imin", "sums", "maxes", "tails"];
        let mut bufs: Vec<Vec<u8>> = vec![
            x.iter().flat_map(|v| v.to_le_bytes()).collect(),
            y.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ];
        for n in names {
            bufs.push(vec![0x55; if n == "tails" { 4 * R * C } else { 4 * R }]);
        }
        let mut args: Vec<Arg> = (0..9).map(Arg::Buffer).collect();
        args.extend([Arg::U64(0), Arg::U64(0)]);
        run(&p, &Launch::new([1, 1, 1], [128, 1, 1], args), &mut bufs)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        for (k, n) in names.iter().enumerate() {
            let f = npyz::NpyFile::new(std::io::BufReader::new(
                std::fs::File::open(out_dir.join(format!("{n}.npy"))).expect("output file"),
            ))
            .expect("a .npy file");
            // Compare raw 32-bit words (f32 or i32 alike).
            let sim: Vec<u32> = if matches!(*n, "vmax" | "sums") {
                f.into_vec::<f32>()
                    .expect("f32")
                    .iter()
                    .map(|v| v.to_bits())
                    .collect()
            } else {
                f.into_vec::<i32>()
                    .expect("i32")
                    .iter()
                    .map(|v| *v as u32)
                    .collect()
            };
            let ptx: Vec<u32> = bufs[2 + k]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            assert_eq!(sim, ptx, "{target}: output `{n}`");
        }
    }
}
