//! The `bwsim` command line as a user meets it: bundled kernels, bad input, exit codes.

mod common;

use common::{bwsim, bwsim_json, bwsim_prints, bwsim_says, scratch, scratch_file, words};

#[test]
fn list_names_every_seed_kernel_with_its_seed() {
    let (code, out, _) = bwsim(&["list"]);
    assert_eq!(code, 0);
    for k in [
        "async_gather",
        "async_scatter",
        "tcgen05_copy",
        "matmul_accumulate",
        "elementwise_add_ws",
        "elementwise_add_tma",
        "matmul_warp_specialized",
        "matmul_pipelined",
        "persistent_matmul",
        "persistent_matmul_pipelined",
        "matmul_fused_gather_scatter",
        "gemm_async",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(k)),
            "`bwsim list` lacks {k}:\n{out}"
        );
    }
    assert!(
        out.contains("08 warp-specialization") && out.contains("TIRx"),
        "{out}"
    );
}

#[test]
fn verify_accepts_every_bundled_kernel_on_each_target() {
    for (k, targets) in [
        ("elementwise_add_ws", &["sm_100a", "sm_90a"][..]),
        ("matmul_pipelined", &["sm_100a", "sm_90a"]),
        ("async_gather", &["sm_100a"]),
    ] {
        for t in targets {
            bwsim_says(&["verify", k, "--target", t], 0, &[": ok"]);
        }
    }
}

#[test]
fn tcgen05_kernel_on_hopper_is_refused_with_a_span() {
    let (code, _, err) = bwsim(&["verify", "tcgen05_copy", "--target", "sm_90a"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error[arch-tcgen05]") || err.contains("error[arch-target]"),
        "{err}"
    );
    assert!(
        err.contains("tcgen05_copy.tile:"),
        "diagnostic has no location: {err}"
    );
}

#[test]
fn verify_json_reports_codes_and_line_columns() {
    let v = bwsim_json(1, &["verify", "--json", "tests/verify/ws-regs.fail.tile"]);
    assert_eq!(v["ok"], false);
    assert_eq!(v["diagnostics"][0]["code"], "ws-regs");
    assert!(v["diagnostics"][0]["primary"]["line_col"][0]
        .as_u64()
        .is_some_and(|l| l > 1));
}

#[test]
fn bad_input_gives_one_clear_error_and_never_panics() {
    bwsim_says(&["verify", "no/such/file.tile"], 2, &["no such file"]);
    bwsim_says(
        &["verify", "not_a_kernel"],
        2,
        &["neither a file nor a bundled kernel"],
    );
    let (_, err) = bwsim_says(
        &["verify", "tests/run/unknown_op.tile"],
        1,
        &["unknown-op", "tma.load"],
    );
    assert!(!err.contains("panicked"), "{err}");
    let p = scratch_file("cli", "bin.tile", [0xff, 0xfe, 0x00, 0x41]);
    bwsim_says(&["fmt", &p], 2, &["not UTF-8"]);
}

#[test]
fn fmt_is_a_fixed_point_on_every_bundled_kernel_and_check_detects_drift() {
    for f in std::fs::read_dir("kernels/tiles")
        .expect("kernels/tiles")
        .filter_map(|e| e.ok())
    {
        let p = f.path().to_string_lossy().into_owned();
        let (code, _, err) = bwsim(&["fmt", "--check", &p]);
        assert_eq!(code, 0, "{p} is not canonical: {err}");
    }
    let p = scratch_file(
        "cli",
        "drift.tile",
        b"kernel k {\n  num_warps 4\n    target sm_100a\n  bar.sync\n}\n",
    );
    let (code, _, _) = bwsim(&["fmt", "--check", &p]);
    assert_eq!(code, 1);
    let (code, out, _) = bwsim(&["fmt", &p]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "kernel k {\n  target sm_100a\n  num_warps 4\n  bar.sync\n}\n"
    );
}

#[test]
fn const_overrides_are_checked() {
    bwsim_says(
        &words("verify async_gather --const NOPE=1"),
        1,
        &["unknown-const", "BLOCK_X"],
    );
    bwsim_says(
        &words("verify async_gather --const DTYPE=f32 --const BLOCK_Y=16"),
        0,
        &[],
    );
}

/// `bwsim run` on the three hand-written kernels of the simulator's acceptance criteria: each
/// prints its outputs checked against the CPU reference and exits 0.
#[test]
fn run_checks_hand_written_kernels_against_references() {
    for (file, output) in [
        ("tests/pass/tma_roundtrip.tile", "output  f32[256, 128]  PASS"),
        ("tests/pass/gather_rows.tile", "out  f32[16, 32]  PASS"),
        ("tests/pass/tcgen05_mma_tile.tile", "out  f32[128, 128]  PASS"),
    ] {
        run_passes(&["run", file], &[output, "outcome   completed"]);
    }
}

/// Runs `bwsim ARGS`, asserts that it exits 0, that its report contains each of `says` and that
/// it ends with the verdict PASS (every output equal to its CPU reference).
fn run_passes(args: &[&str], says: &[&str]) {
    let out = bwsim_prints(args, 0, says);
    assert!(out.trim_end().ends_with("result    PASS"), "{args:?}:\n{out}");
}

/// `bwsim run FILE --const CLUSTER=C` passes against the CPU reference for clusters of 2 and 4.
fn run_passes_in_clusters_of_two_and_four(file: &str) {
    for c in ["CLUSTER=2", "CLUSTER=4"] {
        run_passes(&["run", file, "--const", c], &["output  f32["]);
    }
}

/// The distributed-shared-memory ring of tests/pass/dsmem_ring.tile against its CPU reference.
#[test]
fn run_checks_the_dsmem_ring_in_clusters_of_two_and_four() {
    run_passes_in_clusters_of_two_and_four("tests/pass/dsmem_ring.tile");
}

/// The multicast copy of tests/pass/multicast_copy_expect_cluster_fixed.tile against its CPU
/// reference.
#[test]
fn run_checks_the_multicast_copy_in_clusters_of_two_and_four() {
    run_passes_in_clusters_of_two_and_four("tests/pass/multicast_copy_expect_cluster_fixed.tile");
}

/// The fixed twins of the cluster bugs against the same exchange's CPU reference: two push
/// their rows to the next CTA, `dsmem_cluster_exit_fixed` pulls them from it.
#[test]
fn run_checks_the_fixed_cluster_twins() {
    for f in [
        "tests/pass/dsmem_cluster_exit_fixed.tile",
        "tests/pass/dsmem_relaxed_handoff_fixed.tile",
        "tests/pass/dsmem_remote_arrive_no_wait_fixed.tile",
    ] {
        bwsim_prints(&["run", f], 0, &["output  f32[128, 64]  PASS"]);
    }
}

/// The two-CTA matmul of tests/pass/two_cta_matmul.tile against the CPU matmul: one cluster
/// at its default, and two N tiles through three stages over three K steps.
#[test]
fn run_checks_the_two_cta_matmul() {
    for consts in [&[][..], &["N=256", "NUM_BUFFERS=3", "K=192"]] {
        let mut args = vec!["run", "tests/pass/two_cta_matmul.tile"];
        for c in consts {
            args.extend(["--const", c]);
        }
        run_passes(&args, &["  c  f32[256, "]);
    }
}

#[test]
fn run_reports_the_illegal_gather_with_its_span_and_reason() {
    let (code, out, err) = bwsim(&["run", "async_gather", "--const", "Y_OFFSET=2"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("trapped: an illegal instruction was encountered"),
        "{out}"
    );
    assert!(out.contains("`tma.gather` in cta0.default"), "{out}");
    assert!(out.contains("not 16-byte aligned"), "{out}");
    assert!(out.trim_end().ends_with("result    TRAP"), "{out}");
    // The rustc-style diagnostic points at the gather's line.
    let line = std::fs::read_to_string("kernels/tiles/async_gather.tile")
        .expect("source")
        .lines()
        .position(|l| l.trim_start().starts_with("tma.gather"))
        .expect("a gather line")
        + 1;
    assert!(err.contains("error[illegal-instruction]"), "{err}");
    assert!(err.contains(&format!("async_gather.tile:{line}:3")), "{err}");
}

#[test]
fn run_json_and_trace_files() {
    let dir = scratch("run");
    let (txt, chrome) = (dir.join("t.txt"), dir.join("t.json"));
    let (txt_arg, chrome_arg) = (txt.to_string_lossy(), chrome.to_string_lossy());
    let run = ["run", "tcgen05_copy", "--seed", "3", "--trace", &txt_arg];
    let v = bwsim_json(0, &[&run[..], &["--json", "--chrome", &chrome_arg]].concat());
    assert_eq!(v["result"], "PASS");
    assert_eq!(v["ok"], true);
    assert_eq!(v["seed"], 3);
    assert_eq!(v["outputs"][0]["tensor"], "output");
    assert_eq!(v["outputs"][0]["mismatches"], 0);
    assert!(v["counters"]["steps"].as_u64().is_some_and(|s| s > 0));
    let t = std::fs::read_to_string(&txt).expect("trace written");
    assert!(
        t.contains("issue tcgen05.cp") && t.contains("complete tcgen05.commit"),
        "{t}"
    );
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&chrome).expect("chrome written")).expect("JSON");
    assert!(c["traceEvents"].as_array().is_some_and(|e| !e.is_empty()));
    // Same seed, same trace.
    bwsim_says(&run, 0, &[]);
    assert_eq!(std::fs::read_to_string(&txt).expect("trace"), t);
}

#[test]
fn run_fails_on_wrong_outputs_deadlocks_and_reports_unchecked_kernels() {
    let wrong = "tests/run/wrong_outputs.tile";
    let (code, out, _) = bwsim(&["run", wrong]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  2048 of 2048 elements differ (bit-exact)"),
        "{out}"
    );
    assert!(out.contains("first at [0, 0]"), "{out}");
    let hang = "tests/run/hang.tile";
    let (out, _) = bwsim_says(&["run", hang], 1, &["error[deadlock]"]);
    assert!(out.contains("result    DEADLOCK"), "{out}");
    let plain = "tests/run/plain.tile";
    let (code, out, err) = bwsim(&["run", plain]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("t  f32[128]  sum 2.56") && out.contains("COMPLETED"),
        "{out}"
    );
}

/// A Gluon source file given where a kernel is expected is refused with the way forward, not
/// parsed as `.tile` text.
#[test]
fn a_python_file_is_refused_with_how_to_compile_it() {
    let (_, err) = bwsim_says(
        &["run", "tests/gluon/attention.py"],
        2,
        &["is Python", "gluon_to_ttgir.py"],
    );
    assert!(!err.contains("error[syntax]"), "{err}");
}
