//! What the fixture directives (gluon_corpus.rs) cannot say about tutorial 11's block-scaled
//! matmuls, in every Triton version's TTGIR (tests/gluon/VERSION/):
//!
//! - the fp4 operands import as `f4e2m1` tiles, and the mixed kernel's fp4 tile lands in the
//!   `fp4_padded` shared layout (their outputs against the CPU reference are their directives);
//! - the contiguous-factors kernel and the packed-block forms (factors by TMA in the tutorial's
//!   512-byte blocks) compute, bit for bit, what `mma_scaled_kernel` computes from the same
//!   operands with the factors in row-major order: an equality between two imported kernels
//!   with a relayout of the inputs in between, which no CPU reference of one kernel states.
//!
//! Each runs 2 schedules by default, `BWSIM_GLUON_SCHEDULES` otherwise. Their checker runs are
//! the fixtures' `check: clean` directives.

mod common;

use bwsim_gluon::version::Version;
use bwsim_isa::launch::{self, ArgValue, LaunchPlan};
use bwsim_isa::typeck::Checked;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{diag, Kernel, SourceFile, Target};
use bwsim_sim::{RunOptions, RunResult};
use common::env_schedules;

fn import(v: Version, stem: &str, target: Target) -> (Kernel, SourceFile) {
    common::import_fixture(v, &format!("{stem}.{}.ttgir", target.name()))
}

fn check<'k>(k: &'k Kernel, target: Target, file: &SourceFile) -> Checked<'k> {
    let (c, d) = verify(
        k,
        &VerifyOptions {
            target: Some(target),
            overrides: Vec::new(),
        },
    );
    c.unwrap_or_else(|| panic!("{} does not verify:\n{}", k.name.name, diag::render(&d, file)))
}

fn plan(c: &Checked, file: &SourceFile) -> LaunchPlan {
    let l = c.kernel.launch.as_ref().expect("a launch section");
    launch::resolve(c, l).unwrap_or_else(|d| panic!("launch:\n{}", diag::render(&d, file)))
}

/// Run options for schedule `seed`, without a trace.
fn untraced(seed: u64) -> RunOptions {
    RunOptions {
        seed,
        trace: false,
        ..RunOptions::default()
    }
}

/// The output `c` of two runs is the same, bit for bit (`what` names the comparison), and not
/// all zeros (not a vacuous comparison: the factors reach the result).
fn assert_same_c(a: &RunResult, b: &RunResult, what: &str) {
    let (c, s) = (a.tensor("c").expect("c"), b.tensor("c").expect("c"));
    let differ = (0..c.numel()).filter(|&i| c.get_bits(i) != s.get_bits(i)).count();
    assert_eq!(differ, 0, "{what}: {differ} elements differ");
    assert!((0..c.numel()).any(|i| c.get(i) != 0.0));
}

/// Tutorial 11's kernel on mxfp4 and nvfp4 operands (uint8 descriptors, two e2m1 values a
/// byte) imports them as f4e2m1 tiles.
#[test]
fn fp4_operands_import_as_f4e2m1() {
    for v in Version::all() {
        for stem in ["mma_scaled_fp4", "mma_scaled_nvfp4", "mma_scaled_mixed"] {
            let (k, _) = import(v, stem, Target::Sm100a);
            let text = bwsim_isa::print(&k);
            assert!(text.contains("f4e2m1[128, 128]"), "{v:?} {stem}:\n{text}");
        }
    }
}

/// Mixed mxfp8 x mxfp4 (A in e4m3, B as packed fp4 bytes): B's tile lands in the `fp4_padded`
/// layout (8 bytes of padding after every 8 of data, the TMA's 16-byte-aligned fp4 format).
#[test]
fn mma_scaled_mixed_stages_b_fp4_padded() {
    for v in Version::all() {
        let (k, _) = import(v, "mma_scaled_mixed", Target::Sm100a);
        let text = bwsim_isa::print(&k);
        assert!(
            text.contains("smem.alloc i8[128, 64], nvmma(128, fp4_padded=true)"),
            "{v:?}:\n{text}"
        );
    }
}

/// Tutorial 11's contiguous-factors kernel (one 1-D load per block of factors, reshaped to
/// 2-D) at K = BLOCK_K, where that layout is the row-major one: outputs equal to
/// `mma_scaled_kernel`'s (itself equal to its twin and the CPU reference) from the same inputs,
/// bit for bit.
#[test]
fn mma_scaled_contig_equals_the_row_major_kernel() {
    Version::all().for_each(contig_equals_the_row_major_kernel);
}

fn contig_equals_the_row_major_kernel(v: Version) {
    let target = Target::Sm100a;
    let (contig, cfile) = import(v, "mma_scaled_contig", target);
    let (simple, sfile) = import(v, "mma_scaled", target);
    let cc = check(&contig, target, &cfile);
    let cs = check(&simple, target, &sfile);
    let cplan = plan(&cc, &cfile);
    // The row-major kernel on the contiguous kernel's launch, with its factor strides.
    let splan = LaunchPlan {
        args: plan(&cs, &sfile)
            .args
            .iter()
            .map(|(n, _)| match n.as_str() {
                "scale_stride_m" => (n.clone(), ArgValue::Int(4)),
                "scale_stride_k" => (n.clone(), ArgValue::Int(1)),
                _ => cplan
                    .args
                    .iter()
                    .find(|(m, _)| m == n)
                    .cloned()
                    .unwrap_or_else(|| panic!("no `{n}` in the contiguous kernel's launch")),
            })
            .collect(),
        ..cplan.clone()
    };
    for seed in 0..env_schedules().unwrap_or(2) {
        let inputs = launch::materialize(&cplan, 2000 + seed).expect("within the memory limit");
        let opts = untraced(seed);
        let rc = bwsim_sim::run(&cc, &cplan, inputs.clone(), &opts);
        let rs = bwsim_sim::run(&cs, &splan, inputs, &opts);
        assert!(
            rc.ok() && rc.diagnostics.is_empty(),
            "{}",
            diag::render(&rc.diagnostics, &cfile)
        );
        assert!(
            rs.ok() && rs.diagnostics.is_empty(),
            "{}",
            diag::render(&rs.diagnostics, &sfile)
        );
        assert_same_c(&rc, &rs, &format!("{v:?} seed {seed}"));
    }
}

/// Tutorial 11's packed-block forms: the factors in global memory as
/// `[1, M / 128, SCALE_K / 4, 2, 256]`, each 512-byte block holding 128 rows x 4 K blocks with
/// row `32 j + i`, K block `c` at byte `16 i + 4 j + c` (the tutorial's relayout). Each form's
/// output equals, bit for bit, `mma_scaled_kernel`'s on the same operands with the factors
/// unpacked to row-major `[M, SCALE_K]` here. A misplaced factor would
/// change the output: the factors vary over the whole block.
#[test]
fn packed_block_forms_equal_the_row_major_kernel() {
    Version::all().for_each(packed_block_forms);
}

fn packed_block_forms(v: Version) {
    let target = Target::Sm100a;
    for stem in [
        "mma_scaled_packed",
        "mma_scaled_copy",
        "mma_scaled_ws",
        "mma_scaled_pipelined",
    ] {
        let (packed, pfile) = import(v, stem, target);
        let cp = check(&packed, target, &pfile);
        let pplan = plan(&cp, &pfile);
        let shape = |n: &str| pplan.tensors[pplan.tensor(n).expect("tensor")].shape.clone();
        let k = shape("a")[1];
        let (m, n, sk) = (shape("a")[0], shape("b")[0], k / 32);
        assert_eq!(shape("a_scale"), vec![1, m / 128, sk / 4, 2, 256], "{stem}");
        // The row-major kernel at the same shapes.
        let (mut simple, sfile) = import(v, "mma_scaled", target);
        let ltext = format!(
            "launch {{\n  grid = [{}, {}]\n  tensor a: f8e4m3[{m}, {k}] = zeros()\n  tensor b: f8e4m3[{n}, {k}] = zeros()\n  \
             tensor c: f16[{m}, {n}] = zeros()\n  tensor a_scale: i8[{m}, {sk}] = zeros()\n  tensor b_scale: i8[{n}, {sk}] = zeros()\n  \
             a_desc = a\n  b_desc = b\n  c_desc = c\n  a_scale_ptr = a_scale\n  b_scale_ptr = b_scale\n  scale_stride_m = {sk}\n  \
             scale_stride_k = 1\n  outputs = [c]\n}}\n",
            m / 128,
            n / 128
        );
        simple.launch = Some(bwsim_isa::parser::parse_launch(&ltext).expect("launch parses"));
        simple.number_nodes();
        let cs = check(&simple, target, &sfile);
        let splan = plan(&cs, &sfile);
        for seed in 0..env_schedules().unwrap_or(2) {
            let pin = launch::materialize(&pplan, 4000 + seed).expect("within the memory limit");
            let mut sin = launch::materialize(&splan, 0).expect("within the memory limit");
            for t in &mut sin {
                let src = &pin
                    .iter()
                    .find(|p| p.name == t.name)
                    .expect("same tensor names")
                    .data;
                if t.name.ends_with("_scale") {
                    let rows = t.shape[0] as usize;
                    let rep_k = sk as usize / 4;
                    for (f, &byte) in src.iter().enumerate() {
                        let (block, within) = (f / 512, f % 512);
                        let (rm, rk) = (block / rep_k, block % rep_k);
                        let (i, j, c) = (within / 16, within / 4 % 4, within % 4);
                        let row = rm * 128 + 32 * j + i;
                        assert!(row < rows);
                        t.data[row * sk as usize + rk * 4 + c] = byte;
                    }
                } else {
                    t.data.clone_from(src);
                }
            }
            let opts = untraced(seed);
            let rp = bwsim_sim::run(&cp, &pplan, pin, &opts);
            let rs = bwsim_sim::run(&cs, &splan, sin, &opts);
            assert!(
                rp.ok() && rp.diagnostics.is_empty(),
                "{stem}:\n{}",
                diag::render(&rp.diagnostics, &pfile)
            );
            assert!(rs.ok(), "{}", diag::render(&rs.diagnostics, &sfile));
            assert_same_c(&rp, &rs, &format!("{v:?} {stem} seed {seed}"));
        }
    }
}
