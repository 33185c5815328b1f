//! CPU references of the Gluon language-coverage fixtures (tests/gluon/scalars.py,
//! tests/gluon/map_elementwise.py, tests/gluon/int_ptr.py): each written from the kernel's
//! documented semantics, in f32 arithmetic where the kernel's TTGIR does one f32 operation per
//! step.

use super::{int_arg, tensor, Expected, RefError};
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::DType;

fn f32_of(t: &HostTensor, i: u64) -> f32 {
    f32::from_bits(t.get_bits(i) as u32)
}

fn f32_out(name: &str, like: &HostTensor, values: &[f32]) -> Result<HostTensor, RefError> {
    if like.dtype != DType::F32 || like.numel() != values.len() as u64 {
        return Err(format!("`{name}` must be f32 with {} elements", values.len()).into());
    }
    let mut o = HostTensor::zeros(name, DType::F32, like.shape.clone());
    for (i, v) in values.iter().enumerate() {
        o.set_bits(i as u64, v.to_bits() as u64);
    }
    Ok(o)
}

/// `scalars_kernel`: `out[i] = x[3 + i] * x[0] + x[1]` for `i < n` (lanes `n..N` load 0.0, so
/// `x[1]`), `out[N] = (x[0] + x[1]) + x[2]`, every other element as launched; each step one f32
/// operation rounded to nearest (the TTGIR has separate multiply and add).
pub(super) fn scalars(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let out = tensor(plan, inputs, "out")?;
    let n = int_arg(plan, "n")?.max(0) as u64;
    let lanes = 128u64;
    if x.numel() < 3 + lanes || out.numel() < lanes + 1 {
        return Err("scalars_kernel needs x of at least 131 and out of at least 129 elements".into());
    }
    let (scale, shift, third) = (f32_of(x, 0), f32_of(x, 1), f32_of(x, 2));
    let mut v: Vec<f32> = (0..out.numel()).map(|i| f32_of(out, i)).collect();
    for i in 0..lanes {
        let xi = if i < n { f32_of(x, 3 + i) } else { 0.0 };
        v[i as usize] = xi * scale + shift;
    }
    v[lanes as usize] = scale + shift + third;
    Ok(vec![Expected::exact("out", f32_out("out", out, &v)?)])
}

/// `map_elementwise_kernel`: `out[0, i] = x[i] if x[i] > y[i] else y[i]` and
/// `out[1, i] = x[i] * y[i] + 0.5` for even `i`, `x[i] - y[i]` for odd `i` (f32 steps).
pub(super) fn map_elementwise(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let y = tensor(plan, inputs, "y")?;
    let out = tensor(plan, inputs, "out")?;
    let n = x.numel();
    if y.numel() != n || out.numel() != 2 * n {
        return Err("map_elementwise_kernel takes x and y of N elements and out of [2, N]".into());
    }
    let mut v = vec![0f32; 2 * n as usize];
    for i in 0..n {
        let (a, b) = (f32_of(x, i), f32_of(y, i));
        v[i as usize] = if a > b { a } else { b };
        v[(n + i) as usize] = if i % 2 == 0 { a * b + 0.5 } else { a - b };
    }
    Ok(vec![Expected::exact("out", f32_out("out", out, &v)?)])
}

/// `int_ptr_kernel` (tests/gluon/int_ptr.py): program `p` of the grid copies its BLOCK elements
/// (BLOCK = x's length / programs) as `out[i] = x[i] + y[i]` (one f32 addition), read through
/// pointers rebuilt from byte addresses, and writes `rems[p] = (4 p) mod 16`: the remainder
/// modulo 16 of the address of element `p` of its tile, every tensor's address being a multiple
/// of 16 bytes.
pub(super) fn int_ptr(plan: &LaunchPlan, inputs: &[HostTensor]) -> Result<Vec<Expected>, RefError> {
    let x = tensor(plan, inputs, "x")?;
    let y = tensor(plan, inputs, "y")?;
    let out = tensor(plan, inputs, "out")?;
    let rems = tensor(plan, inputs, "rems")?;
    let programs = plan.grid[0] as u64;
    let n = x.numel();
    if y.numel() != n || out.numel() != n || rems.numel() != programs || rems.dtype != DType::I32 {
        return Err("int_ptr_kernel takes x, y and out of one length and one i32 rem per program".into());
    }
    let v: Vec<f32> = (0..n).map(|i| f32_of(x, i) + f32_of(y, i)).collect();
    let mut r = HostTensor::zeros("rems", DType::I32, rems.shape.clone());
    for p in 0..programs {
        r.set_bits(p, (4 * p) % 16);
    }
    Ok(vec![
        Expected::exact("out", f32_out("out", out, &v)?),
        Expected::exact("rems", r),
    ])
}
