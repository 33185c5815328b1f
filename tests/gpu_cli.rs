//! `bwsim gpu`: the differential harness from the command line.
//!
//! Without a GPU (CI) the harness still lowers, assembles and prepares every case
//! (`--dry-run`, in the full test tier: `BWSIM_FULL=1`), and a real run reports each case as
//! skipped with exit status 77. The test that launches on a GPU is opt-in:
//! `BWSIM_GPU_TESTS=1 cargo test --test gpu_cli`.

mod common;

use common::{bwsim, bwsim_json, bwsim_prints};

/// Whether a GPU is present (`bwsim gpu --probe` exits 0).
fn gpu_present() -> bool {
    bwsim(&["gpu", "--probe"]).0 == 0
}

/// Whether the opt-in tests that launch on the local GPU run: `BWSIM_GPU_TESTS=1` and a GPU
/// present; otherwise says why they are skipped.
fn gpu_tests_run() -> bool {
    if std::env::var("BWSIM_GPU_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set BWSIM_GPU_TESTS=1 to launch on the local GPU");
        return false;
    }
    if !gpu_present() {
        eprintln!("skipped: BWSIM_GPU_TESTS=1 but no CUDA driver/GPU found");
        return false;
    }
    true
}

#[test]
fn the_case_list_has_at_least_forty_cases() {
    let (code, out, err) = bwsim(&["gpu", "--list"]);
    assert_eq!(code, 0, "{err}");
    let n = out.lines().count();
    assert!(n >= 40, "{n} cases:\n{out}");
    for family in [
        "tma_roundtrip[",
        "elementwise_add_ws",
        "persistent_matmul_pipelined",
        "fault_",
    ] {
        assert!(out.contains(family), "no `{family}` case");
    }
}

#[test]
fn dry_run_prepares_every_case_up_to_the_launch() {
    if !bwsim_testkit::runs_in_full_tier("`bwsim gpu --all --dry-run` (ptxas over every differential case)") {
        return;
    }
    let (code, out, err) = bwsim(&["gpu", "--all", "--dry-run"]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let prepared = out.lines().filter(|l| l.ends_with("  prepared")).count();
    assert!(prepared >= 40, "{prepared} prepared:\n{out}");
    assert!(!out.contains("ERROR"), "{out}");
    let summary = out.lines().last().unwrap_or("");
    assert!(summary.contains("0 failed, 0 errors"), "{summary}");
}

#[test]
fn without_a_gpu_every_case_says_skipped_and_the_status_is_77() {
    if gpu_present() {
        eprintln!("skipped: a GPU is present, so cases run instead of being skipped");
        return;
    }
    let (code, out, err) = bwsim(&["gpu", "--all", "--filter", "tma_roundtrip[r2"]);
    assert_eq!(code, 77, "{out}{err}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("tma_roundtrip")).collect();
    assert!(!rows.is_empty());
    for r in rows {
        assert!(r.ends_with("skipped: no CUDA driver/GPU found"), "{r}");
    }
    bwsim_prints(
        &["gpu", "elementwise_add_ws", "--seed", "3"],
        77,
        &["skipped: no CUDA driver/GPU found"],
    );
}

#[test]
fn on_a_gpu_every_case_for_its_architecture_agrees_with_the_simulator() {
    if !gpu_tests_run() {
        return;
    }
    let (code, out, err) = bwsim(&["gpu", "--all"]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.lines().any(|l| l.ends_with("  pass")), "{out}");
}

/// `bwsim gpu KERNEL... --time 5 --no-check --json`: asserts the exit status `code`; the one
/// JSON object it prints.
fn timed_json(kernel: &[&str], code: i32) -> serde_json::Value {
    let args = [&["gpu"][..], kernel, &["--time", "5", "--no-check", "--json"][..]].concat();
    bwsim_json(code, &args)
}

/// Timing mode without a GPU: the case is prepared, says why it did not run, and the JSON
/// carries the (empty) times; `--time 0` and `--time` with `--reps` are refused.
#[test]
fn timing_mode_without_a_gpu_reports_the_skip_reason() {
    if gpu_present() {
        eprintln!("skipped: a GPU is present (see on_a_gpu_timing_mode_reports_every_launch)");
        return;
    }
    let kernel = [
        "kernels/bench/wgmma_rate.tile",
        "--target",
        "sm_90a",
        "--const",
        "REPS=10",
    ];
    let v = timed_json(&kernel, 77);
    assert_eq!(v["result"], "skipped: no CUDA driver/GPU found");
    assert_eq!(v["checked"], false);
    assert_eq!(v["times_ms"], serde_json::json!([]));
    assert!(v["median_ms"].is_null() && v["min_ms"].is_null());
    assert_eq!(v["config"], "REPS=10");
    let (code, _, err) = bwsim(&["gpu", "elementwise_add_tma", "--time", "0"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = bwsim(&["gpu", "elementwise_add_tma", "--time", "3", "--reps", "2"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn on_a_gpu_timing_mode_reports_every_launch() {
    if !gpu_tests_run() {
        return;
    }
    let v = timed_json(&["elementwise_add_tma"], 0);
    assert_eq!(v["result"], "ran (not checked)");
    let times: Vec<f64> = serde_json::from_value(v["times_ms"].clone()).expect("times");
    assert_eq!(times.len(), 5);
    let (min, med) = (
        v["min_ms"].as_f64().expect("min"),
        v["median_ms"].as_f64().expect("median"),
    );
    assert!(min > 0.0 && min <= med && times.iter().all(|&t| t >= min), "{v}");
}
