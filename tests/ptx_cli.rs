//! `bwsim ptx` as a user meets it: PTX on stdout, cubin and SASS through ptxas/cuobjdump,
//! JSON with the launch ABI, and the verifier's refusal of Blackwell-only kernels on sm_90a.

mod common;

use common::{bwsim, bwsim_json, bwsim_prints, bwsim_says, scratch};

#[test]
fn ptx_prints_a_module_for_the_chosen_target() {
    bwsim_prints(
        &["ptx", "elementwise_add_tma", "--target", "sm_90a"],
        0,
        &[
            ".target sm_90a",
            ".visible .entry elementwise_add_tma(",
            ".param .align 64 .b8 p_a_desc[128]",
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        ],
    );
    // The default target is the kernel's first one.
    bwsim_prints(&["ptx", "elementwise_add_tma"], 0, &[".target sm_100a"]);
}

#[test]
fn blackwell_only_kernels_are_refused_on_sm_90a() {
    let (out, _) = bwsim_says(
        &["ptx", "tcgen05_copy", "--target", "sm_90a"],
        1,
        &["error[arch-tcgen05]"],
    );
    assert!(out.is_empty(), "no PTX may be printed: {out}");
    bwsim_says(
        &["ptx", "async_scatter", "--target", "sm_90a"],
        1,
        &["error[arch-gather]"],
    );
}

#[test]
fn ptx_writes_files_and_assembles_a_cubin() {
    let ptx = scratch("ptx-cli").join("g.ptx");
    let cubin = scratch("ptx-cli").join("g.cubin");
    let (code, out, err) = bwsim(&[
        "ptx",
        "async_gather",
        "--const",
        "BLOCK_X=8",
        "-o",
        ptx.to_str().unwrap(),
        "--cubin",
        cubin.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "PTX went to the file, not stdout");
    let text = std::fs::read_to_string(&ptx).expect("ptx written");
    assert!(text.contains("tile::gather4"));
    let bin = std::fs::read(&cubin).expect("cubin written");
    assert_eq!(&bin[..4], b"\x7fELF", "a cubin is an ELF file");
}

#[test]
fn sass_shows_the_hardware_instructions() {
    let out = bwsim_prints(&["ptx", "async_gather", "--sass"], 0, &["UTMALDG.2D.GATHER4"]);
    assert!(!out.contains(".version"), "--sass prints SASS, not PTX");
}

#[test]
fn json_carries_the_launch_abi() {
    let v = bwsim_json(0, &["ptx", "elementwise_add_ws", "--json"]);
    assert_eq!(v["ok"], true);
    assert_eq!(v["entry"], "elementwise_add_ws");
    // 4 default warps + a load and a store warp, rounded up to two warpgroups.
    assert_eq!(v["block_dim"], serde_json::json!([256, 1, 1]));
    let params = v["params"].as_array().expect("params");
    assert_eq!(params[0]["kind"], "tensor_map");
    assert_eq!(
        params[0]["box_dims"],
        serde_json::json!([32, 32]),
        "a 64-float row is split into 128-byte boxes"
    );
    assert!(v["ptx"]
        .as_str()
        .unwrap_or("")
        .contains("setmaxnreg.dec.sync.aligned.u32 24"));
}

#[test]
fn bad_constants_are_reported_with_the_verifier_s_codes() {
    bwsim_says(
        &["ptx", "tcgen05_copy", "--const", "NOPE=1"],
        1,
        &["unknown-const"],
    );
}
