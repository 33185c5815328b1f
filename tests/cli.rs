//! The `bwsim` command line as a user meets it: bundled kernels, bad input, exit codes.

use std::process::Command;

fn bwsim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bwsim"))
        .args(args)
        .output()
        .expect("bwsim runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tmp(name: &str, text: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("bwsim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write temp file");
    p.to_string_lossy().into_owned()
}

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
    let p = tmp(
        "bad.tile",
        b"kernel k {\n  target sm_100a\n  num_warps 4\n  tma.laod x, y, z\n}\n",
    );
    let (code, _, err) = bwsim(&["verify", &p]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown-op") && err.contains("tma.load"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let p = tmp("bin.tile", &[0xff, 0xfe, 0x00, 0x41]);
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
    let p = tmp(
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
