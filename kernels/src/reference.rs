//! CPU references: plain Rust, written from the tutorials' stated semantics and independent
//! of the simulator. Each takes the launch plan and the input tensors (as drawn by
//! `launch::materialize`) and returns the expected content of the kernel's outputs, with the
//! tolerance the comparison allows.

use bwsim_isa::launch::{ArgValue, HostTensor, LaunchPlan};
use bwsim_isa::numeric;
use bwsim_isa::DType;

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
        let (a, x) = (actual.get(i), e.values.get(i));
        let ok = match e.tol {
            Tolerance::Exact => ab == eb,
            Tolerance::Close { atol, rtol } => {
                if x.is_nan() || a.is_nan() {
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

fn tensor<'a>(plan: &LaunchPlan, inputs: &'a [HostTensor], name: &str) -> Result<&'a HostTensor, String> {
    let i = plan
        .tensor(name)
        .ok_or_else(|| format!("launch has no tensor `{name}`"))?;
    inputs.get(i).ok_or_else(|| format!("input `{name}` missing"))
}

fn int_arg(plan: &LaunchPlan, name: &str) -> Result<i64, String> {
    match plan.args.iter().find(|(n, _)| n == name) {
        Some((_, ArgValue::Int(v))) => Ok(*v),
        _ => Err(format!("launch gives no integer `{name}`")),
    }
}

/// Expected outputs of a bundled kernel, or `None` when it has no reference.
pub fn reference(
    kernel: &str,
    plan: &LaunchPlan,
    inputs: &[HostTensor],
) -> Option<Result<Vec<Expected>, String>> {
    let r = match kernel {
        "elementwise_add_ws" | "elementwise_add_tma" => add(plan, inputs),
        "async_gather" => gather(plan, inputs),
        "async_scatter" => scatter(plan, inputs),
        "tcgen05_copy" => copy(plan, inputs),
        "matmul_pipelined"
        | "persistent_matmul"
        | "persistent_matmul_pipelined"
        | "matmul_warp_specialized" => matmul(plan, inputs),
        "matmul_accumulate" => matmul_accumulate(plan, inputs),
        "matmul_fused_gather_scatter" => fused_gather_scatter(plan, inputs),
        "gemm_async" => gemm_async(plan, inputs),
        _ => return None,
    };
    Some(r)
}

/// c = a + b, f32, exact (one f32 addition per element, as `cvt`-free hardware add does).
fn add(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, String> {
    let (a, b) = (tensor(plan, inputs, "a")?, tensor(plan, inputs, "b")?);
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

/// out[i, j] = input[x[i], y + j], zero where the row or column is out of range (seed 09).
fn gather(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, String> {
    let input = tensor(plan, inputs, "input")?;
    let xo = tensor(plan, inputs, "x_offsets")?;
    let out0 = tensor(plan, inputs, "out")?;
    let y = int_arg(plan, "y_offset")?;
    let (xmax, ymax) = (input.shape[0] as i64, input.shape[1] as i64);
    let (bx, by) = (out0.shape[0], out0.shape[1]);
    let mut out = HostTensor::zeros("out", out0.dtype, out0.shape.clone());
    for i in 0..bx {
        let r = xo.get(i) as i64;
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
fn scatter(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, String> {
    let input = tensor(plan, inputs, "input")?;
    let xo = tensor(plan, inputs, "x_offsets")?;
    let src = tensor(plan, inputs, "src")?;
    let y = int_arg(plan, "y_offset")?;
    let (xmax, ymax) = (input.shape[0] as i64, input.shape[1] as i64);
    let (bx, by) = (src.shape[0], src.shape[1]);
    let mut out = input.clone();
    for i in 0..bx {
        let r = xo.get(i) as i64;
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

fn copy(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, String> {
    let input = tensor(plan, inputs, "input")?;
    let mut v = input.clone();
    v.name = "output".into();
    Ok(vec![Expected {
        tensor: "output".into(),
        values: v,
        tol: Tolerance::Exact,
    }])
}

/// Row-major f64 matmul of `a` [M, K] and `b` [K, N].
fn mm(a: &HostTensor, b: &HostTensor) -> Vec<f64> {
    let (m, k, n) = (a.shape[0] as usize, a.shape[1] as usize, b.shape[1] as usize);
    let av: Vec<f64> = (0..a.numel()).map(|i| a.get(i)).collect();
    let bv: Vec<f64> = (0..b.numel()).map(|i| b.get(i)).collect();
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for kk in 0..k {
            let x = av[i * k + kk];
            if x == 0.0 {
                continue;
            }
            let row = &bv[kk * n..kk * n + n];
            let out = &mut c[i * n..i * n + n];
            for j in 0..n {
                out[j] += x * row[j];
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

fn matmul(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, String> {
    let (a, b) = (tensor(plan, inputs, "a")?, tensor(plan, inputs, "b")?);
    let c0 = tensor(plan, inputs, "c")?;
    let c = mm(a, b);
    let mut out = HostTensor::zeros("c", c0.dtype, c0.shape.clone());
    for (i, v) in c.iter().enumerate() {
        out.set(i as u64, *v);
    }
    Ok(vec![Expected {
        tensor: "c".into(),
        values: out,
        tol: MATMUL_TOL,
    }])
}

/// D = A @ B + C in f32 (seed 10 tolerance: atol 5e-3, rtol 1e-2).
fn matmul_accumulate(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, String> {
    let (a, b, c) = (
        tensor(plan, inputs, "a")?,
        tensor(plan, inputs, "b")?,
        tensor(plan, inputs, "c")?,
    );
    let ab = mm(a, b);
    let mut d = HostTensor::zeros("d", DType::F32, c.shape.clone());
    for (i, v) in ab.iter().enumerate() {
        d.set(i as u64, v + c.get(i as u64));
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
fn fused_gather_scatter(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, String> {
    let x = tensor(plan, inputs, "x")?;
    let w = tensor(plan, inputs, "w")?;
    let g = tensor(plan, inputs, "x_gather_indx")?;
    let s = tensor(plan, inputs, "out_scatter_indx")?;
    let out0 = tensor(plan, inputs, "out")?;
    let (m, k) = (x.shape[0], x.shape[1]);
    let mut xg = HostTensor::zeros("xg", x.dtype, x.shape.clone());
    for i in 0..m {
        let r = g.get(i) as u64;
        for j in 0..k {
            xg.set_bits(i * k + j, x.get_bits(r * k + j));
        }
    }
    let prod = mm(&xg, w);
    let n = w.shape[1];
    let mut out = HostTensor::zeros("out", out0.dtype, out0.shape.clone());
    for i in 0..m {
        let r = s.get(i) as u64;
        for j in 0..n {
            out.set(r * n + j, prod[(i * n + j) as usize]);
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

/// out = A @ B^T (B stored [N, K]); with scale factors (ue8m0, one per 32 K-elements) when the
/// operands are fp8/fp4, as tcgen05.mma.block_scale computes (seed TIRx page).
fn gemm_async(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, String> {
    let (a, b) = (tensor(plan, inputs, "a")?, tensor(plan, inputs, "b")?);
    let (sfa, sfb) = (tensor(plan, inputs, "sfa")?, tensor(plan, inputs, "sfb")?);
    let scaled = matches!(a.dtype, DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1);
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[0]);
    let kb = k / 32;
    let mut out = HostTensor::zeros("out", DType::F32, vec![m, n]);
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0;
            for kk in 0..k {
                let mut p = a.get(i * k + kk) * b.get(j * k + kk);
                if scaled {
                    p *= numeric::decode(DType::UE8M0, sfa.get_bits(i * kb + kk / 32))
                        * numeric::decode(DType::UE8M0, sfb.get_bits(j * kb + kk / 32));
                }
                acc += p;
            }
            out.set(i * n + j, acc);
        }
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
