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

mod attention;
mod conversions;
mod elementwise;
mod language;
mod matmul;
mod movement;
mod reduction;
mod scaled;

use bwsim_isa::launch::{ArgValue, HostTensor, LaunchPlan};
use bwsim_isa::DType;
use half::{bf16, f16};

pub use crate::compare::Tolerance;

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

impl RefError {
    /// Whether the launch is not the one the reference is written for (a tensor or scalar it
    /// reads is absent): a kernel that only shares a bundled kernel's name, whose run is then
    /// left unchecked rather than failed.
    pub fn launch_differs(&self) -> bool {
        matches!(
            self,
            RefError::NoTensor(_) | RefError::MissingInput(_) | RefError::NoInt(_) | RefError::NoFloat(_)
        )
    }
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
/// ue4m3 = unsigned E4M3; integers two's complement (the IR's own decoding: nothing to derive).
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
        // A pure exponent: no sign, no mantissa, 0xFF the NaN.
        DType::UE8M0 => match bits as u8 {
            0xff => f64::NAN,
            e => 2f64.powi(i32::from(e) - 127),
        },
        // Two's complement (or unsigned) integers have one reading, the IR's.
        d => bwsim_isa::numeric::decode(d, bits),
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

/// The expected content of one output tensor.
#[derive(Clone, Debug)]
pub struct Expected {
    pub tensor: String,
    pub values: HostTensor,
    pub tol: Tolerance,
}

impl Expected {
    /// `tensor` must hold `values` within `tol`.
    pub fn new(tensor: &str, values: HostTensor, tol: Tolerance) -> Expected {
        Expected {
            tensor: tensor.into(),
            values,
            tol,
        }
    }

    /// `tensor` must hold `values` bit for bit.
    pub fn exact(tensor: &str, values: HostTensor) -> Expected {
        Expected::new(tensor, values, Tolerance::Exact)
    }

    /// Each of `tensors` must hold what it holds now, bit for bit (named by its own name).
    pub fn all_exact(tensors: impl IntoIterator<Item = HostTensor>) -> Vec<Expected> {
        tensors
            .into_iter()
            .map(|t| Expected::exact(&t.name.clone(), t))
            .collect()
    }

    /// `tensor` must hold `values` within `atol + rtol * |expected|`.
    pub fn close(tensor: &str, values: HostTensor, atol: f64, rtol: f64) -> Expected {
        Expected::new(tensor, values, Tolerance::Close { atol, rtol })
    }
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

/// Compare `actual` with `expected` element by element, by the one comparator
/// ([`crate::compare`], whose documentation states the rules): a tensor of another element
/// type or size mismatches in every element.
pub fn compare(actual: &HostTensor, e: &Expected) -> Comparison {
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
    let m = crate::compare::elements(actual, &e.values, e.tol, 1);
    c.mismatches = m.count;
    c.max_abs_err = m.max_abs_err;
    c.first_mismatch = m.first.first().map(|&i| (i, val(actual, i), val(&e.values, i)));
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

/// The input tensors of the launch named `names`, in order ([`tensor`] each).
fn tensors<'a, const N: usize>(
    plan: &LaunchPlan,
    inputs: &'a [HostTensor],
    names: [&str; N],
) -> Result<[&'a HostTensor; N], RefError> {
    let found: Vec<&HostTensor> = (names.iter())
        .map(|name| tensor(plan, inputs, name))
        .collect::<Result<_, _>>()?;
    found.try_into().map_err(|_| "one tensor per name".into())
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
        "elementwise_add_ws" | "elementwise_add_tma" => elementwise::add(plan, inputs),
        "async_gather" => movement::gather(plan, inputs),
        "async_scatter" => movement::scatter(plan, inputs),
        "tcgen05_copy" | "subtiled_epilogue" | "subtiled_epilogue_kernel" => movement::identity(plan, inputs),
        "matmul_pipelined"
        | "persistent_matmul"
        | "persistent_matmul_pipelined"
        | "matmul_warp_specialized" => matmul::matmul(plan, inputs),
        "matmul_accumulate" => matmul::matmul_accumulate(plan, inputs),
        "wgmma_dtypes" | "tcgen05_dtypes" => matmul::wgmma_dtypes(plan, inputs),
        "wgmma_regs_kernel" => matmul::wgmma_regs(plan, inputs),
        "matmul_fused_gather_scatter" => matmul::fused_gather_scatter(plan, inputs),
        "gemm_async" | "tcgen05_mma_tile" => scaled::gemm_async(plan, inputs),
        "mma_scaled"
        | "mma_scaled_kernel"
        | "mma_scaled_contig_kernel"
        | "mma_scaled_packed_kernel"
        | "mma_scaled_copy_kernel"
        | "mma_scaled_pipelined_kernel"
        | "mma_scaled_ws_kernel" => scaled::mma_scaled(plan, inputs),
        "tma_roundtrip" | "copy_1d_kernel" | "copy_2d_kernel" | "tmem_roundtrip_kernel" => {
            movement::identity(plan, inputs)
        }
        "scalars_kernel" => language::scalars(plan, inputs),
        "map_elementwise_kernel" => language::map_elementwise(plan, inputs),
        "int_ptr_kernel" => language::int_ptr(plan, inputs),
        "wgmma_matmul_kernel" => matmul::matmul(plan, inputs),
        "gather_rows" => movement::gather(plan, inputs),
        "softmax" | "softmax_kernel" | "cluster_softmax_kernel" => attention::softmax(plan, inputs),
        "tile_math" => elementwise::tile_math(plan, inputs),
        "attention" | "attention_kernel" | "attention_f32x2_kernel" => {
            attention::attention(plan, inputs, false)
        }
        "attention_f32x2_causal_kernel" => attention::attention(plan, inputs, true),
        "attention_pingpong_kernel" => attention::attention_causal(plan, inputs),
        "per_thread_kernel" => elementwise::per_thread(plan, inputs),
        "reductions_kernel" => reduction::combiner_reductions(plan, inputs),
        "pair_reductions_kernel" => reduction::pair_reductions(plan, inputs),
        "fp4_unpack_kernel" => elementwise::fp4_unpack(plan, inputs),
        "register_gather_histogram_kernel" => reduction::register_gather_histogram(plan, inputs),
        "register_gather_histogram_low_bits" => reduction::register_gather_histogram_low_bits(plan, inputs),
        "claims_kernel" => reduction::claims(plan, inputs),
        "int_ops" | "int_ops_kernel" => elementwise::int_ops(plan, inputs),
        "bit_tricks_kernel" => elementwise::bit_tricks(plan, inputs),
        "exact_ops_kernel" => elementwise::exact_ops(plan, inputs),
        "fp_rounding_kernel" => conversions::fp_rounding(plan, inputs),
        "flag_acquire_kernel" => elementwise::flag_acquire(plan, inputs),
        "noinline_calls_kernel" => elementwise::noinline_calls(plan, inputs),
        "device_assert_kernel" => elementwise::device_assert(plan, inputs),
        "smem_rows_kernel" => elementwise::smem_rows(plan, inputs),
        "cluster_convert_kernel" => elementwise::cluster_convert(plan, inputs),
        "while_loop" | "while_loop_kernel" => elementwise::while_loop(plan, inputs),
        "atomics" | "atomics_kernel" => reduction::atomics(plan, inputs),
        "scan" | "scan_kernel" => reduction::scan(plan, inputs),
        "cp_async" | "cp_async_kernel" => elementwise::cp_async(plan, inputs),
        "cp_async_overlap" | "cp_async_overlap_kernel" => movement::second_copy(plan, inputs),
        "dsmem_ring" | "dsmem_relaxed_handoff_fixed" | "dsmem_remote_arrive_no_wait_fixed" => {
            movement::dsmem_ring(plan, inputs, false)
        }
        "dsmem_cluster_exit_fixed" => movement::dsmem_ring(plan, inputs, true),
        "multicast_copy_expect_cluster_fixed" => movement::multicast_copy(plan, inputs),
        "conv2d_kernel" | "conv2d_wgmma_kernel" => matmul::conv2d(plan, inputs),
        "grouped_scale_kernel" => movement::grouped_scale(plan, inputs),
        // The new-feature kernels of Triton 3.7 to 3.9 (tests/gluon/3.7/, 3.8/, 3.9/).
        "commit_pred_kernel"
        | "multicast_matmul_kernel"
        | "cluster_matmul_2x2_kernel"
        | "two_cta_matmul_kernel"
        | "pair_multicast_matmul_kernel"
        | "pair_ring_matmul_kernel"
        | "clc_pair_matmul_kernel"
        | "clc_ws_matmul_kernel"
        | "two_cta_matmul"
        | "two_cta_matmul_commit_one_cta_fixed"
        | "tmem_row_slice_kernel" => matmul::matmul(plan, inputs),
        "clc_scale_kernel" => elementwise::clc_scale(plan, inputs),
        "clc_cluster_flags_kernel" => elementwise::clc_cluster_flags(plan, inputs),
        "packed_arith_kernel" => elementwise::packed_arith(plan, inputs),
        "inline_asm_kernel" => elementwise::inline_asm(plan, inputs),
        "math_fns_kernel" => elementwise::math_fns(plan, inputs),
        "bitcast_fp8_kernel" => conversions::bitcast_fp8(plan, inputs),
        "fp8_arith_kernel" => conversions::fp8_arith(plan, inputs),
        "fp4_fma_kernel" => conversions::fp4_fma(plan, inputs),
        "packed_minmax_kernel" => elementwise::packed_minmax(plan, inputs),
        "smem_gather_scatter_kernel" => movement::smem_gather_scatter(plan, inputs),
        "smem_histogram_kernel" => reduction::smem_histogram(plan, inputs),
        "tma_reduce_kernel" => reduction::tma_reduce(plan, inputs),
        "flag_handoff_kernel" => elementwise::flag_handoff(plan, inputs),
        "cluster_ws_pairs_kernel" => reduction::column_sums(plan, inputs),
        "cp_async_mbarrier_kernel" => reduction::cp_async_mbarrier(plan, inputs),
        _ => return None,
    };
    Some(r)
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

#[cfg(test)]
mod tests {
    use super::matmul::mm_values;
    use super::scaled::unpack_fp4;
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
        let e = Expected::close("c", want.clone(), 0.0, 0.1);
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
