//! `bwsim run FILE.ptx` and `bwsim gpu FILE.ptx`: Triton 3.9's PTX of the softmax and
//! reduction Gluon fixtures (ptxfront/tests/fixtures/triton-3.9) run on the PTX front end from
//! `.npy` inputs written here, their saved outputs checked against the kernels' results
//! computed here; the PTX front end's errors rendered on the PTX text; `bwsim gpu --dry-run`
//! assembling the PTX with ptxas, and a run without a GPU saying it skipped.

use crate::common::{bwsim, bwsim_json, fresh_scratch, json, save_npy};
use crate::FIXTURES;
use std::path::Path;

/// The path of a fixture.
fn fixture(name: &str) -> String {
    format!("{}/{FIXTURES}/{name}.ptx", env!("CARGO_MANIFEST_DIR"))
}

fn sidecar(name: &str) -> String {
    format!("{}/tests/gluon/{name}.launch", env!("CARGO_MANIFEST_DIR"))
}

/// The `f32` or `i32` array of a saved `.npy` file, with its shape.
fn load<T: npyz::Deserialize>(path: &Path) -> (Vec<u64>, Vec<T>) {
    let f = npyz::NpyFile::new(std::io::BufReader::new(
        std::fs::File::open(path).expect("output file"),
    ))
    .expect("a .npy file");
    let shape = f.shape().to_vec();
    (shape, f.into_vec::<T>().expect("data"))
}

/// A deterministic spread of values: `n` numbers in about [-4, 4) (an LCG's high bits).
fn spread(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0
        })
        .collect()
}

/// softmax.sm_90a.ptx (and its sm_100a twin: the front end runs either) over the sidecar's
/// 60 rows of 128 from `x.npy`: every row of the saved `out` is `exp(x - max) / sum`, computed
/// here in f64, within the rounding of the kernel's f32 arithmetic (its `ex2.approx` and
/// `div.full` the front end computes correctly rounded); the JSON names the CPU reference it
/// was checked against and its verdict.
#[test]
fn softmax_ptx_runs_to_the_rows_softmax() {
    let dir = fresh_scratch("ptx-run-softmax");
    let x = spread(60 * 128, 7);
    let xp = dir.join("x.npy");
    save_npy(&xp, &[60, 128], &x);
    for target in ["sm_90a", "sm_100a"] {
        let out = dir.join(target);
        let v = bwsim_json(
            0,
            &[
                "run",
                &fixture(&format!("softmax.{target}")),
                "--launch",
                &sidecar("softmax"),
                "--input",
                &format!("x={}", xp.display()),
                "--save-outputs",
                &out.to_string_lossy(),
                "--json",
            ],
        );
        assert_eq!(v["result"], "PASS", "{v}");
        assert_eq!(v["reference"], "softmax_kernel");
        assert_eq!(v["target"], target);
        assert_eq!(v["front_end"], "ptx");
        assert_eq!(v["counters"]["ctas"], 8);
        let (shape, got) = load::<f32>(&out.join("out.npy"));
        assert_eq!(shape, vec![60, 128]);
        for r in 0..60 {
            let row = &x[r * 128..(r + 1) * 128];
            let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
            let sum: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
            for c in 0..128 {
                let want = (row[c] as f64 - m).exp() / sum;
                let g = got[r * 128 + c] as f64;
                assert!(
                    (g - want).abs() <= 1e-7 + 1e-5 * want,
                    "{target} out[{r}, {c}] = {g}, softmax gives {want}"
                );
            }
        }
    }
}

/// reductions.sm_90a.ptx over 8 rows of 64 small integers with ties: per row the maximum of x
/// at its first position, the minimum of y at its last, the sum of x (exact: integers), the
/// maximum of y, and the reverse running sums of y, each computed here and compared bit for
/// bit with the saved outputs.
#[test]
fn reductions_ptx_runs_to_each_rows_reductions() {
    let dir = fresh_scratch("ptx-run-reductions");
    let x: Vec<f32> = spread(8 * 64, 3).iter().map(|v| v.round()).collect();
    let y: Vec<i32> = spread(8 * 64, 11).iter().map(|v| v.round() as i32).collect();
    save_npy(&dir.join("x.npy"), &[8, 64], &x);
    save_npy(&dir.join("y.npy"), &[8, 64], &y);
    let out = dir.join("out");
    let (code, stdout, err) = bwsim(&[
        "run",
        &fixture("reductions.sm_90a"),
        "--launch",
        &sidecar("reductions"),
        "--input",
        &format!("x={}", dir.join("x.npy").display()),
        "--input",
        &format!("y={}", dir.join("y.npy").display()),
        "--save-outputs",
        &out.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(
        stdout.contains("`reductions_kernel` on the PTX front end, target sm_90a"),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("result    PASS"), "{stdout}");
    let f = |n: &str| load::<f32>(&out.join(format!("{n}.npy"))).1;
    let i = |n: &str| load::<i32>(&out.join(format!("{n}.npy"))).1;
    let (vmax, imax, vmin, imin, sums, maxes, tails) = (
        f("vmax"),
        i("imax"),
        i("vmin"),
        i("imin"),
        f("sums"),
        i("maxes"),
        i("tails"),
    );
    for r in 0..8 {
        let xs = &x[r * 64..(r + 1) * 64];
        let ys = &y[r * 64..(r + 1) * 64];
        let mx = xs.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let mn = *ys.iter().min().expect("a row");
        assert_eq!(vmax[r], mx, "vmax[{r}]");
        assert_eq!(
            imax[r],
            xs.iter().position(|&v| v == mx).expect("max") as i32,
            "imax[{r}]"
        );
        assert_eq!(vmin[r], mn, "vmin[{r}]");
        assert_eq!(
            imin[r],
            ys.iter().rposition(|&v| v == mn).expect("min") as i32,
            "imin[{r}]"
        );
        assert_eq!(sums[r], xs.iter().sum::<f32>(), "sums[{r}]");
        assert_eq!(maxes[r], *ys.iter().max().expect("a row"), "maxes[{r}]");
        for c in 0..64 {
            assert_eq!(tails[r * 64 + c], ys[c..].iter().sum::<i32>(), "tails[{r}, {c}]");
        }
    }
}

/// Errors of the PTX are rendered on its text: an instruction the front end does not run at
/// its line and column (with the line quoted), a syntax error likewise, by `run` and `check`
/// alike; `--const` is refused for a PTX file.
#[test]
fn ptx_errors_are_rendered_at_their_ptx_line() {
    let dir = fresh_scratch("ptx-run-errors");
    let src = std::fs::read_to_string(fixture("softmax.sm_90a")).expect("fixture");
    let at = |text: &str, needle: &str| text[..text.find(needle).expect("needle")].matches('\n').count() + 1;
    let unknown = src.replacen("ex2.approx.ftz.f32", "frob.approx.ftz.f32", 1);
    let no_semicolon = src.replacen("\tret;", "\tret", 1);
    for (name, text, code, needle) in [
        ("unknown.ptx", &unknown, "sim-unsupported", "frob.approx.ftz.f32"),
        ("syntax.ptx", &no_semicolon, "syntax", "\tret\n"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        // The missing `;` is found at the token after `ret`: the label on the next line.
        let line = at(text, needle) + usize::from(code == "syntax");
        for cmd in ["run", "check"] {
            let (status, _, err) = bwsim(&[cmd, &path.to_string_lossy(), "--launch", &sidecar("softmax")]);
            assert_ne!(status, 0, "{cmd} {name}: {err}");
            assert!(err.contains(&format!("error[{code}]")), "{cmd} {name}:\n{err}");
            assert!(
                err.contains(&format!("{}:{line}:", path.display())),
                "{cmd} {name}: line {line}\n{err}"
            );
            if code != "syntax" {
                assert!(
                    err.contains("frob.approx.ftz.f32     %r73, %r65;"),
                    "{cmd} {name}:\n{err}"
                );
            }
        }
    }
    let (status, _, err) = bwsim(&[
        "run",
        &fixture("softmax.sm_90a"),
        "--launch",
        &sidecar("softmax"),
        "--const",
        "ROWS=4",
    ]);
    assert_eq!(status, 2, "{err}");
    assert!(err.contains("--const does not apply to a PTX file"), "{err}");
}

/// `bwsim gpu FILE.ptx --dry-run` assembles the PTX with ptxas for its `.target` (ptxas from
/// `BWSIM_PTXAS`, `PATH` or `.tools/py`, which `bash scripts/test` installs) and prepares the
/// launch; both targets' softmax and the sm_90a reduction.
#[test]
fn gpu_dry_run_assembles_the_ptx_for_its_target() {
    for (name, target) in [
        ("softmax.sm_90a", "sm_90a"),
        ("softmax.sm_100a", "sm_100a"),
        ("reductions.sm_90a", "sm_90a"),
    ] {
        let (code, out, err) = bwsim(&["gpu", &fixture(name), "--dry-run", "--json"]);
        assert_eq!(code, 0, "{name}: {out}{err}");
        let v = json(out.trim());
        assert_eq!(v["result"], "prepared", "{name}: {v}");
        assert_eq!(v["target"], target);
        assert_eq!(v["case"], format!("ptx/{name}"));
        assert_eq!(
            v["notes"],
            serde_json::json!([]),
            "{name}: ptxas assembled it with nothing to say"
        );
    }
}

/// Without a GPU, `bwsim gpu FILE.ptx` prepares the launch (assembled, inputs drawn) and says
/// that it skipped, with exit status 77.
#[test]
fn gpu_without_a_gpu_says_it_skipped() {
    if bwsim(&["gpu", "--probe"]).0 == 0 {
        eprintln!("skipped: a GPU is present, so the case runs instead of being skipped");
        return;
    }
    let (code, out, err) = bwsim(&["gpu", &fixture("softmax.sm_90a")]);
    assert_eq!(code, 77, "{out}{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("ptx/softmax.sm_90a"))
        .expect("a row");
    assert!(row.ends_with("skipped: no CUDA driver/GPU found"), "{row}");
}
