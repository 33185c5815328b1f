//! CPU references of the block-scaled MMAs: scale factors (ue8m0, ue4m3), fp4 unpacking and
//! the scaled products.

use super::{int_arg, put, tensor, tensors, val, value, Expected, RefError};
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::DType;

/// A block scale factor: element `i` of `t`, a ue8m0/ue4m3 tensor or the bytes of one (Gluon
/// carries ue8m0 factors as uint8, TTGIR as i8), decoded as `format`.
pub(super) fn scale_factor(t: &HostTensor, i: u64, format: DType) -> f64 {
    value(format, t.get_bits(i))
}

/// The factors of a block-scaled MMA operand: `t[row, kb]` at `row * stride_row + kb *
/// stride_k`, one factor per `vec` elements of K (OCP MX: ue8m0 per 32; nvfp4: ue4m3 per 16).
pub(super) struct Scales<'a> {
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
pub(super) fn scaled_dot_nt(a: &HostTensor, b: &HostTensor, scales: Option<(Scales, Scales)>) -> Vec<f64> {
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
pub(super) fn gemm_async(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [a, b] = tensors(plan, inputs, ["a", "b"])?;
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
    Ok(vec![Expected::close("out", out, 1e-2, 1e-3)])
}

/// fp4 operands given as bytes (Gluon's uint8 packing): `[R, C]` bytes are the `[R, 2C]` e2m1
/// matrix whose element `2j` is the low nibble of byte `j`, `2j + 1` the high one (OCP MX).
/// Tutorial 11's packed-block factors, `[1, rows / 128, SCALE_K / 4, 2, 256]`, as row-major
/// `[rows, SCALE_K]`: each 512-byte block holds 128 rows by 4 K blocks, row `32 j + i` and K
/// block `c` at byte `16 i + 4 j + c` (the tutorial's relayout).
pub(super) fn unpack_scale_blocks(t: &HostTensor, rows: u64) -> Result<HostTensor, String> {
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

pub(super) fn unpack_fp4(t: &HostTensor) -> HostTensor {
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
pub(super) fn mma_scaled(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
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
    Ok(vec![Expected::close("c", c, 1e-2, 2e-3)])
}
