//! CPU references of the attention kernels: row softmax and attention forward (plain and
//! causal, with the log2-sum-exp2 of each row), in f64.

use super::{int_arg, put, tensor, tensors, val, Expected, RefError};
use bwsim_isa::launch::{ArgValue, HostTensor, LaunchPlan};
use bwsim_isa::DType;

/// out[r, :] = exp(x[r, :] - max(x[r, :])) / sum(exp(x[r, :] - max(x[r, :]))) for every row of
/// the f32 input, computed in f64. Tolerance: the hardware's `ex2.approx.f32` and
/// `div.full.f32` are each within 2 ulp (PTX ISA), and the row sum's order is unspecified.
pub(super) fn softmax(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
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
    Ok(vec![Expected::close("out", o, 1e-7, 1e-5)])
}

/// Attention forward: for each batch-head b (grid y) and query row i,
/// o[i] = sum_j softmax_j(s_ij) v[j] with s_ij = q[i] . k[j] and the softmax taken in base 2
/// with the launch's `qk_scale` (sm_scale * log2(e)): p_ij = 2^(qk_scale * s_ij - max_j), in f64.
/// Tolerance: the kernel rounds P to f16 before P @ V (relative 2^-11 per weight) and O to f16.
/// With `causal`, query i attends to keys j <= i only (attention_f32x2_causal_kernel).
pub(super) fn attention(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
    causal: bool,
) -> Result<Vec<Expected>, RefError> {
    let [q, k, v] = tensors(plan, inputs, ["q", "k", "v"])?;
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
    Ok(vec![Expected::close("o", o, 4e-3, 1e-2)])
}

/// One query row of attention in f64: row `i` of the batch-head whose rows start at `row0`
/// against its first `keys` keys: s_j = scale * q_i . k_j, p_j = 2^(s_j - m) with m = max_j s_j,
/// l = sum_j p_j; returns (sum_j p_j v_j / l per column, m, l).
pub(super) fn attention_row(
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
pub(super) fn attention_causal(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [q, k, v] = tensors(plan, inputs, ["q", "k", "v"])?;
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
        Expected::close("o", o, 4e-3, 1e-2),
        Expected::close("m", m, 1e-4, 1e-4),
    ])
}
