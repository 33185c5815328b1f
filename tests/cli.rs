//! The `bwsim` command line as a user meets it: bundled kernels, bad input, exit codes.

mod common;

use common::{bwsim, scratch, scratch_file};

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
            let (code, _, err) = bwsim(&["verify", k, "--target", t]);
            assert_eq!(code, 0, "{k} on {t}: {err}");
            assert!(err.contains(": ok"), "{err}");
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
    let (code, out, _) = bwsim(&["verify", "--json", "tests/verify/ws-regs.fail.tile"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(v["ok"], false);
    assert_eq!(v["diagnostics"][0]["code"], "ws-regs");
    assert!(v["diagnostics"][0]["primary"]["line_col"][0]
        .as_u64()
        .is_some_and(|l| l > 1));
}

#[test]
fn bad_input_gives_one_clear_error_and_never_panics() {
    let (code, _, err) = bwsim(&["verify", "no/such/file.tile"]);
    assert_eq!(code, 2);
    assert!(err.contains("no such file"), "{err}");
    let (code, _, err) = bwsim(&["verify", "not_a_kernel"]);
    assert_eq!(code, 2);
    assert!(err.contains("neither a file nor a bundled kernel"), "{err}");
    let p = "tests/run/unknown_op.tile";
    let (code, _, err) = bwsim(&["verify", p]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown-op") && err.contains("tma.load"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let p = scratch_file("cli", "bin.tile", [0xff, 0xfe, 0x00, 0x41]);
    let (code, _, err) = bwsim(&["fmt", &p]);
    assert_eq!(code, 2);
    assert!(err.contains("not UTF-8"), "{err}");
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
    let (code, _, err) = bwsim(&["verify", "async_gather", "--const", "NOPE=1"]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown-const") && err.contains("BLOCK_X"), "{err}");
    let (code, _, err) = bwsim(&[
        "verify",
        "async_gather",
        "--const",
        "DTYPE=f32",
        "--const",
        "BLOCK_Y=16",
    ]);
    assert_eq!(code, 0, "{err}");
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
        let (code, out, err) = bwsim(&["run", file]);
        assert_eq!(code, 0, "{file}:\n{out}\n{err}");
        assert!(out.contains(output), "{file}:\n{out}");
        assert!(
            out.contains("outcome   completed") && out.trim_end().ends_with("result    PASS"),
            "{out}"
        );
    }
}

/// `bwsim run FILE --const CLUSTER=C` passes against the CPU reference for clusters of 2 and 4.
fn run_passes_in_clusters_of_two_and_four(file: &str) {
    for c in ["CLUSTER=2", "CLUSTER=4"] {
        let (code, out, err) = bwsim(&["run", file, "--const", c]);
        assert_eq!(code, 0, "{file} {c}:\n{out}\n{err}");
        assert!(
            out.contains("output  f32[") && out.contains("PASS"),
            "{file} {c}:\n{out}"
        );
        assert!(out.trim_end().ends_with("result    PASS"), "{file} {c}:\n{out}");
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
        let (code, out, err) = bwsim(&["run", f]);
        assert_eq!(code, 0, "{f}:\n{out}\n{err}");
        assert!(out.contains("output  f32[128, 64]  PASS"), "{f}:\n{out}");
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
        let (code, out, err) = bwsim(&args);
        assert_eq!(code, 0, "{consts:?}:\n{out}\n{err}");
        assert!(
            out.contains("  c  f32[256, ") && out.contains("PASS"),
            "{consts:?}:\n{out}"
        );
        assert!(out.trim_end().ends_with("result    PASS"), "{consts:?}:\n{out}");
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
    let (code, out, err) = bwsim(&[
        "run",
        "tcgen05_copy",
        "--seed",
        "3",
        "--json",
        "--trace",
        &txt.to_string_lossy(),
        "--chrome",
        &chrome.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
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
    let (code, _, _) = bwsim(&[
        "run",
        "tcgen05_copy",
        "--seed",
        "3",
        "--trace",
        &txt.to_string_lossy(),
    ]);
    assert_eq!(code, 0);
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
    let (code, out, err) = bwsim(&["run", hang]);
    assert_eq!(code, 1);
    assert!(out.contains("result    DEADLOCK"), "{out}");
    assert!(err.contains("error[deadlock]"), "{err}");
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
    let (code, _, err) = bwsim(&["run", "tests/gluon/attention.py"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("is Python") && err.contains("gluon_to_ttgir.py"),
        "{err}"
    );
    assert!(!err.contains("error[syntax]"), "{err}");
}
