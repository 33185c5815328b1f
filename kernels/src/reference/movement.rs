//! CPU references of the data-movement kernels: copies, gathers and scatters (TMA, shared
//! memory), exact.

use super::{i32_at, int_arg, tensor, tensors, val, Expected, RefError};
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::DType;

/// What seed 09's gather and scatter index: `input` ([xmax, ymax]), the row offsets `xo`
/// and the column offset `y`.
struct Indexed<'a> {
    input: &'a HostTensor,
    xo: &'a HostTensor,
    y: i64,
    xmax: i64,
    ymax: i64,
}

fn indexed<'a>(plan: &LaunchPlan, inputs: &'a [HostTensor]) -> Result<Indexed<'a>, RefError> {
    let input = tensor(plan, inputs, "input")?;
    let xo = tensor(plan, inputs, "x_offsets")?;
    let y = int_arg(plan, "y_offset")?;
    let (xmax, ymax) = (input.shape[0] as i64, input.shape[1] as i64);
    Ok(Indexed {
        input,
        xo,
        y,
        xmax,
        ymax,
    })
}

/// out[i, j] = input[x[i], y + j], zero where the row or column is out of range (seed 09).
pub(super) fn gather(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let Indexed {
        input,
        xo,
        y,
        xmax,
        ymax,
    } = indexed(plan, inputs)?;
    let out0 = tensor(plan, inputs, "out")?;
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
    Ok(vec![Expected::exact("out", out)])
}

/// input[x[i], y + j] = src[i, j] for rows and columns in range (seed 09).
pub(super) fn scatter(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let ix = indexed(plan, inputs)?;
    let (input, xo, y, xmax, ymax) = (ix.input, ix.xo, ix.y, ix.xmax, ix.ymax);
    let src = tensor(plan, inputs, "src")?;
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
    Ok(vec![Expected::exact("input", out)])
}

/// A copy kernel: `output` equals `input` bit for bit (`tma_roundtrip`).
pub(super) fn identity(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    copy_of(plan, inputs, "input", "output")
}

/// out = b: two copies into one buffer, `a` then `b`, the second issued once the first has
/// landed (cp_async_overlap's correct variant); exact.
pub(super) fn second_copy(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    copy_of(plan, inputs, "b", "out")
}

/// A ring exchange over the CTAs of each cluster: the program ids along x form clusters of
/// `cluster[0]` consecutive CTAs; CTA `p` owns rows `p * R..(p + 1) * R` of `input` and
/// `output` (`R` = rows / programs), and each CTA of rank r writes to its own rows of `output`
/// the rows of `input` of rank r - 1 (mod size) of its cluster (`dsmem_ring` and the fixed
/// twins that push to the right: each CTA hands its rows to rank r + 1), or of rank r + 1 when
/// `pull` (`dsmem_cluster_exit_fixed`: each CTA reads its right neighbour's buffer). Exact.
pub(super) fn dsmem_ring(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
    pull: bool,
) -> Result<Vec<Expected>, RefError> {
    let [x, out] = tensors(plan, inputs, ["input", "output"])?;
    if (x.dtype, &x.shape) != (out.dtype, &out.shape) || x.shape.is_empty() {
        return Err("`input` and `output` differ in type or shape".to_string().into());
    }
    let programs = plan.grid[0] as u64;
    let size = plan.cluster[0].max(1) as u64;
    if programs == 0 || !x.shape[0].is_multiple_of(programs) || !programs.is_multiple_of(size) {
        return Err("the rows do not split evenly over the programs and clusters"
            .to_string()
            .into());
    }
    let row_bytes = x.data.len() as u64 / x.shape[0];
    let block = (x.shape[0] / programs * row_bytes) as usize;
    let mut v = out.clone();
    v.name = "output".into();
    // The rank whose rows rank r receives: r - 1 or r + 1, mod size.
    let step = if pull { 1 } else { size - 1 };
    for p in 0..programs {
        let base = p - p % size;
        let from = base + (p - base + step) % size;
        let (d, f) = (p as usize * block, from as usize * block);
        v.data[d..d + block].copy_from_slice(&x.data[f..f + block]);
    }
    Ok(vec![Expected::exact("output", v)])
}

/// Multicast TMA over the CTAs of each cluster: the program ids along x form clusters of
/// `cluster[0]` consecutive CTAs; `input` holds one block of rows per cluster, `output` one per
/// program, and every CTA of cluster `c` writes `input`'s block `c` to its own block. Exact.
pub(super) fn multicast_copy(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [x, out] = tensors(plan, inputs, ["input", "output"])?;
    let programs = plan.grid[0] as u64;
    let size = plan.cluster[0].max(1) as u64;
    let clusters = programs / size.max(1);
    if x.dtype != out.dtype
        || x.shape.len() != 2
        || out.shape.len() != 2
        || x.shape[1] != out.shape[1]
        || clusters == 0
        || !programs.is_multiple_of(size)
        || !x.shape[0].is_multiple_of(clusters)
        || out.shape[0] != x.shape[0] / clusters * programs
    {
        return Err(
            "`input` needs one block of rows per cluster and `output` one per program, of one type"
                .to_string()
                .into(),
        );
    }
    let block = x.data.len() / clusters as usize;
    let mut v = out.clone();
    v.name = "output".into();
    for p in 0..programs as usize {
        let c = p / size as usize;
        v.data[p * block..(p + 1) * block].copy_from_slice(&x.data[c * block..(c + 1) * block]);
    }
    Ok(vec![Expected::exact("output", v)])
}

/// Tensor `to` equals tensor `from` bit for bit.
fn copy_of(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
    from: &str,
    to: &str,
) -> Result<Vec<Expected>, RefError> {
    let (a, out) = (tensor(plan, inputs, from)?, tensor(plan, inputs, to)?);
    if (a.dtype, &a.shape) != (out.dtype, &out.shape) {
        return Err(format!("`{from}` and `{to}` differ in type or shape").into());
    }
    let mut v = a.clone();
    v.name = to.into();
    Ok(vec![Expected::exact(to, v)])
}

/// tests/gluon/3.7/smem_gather_scatter.py over the [rows, cols] f32 x and a permutation `perm`
/// of the columns: gathered[r, c] = x[r, perm[c]] and scattered[r, perm[c]] = x[r, c]. Exact.
pub(super) fn smem_gather_scatter(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
) -> Result<Vec<Expected>, RefError> {
    let [x, perm] = tensors(plan, inputs, ["x", "perm"])?;
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
    Ok(vec![
        Expected::exact("gathered", g),
        Expected::exact("scattered", s),
    ])
}

/// `grouped_scale_kernel` (tests/gluon/device_descriptors.py): program g scales the rows
/// `starts[g]..starts[g + 1]` of x by `scales[g]` into out (one f32 multiply each, exact to
/// compare); rows of no group keep out's zeros.
pub(super) fn grouped_scale(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [x, starts, scales, out0] = tensors(plan, inputs, ["x", "starts", "scales", "out"])?;
    let n = x.shape.get(1).copied().unwrap_or(1);
    let mut out = out0.clone();
    for g in 0..plan.grid[0] as u64 {
        let (lo, hi) = (
            i32_at(starts, g).max(0) as u64,
            i32_at(starts, g + 1).max(0) as u64,
        );
        let s = f32::from_bits(scales.get_bits(g) as u32);
        for r in lo..hi.min(x.shape[0]) {
            for c in 0..n {
                let v = f32::from_bits(x.get_bits(r * n + c) as u32) * s;
                out.set_bits(r * n + c, v.to_bits() as u64);
            }
        }
    }
    Ok(vec![Expected::exact("out", out)])
}
