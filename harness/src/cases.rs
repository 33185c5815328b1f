//! The differential case list: what `bwsim gpu --all` runs on the local GPU and compares with
//! the simulator.
//!
//! - TMA round trips (a box loaded by TMA, stored back by TMA) over every swizzle mode, ranks
//!   1 to 5, three element widths, and boxes that hang off the tensor (zero and NaN fill on
//!   load, dropped elements on store). Generated `.tile` sources (see [`tma_roundtrip`]).
//! - The bundled kernels in their default configuration and the test-grid configurations of
//!   `bwsim_kernels::configs`: the elementwise adds, the wgmma pipelined and persistent
//!   matmuls, wgmma over its dtype matrix (`wgmma_dtypes`: f16, bf16, tf32, fp8 and 8-bit
//!   integer operands into f16, f32 and s32 accumulators, A in shared memory or registers),
//!   the warp-specialized kernels, and the Blackwell-only kernels (which say so on a Hopper GPU
//!   instead of passing).
//! - The imported Gluon fixtures (TTGIR with a launch sidecar) found under `tests/gluon`
//!   ([`super::gluon`]), added by `bwsim gpu` after these.
//! - Planted faults that must trap, with the simulator predicting the same CUDA error:
//!   misaligned innermost coordinate, negative and misaligned store coordinates, a misaligned
//!   shared-memory box, a misaligned mbarrier, a gather column not 16-byte aligned, a scatter
//!   to a negative row.
//!
//! Comparison: data movement, elementwise kernels and the wgmma matmuls bit for bit (the
//! simulator computes the H100's tensor-core arithmetic, docs/hardware/wgmma-numerics.md;
//! the f32-output variants of [`matmul_variant`] and [`MATMUL_FP8`] expose every accumulator
//! bit, at K up to 4096, for f16, bf16, e4m3 and e5m2 operands); tcgen05 kernels (no
//! Blackwell measured) and approximate math within a stated tolerance
//! (`|gpu - sim| <= atol + rtol * |sim|`).

use bwsim_isa::Target;

/// Where a case's kernel comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A bundled kernel (`bwsim list`).
    Bundled(&'static str),
    /// Generated `.tile` text.
    Inline(String),
    /// A Gluon kernel's TTGIR with its launch sidecar ([`super::gluon`]).
    Gluon(std::path::PathBuf),
    /// A Gluon fixture with a planted bug: prepared, never launched ([`super::gluon`]).
    PlantedBug(std::path::PathBuf),
    /// A PTX file run as it is (assembled by ptxas for its `.target`) against the PTX front
    /// end, with its launch sidecar ([`super::ptxfile`]).
    Ptx {
        ptx: std::path::PathBuf,
        launch: Option<std::path::PathBuf>,
    },
}

/// What a case must produce.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Check {
    /// Every output element bit for bit.
    Exact,
    /// Every output element within `atol + rtol * |sim|`.
    Tolerance { atol: f64, rtol: f64 },
    /// The launch must trap with this CUDA error (the `CUresult` name), in both the simulator
    /// and the GPU.
    Trap(&'static str),
    /// An MMA kernel: bit for bit on sm_90a (wgmma, whose arithmetic the simulator computes as
    /// measured), within `atol + rtol * |sim|` elsewhere (tcgen05: modelled, not measured).
    WgmmaExact { atol: f64, rtol: f64 },
}

impl Check {
    /// The comparison that applies on `target`.
    pub fn on(self, target: Option<Target>) -> Check {
        match self {
            Check::WgmmaExact { .. } if target == Some(Target::Sm90a) => Check::Exact,
            Check::WgmmaExact { atol, rtol } => Check::Tolerance { atol, rtol },
            c => c,
        }
    }
}

/// One differential case.
#[derive(Clone, Debug)]
pub struct Case {
    /// Unique name (`kernel` or `kernel[CONST=V,...]`).
    pub name: String,
    pub source: Source,
    pub consts: Vec<String>,
    /// Targets the case runs on (the local GPU's must be among them).
    pub targets: Vec<Target>,
    pub check: Check,
}

/// Every output element within `atol + rtol * |sim|`.
const fn within(atol: f64, rtol: f64) -> Check {
    Check::Tolerance { atol, rtol }
}

/// f16 outputs of an MMA: about two f16 ulps of the result (K is at most a few hundred).
const MMA_F16: Check = within(1e-2, 4e-3);
/// f16 outputs of a matmul: exact on Hopper, [`MMA_F16`] on Blackwell.
const MMA_F16_EXACT_ON_HOPPER: Check = match MMA_F16 {
    Check::Tolerance { atol, rtol } => Check::WgmmaExact { atol, rtol },
    c => c,
};
/// f32 outputs of an MMA: accumulation order only.
const MMA_F32: Check = within(1e-3, 1e-4);

/// Outputs of the SFU's approximate math functions and of reordered f32 folds.
pub const APPROX: Check = within(1e-5, 1e-5);

const BOTH: &[Target] = &[Target::Sm100a, Target::Sm90a];
const HOPPER: &[Target] = &[Target::Sm90a];

/// The bundled `matmul_pipelined` with `operand` (`f16`, `bf16`) inputs and an f32 output
/// (through an unswizzled buffer, so take BLOCK_N <= 64):
/// the accumulator reaches global memory unrounded, so a bit-exact comparison checks every
/// bit of the tensor core's arithmetic. `None` when the bundled source no longer has the
/// declarations this rewrites.
pub fn matmul_variant(operand: &str) -> Option<String> {
    let src = bwsim_kernels::find("matmul_pipelined")?.source;
    let rewrites = [
        (
            "tensor_desc(f16[BLOCK_M, BLOCK_N], nvmma(128))",
            "tensor_desc(f32[BLOCK_M, BLOCK_N], plain)".to_string(),
        ),
        (
            "smem.alloc f16[BLOCK_M, BLOCK_N], nvmma(128)",
            "smem.alloc f32[BLOCK_M, BLOCK_N], plain".to_string(),
        ),
        ("cast(c, f16)", "cast(c, f32)".to_string()),
        ("tensor c: f16[", "tensor c: f32[".to_string()),
        (
            "tensor_desc(f16[BLOCK_M, BLOCK_K]",
            format!("tensor_desc({operand}[BLOCK_M, BLOCK_K]"),
        ),
        (
            "tensor_desc(f16[BLOCK_K, BLOCK_N]",
            format!("tensor_desc({operand}[BLOCK_K, BLOCK_N]"),
        ),
        (
            "smem.alloc f16[NUM_BUFFERS",
            format!("smem.alloc {operand}[NUM_BUFFERS"),
        ),
        ("tensor a: f16[", format!("tensor a: {operand}[")),
        ("tensor b: f16[", format!("tensor b: {operand}[")),
    ];
    let mut s = src.to_string();
    for (from, to) in &rewrites {
        if !s.contains(from) {
            return None;
        }
        s = s.replace(from, to);
    }
    Some(s)
}

/// An fp8 matmul for Hopper (B stored K-major, f32 output), `DTYPE` f8e4m3 or f8e5m2.
pub const MATMUL_FP8: &str = include_str!("matmul_fp8.tile");

/// A [`matmul_variant`] case (Hopper only: the exact check holds for wgmma).
fn matmul_f32_out(operand: &'static str, consts: &[&str]) -> Option<Case> {
    let source = matmul_variant(operand)?;
    Some(Case {
        name: format!("matmul_{operand}_f32out[{}]", consts.join(",")),
        source: Source::Inline(source),
        consts: consts.iter().map(|c| c.to_string()).collect(),
        targets: HOPPER.to_vec(),
        check: Check::Exact,
    })
}
const BLACKWELL: &[Target] = &[Target::Sm100a];

fn bundled(kernel: &'static str, consts: &[&str], targets: &[Target], check: Check) -> Case {
    let name = if consts.is_empty() {
        kernel.to_string()
    } else {
        format!("{kernel}[{}]", consts.join(","))
    };
    Case {
        name,
        source: Source::Bundled(kernel),
        consts: consts.iter().map(|c| c.to_string()).collect(),
        targets: targets.to_vec(),
        check,
    }
}

/// A TMA round trip: load a `box` of `dtype` from `src` at `load_at` (rank = `box.len()`),
/// store it to `dst` at `store_at`. Both tensors have shape `global` and random contents;
/// `dst` is the output.
pub struct RoundTrip<'a> {
    pub tag: &'a str,
    pub dtype: &'a str,
    pub global: &'a [u32],
    pub boxd: &'a [u32],
    /// 0 (plain), 32, 64 or 128.
    pub swizzle: u32,
    pub nan_fill: bool,
    pub load_at: &'a [i64],
    pub store_at: &'a [i64],
    /// The load's `elementStrides` (outermost first; empty: all 1). The buffer and the store
    /// then take the traversed box, `ceil(box / stride)` in every dimension but the innermost
    /// (docs/semantics.md#tma).
    pub elem_strides: &'a [u32],
}

fn list(xs: impl IntoIterator<Item = String>) -> String {
    xs.into_iter().collect::<Vec<_>>().join(", ")
}

/// The `.tile` source of a round trip.
pub fn tma_roundtrip(r: &RoundTrip) -> String {
    let layout = if r.swizzle == 0 {
        "plain".to_string()
    } else {
        format!("nvmma({})", r.swizzle)
    };
    let boxd = list(r.boxd.iter().map(|d| d.to_string()));
    let moved = list(
        bwsim_isa::typeck::traversed_box(r.boxd, r.elem_strides)
            .iter()
            .map(|d| d.to_string()),
    );
    let global = list(r.global.iter().map(|d| d.to_string()));
    let coord = |c: &[i64]| list(c.iter().map(|x| x.to_string()));
    let oob = if r.nan_fill { ", oob=nan" } else { "" };
    let strides = if r.elem_strides.is_empty() {
        String::new()
    } else {
        format!(
            ", elem_strides=[{}]",
            list(r.elem_strides.iter().map(|d| d.to_string()))
        )
    };
    format!(
        "// TMA round trip ({tag}): load a box, store it back.\n\
         kernel tma_roundtrip {{\n  target sm_100a, sm_90a\n  num_warps 4\n\
         \x20 param src: tensor_desc({dt}[{boxd}], {layout}{oob}{strides})\n\
         \x20 param dst: tensor_desc({dt}[{moved}], {layout})\n\
         \x20 let buf = smem.alloc {dt}[{moved}], {layout}\n\
         \x20 let bar = mbar.alloc 1\n\
         \x20 mbar.init bar[0], 1\n\
         \x20 mbar.expect bar[0], src.nbytes\n\
         \x20 tma.load src[{la}], buf, bar[0]\n\
         \x20 mbar.wait bar[0], 0\n\
         \x20 tma.store dst[{sa}], buf\n\
         \x20 tma.store_wait 0, full=true\n\
         \x20 launch {{\n    grid = [1]\n\
         \x20   tensor a: {dt}[{global}] = randn()\n\
         \x20   tensor b: {dt}[{global}] = randn()\n\
         \x20   src = a\n    dst = b\n    outputs = [b]\n  }}\n}}\n",
        tag = r.tag,
        dt = r.dtype,
        la = coord(r.load_at),
        sa = coord(r.store_at),
    )
}

fn roundtrip(r: RoundTrip) -> Case {
    Case {
        name: format!("tma_roundtrip[{}]", r.tag),
        source: Source::Inline(tma_roundtrip(&r)),
        consts: vec![],
        targets: BOTH.to_vec(),
        check: Check::Exact,
    }
}

/// A planted fault from inline source.
fn fault(name: &str, src: &str, consts: &[&str], targets: &[Target], error: &'static str) -> Case {
    inline(name, src, consts, targets, Check::Trap(error))
}

const LOAD_AT: &str =
    "// Planted fault: a TMA load at innermost coordinate C0 (f32): C0 * 4 must be a multiple of 16.
kernel load_at {
  target sm_100a, sm_90a
  num_warps 4
  const C0: int = 1
  const C1: int = 0
  param src: tensor_desc(f32[8, 32], nvmma(128))
  param out_ptr: ptr(f32)
  layout row = blocked([1, 1], [1, 32], [4, 1], [1, 0])
  let buf = smem.alloc f32[8, 32], nvmma(128)
  let bar = mbar.alloc 1
  mbar.init bar[0], 1
  mbar.expect bar[0], src.nbytes
  tma.load src[C1, C0], buf, bar[0]
  mbar.wait bar[0], 0
  let x = smem.load buf, layout=row
  let offs = expand_dims(arange(0, 8, slice(1, row)), 1) * 32 + expand_dims(arange(0, 32, slice(0, row)), 0)
  global.store out_ptr, offs, x
  launch {
    grid = [1]
    tensor t: f32[64, 64] = randn()
    tensor out: f32[8, 32] = randn()
    src = t
    out_ptr = out
    outputs = [out]
  }
}
";

const STORE_AT: &str = "// Planted fault: a TMA store at (C1, C0): any negative coordinate, or C0 * 4 not a multiple of 16, traps.
kernel store_at {
  target sm_100a, sm_90a
  num_warps 4
  const C0: int = 0
  const C1: int = 0
  layout row = blocked([1, 1], [1, 32], [4, 1], [1, 0])
  param dst: tensor_desc(f32[8, 32], nvmma(128))
  let buf = smem.alloc f32[8, 32], nvmma(128)
  smem.store buf, full([8, 32], 1.0, f32, row)
  fence.async_shared
  tma.store dst[C1, C0], buf
  tma.store_wait 0
  launch {
    grid = [1]
    tensor t: f32[64, 64] = randn()
    dst = t
    outputs = [t]
  }
}
";

const MISALIGNED_SMEM: &str =
    "// Planted fault: the TMA box lands in bufs[1], 32 bytes into a plain buffer: not 128-byte aligned.
kernel misaligned_smem {
  target sm_100a, sm_90a
  num_warps 4
  param src: tensor_desc(f32[1, 8], plain)
  let bufs = smem.alloc f32[4, 1, 8], plain
  let bar = mbar.alloc 1
  mbar.init bar[0], 1
  mbar.expect bar[0], src.nbytes
  tma.load src[0, 0], bufs[1], bar[0]
  mbar.wait bar[0], 0
  launch {
    grid = [1]
    tensor t: f32[4, 8] = randn()
    src = t
  }
}
";

const MISALIGNED_BAR: &str = "// Planted fault: an mbarrier 4 bytes into its allocation (not 8-byte aligned).
kernel misaligned_bar {
  target sm_100a, sm_90a
  num_warps 4
  let bar = mbar.alloc 1, offset=4
  mbar.init bar[0], 1
  mbar.arrive bar[0]
  launch {
    grid = [1]
  }
}
";

/// tests/pass/dsmem_ring.tile: each CTA of a cluster writes its rows into the next CTA's
/// buffer (`smem.store ..., cta=R`), then a release/acquire cluster barrier hands them over.
const DSMEM_RING: &str = include_str!("../../tests/pass/dsmem_ring.tile");

/// The fixed twins of the cluster bugs of tests/fail: a peer load kept alive by a second cluster
/// barrier, a release (not relaxed) cluster arrive, and a remote arrival the owner waits on.
const DSMEM_FIXED: [(&str, &str); 3] = [
    (
        "dsmem_cluster_exit_fixed",
        include_str!("../../tests/pass/dsmem_cluster_exit_fixed.tile"),
    ),
    (
        "dsmem_relaxed_handoff_fixed",
        include_str!("../../tests/pass/dsmem_relaxed_handoff_fixed.tile"),
    ),
    (
        "dsmem_remote_arrive_no_wait_fixed",
        include_str!("../../tests/pass/dsmem_remote_arrive_no_wait_fixed.tile"),
    ),
];

/// tests/pass/multicast_copy_expect_cluster_fixed.tile: the first CTA of each cluster reads a
/// tile once and multicasts it into every CTA of its cluster (`tma.load ..., multicast=MASK`).
const MULTICAST_COPY: &str = include_str!("../../tests/pass/multicast_copy_expect_cluster_fixed.tile");

/// tests/pass/two_cta_matmul.tile: a [256, 128] tile of C per cluster of two CTAs, K in steps
/// of 64 through a ring of stages, `cta_group=2` MMAs issued by the even CTA.
const TWO_CTA_MATMUL: &str = include_str!("../../tests/pass/two_cta_matmul.tile");

/// A case from `.tile` text: `name[CONSTS]` with `consts` overridden.
fn inline(name: &str, src: &str, consts: &[&str], targets: &[Target], check: Check) -> Case {
    Case {
        name: if consts.is_empty() {
            name.to_string()
        } else {
            format!("{name}[{}]", consts.join(","))
        },
        source: Source::Inline(src.to_string()),
        consts: consts.iter().map(|c| c.to_string()).collect(),
        targets: targets.to_vec(),
        check,
    }
}

/// Every case, in a stable order.
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    // TMA round trips: every swizzle mode at rank 2, then ranks 1..5, widths, out of bounds.
    let rt = |tag,
              dtype,
              global: &'static [u32],
              boxd: &'static [u32],
              swizzle,
              load_at: &'static [i64],
              store_at: &'static [i64]| {
        roundtrip(RoundTrip {
            tag,
            dtype,
            global,
            boxd,
            swizzle,
            nan_fill: false,
            load_at,
            store_at,
            elem_strides: &[],
        })
    };
    v.push(rt("r2-plain", "f32", &[64, 64], &[8, 16], 0, &[8, 16], &[16, 32]));
    v.push(rt("r2-sw32", "f32", &[64, 64], &[8, 8], 32, &[8, 16], &[16, 32]));
    v.push(rt("r2-sw64", "f32", &[64, 64], &[8, 16], 64, &[8, 16], &[16, 32]));
    v.push(rt(
        "r2-sw128",
        "f32",
        &[64, 64],
        &[16, 32],
        128,
        &[8, 16],
        &[16, 32],
    ));
    v.push(rt(
        "r2-sw128-wide",
        "f32",
        &[64, 128],
        &[8, 64],
        128,
        &[8, 32],
        &[16, 64],
    ));
    v.push(rt(
        "r2-sw128-f16",
        "f16",
        &[64, 128],
        &[16, 64],
        128,
        &[8, 16],
        &[32, 64],
    ));
    v.push(rt(
        "r2-sw64-bf16",
        "bf16",
        &[64, 128],
        &[8, 32],
        64,
        &[8, 8],
        &[16, 64],
    ));
    v.push(rt(
        "r2-sw32-u8",
        "u8",
        &[64, 128],
        &[8, 32],
        32,
        &[8, 16],
        &[16, 64],
    ));
    v.push(rt("r1-plain", "f32", &[256], &[64], 0, &[32], &[128]));
    v.push(rt(
        "r3-sw128",
        "f32",
        &[4, 32, 64],
        &[2, 8, 32],
        128,
        &[1, 8, 16],
        &[2, 16, 32],
    ));
    v.push(rt(
        "r4-sw64",
        "f32",
        &[4, 4, 16, 32],
        &[2, 2, 8, 16],
        64,
        &[1, 2, 8, 16],
        &[2, 0, 0, 0],
    ));
    v.push(rt(
        "r5-plain",
        "f32",
        &[2, 4, 4, 16, 32],
        &[1, 2, 2, 8, 16],
        0,
        &[1, 1, 2, 8, 16],
        &[0, 2, 0, 8, 0],
    ));
    v.push(rt(
        "oob-negative",
        "f32",
        &[64, 64],
        &[16, 32],
        128,
        &[-3, -8],
        &[0, 0],
    ));
    v.push(rt(
        "oob-past-end",
        "f32",
        &[64, 64],
        &[16, 32],
        128,
        &[56, 48],
        &[0, 0],
    ));
    v.push(rt(
        "oob-store-past-end",
        "f32",
        &[64, 64],
        &[16, 32],
        128,
        &[0, 0],
        &[56, 48],
    ));
    v.push(roundtrip(RoundTrip {
        tag: "oob-nan-fill",
        dtype: "f32",
        global: &[64, 64],
        boxd: &[16, 32],
        swizzle: 128,
        nan_fill: true,
        load_at: &[-4, 48],
        store_at: &[0, 0],
        elem_strides: &[],
    }));
    // elementStrides (docs/semantics.md#tma, measured on the H100): an f32 [8, 32] box with
    // stride 2 in rows moves rows 0, 2, 4, 6 (512 bytes), stride 3 rows 0, 3, 6 (384 bytes);
    // rows past the end are filled and still counted; an innermost stride has no effect.
    for (tag, strides, load_at) in [
        ("stride2", &[2u32, 1][..], &[8i64, 32][..]),
        ("stride3", &[3, 1], &[5, 0]),
        ("stride2-past-end", &[2, 1], &[58, 0]),
        ("stride2-inner", &[1, 2], &[8, 32]),
    ] {
        v.push(roundtrip(RoundTrip {
            tag,
            dtype: "f32",
            global: &[64, 64],
            boxd: &[8, 32],
            swizzle: 128,
            nan_fill: false,
            load_at,
            store_at: &[16, 32],
            elem_strides: strides,
        }));
    }
    // A rank-3 box strided in both outer dimensions.
    v.push(roundtrip(RoundTrip {
        tag: "stride-r3",
        dtype: "f32",
        global: &[8, 16, 64],
        boxd: &[4, 6, 16],
        swizzle: 64,
        nan_fill: false,
        load_at: &[1, 2, 16],
        store_at: &[0, 8, 32],
        elem_strides: &[2, 3, 1],
    }));

    // The bundled kernels: elementwise adds, wgmma matmuls, warp specialization, Blackwell.
    for c in [&[][..], &["NUM_BUFFERS=3"], &["NUM_WARPS=8"]] {
        v.push(bundled("elementwise_add_tma", c, BOTH, Check::Exact));
    }
    for c in [
        &[][..],
        &["NUM_LOAD_BUFFERS=1", "NUM_STORE_BUFFERS=1"],
        &["NUM_WARPS=8"],
        &["XNUMEL=4000", "YNUMEL=120"],
    ] {
        v.push(bundled("elementwise_add_ws", c, BOTH, Check::Exact));
    }
    // The wgmma matmuls: bit for bit on Hopper; on Blackwell (tcgen05, not measured) within
    // the tolerance.
    let both_mma = |v: &mut Vec<Case>, kernel: &'static str, c: &[&str]| {
        v.push(bundled(kernel, c, BOTH, MMA_F16_EXACT_ON_HOPPER));
    };
    for c in [
        &[][..],
        &["NUM_BUFFERS=2"],
        &["NUM_BUFFERS=4", "NUM_WARPS=4"],
        &["BLOCK_M=64", "BLOCK_N=64", "NUM_WARPS=4"],
    ] {
        both_mma(&mut v, "matmul_pipelined", c);
    }
    for c in [
        &[][..],
        &["SCHEDULER=1", "NUM_SMS=4"],
        &["BLOCK_M=64", "BLOCK_N=64", "NUM_WARPS=4"],
    ] {
        both_mma(&mut v, "persistent_matmul", c);
    }
    for c in [
        &[][..],
        &["NUM_BUFFERS=4", "STEALB=true"],
        &["SCHEDULER=1", "NUM_SMS=4"],
        &["BLOCK_M=64", "BLOCK_N=64", "NUM_WARPS=4"],
    ] {
        both_mma(&mut v, "persistent_matmul_pipelined", c);
    }
    // Every accumulator bit (f32 output), f16 and bf16 operands, K from one partial block
    // to 4096 (64 blocks of 4 wgmma instructions each).
    const SMALL: [&str; 3] = ["BLOCK_M=64", "BLOCK_N=64", "NUM_WARPS=4"];
    for operand in ["f16", "bf16"] {
        for k in ["K=40", "K=304", "K=1000", "K=4096"] {
            let mut c = SMALL.to_vec();
            c.extend(["M=96", "N=80", k]);
            v.extend(matmul_f32_out(operand, &c));
        }
    }
    for dtype in ["DTYPE=f8e4m3", "DTYPE=f8e5m2"] {
        for k in ["K=128", "K=512", "K=4096"] {
            let consts = [dtype, k];
            v.push(Case {
                name: format!("matmul_fp8[{}]", consts.join(",")),
                source: Source::Inline(MATMUL_FP8.to_string()),
                consts: consts.iter().map(|c| c.to_string()).collect(),
                targets: HOPPER.to_vec(),
                check: Check::Exact,
            });
        }
    }
    // wgmma's whole dtype matrix (f16/f32/s32 accumulators stored unrounded, A from shared
    // memory or registers): bit for bit, the f16 accumulator as measured
    // (docs/hardware/wgmma-numerics.md).
    v.push(bundled("wgmma_dtypes", &[], HOPPER, Check::Exact));
    for cfg in bwsim_kernels::configs::of("wgmma_dtypes") {
        v.push(bundled("wgmma_dtypes", cfg.consts, HOPPER, Check::Exact));
    }
    // Long chains into an f16 accumulator: 256 instructions, each rounding into f16.
    for c in [
        &["ACC=f16", "M=64", "N=64", "K=4096"][..],
        &["ACC=f16", "M=64", "N=64", "K=4096", "A_REGS=true"],
        &[
            "A_TYPE=f8e4m3",
            "B_TYPE=f8e4m3",
            "ACC=f16",
            "BLOCK_K=128",
            "M=64",
            "N=64",
            "K=4096",
        ],
        &[
            "A_TYPE=f8e5m2",
            "B_TYPE=f8e5m2",
            "ACC=f16",
            "BLOCK_K=128",
            "M=64",
            "N=64",
            "K=4096",
        ],
    ] {
        v.push(bundled("wgmma_dtypes", c, HOPPER, Check::Exact));
    }
    // tcgen05.mma's kinds over their dtypes: modelled, not measured (no Blackwell lent), so
    // within a tolerance; s32 exact.
    let tc_check = |consts: &[&str]| -> Check {
        if consts.contains(&"ACC=i32") {
            Check::Exact
        } else if consts.contains(&"ACC=f16") {
            MMA_F16
        } else if consts.iter().any(|c| c.contains("f8e")) {
            // fp8 partial sums: 14 bits on Hopper, 25 assumed on Blackwell.
            within(5e-2, 1e-2)
        } else {
            MMA_F32
        }
    };
    v.push(bundled("tcgen05_dtypes", &[], BLACKWELL, MMA_F32));
    for cfg in bwsim_kernels::configs::of("tcgen05_dtypes") {
        v.push(bundled(
            "tcgen05_dtypes",
            cfg.consts,
            BLACKWELL,
            tc_check(cfg.consts),
        ));
    }
    for c in [&[][..], &["NUM_BUFFERS=2", "SCHEDULER=1"]] {
        v.push(bundled("matmul_warp_specialized", c, BLACKWELL, MMA_F16));
    }
    v.push(bundled("matmul_accumulate", &[], BLACKWELL, MMA_F32));
    for c in [&[][..], &["DTYPE=f32"], &["BLOCK_X=8", "BLOCK_Y=16"]] {
        v.push(bundled("async_gather", c, BLACKWELL, Check::Exact));
    }
    for c in [&[][..], &["DTYPE=f32", "BLOCK_X=8", "BLOCK_Y=16"]] {
        v.push(bundled("async_scatter", c, BLACKWELL, Check::Exact));
    }
    for c in [
        &[][..],
        &["SWIZZLE=32", "N=16", "TMEM_BLOCK_N=16"],
        &["M=256", "N=64", "TMEM_BLOCK_N=64", "SWIZZLE=64"],
    ] {
        v.push(bundled("tcgen05_copy", c, BLACKWELL, Check::Exact));
    }
    for c in [
        &[][..],
        &["DTYPE=f8e4m3", "SCALED=true"],
        &["DTYPE=f4e2m1", "SCALED=true"],
        &["CTA_GROUP=2"],
    ] {
        v.push(bundled("gemm_async", c, BLACKWELL, MMA_F32));
    }
    v.push(bundled("matmul_fused_gather_scatter", &[], BLACKWELL, MMA_F16));
    // Tutorial 11's block-scaled mxfp8 matmul (f16 C), at its smallest and widest blocks.
    for c in [
        &[][..],
        &["BLOCK_N=32", "BLOCK_K=32"],
        &["BLOCK_N=256", "BLOCK_K=64"],
    ] {
        v.push(bundled("mma_scaled", c, BLACKWELL, MMA_F16));
    }
    // Math functions and reductions: the hardware's approximate forms (ex2, lg2, rsqrt,
    // sin, cos .approx: 2 ulp or 2^-20.9 absolute in the PTX ISA's tables) against the
    // simulator's correctly rounded values; row sums and products in another order.
    for c in [
        &[][..],
        &["COLS=32"],
        &["COLS=256", "N_ROWS=100"],
        &["WARPS_N=2"],
        &["COLS=256", "WARPS_N=4"],
    ] {
        v.push(bundled("softmax", c, BOTH, APPROX));
    }
    v.push(bundled("tile_math", &[], BOTH, APPROX));
    v.push(bundled("attention", &[], BLACKWELL, MMA_F16));
    v.push(bundled("int_ops", &[], BOTH, Check::Exact));
    v.push(bundled("while_loop", &[], BOTH, Check::Exact));
    v.push(bundled("while_loop", &["LIMIT=1"], BOTH, Check::Exact));
    v.push(bundled("atomics", &[], BOTH, Check::Exact));
    v.push(bundled("scan", &[], BOTH, Check::Exact));
    v.push(bundled("scan", &["COLS=32"], BOTH, Check::Exact));
    v.push(bundled("scan", &["COLS=256"], BOTH, Check::Exact));
    v.push(bundled("atomics", &["BINS=3", "N=5000"], BOTH, Check::Exact));
    v.push(bundled("cp_async", &[], BOTH, Check::Exact));
    v.push(bundled(
        "cp_async",
        &["NUM_BUFFERS=2", "N_COLS=1000"],
        BOTH,
        Check::Exact,
    ));
    v.push(bundled(
        "cp_async",
        &["NUM_BUFFERS=4", "N_COLS=64"],
        BOTH,
        Check::Exact,
    ));

    // Clusters (tests/pass): the split cluster barrier, distributed shared memory (peer loads
    // and stores through `mapa`) and remote mbarrier arrivals, exact; the ring in clusters of
    // 2, 4 and 8 (the portable maximum).
    for c in [&[][..], &["CLUSTER=4"], &["CLUSTER=8"]] {
        v.push(inline("dsmem_ring", DSMEM_RING, c, BOTH, Check::Exact));
    }
    for (name, src) in DSMEM_FIXED {
        v.push(inline(name, src, &[], BOTH, Check::Exact));
    }
    // Multicast TMA in clusters of 2 and 4: exact.
    for c in [&[][..], &["CLUSTER=4"]] {
        v.push(inline(
            "multicast_copy_expect_cluster_fixed",
            MULTICAST_COPY,
            c,
            BOTH,
            Check::Exact,
        ));
    }
    // A CTA pair's pipelined matmul (remote arrivals hand the odd CTA's stages to the even
    // CTA's cta_group::2 MMAs): Blackwell only, within the tcgen05 tolerance.
    for c in [&[][..], &["M=512", "N=256", "NUM_BUFFERS=3"]] {
        v.push(inline("two_cta_matmul", TWO_CTA_MATMUL, c, BLACKWELL, MMA_F32));
    }

    // Planted faults: both the simulator and the GPU must trap with the same error.
    const II: &str = "CUDA_ERROR_ILLEGAL_INSTRUCTION";
    const MA: &str = "CUDA_ERROR_MISALIGNED_ADDRESS";
    v.push(fault(
        "fault_load_misaligned_coordinate",
        LOAD_AT,
        &["C0=1"],
        BOTH,
        II,
    ));
    v.push(fault(
        "fault_load_misaligned_coordinate",
        LOAD_AT,
        &["C0=-1", "C1=2"],
        BOTH,
        II,
    ));
    v.push(fault(
        "fault_store_negative_coordinate",
        STORE_AT,
        &["C1=-1"],
        BOTH,
        II,
    ));
    v.push(fault(
        "fault_store_negative_coordinate",
        STORE_AT,
        &["C0=-4"],
        BOTH,
        II,
    ));
    v.push(fault(
        "fault_store_misaligned_coordinate",
        STORE_AT,
        &["C0=2"],
        BOTH,
        II,
    ));
    v.push(fault("fault_misaligned_smem_box", MISALIGNED_SMEM, &[], BOTH, MA));
    v.push(fault("fault_misaligned_mbarrier", MISALIGNED_BAR, &[], BOTH, MA));
    let mut g = bundled("async_gather", &["Y_OFFSET=2"], BLACKWELL, Check::Trap(II));
    g.name = "fault_gather_misaligned_column[Y_OFFSET=2]".into();
    v.push(g);
    let mut s = bundled("async_scatter", &["Y_OFFSET=-16"], BLACKWELL, Check::Trap(II));
    s.name = "fault_scatter_negative_column[Y_OFFSET=-16]".into();
    v.push(s);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_least_forty_distinct_cases_cover_every_family() {
        let cases = all();
        assert!(cases.len() >= 40, "{} cases", cases.len());
        let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "case names are unique");
        let has = |p: &str| cases.iter().any(|c| c.name.starts_with(p));
        for p in [
            "tma_roundtrip[r1",
            "tma_roundtrip[r3",
            "tma_roundtrip[r4",
            "tma_roundtrip[r5",
            "tma_roundtrip[oob",
            "tma_roundtrip[stride2",
            "tma_roundtrip[stride3",
            "elementwise_add_tma",
            "elementwise_add_ws",
            "matmul_pipelined",
            "persistent_matmul",
            "matmul_warp_specialized",
            "fault_load_misaligned_coordinate",
            "fault_store_negative_coordinate",
            "fault_misaligned_smem_box",
        ] {
            assert!(has(p), "no case `{p}`");
        }
        for sw in ["plain", "sw32", "sw64", "sw128"] {
            assert!(
                cases.iter().any(|c| c.name.contains(&format!("r2-{sw}"))),
                "no rank-2 {sw} round trip"
            );
        }
        assert!(cases.iter().filter(|c| matches!(c.check, Check::Trap(_))).count() >= 7);
    }

    #[test]
    fn the_f32_output_matmuls_exist_for_both_operand_types_and_parse() {
        for operand in ["f16", "bf16"] {
            let src = matmul_variant(operand).expect("matmul_pipelined has the rewritten lines");
            let k = bwsim_isa::parser::parse(&src).expect("parses");
            let text = bwsim_isa::print(&k);
            assert!(text.contains(&format!("tensor a: {operand}[M, K]")), "{text}");
            assert!(text.contains("tensor c: f32[M, N]"), "{text}");
            let f16_left = text.contains("(f16[") || text.contains(" f16[");
            assert!(!f16_left || operand == "f16", "{text}");
        }
        let cases = all();
        for name in [
            "matmul_f16_f32out[",
            "matmul_bf16_f32out[",
            "matmul_fp8[DTYPE=f8e4m3",
            "matmul_fp8[DTYPE=f8e5m2",
        ] {
            let ks: Vec<&Case> = cases.iter().filter(|c| c.name.starts_with(name)).collect();
            assert!(
                ks.iter().any(|c| c.consts.iter().any(|k| k == "K=4096")),
                "{name}"
            );
            assert!(ks
                .iter()
                .all(|c| c.check == Check::Exact && c.targets == [Target::Sm90a]));
        }
        // The simulator's own test runs the same kernel.
        let sim_copy = include_str!("../../sim/tests/data/wgmma-h100/matmul_fp8.tile");
        assert_eq!(MATMUL_FP8, sim_copy, "the two copies of matmul_fp8.tile differ");
        let wg = Check::WgmmaExact { atol: 1.0, rtol: 0.0 };
        assert_eq!(wg.on(Some(Target::Sm90a)), Check::Exact);
        assert_eq!(
            wg.on(Some(Target::Sm100a)),
            Check::Tolerance { atol: 1.0, rtol: 0.0 }
        );
    }

    /// Every round trip's generated source (element strides, an out-of-bounds fill, every
    /// swizzle among them) is `.tile` text in canonical form.
    #[test]
    fn roundtrip_sources_are_canonical_tile_text() {
        let mut seen = 0;
        for c in all() {
            let Source::Inline(src) = &c.source else { continue };
            if !c.name.starts_with("tma_roundtrip[") {
                continue;
            }
            let k = bwsim_isa::parser::parse(src).unwrap_or_else(|d| panic!("{}: {d:?}", c.name));
            assert_eq!(&bwsim_isa::print(&k), src, "{}: not in canonical form", c.name);
            seen += 1;
        }
        assert!(seen >= 10, "{seen} round trips");
    }
}
