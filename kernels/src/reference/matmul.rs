//! CPU references of the matrix products: f64 matmuls (plain and blocked, the same bits),
//! wgmma/tcgen05 with an accumulator, convolution as a matmul and the fused gather/scatter.

use super::{put, tensor, tensors, val, Expected, RefError, Tolerance};
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::DType;

/// Row-major f64 matmul of `a` [M, K] and `b` [K, N]: each output element is
/// `sum over k in order of a[i, k] * b[k, j]`, products with a zero `a[i, k]` skipped.
pub(super) fn mm(a: &HostTensor, b: &HostTensor) -> Vec<f64> {
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
pub(super) const MM_ROWS: usize = 8;
pub(super) const MM_COLS: usize = 128;

/// [`mm`] of decoded values, compiled also for wider vector units and run on the widest the
/// CPU has (`pulp`'s run-time dispatch): each element's additions are the same operations
/// in the same order in any lane width, so the same bits.
pub(super) fn mm_values(av: &[f64], bv: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
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
pub(super) fn mm_blocked(av: &[f64], bv: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
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
pub(super) const MATMUL_TOL: Tolerance = Tolerance::Close {
    atol: 1e-1,
    rtol: 1e-3,
};

/// C = A @ B, f16 out (tutorials 07 and 08).
pub(super) fn matmul(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [a, b] = tensors(plan, inputs, ["a", "b"])?;
    let c0 = tensor(plan, inputs, "c")?;
    let c = mm(a, b);
    let mut out = HostTensor::zeros("c", c0.dtype, c0.shape.clone());
    for (i, v) in c.iter().enumerate() {
        put(&mut out, i as u64, *v)?;
    }
    Ok(vec![Expected::new("c", out, MATMUL_TOL)])
}

/// Every element of `t` as f64, in order.
pub(super) fn decoded(t: &HostTensor) -> Vec<f64> {
    (0..t.numel()).map(|i| val(t, i)).collect()
}

/// y[n, h, w, co] = sum over (r, s, c) of x[n, h + r - PAD, w + s - PAD, c] * wt[co, (r S + s) C + c],
/// NHWC, stride 1, zeros outside the image, accumulated in f64 and compared with the matmul
/// tolerance. The filter is square (R = S, from wt's `R * S * C` columns) and the convolution
/// keeps the image's size (y's spatial shape is x's), so PAD = (R - 1) / 2.
pub(super) fn conv2d(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [x, wt, y0] = tensors(plan, inputs, ["x", "wt", "y"])?;
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
    Ok(vec![Expected::new("y", y, MATMUL_TOL)])
}

/// D = A @ B^T + C with B stored [N, K] (`wgmma_dtypes`, `tcgen05_dtypes`).
pub(super) fn wgmma_dtypes(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    mma_plus_c(plan, inputs, Some(true))
}

/// D = A @ B + C of the Gluon fixtures `wgmma_regs_kernel` (tests/gluon/wgmma_regs.py): B is
/// stored [K, N], or [N, K] when the kernel reads it transposed; the fixtures keep N != K so
/// that B's shape says which.
pub(super) fn wgmma_regs(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    mma_plus_c(plan, inputs, None)
}

/// D = A @ B + C (`b_nk`: B stored [N, K]; `None`: decided by B's shape), the PTX ISA's
/// `wgmma.mma_async` semantics, in f64 and rounded once to the accumulator type. Integers
/// (s8/u8 into s32) are exact, wrapped to 32 bits as the s32 accumulator wraps. Float
/// accumulation order and precision are not specified (docs/semantics.md#numerics): the tolerance
/// allows each K step of 32 bytes one rounding of a partial sum of at most a few hundred at the
/// accumulator's precision (f16: 11 bits; f32: the 14 bits Hopper keeps for fp8 operands, 24
/// otherwise), for operands of magnitude about 1 and K up to a few hundred.
pub(super) fn mma_plus_c(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
    b_nk: Option<bool>,
) -> Result<Vec<Expected>, RefError> {
    let [a, b, c] = tensors(plan, inputs, ["a", "b", "c"])?;
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
    Ok(vec![Expected::new("d", d, tol)])
}

/// D = A @ B + C in f32 (seed 10 tolerance: atol 5e-3, rtol 1e-2).
pub(super) fn matmul_accumulate(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [a, b, c] = tensors(plan, inputs, ["a", "b", "c"])?;
    let ab = mm(a, b);
    let mut d = HostTensor::zeros("d", DType::F32, c.shape.clone());
    for (i, v) in ab.iter().enumerate() {
        put(&mut d, i as u64, v + val(c, i as u64))?;
    }
    Ok(vec![Expected::close("d", d, 5e-3, 1e-2)])
}

/// out[scatter[i], :] = X[gather[i], :] @ W, bf16 (seed 09 tolerance atol = rtol = 1e-3 is for
/// its torch reference in bf16; against an exact f64 product the bf16 rounding of the output
/// needs rtol 1e-2).
pub(super) fn fused_gather_scatter(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
) -> Result<Vec<Expected>, RefError> {
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
    Ok(vec![Expected::close("out", out, 1e-1, 1e-2)])
}
