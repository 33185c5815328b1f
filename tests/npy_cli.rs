//! `bwsim run --input NAME=FILE.npy` and `--save-outputs DIR`: the caller's arrays in, the
//! outputs back as `.npy`, checked against sums computed here; bad files are refused with the
//! argument named.

mod common;

use common::{bwsim, bwsim_says, fresh_scratch, save_npy as save};
use std::path::{Path, PathBuf};

fn load(path: &Path) -> (Vec<u64>, Vec<f32>) {
    let f = npyz::NpyFile::new(std::io::BufReader::new(
        std::fs::File::open(path).expect("output file"),
    ))
    .expect("a .npy file");
    let shape = f.shape().to_vec();
    (shape, f.into_vec::<f32>().expect("f32 data"))
}

/// Asserts that the `c.npy` saved in `out` holds `a + b` element by element; its shape.
fn saved_sum(out: &Path, a: &[f32], b: &[f32]) -> Vec<u64> {
    let (shape, c) = load(&out.join("c.npy"));
    let want: Vec<f32> = a.iter().zip(b).map(|(x, y)| x + y).collect();
    assert_eq!(c, want);
    shape
}

fn operands(d: &Path, x: u64, y: u64) -> (Vec<f32>, Vec<f32>, String, String) {
    let n = (x * y) as usize;
    // Values whose f32 sums are exact, different in every element.
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| -(i as f32) * 0.25 + 3.0).collect();
    let (pa, pb) = (d.join("a.npy"), d.join("b.npy"));
    save(&pa, &[x, y], &a);
    save(&pb, &[x, y], &b);
    (a, b, format!("a={}", pa.display()), format!("b={}", pb.display()))
}

/// The operands `a` and `b` (`x` by `y`, written to `.npy` files in the scratch folder
/// `tag`) and the folder their sum is saved to by `bwsim run KERNEL... --input a=.. --input
/// b=.. --save-outputs DIR EXTRA...`; with bwsim's exit status, stdout and stderr.
struct SavedRun {
    a: Vec<f32>,
    b: Vec<f32>,
    inputs: [String; 2],
    out: PathBuf,
    code: i32,
    stdout: String,
    err: String,
}

fn run_saving(tag: &str, (x, y): (u64, u64), kernel: &[&str], extra: &[&str]) -> SavedRun {
    let d = fresh_scratch(tag);
    let (a, b, ia, ib) = operands(&d, x, y);
    let out = d.join("out");
    let dir = out.to_str().expect("utf-8 path");
    let mut args = vec!["run"];
    args.extend_from_slice(kernel);
    args.extend_from_slice(&["--input", &ia, "--input", &ib, "--save-outputs", dir]);
    args.extend_from_slice(extra);
    let (code, stdout, err) = bwsim(&args);
    SavedRun {
        a,
        b,
        inputs: [ia, ib],
        out,
        code,
        stdout,
        err,
    }
}

#[test]
fn inputs_in_outputs_out_for_a_gluon_kernel() {
    let kernel = ["tests/gluon/3.9/bug_ws_add_fixed.sm_100a.ttgir"];
    let r = run_saving("npy-cli-ttgir", (32, 384), &kernel, &["--json"]);
    assert_eq!(r.code, 0, "{}", r.err);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v["saved"].as_array().map(|s| s.len()), Some(1), "{}", r.stdout);
    assert_eq!(saved_sum(&r.out, &r.a, &r.b), [32, 384]);
}

#[test]
fn the_cpu_reference_checks_the_supplied_inputs() {
    let kernel = [
        "elementwise_add_ws",
        "--const",
        "XNUMEL=64",
        "--const",
        "YNUMEL=128",
    ];
    let r = run_saving("npy-cli-tile", (64, 128), &kernel, &[]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.stdout.contains("PASS"), "{}", r.stdout);
    saved_sum(&r.out, &r.a, &r.b);
    // check and time take the same inputs.
    let [ia, ib] = &r.inputs;
    let on_kernel = |cmd: &str, extra: &[&str]| bwsim(&[&[cmd][..], &kernel[..], extra].concat());
    let (code, _, err) = on_kernel("check", &["--schedules", "2", "--input", ia]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = on_kernel("time", &["--chip", "b200", "--input", ib]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn bad_inputs_are_refused_with_the_argument_named() {
    let d = fresh_scratch("npy-cli-bad");
    let p = d.join("small.npy");
    save(&p, &[2, 3], &[0.0; 6]);
    let arg = format!("a={}", p.display());
    let kernel = "tests/gluon/3.9/bug_ws_add_fixed.sm_100a.ttgir";
    let refused = |input: &str, says: &[&str]| bwsim_says(&["run", kernel, "--input", input], 2, says);
    refused(&arg, &["--input a=", "shape [2, 3], the tensor [32, 384]"]);
    refused(
        &format!("zz={}", p.display()),
        &["no tensor `zz` (its tensors: a, b, c)"],
    );
    let junk = d.join("junk.npy");
    std::fs::write(&junk, b"\x93NUMPY garbage").expect("write");
    refused(&format!("a={}", junk.display()), &["not a .npy file"]);
    refused("a", &["is not NAME=FILE.npy"]);
}
