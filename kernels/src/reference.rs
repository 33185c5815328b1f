//! CPU references: plain Rust, written from the tutorials' stated semantics and independent
//! of the simulator. Each takes the launch plan and the input tensors (as drawn by
//! `launch::materialize`) and returns the expected content of the kernel's outputs, with the
//! tolerance the comparison allows.
//!
//! Independence: element values are decoded here from the formats' definitions ([`value`]:
//! `half` for f16/bf16, the OCP MX rules for fp8/fp4 and the ue8m0 scale factors), not with
//! the IR's numeric module that the simulator uses, so a wrong encoding there cannot hide in
//! both. References are looked up by the kernel's declared name, so hand-written `.tile` files
//! named like a reference (`tma_roundtrip`, `tcgen05_mma_tile`, `gather_rows`) are checked too.

mod language;

use bwsim_isa::launch::{ArgValue, HostTensor, LaunchPlan};
use bwsim_isa::DType;
use half::{bf16, f16};

/// Why a reference cannot be computed for a launch.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RefError {
    #[error("launch has no tensor `{0}`")]
    NoTensor(String),
    #[error("input `{0}` missing")]
    MissingInput(String),
    #[error("launch gives no integer `{0}`")]
    NoInt(String),
    #[error("launch gives no float `{0}`")]
    NoFloat(&'static str),
    #[error("`{0}` is negative")]
    Negative(&'static str),
    #[error("references produce f32, f16 or bf16 outputs, not {0}")]
    OutputType(DType),
    #[error("index {index} of `{tensor}` is outside 0..{len}")]
    Index { index: f64, tensor: String, len: u64 },
    /// The launch's tensors are not the ones the reference computes on (which, in words).
    #[error("{0}")]
    Inputs(String),
}

impl From<&str> for RefError {
    fn from(s: &str) -> RefError {
        RefError::Inputs(s.to_string())
    }
}

impl From<String> for RefError {
    fn from(s: String) -> RefError {
        RefError::Inputs(s)
    }
}

/// A minifloat with `e` exponent bits, `m` mantissa bits and exponent bias `bias`, no
/// infinities or NaNs (the caller handles the format's specials): the value of `bits`.
fn minifloat(bits: u32, e: u32, m: u32, bias: i32) -> f64 {
    let sign = if bits >> (e + m) & 1 == 1 { -1.0 } else { 1.0 };
    let exp = (bits >> m) & ((1 << e) - 1);
    let man = (bits & ((1 << m) - 1)) as f64 / (1u32 << m) as f64;
    let v = if exp == 0 {
        man * 2f64.powi(1 - bias)
    } else {
        (1.0 + man) * 2f64.powi(exp as i32 - bias)
    };
    sign * v
}

/// The value of element bits of `dtype`, from the format definitions: IEEE binary32; f16 and
/// bf16 through `half`; OCP MX fp8 E4M3 (bias 7, no infinities, S.1111.111 is NaN) and E5M2
/// (bias 15, IEEE specials); fp4 E2M1 (bias 1, no specials); ue8m0 = 2^(e - 127), 0xFF NaN;
/// ue4m3 = unsigned E4M3; integers two's complement.
pub fn value(dtype: DType, bits: u64) -> f64 {
    match dtype {
        DType::F32 | DType::TF32 => f32::from_bits(bits as u32) as f64,
        DType::F16 => f16::from_bits(bits as u16).to_f64(),
        DType::BF16 => bf16::from_bits(bits as u16).to_f64(),
        DType::F8E4M3 => {
            let b = bits as u32 & 0xff;
            if b & 0x7f == 0x7f {
                f64::NAN
            } else {
                minifloat(b, 4, 3, 7)
            }
        }
        DType::UE4M3 => {
            let b = bits as u32 & 0x7f;
            if b == 0x7f {
                f64::NAN
            } else {
                minifloat(b, 4, 3, 7)
            }
        }
        DType::F8E5M2 => {
            let b = bits as u32 & 0xff;
            match (b >> 2) & 0x1f {
                0x1f if b & 3 == 0 => {
                    if b & 0x80 != 0 {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    }
                }
                0x1f => f64::NAN,
                _ => minifloat(b, 5, 2, 15),
            }
        }
        DType::F4E2M1 => minifloat(bits as u32 & 0xf, 2, 1, 1),
        DType::UE8M0 => {
            let e = bits as u8;
            if e == 0xff {
                f64::NAN
            } else {
                2f64.powi(e as i32 - 127)
            }
        }
        DType::I1 => (bits & 1) as f64,
        DType::I8 => bits as u8 as i8 as f64,
        DType::I16 => bits as u16 as i16 as f64,
        DType::I32 => bits as u32 as i32 as f64,
        DType::I64 => bits as i64 as f64,
        DType::U8 => bits as u8 as f64,
        DType::U16 => bits as u16 as f64,
        DType::U32 => bits as u32 as f64,
        DType::U64 => bits as f64,
    }
}

/// Element `i` of `t` as a number ([`value`]).
fn val(t: &HostTensor, i: u64) -> f64 {
    value(t.dtype, t.get_bits(i))
}

/// Store `v` rounded once to nearest even into element `i` of an f32, f16 or bf16 tensor.
fn put(t: &mut HostTensor, i: u64, v: f64) -> Result<(), RefError> {
    let bits = match t.dtype {
        DType::F32 => (v as f32).to_bits() as u64,
        DType::F16 => f16::from_f64(v).to_bits() as u64,
        DType::BF16 => bf16::from_f64(v).to_bits() as u64,
        d => return Err(RefError::OutputType(d)),
    };
    t.set_bits(i, bits);
    Ok(())
}

/// How closely an output must match.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Bit for bit.
    Exact,
    /// |actual - expected| <= atol + rtol * |expected| (MMA results: hardware accumulation
    /// order is unspecified, PTX.md section 10).
    Close { atol: f64, rtol: f64 },
}

/// The expected content of one output tensor.
#[derive(Clone, Debug)]
pub struct Expected {
    pub tensor: String,
    pub values: HostTensor,
    pub tol: Tolerance,
}

/// Result of comparing one output.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub tensor: String,
    pub elements: u64,
    pub mismatches: u64,
    pub max_abs_err: f64,
    /// (linear index, actual, expected) of the first mismatch.
    pub first_mismatch: Option<(u64, f64, f64)>,
}

impl Comparison {
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}

/// Compare `actual` with `expected` element by element.
pub fn compare(actual: &HostTensor, e: &Expected) -> Comparison {
    let n = e.values.numel().min(actual.numel());
    let mut c = Comparison {
        tensor: e.tensor.clone(),
        elements: e.values.numel(),
        mismatches: 0,
        max_abs_err: 0.0,
        first_mismatch: None,
    };
    if actual.numel() != e.values.numel() || actual.dtype != e.values.dtype {
        c.mismatches = e.values.numel();
        return c;
    }
    for i in 0..n {
        let (ab, eb) = (actual.get_bits(i), e.values.get_bits(i));
        let (a, x) = (val(actual, i), val(&e.values, i));
        let ok = match e.tol {
            Tolerance::Exact => ab == eb,
            Tolerance::Close { atol, rtol } => {
                if a == x {
                    true
                } else if x.is_nan() || a.is_nan() {
                    x.is_nan() && a.is_nan()
                } else {
                    (a - x).abs() <= atol + rtol * x.abs()
                }
            }
        };
        if a.is_finite() && x.is_finite() {
            c.max_abs_err = c.max_abs_err.max((a - x).abs());
        }
        if !ok {
            c.mismatches += 1;
            if c.first_mismatch.is_none() {
                c.first_mismatch = Some((i, a, x));
            }
        }
    }
    c
}

fn tensor<'a>(plan: &LaunchPlan, inputs: &'a [HostTensor], name: &str) -> Result<&'a HostTensor, RefError> {
    let i = plan
        .tensor(name)
        .ok_or_else(|| RefError::NoTensor(name.to_string()))?;
    inputs
        .get(i)
        .ok_or_else(|| RefError::MissingInput(name.to_string()))
}

fn int_arg(plan: &LaunchPlan, name: &str) -> Result<i64, RefError> {
    match plan.args.iter().find(|(n, _)| n == name) {
        Some((_, ArgValue::Int(v))) => Ok(*v),
        _ => Err(RefError::NoInt(name.to_string())),
    }
}

/// Expected outputs of a bundled kernel, or `None` when it has no reference.
pub fn reference(
    kernel: &str,
    plan: &LaunchPlan,
    inputs: &[HostTensor],
) -> Option<Result<Vec<Expected>, RefError>> {
    let r = match kernel {
        "elementwise_add_ws" | "elementwise_add_tma" => add(plan, inputs),
        "async_gather" => gather(plan, inputs),
        "async_scatter" => scatter(plan, inputs),
        "tcgen05_copy" | "subtiled_epilogue" | "subtiled_epilogue_kernel" => identity(plan, inputs),
        "matmul_pipelined"
        | "persistent_matmul"
        | "persistent_matmul_pipelined"
        | "matmul_warp_specialized" => matmul(plan, inputs),
        "matmul_accumulate" => matmul_accumulate(plan, inputs),
        "wgmma_dtypes" | "tcgen05_dtypes" => wgmma_dtypes(plan, inputs),
        "wgmma_regs_kernel" => wgmma_regs(plan, inputs),
        "matmul_fused_gather_scatter" => fused_gather_scatter(plan, inputs),
        "gemm_async" | "tcgen05_mma_tile" => gemm_async(plan, inputs),
        "mma_scaled"
        | "mma_scaled_kernel"
        | "mma_scaled_contig_kernel"
        | "mma_scaled_packed_kernel"
        | "mma_scaled_copy_kernel"
        | "mma_scaled_pipelined_kernel"
        | "mma_scaled_ws_kernel" => mma_scaled(plan, inputs),
        "tma_roundtrip" | "copy_1d_kernel" | "copy_2d_kernel" | "tmem_roundtrip_kernel" => {
            identity(plan, inputs)
        }
        "scalars_kernel" => language::scalars(plan, inputs),
        "map_elementwise_kernel" => language::map_elementwise(plan, inputs),
        "wgmma_matmul_kernel" => matmul(plan, inputs),
        "gather_rows" => gather(plan, inputs),
        "softmax" | "softmax_kernel" => softmax(plan, inputs),
        "tile_math" => tile_math(plan, inputs),
        "attention" | "attention_kernel" | "attention_f32x2_kernel" => attention(plan, inputs, false),
        "attention_f32x2_causal_kernel" => attention(plan, inputs, true),
        "attention_pingpong_kernel" => attention_causal(plan, inputs),
        "per_thread_kernel" => per_thread(plan, inputs),
        "reductions_kernel" => combiner_reductions(plan, inputs),
        "claims_kernel" => claims(plan, inputs),
        "int_ops" | "int_ops_kernel" => int_ops(plan, inputs),
        "bit_tricks_kernel" => bit_tricks(plan, inputs),
        "while_loop" | "while_loop_kernel" => while_loop(plan, inputs),
        "atomics" | "atomics_kernel" => atomics(plan, inputs),
        "scan" | "scan_kernel" => scan(plan, inputs),
        "cp_async" | "cp_async_kernel" => cp_async(plan, inputs),
        "cp_async_overlap" | "cp_async_overlap_kernel" => second_copy(plan, inputs),
        "conv2d_kernel" | "conv2d_wgmma_kernel" => conv2d(plan, inputs),
        // The new-feature kernels of Triton 3.7 to 3.9 (tests/gluon/3.7/, 3.8/, 3.9/).
        "commit_pred_kernel"
        | "multicast_matmul_kernel"
        | "two_cta_matmul_kernel"
        | "tmem_row_slice_kernel" => matmul(plan, inputs),
        "clc_scale_kernel" => clc_scale(plan, inputs),
        "packed_arith_kernel" => packed_arith(plan, inputs),
        "inline_asm_kernel" => inline_asm(plan, inputs),
        "smem_gather_scatter_kernel" => smem_gather_scatter(plan, inputs),
        "smem_histogram_kernel" => smem_histogram(plan, inputs),
        "tma_reduce_kernel" => tma_reduce(plan, inputs),
        "flag_handoff_kernel" => flag_handoff(plan, inputs),
        _ => return None,
    };
    Some(r)
}

/// c = a + b, f32, exact (one f32 addition per element, as `cvt`-free hardware add does).
fn add(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (a, b) = (tensor(plan, inputs, "a")?, tensor(plan, inputs, "b")?);
    if (a.dtype, b.dtype) != (DType::F32, DType::F32) {
        return Err("the add kernels take f32 inputs".into());
    }
    let mut c = HostTensor::zeros("c", DType::F32, a.shape.clone());
    for i in 0..a.numel() {
        let v = f32::from_bits(a.get_bits(i) as u32) + f32::from_bits(b.get_bits(i) as u32);
        c.set_bits(i, v.to_bits() as u64);
    }
    Ok(vec![Expected {
        tensor: "c".into(),
        values: c,
        tol: Tolerance::Exact,
    }])
}

/// out[r, :] = exp(x[r, :] - max(x[r, :])) / sum(exp(x[r, :] - max(x[r, :]))) for every row of
/// the f32 input, computed in f64. Tolerance: the hardware's `ex2.approx.f32` and
/// `div.full.f32` are each within 2 ulp (PTX ISA), and the row sum's order is unspecified.
fn softmax(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let out = tensor(plan, inputs, "out")?;
    if x.dtype != DType::F32 || x.shape.len() != 2 || out.shape != x.shape {
        return Err("softmax takes an f32 [rows, cols] input and an output of the same shape".into());
    }
    let (rows, cols) = (x.shape[0], x.shape[1]);
    let mut o = HostTensor::zeros("out", out.dtype, out.shape.clone());
    for r in 0..rows {
        let row: Vec<f64> = (0..cols).map(|c| val(x, r * cols + c)).collect();
        let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row.iter().map(|v| (v - m).exp()).collect();
        let s: f64 = e.iter().sum();
        for c in 0..cols {
            put(&mut o, r * cols + c, e[c as usize] / s)?;
        }
    }
    Ok(vec![Expected {
        tensor: "out".into(),
        values: o,
        tol: Tolerance::Close {
            atol: 1e-7,
            rtol: 1e-5,
        },
    }])
}

/// Attention forward: for each batch-head b (grid y) and query row i,
/// o[i] = sum_j softmax_j(s_ij) v[j] with s_ij = q[i] . k[j] and the softmax taken in base 2
/// with the launch's `qk_scale` (sm_scale * log2(e)): p_ij = 2^(qk_scale * s_ij - max_j), in f64.
/// Tolerance: the kernel rounds P to f16 before P @ V (relative 2^-11 per weight) and O to f16.
/// With `causal`, query i attends to keys j <= i only (attention_f32x2_causal_kernel).
fn attention(plan: &LaunchPlan, inputs: &[HostTensor], causal: bool) -> Result<Vec<Expected>, RefError> {
    let (q, k, v) = (
        tensor(plan, inputs, "q")?,
        tensor(plan, inputs, "k")?,
        tensor(plan, inputs, "v")?,
    );
    let scale = match plan.args.iter().find(|(n, _)| n == "qk_scale") {
        Some((_, ArgValue::Float(x))) => *x as f32 as f64,
        _ => return Err(RefError::NoFloat("qk_scale")),
    };
    if q.shape.len() != 2 || k.shape != q.shape || v.shape != q.shape {
        return Err("attention takes q, k, v of one shape [BH * N_CTX, HEAD_D]".into());
    }
    let bh = plan.grid[1].max(1) as u64;
    let (rows, d) = (q.shape[0], q.shape[1]);
    let n_ctx = rows / bh;
    let mut o = HostTensor::zeros("o", DType::F16, q.shape.clone());
    for b in 0..bh {
        for i in 0..n_ctx {
            // Causal: keys 0..=i only.
            let keys = if causal { i + 1 } else { n_ctx };
            let (row, _, _) = attention_row((q, k, v), b * n_ctx, i, keys, scale);
            for (c, x) in row.into_iter().enumerate() {
                put(&mut o, (b * n_ctx + i) * d + c as u64, x)?;
            }
        }
    }
    Ok(vec![Expected {
        tensor: "o".into(),
        values: o,
        tol: Tolerance::Close {
            atol: 4e-3,
            rtol: 1e-2,
        },
    }])
}

/// One query row of attention in f64: row `i` of the batch-head whose rows start at `row0`
/// against its first `keys` keys: s_j = scale * q_i . k_j, p_j = 2^(s_j - m) with m = max_j s_j,
/// l = sum_j p_j; returns (sum_j p_j v_j / l per column, m, l).
fn attention_row(
    (q, k, v): (&HostTensor, &HostTensor, &HostTensor),
    row0: u64,
    i: u64,
    keys: u64,
    scale: f64,
) -> (Vec<f64>, f64, f64) {
    let d = q.shape[1];
    let qi = (row0 + i) * d;
    let s: Vec<f64> = (0..keys)
        .map(|j| {
            let kj = (row0 + j) * d;
            scale * (0..d).map(|c| val(q, qi + c) * val(k, kj + c)).sum::<f64>()
        })
        .collect();
    let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = s.iter().map(|x| (x - m).exp2()).collect();
    let l: f64 = p.iter().sum();
    let row = (0..d)
        .map(|c| {
            (0..keys)
                .map(|j| p[j as usize] * val(v, (row0 + j) * d + c))
                .sum::<f64>()
                / l
        })
        .collect();
    (row, m, l)
}

/// Causal attention forward with the log2-sum-exp2 of each row (tests/gluon/attention_pingpong.py,
/// compiled with CAUSAL): for batch-head b < `Z_H` and query row i < `N_CTX`,
/// s_ij = qk_scale * q_i . k_j for keys j <= i, qk_scale = f32(sm_scale * log2(e)) (the kernel's
/// f32 product), p_ij = 2^(s_ij - m_i) with m_i = max_j s_ij, l_i = sum_j p_ij;
/// o_i = sum_j p_ij v_j / l_i and m[i] = m_i + log2(l_i), in f64. Tolerance of o as in
/// `attention` (P and O rounded to f16); m is f32 arithmetic on a sum of f32 terms (1e-4).
fn attention_causal(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (q, k, v) = (
        tensor(plan, inputs, "q")?,
        tensor(plan, inputs, "k")?,
        tensor(plan, inputs, "v")?,
    );
    let sm_scale = match plan.args.iter().find(|(n, _)| n == "sm_scale") {
        Some((_, ArgValue::Float(x))) => *x as f32,
        _ => return Err(RefError::NoFloat("sm_scale")),
    };
    // The kernel's 1.44269504 rounds to the same f32 as log2(e).
    let scale = (sm_scale * std::f32::consts::LOG2_E) as f64;
    let (z_h, n_ctx) = (int_arg(plan, "Z_H")?, int_arg(plan, "N_CTX")?);
    if q.shape.len() != 2 || k.shape != q.shape || v.shape != q.shape {
        return Err("attention takes q, k, v of one shape [Z_H * N_CTX, HEAD_D]".into());
    }
    if z_h < 1 || n_ctx < 1 || (z_h * n_ctx) as u64 != q.shape[0] {
        return Err(format!(
            "Z_H * N_CTX = {z_h} * {n_ctx} is not the {} rows of q",
            q.shape[0]
        )
        .into());
    }
    let (bh, n_ctx, d) = (z_h as u64, n_ctx as u64, q.shape[1]);
    let mut o = HostTensor::zeros("o", DType::F16, q.shape.clone());
    let mut m = HostTensor::zeros("m", DType::F32, vec![bh * n_ctx]);
    for b in 0..bh {
        for i in 0..n_ctx {
            // Causal: keys 0..=i.
            let (row, mx, l) = attention_row((q, k, v), b * n_ctx, i, i + 1, scale);
            for (c, x) in row.into_iter().enumerate() {
                put(&mut o, (b * n_ctx + i) * d + c as u64, x)?;
            }
            put(&mut m, b * n_ctx + i, mx + l.log2())?;
        }
    }
    Ok(vec![
        Expected {
            tensor: "o".into(),
            values: o,
            tol: Tolerance::Close {
                atol: 4e-3,
                rtol: 1e-2,
            },
        },
        Expected {
            tensor: "m".into(),
            values: m,
            tol: Tolerance::Close {
                atol: 1e-4,
                rtol: 1e-4,
            },
        },
    ])
}

/// tests/gluon/per_thread.py (the operations of Gluon tutorial 14-per-thread-ops) over an f32
/// [rows, cols] x: `sums` = row sums (f64, tolerance of an f32 sum of 32 terms); `centered` =
/// x - row max (one f32 subtraction: exact); `deq` = q / s with s = 127 / max(max |x| over the
/// 8-column group, 1e-12) and q = x * s truncated to an int8 (f32 arithmetic: exact).
fn per_thread(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    const GROUP: u64 = 8;
    let x = tensor(plan, inputs, "x")?;
    if x.shape.len() != 2 || x.dtype != DType::F32 || x.shape[1] % GROUP != 0 {
        return Err("per_thread takes an f32 [rows, cols] x, cols a multiple of 8".into());
    }
    let (rows, cols) = (x.shape[0], x.shape[1]);
    let f = |i: u64| f32::from_bits(x.get_bits(i) as u32);
    let mut sums = HostTensor::zeros("sums", DType::F32, vec![rows]);
    let mut centered = HostTensor::zeros("centered", DType::F32, x.shape.clone());
    let mut deq = HostTensor::zeros("deq", DType::F32, x.shape.clone());
    for r in 0..rows {
        let row: Vec<f32> = (0..cols).map(|c| f(r * cols + c)).collect();
        put(&mut sums, r, row.iter().map(|&v| v as f64).sum())?;
        let mx = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        for (c, chunk) in row.chunks(GROUP as usize).enumerate() {
            let amax = chunk.iter().fold(0f32, |m, v| m.max(v.abs()));
            let s = 127.0f32 / amax.max(1e-12);
            for (k, &v) in chunk.iter().enumerate() {
                let i = r * cols + c as u64 * GROUP + k as u64;
                centered.set_bits(i, (v - mx).to_bits() as u64);
                // Through an int8: a truncated -0.3 comes back as +0.
                let q = (v * s) as i8 as f32;
                deq.set_bits(i, (q / s).to_bits() as u64);
            }
        }
    }
    Ok(vec![
        Expected {
            tensor: "sums".into(),
            values: sums,
            tol: Tolerance::Close {
                atol: 1e-5,
                rtol: 1e-5,
            },
        },
        Expected {
            tensor: "centered".into(),
            values: centered,
            tol: Tolerance::Exact,
        },
        Expected {
            tensor: "deq".into(),
            values: deq,
            tol: Tolerance::Exact,
        },
    ])
}

/// tests/gluon/reductions.py (reductions whose combiners are compare-and-select or several
/// folds): per row of f32 x and i32 y, the maximum of x and its first position, the minimum
/// of y and its last position, the sum of x (f64, tolerance of an f32 sum of small integers:
/// exact), the maximum of y and the reverse running sums of y (`tails`). Exact.
fn combiner_reductions(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (x, y) = (tensor(plan, inputs, "x")?, tensor(plan, inputs, "y")?);
    if x.shape.len() != 2 || y.shape != x.shape || x.dtype != DType::F32 || y.dtype != DType::I32 {
        return Err("reductions takes f32 x and i32 y of one [rows, cols] shape".into());
    }
    let (rows, cols) = (x.shape[0], x.shape[1]);
    let mut out: Vec<HostTensor> = [
        ("vmax", DType::F32),
        ("imax", DType::I32),
        ("vmin", DType::I32),
        ("imin", DType::I32),
        ("sums", DType::F32),
        ("maxes", DType::I32),
    ]
    .iter()
    .map(|(n, d)| HostTensor::zeros(n, *d, vec![rows]))
    .collect();
    let mut tails = HostTensor::zeros("tails", DType::I32, x.shape.clone());
    for r in 0..rows {
        let xs: Vec<f32> = (0..cols)
            .map(|c| f32::from_bits(x.get_bits(r * cols + c) as u32))
            .collect();
        let ys: Vec<i32> = (0..cols)
            .map(|c| y.get_bits(r * cols + c) as u32 as i32)
            .collect();
        let mut tail = 0i32;
        for c in (0..cols).rev() {
            tail = tail.wrapping_add(ys[c as usize]);
            tails.set_bits(r * cols + c, tail as u32 as u64);
        }
        let vmax = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let imax = xs.iter().position(|&v| v == vmax).unwrap_or(0);
        let vmin = ys.iter().copied().min().unwrap_or(0);
        let imin = ys.iter().rposition(|&v| v == vmin).unwrap_or(0);
        let vals = [
            vmax as f64,
            imax as f64,
            vmin as f64,
            imin as f64,
            xs.iter().map(|&v| v as f64).sum::<f64>(),
            ys.iter().copied().max().unwrap_or(0) as f64,
        ];
        for (t, v) in out.iter_mut().zip(vals) {
            let bits = if t.dtype == DType::F32 {
                (v as f32).to_bits()
            } else {
                v as i32 as u32
            };
            t.set_bits(r, bits as u64);
        }
    }
    out.push(tails);
    Ok(out
        .into_iter()
        .map(|t| Expected {
            tensor: t.name.clone(),
            values: t,
            tol: Tolerance::Exact,
        })
        .collect())
}

/// tests/gluon/claims.py: every program compare-and-swaps 0 -> its id into every flag and
/// counts its successes per slot, so counts[k] = 1 where flags[k] started at 0 (exactly one
/// claim of a free slot succeeds, in any order), else 0. Exact.
fn claims(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let flags = tensor(plan, inputs, "flags")?;
    if flags.dtype != DType::I32 {
        return Err("claims takes i32 flags".into());
    }
    let mut counts = HostTensor::zeros("counts", DType::I32, flags.shape.clone());
    for k in 0..flags.numel() {
        counts.set_bits(k, u64::from(flags.get_bits(k) as u32 == 0));
    }
    Ok(vec![Expected {
        tensor: "counts".into(),
        values: counts,
        tol: Tolerance::Exact,
    }])
}

/// kernels/tiles/scan.tile: per row of x, the running sum and the running maximum. Exact.
fn scan(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    if x.shape.len() != 2 || x.dtype != DType::I32 {
        return Err("scan takes an i32 [rows, cols] input".into());
    }
    let (rows, cols) = (x.shape[0], x.shape[1]);
    let mut sums = HostTensor::zeros("sums", DType::I32, x.shape.clone());
    let mut maxes = HostTensor::zeros("maxes", DType::I32, x.shape.clone());
    for r in 0..rows {
        let (mut s, mut m) = (0i32, i32::MIN);
        for c in 0..cols {
            let v = x.get_bits(r * cols + c) as u32 as i32;
            s = s.wrapping_add(v);
            m = m.max(v);
            sums.set_bits(r * cols + c, s as u32 as u64);
            maxes.set_bits(r * cols + c, m as u32 as u64);
        }
    }
    let exact = |t: &str, v: HostTensor| Expected {
        tensor: t.into(),
        values: v,
        tol: Tolerance::Exact,
    };
    Ok(vec![exact("sums", sums), exact("maxes", maxes)])
}

/// kernels/tiles/atomics.tile: over the first `n` values, the count, the sum and the maximum
/// of the values in each bin `x % BINS` (maxima start at -1). Exact: the sums are of integers
/// far below 2^24.
fn atomics(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let hist = tensor(plan, inputs, "hist")?;
    let n = int_arg(plan, "n")?.max(0) as u64;
    let bins = hist.numel();
    let mut h = HostTensor::zeros("hist", DType::I32, vec![bins]);
    let mut s = HostTensor::zeros("sums", DType::F32, vec![bins]);
    let mut m = HostTensor::zeros("maxes", DType::I32, vec![bins]);
    let (mut count, mut sum, mut max) = (
        vec![0i64; bins as usize],
        vec![0f64; bins as usize],
        vec![-1i64; bins as usize],
    );
    for i in 0..n.min(x.numel()) {
        let v = x.get_bits(i) as u32 as i32 as i64;
        let b = v.rem_euclid(bins as i64) as usize;
        count[b] += 1;
        sum[b] += v as f64;
        max[b] = max[b].max(v);
    }
    for b in 0..bins {
        h.set_bits(b, count[b as usize] as u32 as u64);
        put(&mut s, b, sum[b as usize])?;
        m.set_bits(b, max[b as usize] as i32 as u32 as u64);
    }
    let exact = |t: &str, v: HostTensor| Expected {
        tensor: t.into(),
        values: v,
        tol: Tolerance::Exact,
    };
    Ok(vec![exact("hist", h), exact("sums", s), exact("maxes", m)])
}

/// kernels/tiles/cp_async.tile: c = a + b over the [n_rows, n_cols] f32 inputs (one f32
/// addition per element), and maxes[r] = the largest element of row r of c for r < n_rows (the
/// entries past n_rows keep their initial values). Exact: a maximum does not depend on order.
fn cp_async(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (a, b) = (tensor(plan, inputs, "a")?, tensor(plan, inputs, "b")?);
    let maxes = tensor(plan, inputs, "maxes")?;
    if (a.dtype, b.dtype, maxes.dtype) != (DType::F32, DType::F32, DType::F32) || a.shape.len() != 2 {
        return Err("cp_async takes f32 [rows, cols] inputs a and b and f32 maxes".into());
    }
    let n_rows = int_arg(plan, "n_rows")? as u64;
    let n_cols = int_arg(plan, "n_cols")? as u64;
    if a.shape != b.shape || n_rows * n_cols > a.numel() || maxes.numel() < n_rows {
        return Err("cp_async: n_rows x n_cols exceeds the inputs, or maxes is short".into());
    }
    let f = |t: &HostTensor, i: u64| f32::from_bits(t.get_bits(i) as u32);
    let mut c = HostTensor::zeros("c", DType::F32, a.shape.clone());
    let mut m = maxes.clone();
    for r in 0..n_rows {
        let mut best = f32::NEG_INFINITY;
        for j in 0..n_cols {
            let i = r * n_cols + j;
            let v = f(a, i) + f(b, i);
            c.set_bits(i, v.to_bits() as u64);
            best = best.max(v);
        }
        m.set_bits(r, best.to_bits() as u64);
    }
    let exact = |name: &str, values: HostTensor| Expected {
        tensor: name.into(),
        values,
        tol: Tolerance::Exact,
    };
    Ok(vec![exact("c", c), exact("maxes", m)])
}

/// kernels/tiles/while_loop.tile: program p adds the sum of n, 3n, 9n, ... below `limit`
/// (n = p + 1) to its slice of x. Exact.
fn while_loop(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let limit = int_arg(plan, "limit")?;
    let programs = plan.grid[0].max(1) as u64;
    let per = x.numel() / programs;
    let mut out = HostTensor::zeros("out", DType::I32, x.shape.clone());
    for p in 0..programs {
        let (mut n, mut total) = (p as i64 + 1, 0i64);
        while n < limit {
            total += n;
            n *= 3;
        }
        for i in p * per..(p + 1) * per {
            let v = x.get_bits(i) as u32 as i32 as i64 + total;
            out.set_bits(i, v as i32 as u32 as u64);
        }
    }
    Ok(vec![Expected {
        tensor: "out".into(),
        values: out,
        tol: Tolerance::Exact,
    }])
}

/// kernels/tiles/int_ops.tile: x as uint32; x / 7, x % 1000, x >> 3, x < 2000000000,
/// min(x, 3000000000), x >> 31, each stored as its low 32 bits. Exact.
fn int_ops(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    if x.dtype != DType::I32 {
        return Err("int_ops takes an i32 input".into());
    }
    let n = x.numel();
    let mut out = HostTensor::zeros("out", DType::I32, vec![6, n]);
    for i in 0..n {
        let u = x.get_bits(i) as u32;
        let r = [
            u / 7,
            u % 1000,
            u >> 3,
            (u < 2_000_000_000) as u32,
            u.min(3_000_000_000),
            u >> 31,
        ];
        for (k, v) in r.iter().enumerate() {
            out.set_bits(k as u64 * n + i, *v as u64);
        }
    }
    Ok(vec![Expected {
        tensor: "out".into(),
        values: out,
        tol: Tolerance::Exact,
    }])
}

/// tests/gluon/bit_tricks.py's inline-PTX helpers, each from its instruction's definition in
/// the PTX ISA (written here, not taken from bwsim's interpreter): `prmt` with selector
/// 0x0123 reverses the bytes; `lop3` with table 0xE8 is the bitwise majority; `shf.l.wrap` of
/// {x, x} by 13 rotates left; `bfe.s32 x, 5, 7` is bits 5..11 sign-extended and `bfi` puts the
/// low 8 bits of that into bits 20..27 of x; `cvt.rn.f16x2.f32 d, a, b` is f16(a) in the high
/// half, f16(b) in the low; `ex2.approx.ftz` of y * 50 is 2^x (bwsim gives the correctly rounded
/// value: here f64 exp2 rounded to f32, so within one f32 rounding, with subnormal results
/// flushed to +0); `setp`/`selp` give y where y > 0, else -1 for odd x and 0 for even;
/// `add.rn.f16x2` adds f16(y) and f16(f16(y) * 3) with one rounding; `mul.wide.s32` is x * x
/// in 64 bits.
fn bit_tricks(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let y = tensor(plan, inputs, "y")?;
    if x.dtype != DType::I32 || y.dtype != DType::F32 {
        return Err("bit_tricks takes an i32 x and an f32 y".into());
    }
    let n = x.numel();
    let mut out = HostTensor::zeros("out", DType::I32, vec![5, n]);
    let mut f = HostTensor::zeros("f", DType::F32, vec![2, n]);
    let mut h = HostTensor::zeros("h", DType::F16, vec![n]);
    let mut w = HostTensor::zeros("w", DType::I64, vec![n]);
    for i in 0..n {
        let u = x.get_bits(i) as u32;
        let yv = f32::from_bits(y.get_bits(i) as u32);
        let swapped = u.swap_bytes();
        let rot = u.rotate_left(13);
        let major = (u & swapped) | (u & rot) | (swapped & rot);
        let field = (((u >> 5) & 0x7f) as i32) << 25 >> 25;
        let inserted = (u & !(0xff << 20)) | ((field as u32 & 0xff) << 20);
        let hi = half::f16::from_f32(yv).to_bits() as u32;
        let lo = half::f16::from_f32(yv * -0.5).to_bits() as u32;
        for (k, v) in [swapped, major, rot, inserted, hi << 16 | lo].iter().enumerate() {
            out.set_bits(k as u64 * n + i, *v as u64);
        }
        let e = ((yv * 50.0) as f64).exp2() as f32;
        let e = if e.is_subnormal() { 0.0 } else { e };
        f.set_bits(i, e.to_bits() as u64);
        let sel = if yv > 0.0 {
            yv
        } else if u & 1 == 1 {
            -1.0
        } else {
            0.0
        };
        f.set_bits(n + i, sel.to_bits() as u64);
        let a = half::f16::from_f32(yv);
        let b = half::f16::from_f64(a.to_f64() * 3.0);
        h.set_bits(i, half::f16::from_f64(a.to_f64() + b.to_f64()).to_bits() as u64);
        let xi = u as i32 as i64;
        w.set_bits(i, (xi * xi) as u64);
    }
    Ok(vec![
        Expected {
            tensor: "out".into(),
            values: out,
            tol: Tolerance::Exact,
        },
        Expected {
            tensor: "f".into(),
            values: f,
            tol: Tolerance::Close {
                atol: 0.0,
                rtol: f32::EPSILON as f64,
            },
        },
        Expected {
            tensor: "h".into(),
            values: h,
            tol: Tolerance::Exact,
        },
        Expected {
            tensor: "w".into(),
            values: w,
            tol: Tolerance::Exact,
        },
    ])
}

/// The functions and reductions of kernels/tiles/tile_math.tile, from their textbook
/// definitions in f64 (f32 results rounded once; the integer tile is `8x` truncated toward
/// zero). Float tolerance: one f32 rounding of each function, and the order of the row sums
/// and products; integer results exact.
fn tile_math(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    if x.dtype != DType::F32 || x.shape.len() != 2 {
        return Err("tile_math takes an f32 [R, C] input".into());
    }
    let (rows, cols) = (x.shape[0], x.shape[1]);
    let n = rows * cols;
    let xs: Vec<f64> = (0..n).map(|i| val(x, i)).collect();
    let fns: [fn(f64) -> f64; 10] = [
        f64::exp,
        f64::exp2,
        |v| (v.abs() + 0.5).ln(),
        |v| (v.abs() + 0.5).log2(),
        |v| (v.abs() + 0.5).sqrt(),
        |v| 1.0 / (v.abs() + 0.5).sqrt(),
        f64::sin,
        f64::cos,
        |v| ((v * 3.0) as f32 as f64).floor(),
        |v| ((v * 3.0) as f32 as f64).ceil(),
    ];
    let mut y = HostTensor::zeros("y", DType::F32, vec![10, rows, cols]);
    for (f, func) in fns.iter().enumerate() {
        for i in 0..n {
            put(&mut y, f as u64 * n + i, func(xs[i as usize]))?;
        }
    }
    let mut r = HostTensor::zeros("r", DType::F32, vec![4, rows]);
    let mut q = HostTensor::zeros("q", DType::I32, vec![9, rows]);
    for row in 0..rows {
        let v = &xs[(row * cols) as usize..((row + 1) * cols) as usize];
        let a: Vec<f64> = v.iter().map(|x| (x.abs() + 0.5) as f32 as f64).collect();
        put(&mut r, row, v.iter().copied().fold(f64::NEG_INFINITY, f64::max))?;
        put(
            &mut r,
            rows + row,
            v.iter().copied().fold(f64::INFINITY, f64::min),
        )?;
        put(&mut r, 2 * rows + row, v.iter().sum())?;
        put(&mut r, 3 * rows + row, a.iter().product())?;
        let iv: Vec<i32> = v.iter().map(|x| (x * 8.0) as f32 as i32).collect();
        // The first position of the extreme value (ties: the smaller position).
        let first = |better: &dyn Fn(f64, f64) -> bool, vals: &[f64]| -> i32 {
            let mut b = 0;
            for k in 1..vals.len() {
                if better(vals[k], vals[b]) {
                    b = k;
                }
            }
            b as i32
        };
        let trunc: Vec<f64> = v.iter().map(|x| (*x as f32) as i32 as f64).collect();
        let folds = [
            iv.iter().copied().max().unwrap_or(0),
            iv.iter().copied().min().unwrap_or(0),
            iv.iter().fold(0i32, |s, &b| s.wrapping_add(b)),
            iv.iter().fold(-1i32, |s, &b| s & b),
            iv.iter().fold(0i32, |s, &b| s | b),
            iv.iter().fold(0i32, |s, &b| s ^ b),
            first(&|a, b| a > b, v),
            first(&|a, b| a < b, v),
            first(&|a, b| a > b, &trunc),
        ];
        for (k, f) in folds.iter().enumerate() {
            q.set_bits(k as u64 * rows + row, *f as u32 as u64);
        }
    }
    let close = Tolerance::Close {
        atol: 1e-6,
        rtol: 1e-6,
    };
    Ok(vec![
        Expected {
            tensor: "y".into(),
            values: y,
            tol: close,
        },
        Expected {
            tensor: "r".into(),
            values: r,
            tol: close,
        },
        Expected {
            tensor: "q".into(),
            values: q,
            tol: Tolerance::Exact,
        },
    ])
}

/// out[i, j] = input[x[i], y + j], zero where the row or column is out of range (seed 09).
fn gather(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let input = tensor(plan, inputs, "input")?;
    let xo = tensor(plan, inputs, "x_offsets")?;
    let out0 = tensor(plan, inputs, "out")?;
    let y = int_arg(plan, "y_offset")?;
    let (xmax, ymax) = (input.shape[0] as i64, input.shape[1] as i64);
    let (bx, by) = (out0.shape[0], out0.shape[1]);
    let mut out = HostTensor::zeros("out", out0.dtype, out0.shape.clone());
    for i in 0..bx {
        let r = val(xo, i) as i64;
        for j in 0..by {
            let c = y + j as i64;
            let bits = if (0..xmax).contains(&r) && (0..ymax).contains(&c) {
                input.get_bits((r * ymax + c) as u64)
            } else {
                0
            };
            out.set_bits(i * by + j, bits);
        }
    }
    Ok(vec![Expected {
        tensor: "out".into(),
        values: out,
        tol: Tolerance::Exact,
    }])
}

/// input[x[i], y + j] = src[i, j] for rows and columns in range (seed 09).
fn scatter(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let input = tensor(plan, inputs, "input")?;
    let xo = tensor(plan, inputs, "x_offsets")?;
    let src = tensor(plan, inputs, "src")?;
    let y = int_arg(plan, "y_offset")?;
    let (xmax, ymax) = (input.shape[0] as i64, input.shape[1] as i64);
    let (bx, by) = (src.shape[0], src.shape[1]);
    let mut out = input.clone();
    for i in 0..bx {
        let r = val(xo, i) as i64;
        if !(0..xmax).contains(&r) {
            continue;
        }
        for j in 0..by {
            let c = y + j as i64;
            if (0..ymax).contains(&c) {
                out.set_bits((r * ymax + c) as u64, src.get_bits(i * by + j));
            }
        }
    }
    Ok(vec![Expected {
        tensor: "input".into(),
        values: out,
        tol: Tolerance::Exact,
    }])
}

/// Row-major f64 matmul of `a` [M, K] and `b` [K, N]: each output element is
/// `sum over k in order of a[i, k] * b[k, j]`, products with a zero `a[i, k]` skipped.
fn mm(a: &HostTensor, b: &HostTensor) -> Vec<f64> {
    let (m, k, n) = (a.shape[0] as usize, a.shape[1] as usize, b.shape[1] as usize);
    let av: Vec<f64> = (0..a.numel()).map(|i| val(a, i)).collect();
    let bv: Vec<f64> = (0..b.numel()).map(|i| val(b, i)).collect();
    mm_values(&av, &bv, m, k, n)
}

/// Rows of A and columns of the output computed together: a block of `MM_ROWS` output rows
/// by `MM_COLS` columns stays in the L1 cache while K is walked, so B is read from memory
/// once per block of rows instead of once per row, and four K indices at a time are added
/// into each output element read once. Every output element still adds its products one by
/// one in K order: the same roundings, so the same bits, as the plain loop.
const MM_ROWS: usize = 8;
const MM_COLS: usize = 128;

/// [`mm`] of decoded values, compiled also for wider vector units and run on the widest the
/// CPU has (`pulp`'s run-time dispatch): each element's additions are the same operations
/// in the same order in any lane width, so the same bits.
fn mm_values(av: &[f64], bv: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    /// The product as one operation for `pulp` (a closure would be compiled once, outside
    /// every vector-unit variant).
    struct Mm<'a> {
        av: &'a [f64],
        bv: &'a [f64],
        mkn: (usize, usize, usize),
    }
    impl pulp::WithSimd for Mm<'_> {
        type Output = Vec<f64>;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) -> Vec<f64> {
            let (m, k, n) = self.mkn;
            mm_blocked(self.av, self.bv, m, k, n)
        }
    }
    pulp::Arch::new().dispatch(Mm {
        av,
        bv,
        mkn: (m, k, n),
    })
}

/// The blocked loops of [`mm_values`].
#[inline(always)]
fn mm_blocked(av: &[f64], bv: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i0 in (0..m).step_by(MM_ROWS) {
        let rows = i0..(i0 + MM_ROWS).min(m);
        for j0 in (0..n).step_by(MM_COLS) {
            let cols = j0..(j0 + MM_COLS).min(n);
            let brow = |kk: usize| &bv[kk * n + cols.start..kk * n + cols.end];
            let mut kk = 0;
            while kk < k {
                let group = if kk + 4 <= k { 4 } else { 1 };
                let b: [&[f64]; 4] = std::array::from_fn(|u| brow((kk + u).min(k - 1)));
                for i in rows.clone() {
                    let x: [f64; 4] =
                        std::array::from_fn(|u| if u < group { av[i * k + kk + u] } else { 0.0 });
                    let out = &mut c[i * n + cols.start..i * n + cols.end];
                    if group == 4 && x.iter().all(|&x| x != 0.0) {
                        let terms = out.iter_mut().zip(b[0]).zip(b[1]).zip(b[2]).zip(b[3]);
                        for ((((o, y0), y1), y2), y3) in terms {
                            *o = (((*o + x[0] * y0) + x[1] * y1) + x[2] * y2) + x[3] * y3;
                        }
                    } else {
                        for (&x, b) in x.iter().zip(b).take(group) {
                            if x != 0.0 {
                                for (o, y) in out.iter_mut().zip(b) {
                                    *o += x * y;
                                }
                            }
                        }
                    }
                }
                kk += group;
            }
        }
    }
    c
}

/// Tolerance of the seeds' matmul tests: `assert_close(A @ B, C, rtol=1e-3, atol=1e-1)` for
/// f16 outputs of K up to 2000.
const MATMUL_TOL: Tolerance = Tolerance::Close {
    atol: 1e-1,
    rtol: 1e-3,
};

/// C = A @ B, f16 out (tutorials 07 and 08).
fn matmul(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (a, b) = (tensor(plan, inputs, "a")?, tensor(plan, inputs, "b")?);
    let c0 = tensor(plan, inputs, "c")?;
    let c = mm(a, b);
    let mut out = HostTensor::zeros("c", c0.dtype, c0.shape.clone());
    for (i, v) in c.iter().enumerate() {
        put(&mut out, i as u64, *v)?;
    }
    Ok(vec![Expected {
        tensor: "c".into(),
        values: out,
        tol: MATMUL_TOL,
    }])
}

/// Every element of `t` as f64, in order.
fn decoded(t: &HostTensor) -> Vec<f64> {
    (0..t.numel()).map(|i| val(t, i)).collect()
}

/// y[n, h, w, co] = sum over (r, s, c) of x[n, h + r - PAD, w + s - PAD, c] * wt[co, (r S + s) C + c],
/// NHWC, stride 1, zeros outside the image, accumulated in f64 and compared with the matmul
/// tolerance. The filter is square (R = S, from wt's `R * S * C` columns) and the convolution
/// keeps the image's size (y's spatial shape is x's), so PAD = (R - 1) / 2.
fn conv2d(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (x, wt, y0) = (
        tensor(plan, inputs, "x")?,
        tensor(plan, inputs, "wt")?,
        tensor(plan, inputs, "y")?,
    );
    let [n, h, w, c] =
        <[u64; 4]>::try_from(x.shape.clone()).map_err(|_| "x must be [N, H, W, C]".to_string())?;
    let [co, k] =
        <[u64; 2]>::try_from(wt.shape.clone()).map_err(|_| "wt must be [Co, R * S * C]".to_string())?;
    if y0.shape != [n, h, w, co] {
        return Err(format!("y must be [N, H, W, Co] = {:?}", [n, h, w, co]).into());
    }
    let taps = k / c.max(1);
    let r = (1..=taps).find(|r| r * r == taps).filter(|_| k == taps * c);
    let Some(r) = r.filter(|r| r % 2 == 1) else {
        return Err(format!("wt's {k} columns are not R * R * {c} for an odd R").into());
    };
    let pad = (r - 1) / 2;
    // The operands decoded once (a debug build spends its time decoding otherwise).
    let (xv, wv) = (decoded(x), decoded(wt));
    let mut y = HostTensor::zeros("y", y0.dtype, y0.shape.clone());
    for (ni, hi, wi, oi) in (0..n)
        .flat_map(|a| (0..h).flat_map(move |b| (0..w).flat_map(move |d| (0..co).map(move |e| (a, b, d, e)))))
    {
        let mut acc = 0.0f64;
        for (ri, si) in (0..r).flat_map(|a| (0..r).map(move |b| (a, b))) {
            let (ih, iw) = ((hi + ri) as i64 - pad as i64, (wi + si) as i64 - pad as i64);
            if ih < 0 || iw < 0 || ih >= h as i64 || iw >= w as i64 {
                continue;
            }
            let xb = (((ni * h + ih as u64) * w + iw as u64) * c) as usize;
            let wb = (oi * k + (ri * r + si) * c) as usize;
            let c = c as usize;
            for (xi, wi) in xv[xb..xb + c].iter().zip(&wv[wb..wb + c]) {
                acc += xi * wi;
            }
        }
        put(&mut y, ((ni * h + hi) * w + wi) * co + oi, acc)?;
    }
    Ok(vec![Expected {
        tensor: "y".into(),
        values: y,
        tol: MATMUL_TOL,
    }])
}

/// D = A @ B^T + C with B stored [N, K] (`wgmma_dtypes`, `tcgen05_dtypes`).
fn wgmma_dtypes(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    mma_plus_c(plan, inputs, Some(true))
}

/// D = A @ B + C of the Gluon fixtures `wgmma_regs_kernel` (tests/gluon/wgmma_regs.py): B is
/// stored [K, N], or [N, K] when the kernel reads it transposed; the fixtures keep N != K so
/// that B's shape says which.
fn wgmma_regs(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    mma_plus_c(plan, inputs, None)
}

/// D = A @ B + C (`b_nk`: B stored [N, K]; `None`: decided by B's shape), the PTX ISA's
/// `wgmma.mma_async` semantics, in f64 and rounded once to the accumulator type. Integers
/// (s8/u8 into s32) are exact, wrapped to 32 bits as the s32 accumulator wraps. Float
/// accumulation order and precision are not specified (PTX.md section 10): the tolerance
/// allows each K step of 32 bytes one rounding of a partial sum of at most a few hundred at the
/// accumulator's precision (f16: 11 bits; f32: the 14 bits Hopper keeps for fp8 operands, 24
/// otherwise), for operands of magnitude about 1 and K up to a few hundred.
fn mma_plus_c(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
    b_nk: Option<bool>,
) -> Result<Vec<Expected>, RefError> {
    let (a, b, c) = (
        tensor(plan, inputs, "a")?,
        tensor(plan, inputs, "b")?,
        tensor(plan, inputs, "c")?,
    );
    let (m, k) = (a.shape[0], a.shape[1]);
    let b_nk = match b_nk {
        Some(t) => t,
        None if b.shape[0] == k && b.shape[1] != k => false,
        None if b.shape[1] == k && b.shape[0] != k => true,
        None => return Err(format!("B {:?} with K = {k}: its orientation is ambiguous", b.shape).into()),
    };
    let n = if b_nk { b.shape[0] } else { b.shape[1] };
    let bk = if b_nk { b.shape[1] } else { b.shape[0] };
    if bk != k || c.shape != [m, n] {
        return Err(format!(
            "a {:?}, b {:?}, c {:?} do not form D = A @ B + C",
            a.shape, b.shape, c.shape
        )
        .into());
    }
    let mut d = HostTensor::zeros("d", c.dtype, c.shape.clone());
    for i in 0..m {
        for j in 0..n {
            let mut s = val(c, i * n + j);
            for kk in 0..k {
                let bv = if b_nk {
                    val(b, j * k + kk)
                } else {
                    val(b, kk * n + j)
                };
                s += val(a, i * k + kk) * bv;
            }
            if c.dtype == DType::I32 {
                d.set_bits(i * n + j, (s as i64) as u32 as u64);
            } else {
                put(&mut d, i * n + j, s)?;
            }
        }
    }
    let narrow = a.dtype.bits() == 8;
    let tol = match c.dtype {
        DType::I32 => Tolerance::Exact,
        DType::F16 => Tolerance::Close {
            atol: 0.5,
            rtol: 1e-2,
        },
        _ if narrow => Tolerance::Close {
            atol: 0.1,
            rtol: 1e-2,
        },
        _ => Tolerance::Close {
            atol: 1e-2,
            rtol: 1e-2,
        },
    };
    Ok(vec![Expected {
        tensor: "d".into(),
        values: d,
        tol,
    }])
}

/// D = A @ B + C in f32 (seed 10 tolerance: atol 5e-3, rtol 1e-2).
fn matmul_accumulate(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (a, b, c) = (
        tensor(plan, inputs, "a")?,
        tensor(plan, inputs, "b")?,
        tensor(plan, inputs, "c")?,
    );
    let ab = mm(a, b);
    let mut d = HostTensor::zeros("d", DType::F32, c.shape.clone());
    for (i, v) in ab.iter().enumerate() {
        put(&mut d, i as u64, v + val(c, i as u64))?;
    }
    Ok(vec![Expected {
        tensor: "d".into(),
        values: d,
        tol: Tolerance::Close {
            atol: 5e-3,
            rtol: 1e-2,
        },
    }])
}

/// out[scatter[i], :] = X[gather[i], :] @ W, bf16 (seed 09 tolerance atol = rtol = 1e-3 is for
/// its torch reference in bf16; against an exact f64 product the bf16 rounding of the output
/// needs rtol 1e-2).
fn fused_gather_scatter(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let w = tensor(plan, inputs, "w")?;
    let g = tensor(plan, inputs, "x_gather_indx")?;
    let s = tensor(plan, inputs, "out_scatter_indx")?;
    let out0 = tensor(plan, inputs, "out")?;
    let (m, k) = (x.shape[0], x.shape[1]);
    let row = |t: &HostTensor, i: u64| -> Result<u64, RefError> {
        let r = val(t, i);
        if r < 0.0 || r >= m as f64 {
            return Err(RefError::Index {
                index: r,
                tensor: t.name.clone(),
                len: m,
            });
        }
        Ok(r as u64)
    };
    let mut xg = HostTensor::zeros("xg", x.dtype, x.shape.clone());
    for i in 0..m {
        let r = row(g, i)?;
        for j in 0..k {
            xg.set_bits(i * k + j, x.get_bits(r * k + j));
        }
    }
    let prod = mm(&xg, w);
    let n = w.shape[1];
    let mut out = HostTensor::zeros("out", out0.dtype, out0.shape.clone());
    for i in 0..m {
        let r = row(s, i)?;
        for j in 0..n {
            put(&mut out, r * n + j, prod[(i * n + j) as usize])?;
        }
    }
    Ok(vec![Expected {
        tensor: "out".into(),
        values: out,
        tol: Tolerance::Close {
            atol: 1e-1,
            rtol: 1e-2,
        },
    }])
}

/// A block scale factor: element `i` of `t`, a ue8m0/ue4m3 tensor or the bytes of one (Gluon
/// carries ue8m0 factors as uint8, TTGIR as i8), decoded as `format`.
fn scale_factor(t: &HostTensor, i: u64, format: DType) -> f64 {
    value(format, t.get_bits(i))
}

/// The factors of a block-scaled MMA operand: `t[row, kb]` at `row * stride_row + kb *
/// stride_k`, one factor per `vec` elements of K (OCP MX: ue8m0 per 32; nvfp4: ue4m3 per 16).
struct Scales<'a> {
    t: &'a HostTensor,
    format: DType,
    vec: u64,
    stride_row: u64,
    stride_k: u64,
}

impl Scales<'_> {
    /// Factors of `t` at `row * stride_row + (k / vec) * stride_k`: MX's ue8m0 (bytes) per 32
    /// elements of K, or nvfp4's ue4m3 (positive float8e4nv) per 16.
    fn of(t: &HostTensor, stride_row: u64, stride_k: u64) -> Scales<'_> {
        let (format, vec) = match t.dtype {
            DType::F8E4M3 | DType::UE4M3 => (DType::UE4M3, 16),
            _ => (DType::UE8M0, 32),
        };
        Scales {
            t,
            format,
            vec,
            stride_row,
            stride_k,
        }
    }

    fn at(&self, row: u64, k: u64) -> f64 {
        scale_factor(
            self.t,
            row * self.stride_row + (k / self.vec) * self.stride_k,
            self.format,
        )
    }
}

/// `D[i, j] = sum_k A[i, k] * B[j, k]` in f64 with A `[M, K]` and B `[N, K]` (both K-major),
/// each product multiplied by the factors of its row's and column's K block when scaled (the
/// block-scaled MMA's semantics: every operand element is dequantised by its block's factor).
fn scaled_dot_nt(a: &HostTensor, b: &HostTensor, scales: Option<(Scales, Scales)>) -> Vec<f64> {
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[0]);
    if k == 0 {
        return vec![0.0; (m * n) as usize];
    }
    // Each operand decoded once, with its factors applied: the products of small floats and
    // their factors are exact in f64, so the order of the multiplications does not matter.
    let decode = |t: &HostTensor, rows: u64, sf: Option<&Scales>| -> Vec<f64> {
        (0..rows)
            .flat_map(|r| (0..k).map(move |kk| (r, kk)))
            .map(|(r, kk)| val(t, r * k + kk) * sf.map_or(1.0, |s| s.at(r, kk)))
            .collect()
    };
    let (sa, sb) = match &scales {
        Some((x, y)) => (Some(x), Some(y)),
        None => (None, None),
    };
    let (da, db) = (decode(a, m, sa), decode(b, n, sb));
    let k = k as usize;
    let mut out = Vec::with_capacity((m * n) as usize);
    for ra in da.chunks_exact(k) {
        for rb in db.chunks_exact(k) {
            out.push(ra.iter().zip(rb).map(|(x, y)| x * y).sum());
        }
    }
    out
}

/// out = A @ B^T (B stored [N, K], K-major, as TIRx lays it out); for fp8/fp4 operands each
/// product is scaled by the ue8m0 factors of its row's and column's 32-element K block, as
/// tcgen05.mma.block_scale computes (seed TIRx page). Also `tcgen05_mma_tile` (f16, unscaled).
fn gemm_async(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (a, b) = (tensor(plan, inputs, "a")?, tensor(plan, inputs, "b")?);
    let scaled = matches!(a.dtype, DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1);
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[0]);
    if b.shape[1] != k {
        return Err(format!("a is [{m}, {k}] but b is {:?} (expected [N, {k}])", b.shape).into());
    }
    let kb = k.div_ceil(32);
    let scales = if scaled {
        let sf = |t| Scales {
            t,
            format: DType::UE8M0,
            vec: 32,
            stride_row: kb,
            stride_k: 1,
        };
        Some((sf(tensor(plan, inputs, "sfa")?), sf(tensor(plan, inputs, "sfb")?)))
    } else {
        None
    };
    let mut out = HostTensor::zeros("out", DType::F32, vec![m, n]);
    for (i, v) in scaled_dot_nt(a, b, scales).into_iter().enumerate() {
        put(&mut out, i as u64, v)?;
    }
    Ok(vec![Expected {
        tensor: "out".into(),
        values: out,
        tol: Tolerance::Close {
            atol: 1e-2,
            rtol: 1e-3,
        },
    }])
}

/// fp4 operands given as bytes (Gluon's uint8 packing): `[R, C]` bytes are the `[R, 2C]` e2m1
/// matrix whose element `2j` is the low nibble of byte `j`, `2j + 1` the high one (OCP MX).
/// Tutorial 11's packed-block factors, `[1, rows / 128, SCALE_K / 4, 2, 256]`, as row-major
/// `[rows, SCALE_K]`: each 512-byte block holds 128 rows by 4 K blocks, row `32 j + i` and K
/// block `c` at byte `16 i + 4 j + c` (the tutorial's relayout).
fn unpack_scale_blocks(t: &HostTensor, rows: u64) -> Result<HostTensor, String> {
    let [1, rep_m, rep_k, 2, 256] = t.shape[..] else {
        return Err(format!(
            "packed factors `{}` are {:?}, not [1, M / 128, SCALE_K / 4, 2, 256]",
            t.name, t.shape
        ));
    };
    if rep_m * 128 != rows {
        return Err(format!(
            "packed factors `{}` cover {} rows, not {rows}",
            t.name,
            rep_m * 128
        ));
    }
    let sk = rep_k * 4;
    let mut u = HostTensor::zeros(&t.name, t.dtype, vec![rows, sk]);
    for f in 0..t.numel() {
        let (block, within) = (f / 512, f % 512);
        let (rm, rk) = (block / rep_k, block % rep_k);
        let (i, j, c) = (within / 16, within / 4 % 4, within % 4);
        u.set_bits((rm * 128 + 32 * j + i) * sk + rk * 4 + c, t.get_bits(f));
    }
    Ok(u)
}

fn unpack_fp4(t: &HostTensor) -> HostTensor {
    let (r, c) = (t.shape[0], t.shape[1]);
    let mut u = HostTensor::zeros(&t.name, DType::F4E2M1, vec![r, 2 * c]);
    for i in 0..r {
        for j in 0..c {
            let byte = t.get_bits(i * c + j) & 0xff;
            u.set_bits(i * 2 * c + 2 * j, byte & 0xf);
            u.set_bits(i * 2 * c + 2 * j + 1, byte >> 4);
        }
    }
    u
}

/// Gluon tutorial 11's block-scaled matmul: C = (A * A_scale) @ (B * B_scale)^T with A [M, K]
/// and B [N, K] in fp8, or in fp4 given as bytes of two (mxfp4, nvfp4: [`unpack_fp4`]), and one
/// ue8m0 factor (given as its byte) per 32 elements of K (nvfp4: a ue4m3 factor, given as a
/// positive e4m3, per 16), the
/// factors of row r and K block kb at `r * scale_stride_m + kb * scale_stride_k`, C rounded to
/// its type. Tolerance: the tutorial's atol = rtol = 1e-3 is for an f16 C against an f32
/// reference; against the exact f64 sum, the f16 rounding of C (half an ulp, 2^-11 relative)
/// after the f32 accumulation needs rtol 2e-3, and sums that cancel need atol 1e-2.
fn mma_scaled(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let operand = |name| -> Result<HostTensor, RefError> {
        let t = tensor(plan, inputs, name)?;
        Ok(match t.dtype {
            DType::I8 | DType::U8 => unpack_fp4(t),
            _ => t.clone(),
        })
    };
    let (a, b, c0) = (operand("a")?, operand("b")?, tensor(plan, inputs, "c")?);
    let (a, b) = (&a, &b);
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[0]);
    if b.shape[1] != k || c0.shape != [m, n] {
        return Err(format!(
            "a is [{m}, {k}], b {:?}, c {:?} (expected [N, {k}] and [{m}, N])",
            b.shape, c0.shape
        )
        .into());
    }
    // The factors row-major with their strides: as launched with `scale_stride_m` and
    // `scale_stride_k` (tutorial 11's simple kernel), packed blocks unpacked, or a row-major
    // `[rows, SCALE_K]` tensor (the contiguous-factors kernel at K = BLOCK_K).
    let factors = |name: &str, rows: u64| -> Result<(HostTensor, u64, u64), RefError> {
        let t = tensor(plan, inputs, name)?;
        if t.shape.len() == 5 {
            let u = unpack_scale_blocks(t, rows)?;
            let sk = u.shape[1];
            return Ok((u, sk, 1));
        }
        if plan.args.iter().any(|(n, _)| n == "scale_stride_m") {
            let stride = |name| -> Result<u64, RefError> {
                u64::try_from(int_arg(plan, name)?)
                    .map_err(|_| RefError::from(format!("`{name}` is negative")))
            };
            return Ok((t.clone(), stride("scale_stride_m")?, stride("scale_stride_k")?));
        }
        match t.shape[..] {
            [r, sk] if r == rows => Ok((t.clone(), sk, 1)),
            _ => Err(format!("`{name}` is {:?}, not [{rows}, SCALE_K]", t.shape).into()),
        }
    };
    let (a_scale, a_row, a_k) = factors("a_scale", m)?;
    let (b_scale, b_row, b_k) = factors("b_scale", n)?;
    let scales = (Scales::of(&a_scale, a_row, a_k), Scales::of(&b_scale, b_row, b_k));
    let mut c = HostTensor::zeros("c", c0.dtype, c0.shape.clone());
    for (i, v) in scaled_dot_nt(a, b, Some(scales)).into_iter().enumerate() {
        put(&mut c, i as u64, v)?;
    }
    Ok(vec![Expected {
        tensor: "c".into(),
        values: c,
        tol: Tolerance::Close {
            atol: 1e-2,
            rtol: 2e-3,
        },
    }])
}

/// A copy kernel: `output` equals `input` bit for bit (`tma_roundtrip`).
fn identity(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let input = tensor(plan, inputs, "input")?;
    let out0 = tensor(plan, inputs, "output")?;
    if (input.dtype, &input.shape) != (out0.dtype, &out0.shape) {
        return Err("`input` and `output` differ in type or shape".into());
    }
    let mut v = input.clone();
    v.name = "output".into();
    Ok(vec![Expected {
        tensor: "output".into(),
        values: v,
        tol: Tolerance::Exact,
    }])
}

/// out = b: two copies into one buffer, `a` then `b`, the second issued once the first has
/// landed (cp_async_overlap's correct variant); exact.
fn second_copy(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (b, out) = (tensor(plan, inputs, "b")?, tensor(plan, inputs, "out")?);
    if (b.dtype, &b.shape) != (out.dtype, &out.shape) {
        return Err("`b` and `out` differ in type or shape".into());
    }
    let mut v = b.clone();
    v.name = "out".into();
    Ok(vec![Expected {
        tensor: "out".into(),
        values: v,
        tol: Tolerance::Exact,
    }])
}

fn float_arg(plan: &LaunchPlan, name: &str) -> Result<f32, RefError> {
    match plan.args.iter().find(|(n, _)| n == name) {
        Some((_, ArgValue::Float(x))) => Ok(*x as f32),
        _ => Err(format!("launch gives no float `{name}`").into()),
    }
}

fn f32_at(t: &HostTensor, i: u64) -> f32 {
    f32::from_bits(t.get_bits(i) as u32)
}

fn i32_at(t: &HostTensor, i: u64) -> i32 {
    t.get_bits(i) as u32 as i32
}

fn exact(tensor: &str, values: HostTensor) -> Expected {
    Expected {
        tensor: tensor.into(),
        values,
        tol: Tolerance::Exact,
    }
}

/// tests/gluon/3.8/clc_scale.py: y = alpha * x + 1 over the whole f32 tensor (every tile is
/// processed once, by its own program or by the one that cancelled it). The compiler may fuse
/// the multiply and the add into one `fma` (one rounding instead of two): within 1 ulp.
fn clc_scale(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let y0 = tensor(plan, inputs, "y")?;
    if x.dtype != DType::F32 || y0.shape != x.shape {
        return Err("clc_scale takes an f32 x and a y of its shape".into());
    }
    let alpha = float_arg(plan, "alpha")?;
    let mut y = HostTensor::zeros("y", DType::F32, x.shape.clone());
    for i in 0..x.numel() {
        put(&mut y, i, (f32_at(x, i) * alpha + 1.0) as f64)?;
    }
    Ok(vec![Expected {
        tensor: "y".into(),
        values: y,
        tol: Tolerance::Close {
            atol: 1e-6,
            rtol: 2.5e-7,
        },
    }])
}

/// tests/gluon/3.8/packed_arith.py, per row r of the [rows, cols] f32 tiles:
/// m = max_c (x * scale), rounded products; p = fma(x, scale, -m) (one rounding, `fma.rn.f32x2`);
/// out = acc * alpha + p, the product and the sum each rounded (`mul.f32x2`, `add.f32x2`). Exact.
fn packed_arith(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (x, acc) = (tensor(plan, inputs, "x")?, tensor(plan, inputs, "acc")?);
    let out0 = tensor(plan, inputs, "out")?;
    if x.dtype != DType::F32 || x.shape.len() != 2 || acc.shape != x.shape || out0.shape != x.shape {
        return Err("packed_arith takes f32 [rows, cols] x, acc and out".into());
    }
    let (scale, alpha) = (float_arg(plan, "scale")?, float_arg(plan, "alpha")?);
    let (rows, cols) = (x.shape[0], x.shape[1]);
    let mut out = HostTensor::zeros("out", DType::F32, x.shape.clone());
    for r in 0..rows {
        let m = (0..cols)
            .map(|c| f32_at(x, r * cols + c) * scale)
            .fold(f32::NEG_INFINITY, f32::max);
        for c in 0..cols {
            let i = r * cols + c;
            let p = f32_at(x, i).mul_add(scale, -m);
            let a = f32_at(acc, i) * alpha;
            out.set_bits(i, (a + p).to_bits() as u64);
        }
    }
    Ok(vec![exact("out", out)])
}

/// tests/gluon/3.9/inline_asm.py: out = x * scale + x, one `fma.rn.f32` per element. Exact.
fn inline_asm(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let out0 = tensor(plan, inputs, "out")?;
    if x.dtype != DType::F32 || out0.shape != x.shape {
        return Err("inline_asm takes an f32 x and an out of its shape".into());
    }
    let scale = float_arg(plan, "scale")?;
    let mut out = HostTensor::zeros("out", DType::F32, x.shape.clone());
    for i in 0..x.numel() {
        let v = f32_at(x, i);
        out.set_bits(i, v.mul_add(scale, v).to_bits() as u64);
    }
    Ok(vec![exact("out", out)])
}

/// tests/gluon/3.7/smem_gather_scatter.py over the [rows, cols] f32 x and a permutation `perm`
/// of the columns: gathered[r, c] = x[r, perm[c]] and scattered[r, perm[c]] = x[r, c]. Exact.
fn smem_gather_scatter(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (x, perm) = (tensor(plan, inputs, "x")?, tensor(plan, inputs, "perm")?);
    if x.dtype != DType::F32 || x.shape.len() != 2 || perm.numel() != x.shape[1] {
        return Err("smem_gather_scatter takes an f32 [rows, cols] x and a perm of cols entries".into());
    }
    let (rows, cols) = (x.shape[0], x.shape[1]);
    let p: Vec<u64> = (0..cols).map(|c| i32_at(perm, c) as u64).collect();
    let mut seen = vec![false; cols as usize];
    for &q in &p {
        if q >= cols || std::mem::replace(&mut seen[q as usize], true) {
            return Err("perm is not a permutation of the columns".into());
        }
    }
    let mut g = HostTensor::zeros("gathered", DType::F32, x.shape.clone());
    let mut s = HostTensor::zeros("scattered", DType::F32, x.shape.clone());
    for r in 0..rows {
        for c in 0..cols {
            g.set_bits(r * cols + c, x.get_bits(r * cols + p[c as usize]));
            s.set_bits(r * cols + p[c as usize], x.get_bits(r * cols + c));
        }
    }
    Ok(vec![exact("gathered", g), exact("scattered", s)])
}

/// tests/gluon/3.8/smem_histogram.py over the first n values of the non-negative int32 x and
/// `hist.numel()` bins (bin v % BINS): hist gains each bin's count, and maxes[b] becomes the
/// largest of its initial value and the bin's values. Exact.
fn smem_histogram(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let (hist0, maxes0) = (tensor(plan, inputs, "hist")?, tensor(plan, inputs, "maxes")?);
    let n = int_arg(plan, "n")?.max(0) as u64;
    let bins = hist0.numel();
    if maxes0.numel() != bins || bins == 0 {
        return Err("smem_histogram takes hist and maxes of BINS entries".into());
    }
    let (mut h, mut m) = (hist0.clone(), maxes0.clone());
    for i in 0..n.min(x.numel()) {
        let v = i32_at(x, i);
        if v < 0 {
            return Err("smem_histogram's values are non-negative".into());
        }
        let b = (v as u64) % bins;
        h.set_bits(b, i32_at(&h, b).wrapping_add(1) as u32 as u64);
        m.set_bits(b, i32_at(&m, b).max(v) as u32 as u64);
    }
    Ok(vec![exact("hist", h), exact("maxes", m)])
}

/// tests/gluon/3.8/tma_reduce.py: x holds S matrices of out's shape [R, C] stacked by rows; out
/// gains their sum. The additions happen in any order: exact for the integer-valued inputs of
/// the fixture, within f32 rounding of the sum otherwise.
fn tma_reduce(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (x, out0) = (tensor(plan, inputs, "x")?, tensor(plan, inputs, "out")?);
    if x.dtype != DType::F32 || out0.dtype != DType::F32 || x.shape.len() != 2 || out0.shape.len() != 2 {
        return Err("tma_reduce takes f32 [S * R, C] x and [R, C] out".into());
    }
    let (r, c) = (out0.shape[0], out0.shape[1]);
    if x.shape[1] != c || r == 0 || x.shape[0] % r != 0 {
        return Err("x is not S matrices of out's shape stacked by rows".into());
    }
    let mut out = HostTensor::zeros("out", DType::F32, out0.shape.clone());
    for i in 0..r * c {
        let sum: f64 = val(out0, i) + (0..x.shape[0] / r).map(|s| val(x, s * r * c + i)).sum::<f64>();
        put(&mut out, i, sum)?;
    }
    Ok(vec![Expected {
        tensor: "out".into(),
        values: out,
        tol: Tolerance::Close {
            atol: 0.0,
            rtol: 1e-6,
        },
    }])
}

/// tests/gluon/3.9/flag_handoff.py: the grid is pairs of programs over BLOCK = x's length / pairs
/// values each; for every value, data = 2 x + 1 (the producer's) and out = data + x (the
/// consumer's, after the flag). Exact (int32, wrapping).
fn flag_handoff(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let (data0, out0) = (tensor(plan, inputs, "data")?, tensor(plan, inputs, "out")?);
    let pairs = plan.grid[0] as u64 / 2;
    if pairs == 0 || x.numel() % pairs != 0 || data0.numel() != x.numel() || out0.numel() != x.numel() {
        return Err("flag_handoff takes pairs of programs over x, data and out of one length".into());
    }
    let (mut d, mut o) = (data0.clone(), out0.clone());
    for i in 0..x.numel() {
        let v = i32_at(x, i);
        let dv = v.wrapping_mul(2).wrapping_add(1);
        d.set_bits(i, dv as u32 as u64);
        o.set_bits(i, dv.wrapping_add(v) as u32 as u64);
    }
    Ok(vec![exact("data", d), exact("out", o)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocked matmul gives the plain row-by-row loop's bits: values whose sums round
    /// differently in another order (2^60 next to 1), zeros of both signs skipped, shapes
    /// that are not multiples of the blocks, small integers checked by hand.
    #[test]
    fn blocked_mm_is_the_plain_loop_bit_for_bit() {
        fn plain(av: &[f64], bv: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
            let mut c = vec![0.0; m * n];
            for i in 0..m {
                for kk in 0..k {
                    let x = av[i * k + kk];
                    if x == 0.0 {
                        continue;
                    }
                    for j in 0..n {
                        c[i * n + j] += x * bv[kk * n + j];
                    }
                }
            }
            c
        }
        // A fixed pseudo-random walk (an LCG) over values with wide exponents and zeros.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let r = state >> 33;
            match r % 7 {
                0 => 0.0,
                1 => -0.0,
                2 => 2f64.powi(60) * if r & 8 == 0 { 1.0 } else { -1.0 },
                _ => (r % 2001) as f64 / 7.0 - 140.0,
            }
        };
        for (m, k, n) in [(19, 37, 261), (8, 3, 128), (1, 1, 1), (9, 64, 130)] {
            let av: Vec<f64> = (0..m * k).map(|_| next()).collect();
            let bv: Vec<f64> = (0..k * n).map(|_| next()).collect();
            let (blocked, reference) = (mm_values(&av, &bv, m, k, n), plain(&av, &bv, m, k, n));
            assert!(blocked
                .iter()
                .zip(&reference)
                .all(|(x, y)| x.to_bits() == y.to_bits()));
        }
        // [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]].
        assert_eq!(
            mm_values(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], 2, 2, 2),
            [19.0, 22.0, 43.0, 50.0]
        );
    }

    /// Hand-computed code points of each format (OCP MX spec tables).
    #[test]
    fn decoders_match_hand_computed_values() {
        let cases: &[(DType, u64, f64)] = &[
            (DType::F8E4M3, 0x38, 1.0),
            (DType::F8E4M3, 0x7e, 448.0),
            (DType::F8E4M3, 0x01, 2f64.powi(-9)),
            (DType::F8E4M3, 0xc0, -2.0),
            (DType::F8E5M2, 0x3c, 1.0),
            (DType::F8E5M2, 0x7b, 57344.0),
            (DType::F8E5M2, 0x01, 2f64.powi(-16)),
            (DType::F4E2M1, 0x1, 0.5),
            (DType::F4E2M1, 0x3, 1.5),
            (DType::F4E2M1, 0x7, 6.0),
            (DType::F4E2M1, 0xd, -3.0),
            (DType::UE8M0, 127, 1.0),
            (DType::UE8M0, 130, 8.0),
            (DType::UE8M0, 124, 0.125),
            (DType::UE4M3, 0x38, 1.0),
            (DType::BF16, 0x3f80, 1.0),
            (DType::F16, 0x3c00, 1.0),
            (DType::I32, 0xffff_ffff, -1.0),
        ];
        for &(d, bits, want) in cases {
            assert_eq!(value(d, bits), want, "{d} {bits:#x}");
        }
        assert!(value(DType::F8E4M3, 0x7f).is_nan() && value(DType::F8E4M3, 0xff).is_nan());
        assert_eq!(value(DType::F8E5M2, 0x7c), f64::INFINITY);
        assert!(value(DType::F8E5M2, 0x7d).is_nan() && value(DType::UE8M0, 0xff).is_nan());
    }

    /// The reference's decoders and the IR's (used by the simulator) are two implementations
    /// of the same formats: they agree on every code point.
    #[test]
    fn decoders_agree_with_the_ir_on_every_code_point() {
        for d in [
            DType::F8E4M3,
            DType::F8E5M2,
            DType::F4E2M1,
            DType::UE8M0,
            DType::UE4M3,
        ] {
            let n = if d == DType::F4E2M1 {
                16
            } else if d == DType::UE4M3 {
                128
            } else {
                256
            };
            for bits in 0..n {
                let (a, b) = (value(d, bits), bwsim_isa::numeric::decode(d, bits));
                assert!(a == b || (a.is_nan() && b.is_nan()), "{d} {bits:#x}: {a} vs {b}");
            }
        }
    }

    /// Gluon's fp4 bytes: the even element in the low nibble (0xD = -3.0), the odd one in the
    /// high nibble (0x7 = 6.0).
    #[test]
    fn fp4_bytes_unpack_low_nibble_first() {
        let mut t = HostTensor::zeros("a", DType::I8, vec![1, 2]);
        t.set_bits(0, 0x7d);
        t.set_bits(1, 0x21);
        let u = unpack_fp4(&t);
        assert_eq!(u.shape, vec![1, 4]);
        let v: Vec<f64> = (0..4).map(|i| val(&u, i)).collect();
        assert_eq!(v, vec![-3.0, 6.0, 0.5, 1.0]);
    }

    #[test]
    fn compare_counts_mismatches_with_tolerance() {
        let mut want = HostTensor::zeros("c", DType::F32, vec![2, 2]);
        let mut got = want.clone();
        put(&mut want, 3, 1.0).expect("f32");
        put(&mut got, 3, 1.05).expect("f32");
        let e = Expected {
            tensor: "c".into(),
            values: want.clone(),
            tol: Tolerance::Close { atol: 0.0, rtol: 0.1 },
        };
        assert!(compare(&got, &e).passed());
        let e = Expected {
            tol: Tolerance::Exact,
            ..e
        };
        let c = compare(&got, &e);
        assert_eq!((c.mismatches, c.first_mismatch.map(|m| m.0)), (1, Some(3)));
        assert!((c.max_abs_err - 0.05).abs() < 1e-6);
    }
}
