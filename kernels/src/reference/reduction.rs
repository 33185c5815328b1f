//! CPU references of the reductions: row reductions, scans, atomics and histograms, claims
//! and TMA reductions.

use super::{f32_at, i32_at, int_arg, put, tensor, tensors, val, Expected, RefError, Tolerance};
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::DType::{self, F32, I32};

/// The inputs `x` (of `x_dtype`) and `y` (of `y_dtype`) of `kernel`, of one [rows, cols] shape,
/// and that shape.
fn matrix_pair<'a>(
    plan: &LaunchPlan,
    inputs: &'a [HostTensor],
    kernel: &str,
    x_dtype: DType,
    y_dtype: DType,
) -> Result<(&'a HostTensor, &'a HostTensor, [u64; 2]), RefError> {
    let [x, y] = tensors(plan, inputs, ["x", "y"])?;
    if x.shape.len() != 2 || y.shape != x.shape || x.dtype != x_dtype || y.dtype != y_dtype {
        return Err(format!("{kernel} takes {x_dtype} x and {y_dtype} y of one [rows, cols] shape").into());
    }
    Ok((x, y, [x.shape[0], x.shape[1]]))
}

/// One zeroed output vector of `rows` elements per name of `names`, of the dtype at the same
/// place of `dtypes`, in order.
fn row_outputs<const N: usize>(rows: u64, names: [&str; N], dtypes: [DType; N]) -> Vec<HostTensor> {
    names
        .iter()
        .zip(dtypes)
        .map(|(name, dtype)| HostTensor::zeros(name, dtype, vec![rows]))
        .collect()
}

/// tests/gluon/reductions.py (reductions whose combiners are compare-and-select or several
/// folds): per row of f32 x and i32 y, the maximum of x and its first position, the minimum
/// of y and its last position, the sum of x (f64, tolerance of an f32 sum of small integers:
/// exact), the maximum of y and the reverse running sums of y (`tails`). Exact.
pub(super) fn combiner_reductions(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
) -> Result<Vec<Expected>, RefError> {
    let (x, y, [rows, cols]) = matrix_pair(plan, inputs, "reductions", DType::F32, DType::I32)?;
    let mut out = row_outputs(
        rows,
        ["vmax", "imax", "vmin", "imin", "sums", "maxes"],
        [F32, I32, I32, I32, F32, I32],
    );
    let mut tails = HostTensor::zeros("tails", DType::I32, x.shape.clone());
    for r in 0..rows {
        let xs: Vec<f32> = (0..cols).map(|c| f32_at(x, r * cols + c)).collect();
        let ys: Vec<i32> = (0..cols).map(|c| i32_at(y, r * cols + c)).collect();
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
    Ok(Expected::all_exact(out))
}

/// tests/gluon/pair_reductions.py (two-operand combiners that mix their operands): per row of
/// i32 x and f32 y, the maximum of `x >> 29` and its number of occurrences, the 64-bit sum of x as its
/// low and high 32-bit words, the maximum of y (exact) and the sum of `exp2(y - maximum)`
/// (computed in f64; the kernel's f32 combiner rounds at every step, a relative 1e-5 suffices
/// for a row of 128).
pub(super) fn pair_reductions(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (x, y, [rows, cols]) = matrix_pair(plan, inputs, "pair_reductions", DType::I32, DType::F32)?;
    let mut out = row_outputs(
        rows,
        ["top", "count", "lo", "hi", "m", "denom"],
        [I32, I32, I32, I32, F32, F32],
    );
    for r in 0..rows {
        let xs: Vec<i32> = (0..cols).map(|c| i32_at(x, r * cols + c)).collect();
        let ys: Vec<f64> = (0..cols).map(|c| f32_at(y, r * cols + c) as f64).collect();
        let top = xs.iter().map(|&v| v >> 29).max().unwrap_or(0);
        let count = xs.iter().filter(|&&v| v >> 29 == top).count() as u32;
        let wide: i64 = xs.iter().map(|&v| v as i64).sum();
        let m = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let l: f64 = ys.iter().map(|&v| (v - m).exp2()).sum();
        let bits = [
            top as u32,
            count,
            wide as u32,
            (wide >> 32) as u32,
            (m as f32).to_bits(),
            (l as f32).to_bits(),
        ];
        for (t, b) in out.iter_mut().zip(bits) {
            t.set_bits(r, b as u64);
        }
    }
    Ok(out
        .into_iter()
        .map(|t| {
            let tol = if t.name == "denom" {
                Tolerance::Close {
                    atol: 0.0,
                    rtol: 1e-5,
                }
            } else {
                Tolerance::Exact
            };
            Expected {
                tensor: t.name.clone(),
                values: t,
                tol,
            }
        })
        .collect())
}

/// tests/gluon/register_gather_histogram.py: per program p of the grid, rows 16p.. of the
/// [R, 32] f32 y rotated left by row + 1 within each row (`rotated[r, c] = y[r, (c + r + 1) %
/// 32]`, r counted within the program's 16 rows), and the histogram of the first n values of
/// i32 x over `hist`'s bins, added to hist's initial counts: `gl.histogram`'s documented bins
/// (width 1 from 0), a value outside them counted in none, as Triton 3.8 and later lower it.
/// Exact.
pub(super) fn register_gather_histogram(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
) -> Result<Vec<Expected>, RefError> {
    gather_histogram(plan, inputs, |v, bins| {
        (0..bins as i64).contains(&(v as i64)).then_some(v as u64)
    })
}

/// [`register_gather_histogram`] as Triton 3.6 and 3.7 compute it: their lowering counts per
/// warp over W = max(BINS, 32) bins (one ballot per bit of `v mod W`, each lane owning W / 32
/// of them) and keeps the first BINS, so a value is counted in bin `v mod W` when that is
/// below BINS, else in none (with BINS = 16: -96 in bin 0, 20 in none). Exact.
pub(super) fn register_gather_histogram_low_bits(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
) -> Result<Vec<Expected>, RefError> {
    gather_histogram(plan, inputs, warp_ballot_bin)
}

/// The bin of `v` among `bins` in Triton 3.6's and 3.7's ballot lowering: `v mod max(bins,
/// 32)` when that is below `bins`.
fn warp_ballot_bin(v: i32, bins: u64) -> Option<u64> {
    let w = bins.max(32) as i64;
    let b = (v as i64).rem_euclid(w) as u64;
    (b < bins).then_some(b)
}

/// The rotation and the histogram of [`register_gather_histogram`], each value counted in the
/// bin `bin_of(value, bins)` gives (none for `None`).
fn gather_histogram(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
    bin_of: impl Fn(i32, u64) -> Option<u64>,
) -> Result<Vec<Expected>, RefError> {
    let [x, y, h0] = tensors(plan, inputs, ["x", "y", "hist"])?;
    let n = int_arg(plan, "n")?;
    if y.shape.len() != 2 || y.shape[1] != 32 || y.shape[0] % 16 != 0 || h0.shape.len() != 1 {
        return Err("register_gather_histogram takes y of [16 k, 32] and a 1-D hist".into());
    }
    let (rows, cols) = (y.shape[0], y.shape[1]);
    let mut rotated = HostTensor::zeros("rotated", DType::F32, y.shape.clone());
    for r in 0..rows {
        let within = r % 16;
        for c in 0..cols {
            rotated.set_bits(r * cols + c, y.get_bits(r * cols + (c + within + 1) % cols));
        }
    }
    let bins = h0.shape[0];
    let mut hist = h0.clone();
    for i in 0..(n.max(0) as u64).min(x.numel()) {
        let v = x.get_bits(i) as u32 as i32;
        let Some(b) = bin_of(v, bins) else { continue };
        let old = hist.get_bits(b) as u32 as i32;
        hist.set_bits(b, old.wrapping_add(1) as u32 as u64);
    }
    Ok(Expected::all_exact([rotated, hist]))
}

/// tests/gluon/claims.py: every program compare-and-swaps 0 -> its id into every flag and
/// counts its successes per slot, so counts[k] = 1 where flags[k] started at 0 (exactly one
/// claim of a free slot succeeds, in any order), else 0. Exact.
pub(super) fn claims(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let flags = tensor(plan, inputs, "flags")?;
    if flags.dtype != DType::I32 {
        return Err("claims takes i32 flags".into());
    }
    let mut counts = HostTensor::zeros("counts", DType::I32, flags.shape.clone());
    for k in 0..flags.numel() {
        counts.set_bits(k, u64::from(flags.get_bits(k) as u32 == 0));
    }
    Ok(vec![Expected::exact("counts", counts)])
}

/// kernels/tiles/scan.tile: per row of x, the running sum and the running maximum. Exact.
pub(super) fn scan(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
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
    Ok(vec![
        Expected::exact("sums", sums),
        Expected::exact("maxes", maxes),
    ])
}

/// kernels/tiles/atomics.tile: over the first `n` values, the count, the sum and the maximum
/// of the values in each bin `x % BINS` (maxima start at -1). Exact: the sums are of integers
/// far below 2^24.
pub(super) fn atomics(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
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
    Ok(Expected::all_exact([h, s, m]))
}

/// tests/gluon/3.8/smem_histogram.py over the first n values of the non-negative int32 x and
/// `hist.numel()` bins (bin v % BINS): hist gains each bin's count, and maxes[b] becomes the
/// largest of its initial value and the bin's values. Exact.
pub(super) fn smem_histogram(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let [hist0, maxes0] = tensors(plan, inputs, ["hist", "maxes"])?;
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
    Ok(vec![Expected::exact("hist", h), Expected::exact("maxes", m)])
}

/// tests/gluon/3.8/tma_reduce.py: x holds S matrices of out's shape [R, C] stacked by rows; out
/// gains their sum. The additions happen in any order: exact for the integer-valued inputs of
/// the fixture, within f32 rounding of the sum otherwise.
pub(super) fn tma_reduce(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [x, out0] = tensors(plan, inputs, ["x", "out"])?;
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
    Ok(vec![Expected::close("out", out, 0.0, 1e-6)])
}

/// tests/gluon/3.8/cluster_ws_pairs.py: the column sums of f32 `x` [rows, cols], `out[j] =
/// x[0, j] + x[1, j] + ...`, each sum an f32 accumulator from 0 adding the rows in order (as each
/// consumer partition does). Exact.
pub(super) fn column_sums(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [x, out] = tensors(plan, inputs, ["x", "out"])?;
    if x.dtype != DType::F32 || x.shape.len() != 2 || out.shape != [x.shape[1]] {
        return Err("column sums take an f32 [rows, cols] input and an f32 [cols] output".into());
    }
    let (rows, cols) = (x.shape[0], x.shape[1]);
    let mut o = HostTensor::zeros("out", DType::F32, vec![cols]);
    for c in 0..cols {
        let mut acc = 0.0f32;
        for r in 0..rows {
            acc += f32::from_bits(x.get_bits(r * cols + c) as u32);
        }
        put(&mut o, c, f64::from(acc))?;
    }
    Ok(vec![Expected::exact("out", o)])
}

/// tests/gluon/3.9/cp_async_mbarrier.py: for f32 `x` [rows, cols], `y = 2 x + 1` elementwise
/// (exact: one rounding of the product by 2 is none, then one of the sum, as f32 arithmetic
/// does) and `sums[r]` the sum of row r (computed in f64 here; the kernel adds YBLOCK-column
/// partial sums in f32, so within an f32 sum's rounding of the row's magnitudes).
pub(super) fn cp_async_mbarrier(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [x, y0, sums0] = tensors(plan, inputs, ["x", "y", "sums"])?;
    if x.dtype != DType::F32 || x.shape.len() != 2 || y0.shape != x.shape || sums0.shape != [x.shape[0]] {
        return Err(
            "cp_async_mbarrier takes f32 x and y of one [rows, cols] shape and sums of [rows]".into(),
        );
    }
    let (rows, cols) = (x.shape[0], x.shape[1]);
    let mut y = HostTensor::zeros("y", DType::F32, x.shape.clone());
    let mut sums = HostTensor::zeros("sums", DType::F32, vec![rows]);
    for r in 0..rows {
        let mut sum = 0.0f64;
        for c in 0..cols {
            let v = f32::from_bits(x.get_bits(r * cols + c) as u32);
            put(&mut y, r * cols + c, f64::from(2.0 * v + 1.0))?;
            sum += f64::from(v);
        }
        put(&mut sums, r, sum)?;
    }
    Ok(vec![
        Expected::exact("y", y),
        Expected::close("sums", sums, 1e-3, 1e-5),
    ])
}

#[cfg(test)]
mod tests {
    use super::warp_ballot_bin;

    #[test]
    fn ballot_bins_count_modulo_the_warps_bins_and_keep_the_first() {
        // 16 bins: a warp counts 32 (v mod 32) and keeps 0..16.
        let b16 = |v| warp_ballot_bin(v, 16);
        assert_eq!(
            [b16(0), b16(15), b16(16), b16(20), b16(31)],
            [Some(0), Some(15), None, None, None]
        );
        assert_eq!(
            [b16(32), b16(47), b16(-96), b16(-17), b16(-1)],
            [Some(0), Some(15), Some(0), Some(15), None]
        );
        // 64 bins: each lane owns two; v mod 64, all kept.
        assert_eq!(
            [warp_ballot_bin(100, 64), warp_ballot_bin(-1, 64)],
            [Some(36), Some(63)]
        );
    }
}
