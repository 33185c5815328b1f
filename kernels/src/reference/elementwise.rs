//! CPU references of the element-wise kernels: arithmetic, integer and bit operations, tile
//! math and per-thread operations, each element computed on its own.

use super::{f32_at, float_arg, i32_at, int_arg, put, tensor, tensors, val, Expected, RefError, Tolerance};
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::DType;

/// c = a + b, f32, exact (one f32 addition per element, as `cvt`-free hardware add does).
pub(super) fn add(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [a, b] = tensors(plan, inputs, ["a", "b"])?;
    if (a.dtype, b.dtype) != (DType::F32, DType::F32) {
        return Err("the add kernels take f32 inputs".into());
    }
    let mut c = HostTensor::zeros("c", DType::F32, a.shape.clone());
    for i in 0..a.numel() {
        let v = f32::from_bits(a.get_bits(i) as u32) + f32::from_bits(b.get_bits(i) as u32);
        c.set_bits(i, v.to_bits() as u64);
    }
    Ok(vec![Expected::exact("c", c)])
}

/// tests/gluon/per_thread.py (the operations of Gluon tutorial 14-per-thread-ops) over an f32
/// [rows, cols] x: `sums` = row sums (f64, tolerance of an f32 sum of 32 terms); `centered` =
/// x - row max (one f32 subtraction: exact); `deq` = q / s with s = 127 / max(max |x| over the
/// 8-column group, 1e-12) and q = x * s truncated to an int8 (f32 arithmetic: exact).
pub(super) fn per_thread(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
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
        Expected::close("sums", sums, 1e-5, 1e-5),
        Expected::exact("centered", centered),
        Expected::exact("deq", deq),
    ])
}

/// kernels/tiles/cp_async.tile: c = a + b over the [n_rows, n_cols] f32 inputs (one f32
/// addition per element), and maxes[r] = the largest element of row r of c for r < n_rows (the
/// entries past n_rows keep their initial values). Exact: a maximum does not depend on order.
pub(super) fn cp_async(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [a, b] = tensors(plan, inputs, ["a", "b"])?;
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
    Ok(vec![Expected::exact("c", c), Expected::exact("maxes", m)])
}

/// kernels/tiles/while_loop.tile: program p adds the sum of n, 3n, 9n, ... below `limit`
/// (n = p + 1) to its slice of x. Exact.
pub(super) fn while_loop(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
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
    Ok(vec![Expected::exact("out", out)])
}

/// kernels/tiles/int_ops.tile: x as uint32; x / 7, x % 1000, x >> 3, x < 2000000000,
/// min(x, 3000000000), x >> 31, each stored as its low 32 bits. Exact.
pub(super) fn int_ops(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
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
    Ok(vec![Expected::exact("out", out)])
}

/// The inputs `x` (i32) and `y` (f32) of `kernel`.
fn i32_x_f32_y<'a>(
    plan: &LaunchPlan,
    inputs: &'a [HostTensor],
    kernel: &str,
) -> Result<(&'a HostTensor, &'a HostTensor), RefError> {
    let x = tensor(plan, inputs, "x")?;
    let y = tensor(plan, inputs, "y")?;
    if x.dtype != DType::I32 || y.dtype != DType::F32 {
        return Err(format!("{kernel} takes an i32 x and an f32 y").into());
    }
    Ok((x, y))
}

/// The output `out` of an elementwise `kernel` over its f32 input `x`: `f` of each element
/// (`out` must have x's shape).
fn f32_map(
    plan: &LaunchPlan,
    inputs: &[HostTensor],
    kernel: &str,
    out: &str,
    f: impl Fn(f32) -> f32,
) -> Result<HostTensor, RefError> {
    let x = tensor(plan, inputs, "x")?;
    if x.dtype != DType::F32 || tensor(plan, inputs, out)?.shape != x.shape {
        return Err(format!("{kernel} takes an f32 x and a tensor `{out}` of its shape").into());
    }
    let mut t = HostTensor::zeros(out, DType::F32, x.shape.clone());
    for i in 0..x.numel() {
        t.set_bits(i, f(f32_at(x, i)).to_bits() as u64);
    }
    Ok(t)
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
pub(super) fn bit_tricks(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (x, y) = i32_x_f32_y(plan, inputs, "bit_tricks")?;
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
        Expected::exact("out", out),
        Expected::close("f", f, 0.0, f32::EPSILON as f64),
        Expected::exact("h", h),
        Expected::exact("w", w),
    ])
}

/// The functions and reductions of kernels/tiles/tile_math.tile, from their textbook
/// definitions in f64 (f32 results rounded once; the integer tile is `8x` truncated toward
/// zero). Float tolerance: one f32 rounding of each function, and the order of the row sums
/// and products; integer results exact.
pub(super) fn tile_math(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
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
        Expected::new("y", y, close),
        Expected::new("r", r, close),
        Expected::exact("q", q),
    ])
}

/// tests/gluon/3.8/clc_scale.py: y = alpha * x + 1 over the whole f32 tensor (every tile is
/// processed once, by its own program or by the one that cancelled it). The compiler may fuse
/// the multiply and the add into one `fma` (one rounding instead of two): within 1 ulp.
pub(super) fn clc_scale(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let alpha = float_arg(plan, "alpha")?;
    let y = f32_map(plan, inputs, "clc_scale", "y", |v| v * alpha + 1.0)?;
    Ok(vec![Expected::close("y", y, 1e-6, 2.5e-7)])
}

/// tests/gluon/3.8/clc_cluster_flags.py: every block is processed once, whichever programs
/// run: `pos[i] = x[i] > 0` and `done[b] = true` for every block, as bools (0 or 1). Exact.
pub(super) fn clc_cluster_flags(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [x, pos0, done0] = tensors(plan, inputs, ["x", "pos", "done"])?;
    if x.dtype != DType::F32 || pos0.shape != x.shape || pos0.dtype != DType::I1 || done0.dtype != DType::I1 {
        return Err("clc_cluster_flags takes an f32 x, a bool pos of its shape and a bool done".into());
    }
    let mut pos = HostTensor::zeros("pos", DType::I1, x.shape.clone());
    for i in 0..x.numel() {
        pos.set_bits(i, u64::from(f32_at(x, i) > 0.0));
    }
    let mut done = HostTensor::zeros("done", DType::I1, done0.shape.clone());
    for b in 0..done.numel() {
        done.set_bits(b, 1);
    }
    Ok(vec![Expected::exact("pos", pos), Expected::exact("done", done)])
}

/// tests/gluon/3.8/packed_arith.py, per row r of the [rows, cols] f32 tiles:
/// m = max_c (x * scale), rounded products; p = fma(x, scale, -m) (one rounding, `fma.rn.f32x2`);
/// out = acc * alpha + p, the product and the sum each rounded (`mul.f32x2`, `add.f32x2`). Exact.
pub(super) fn packed_arith(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [x, acc] = tensors(plan, inputs, ["x", "acc"])?;
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
    Ok(vec![Expected::exact("out", out)])
}

/// tests/gluon/3.9/math_fns.py over an f32 x of n elements, the rows of out: GELU's tanh form
/// `0.5 x * (1 + tanh(0.7978845608 * (x + ((x * 0.044715) * x) * x)))`, `exp10(x)`,
/// `log10(|x| + 0.5)`, `log1p(x * 1e-4)`, `expm1(x * 1e-3)`, `tan(x * 0.5)`, `atan(x * 4)`. The arithmetic is f32 in the kernel's order; each
/// function is the f64 one rounded once to f32 (the functions' mathematical values). Exact.
pub(super) fn math_fns(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    if x.dtype != DType::F32 || x.shape.len() != 1 {
        return Err("math_fns takes a one-dimensional f32 x".into());
    }
    let n = x.numel();
    let f = |g: fn(f64) -> f64, v: f32| g(v as f64) as f32;
    let mut out = HostTensor::zeros("out", DType::F32, vec![7, n]);
    for i in 0..n {
        let v = f32_at(x, i);
        let inner = 0.797_884_6_f32 * (v + v * 0.044_715_f32 * v * v);
        let rows = [
            v * 0.5 * (f(f64::tanh, inner) + 1.0),
            f(|t| 10f64.powf(t), v),
            f(f64::log10, v.abs() + 0.5),
            f(f64::ln_1p, v * 1e-4),
            f(f64::exp_m1, v * 1e-3),
            f(f64::tan, v * 0.5),
            f(f64::atan, v * 4.0),
        ];
        for (r, y) in rows.into_iter().enumerate() {
            out.set_bits(r as u64 * n + i, y.to_bits() as u64);
        }
    }
    Ok(vec![Expected::exact("out", out)])
}

/// tests/gluon/3.9/packed_minmax.py: `clamped = min(max(x, -0.5), 0.75)` of an f16 x and
/// `larger = max(a, b)` of bf16 a and b, the larger (smaller) of two numbers being one of them.
/// Exact.
pub(super) fn packed_minmax(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [x, a, b] = tensors(plan, inputs, ["x", "a", "b"])?;
    if x.dtype != DType::F16 || a.dtype != DType::BF16 || b.dtype != DType::BF16 || a.shape != b.shape {
        return Err("packed_minmax takes an f16 x and bf16 a and b of one shape".into());
    }
    let (lo, hi) = (-0.5, 0.75);
    let mut clamped = HostTensor::zeros("clamped", DType::F16, x.shape.clone());
    for i in 0..x.numel() {
        put(&mut clamped, i, val(x, i).max(lo).min(hi))?;
    }
    let mut larger = HostTensor::zeros("larger", DType::BF16, a.shape.clone());
    for i in 0..a.numel() {
        put(&mut larger, i, val(a, i).max(val(b, i)))?;
    }
    Ok(vec![
        Expected::exact("clamped", clamped),
        Expected::exact("larger", larger),
    ])
}

/// tests/gluon/3.9/inline_asm.py: out = x * scale + x, one `fma.rn.f32` per element. Exact.
pub(super) fn inline_asm(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let scale = float_arg(plan, "scale")?;
    let out = f32_map(plan, inputs, "inline_asm", "out", |v| v.mul_add(scale, v))?;
    Ok(vec![Expected::exact("out", out)])
}

/// tests/gluon/3.9/flag_handoff.py: the grid is pairs of programs over BLOCK = x's length / pairs
/// values each; for every value, data = 2 x + 1 (the producer's) and out = data + x (the
/// consumer's, after the flag). Exact (int32, wrapping).
pub(super) fn flag_handoff(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let [data0, out0] = tensors(plan, inputs, ["data", "out"])?;
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
    Ok(vec![Expected::exact("data", d), Expected::exact("out", o)])
}

/// tests/gluon/3.9/flag_acquire.py: program 0 writes data = 3 * x - 1 and sets flags[0] to 1
/// (flags[1] masked off, left as it was); each other program p writes out[p - 1] = data + p
/// (i32, wrapping).
pub(super) fn flag_acquire(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let [data0, out0, flags0] = tensors(plan, inputs, ["data", "out", "flags"])?;
    let n = x.numel();
    let consumers = (plan.grid[0] as u64).saturating_sub(1);
    if data0.numel() != n || out0.numel() != consumers * n || flags0.numel() != 2 {
        return Err(
            "flag_acquire takes x and data of one length, out of (programs - 1) rows of it, two flags".into(),
        );
    }
    let (mut d, mut o, mut f) = (data0.clone(), out0.clone(), flags0.clone());
    for i in 0..n {
        let dv = i32_at(x, i).wrapping_mul(3).wrapping_sub(1);
        d.set_bits(i, dv as u32 as u64);
        for p in 1..=consumers {
            o.set_bits((p - 1) * n + i, dv.wrapping_add(p as i32) as u32 as u64);
        }
    }
    f.set_bits(0, 1);
    Ok(Expected::all_exact([d, o, f]))
}

/// tests/gluon/noinline_calls.py: program p adds `s * p + 1` to row 2p of x and `s - p` to
/// row 2p + 1 (f32; one rounding each: the launch's `s` makes `s * p` exact).
pub(super) fn noinline_calls(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let s = float_arg(plan, "s")?;
    let programs = plan.grid[0] as u64;
    if x.dtype != DType::F32 || x.shape.len() != 2 || x.shape[0] != 2 * programs {
        return Err("noinline_calls takes an f32 x of two rows per program".into());
    }
    let n = x.shape[1];
    let mut out = HostTensor::zeros("out", DType::F32, x.shape.clone());
    for p in 0..programs {
        let pf = p as f32;
        for (row, v) in [(2 * p, s * pf + 1.0), (2 * p + 1, s - pf)] {
            for j in 0..n {
                let i = row * n + j;
                put(&mut out, i, (f32_at(x, i) + v) as f64)?;
            }
        }
    }
    Ok(vec![Expected::exact("out", out)])
}

/// tests/gluon/device_assert.py: out = 2 * x (i32; the assertion holds on the launch's inputs).
pub(super) fn device_assert(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    if x.dtype != DType::I32 {
        return Err("device_assert takes an i32 x".into());
    }
    let mut out = HostTensor::zeros("out", DType::I32, x.shape.clone());
    for i in 0..x.numel() {
        out.set_bits(i, i32_at(x, i).wrapping_mul(2) as u32 as u64);
    }
    Ok(vec![Expected::exact("out", out)])
}

/// tests/gluon/exact_ops.py: `umulhi` of x and x reversed, the bits of y, the bits of y / 3
/// rounded to nearest; x's bits as a float clamped to [-2, 2] with NaN propagated (PTX
/// `max.NaN`/`min.NaN` give the canonical NaN), y clamped to [-0.5, 0.5].
pub(super) fn exact_ops(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let (x, y) = i32_x_f32_y(plan, inputs, "exact_ops")?;
    let n = x.numel();
    let mut u = HostTensor::zeros("u", DType::I32, vec![3, n]);
    let mut f = HostTensor::zeros("f", DType::F32, vec![2, n]);
    for i in 0..n {
        let a = x.get_bits(i) as u32;
        let b = x.get_bits(n - 1 - i) as u32;
        let yv = f32::from_bits(y.get_bits(i) as u32);
        u.set_bits(i, ((a as u64 * b as u64) >> 32) as u32 as u64);
        u.set_bits(n + i, yv.to_bits() as u64);
        u.set_bits(2 * n + i, (yv / 3.0).to_bits() as u64);
        let xf = f32::from_bits(a);
        let c = if xf.is_nan() {
            f32::from_bits(0x7fff_ffff)
        } else {
            xf.clamp(-2.0, 2.0)
        };
        f.set_bits(i, c.to_bits() as u64);
        let d = if yv.is_nan() { -0.5 } else { yv.clamp(-0.5, 0.5) };
        f.set_bits(n + i, d.to_bits() as u64);
    }
    Ok(vec![Expected::exact("u", u), Expected::exact("f", f)])
}

/// tests/gluon/3.8/cluster_convert.py: out = 2 * x, exactly (the layout conversions between the
/// CTAs of a cluster move values, they compute nothing).
pub(super) fn cluster_convert(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let out = f32_map(plan, inputs, "cluster_convert", "out", |v| v * 2.0)?;
    Ok(vec![Expected::exact("out", out)])
}

/// tests/gluon/smem_rows.py: out[r] = f16(i32(x[ROWS - 1 - r])) (truncation toward zero, then
/// the integer rounded to f16), hout = 2 * h in f16 (exact: doubling a finite f16 that does
/// not overflow).
pub(super) fn smem_rows(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let h = tensor(plan, inputs, "h")?;
    if x.dtype != DType::F32 || h.dtype != DType::F16 || x.shape.len() != 2 || h.shape != x.shape {
        return Err("smem_rows takes an f32 [rows, cols] x and an f16 h of its shape".into());
    }
    let (rows, cols) = (x.shape[0], x.shape[1]);
    let mut out = HostTensor::zeros("out", DType::F16, x.shape.clone());
    let mut hout = HostTensor::zeros("hout", DType::F16, x.shape.clone());
    for r in 0..rows {
        for c in 0..cols {
            let v = f32::from_bits(x.get_bits((rows - 1 - r) * cols + c) as u32);
            let i = if v.is_nan() { 0 } else { v.trunc() as i32 };
            out.set_bits(r * cols + c, half::f16::from_f64(i as f64).to_bits() as u64);
            let hv = half::f16::from_bits(h.get_bits(r * cols + c) as u16);
            hout.set_bits(
                r * cols + c,
                half::f16::from_f64(hv.to_f64() * 2.0).to_bits() as u64,
            );
        }
    }
    Ok(vec![Expected::exact("out", out), Expected::exact("hout", hout)])
}

/// The e2m1 value of a 4-bit code (OCP Microscaling Formats: sign bit 3, exponent bits 2:1
/// with bias 1, mantissa bit 0; exponent 0 is subnormal), by table.
fn e2m1(code: u8) -> f32 {
    const MAG: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let m = MAG[(code & 7) as usize];
    if code & 8 != 0 {
        -m
    } else {
        m
    }
}

/// tests/gluon/fp4_unpack.py: `cols` unpacks i8 a ([R, C/2]) along its columns, `rows`
/// unpacks i8 b ([R/2, C]) along its rows, each byte's low nibble first. Exact (every e2m1
/// value is a bf16 and an f16 value).
pub(super) fn fp4_unpack(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let [a, b] = tensors(plan, inputs, ["a", "b"])?;
    if a.shape.len() != 2
        || b.shape.len() != 2
        || a.shape[0] != 2 * b.shape[0]
        || b.shape[1] != 2 * a.shape[1]
    {
        return Err("fp4_unpack takes a of [R, C/2] and b of [R/2, C]".into());
    }
    let (rows, cols) = (a.shape[0], b.shape[1]);
    let nib = |t: &HostTensor, i: u64, hi: bool| {
        let byte = t.get_bits(i) as u8;
        e2m1(if hi { byte >> 4 } else { byte & 15 })
    };
    let mut c_out = HostTensor::zeros("cols", DType::F32, vec![rows, cols]);
    let mut r_out = HostTensor::zeros("rows", DType::F32, vec![rows, cols]);
    for r in 0..rows {
        for c in 0..cols {
            let v = nib(a, r * (cols / 2) + c / 2, c % 2 == 1);
            c_out.set_bits(r * cols + c, v.to_bits() as u64);
            let w = nib(b, (r / 2) * cols + c, r % 2 == 1);
            r_out.set_bits(r * cols + c, w.to_bits() as u64);
        }
    }
    Ok(Expected::all_exact([c_out, r_out]))
}
