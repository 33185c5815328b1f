//! Runtime values of the interpreter: scalars, register tiles, views of shared and tensor
//! memory, barrier addresses, pointers and tuples.
//!
//! This module owns the *representation* of values and the element-bit conversions tiles
//! use. It knows nothing of agents, memories or scheduling. Views are small `Copy` records
//! (a root buffer plus an origin and a shape), so copying a frame of values never allocates
//! except for tuples; tiles are reference counted.

use bwsim_isa::numeric;
use bwsim_isa::types::DType;
use half::{bf16, f16};
use std::sync::Arc;

/// Largest rank of a buffer or tile the simulator handles (the IR allows 5 for buffers;
/// reshapes and joins may add one): placement's.
pub const MAX_RANK: usize = bwsim_isa::placement::MAX_RANK;

/// A small fixed-capacity list of dimensions (`Copy`, no allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct Dims {
    n: u8,
    d: [u32; MAX_RANK],
}

impl Dims {
    /// Dimensions from a slice; `None` when the rank exceeds [`MAX_RANK`].
    pub fn from_slice(s: &[u32]) -> Option<Dims> {
        if s.len() > MAX_RANK {
            return None;
        }
        let mut d = [0; MAX_RANK];
        d[..s.len()].copy_from_slice(s);
        Some(Dims { n: s.len() as u8, d })
    }
    /// `rank` zeros.
    pub fn zeros(rank: usize) -> Dims {
        Dims {
            n: rank.min(MAX_RANK) as u8,
            d: [0; MAX_RANK],
        }
    }
    pub fn as_slice(&self) -> &[u32] {
        &self.d[..self.n as usize]
    }
    pub fn as_mut_slice(&mut self) -> &mut [u32] {
        &mut self.d[..self.n as usize]
    }
    pub fn len(&self) -> usize {
        self.n as usize
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Number of elements.
    pub fn numel(&self) -> u64 {
        self.as_slice().iter().map(|&x| x as u64).product()
    }
}

/// A shared-memory layout as views carry it: the isa's placement form of
/// [`bwsim_isa::typeck::SmemLayout`] (`Copy`, a `linear` layout inverted).
pub use bwsim_isa::placement::{Layout, LinearMap};

/// A view of a shared-memory buffer: the root buffer (its first byte, element type, shape and
/// layout) plus the view's origin inside the root and its own shape. Leading integer indices
/// drop root dimensions (`dropped` of them); slices keep them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SmemView {
    /// Byte offset of the root buffer in the CTA's shared memory (unswizzled).
    pub base: u32,
    pub dtype: DType,
    pub layout: Layout,
    pub root: Dims,
    /// Root index of the view's element 0 (rank of `root`).
    pub origin: Dims,
    /// Root dimensions dropped by integer indices (always the leading ones).
    pub dropped: u8,
    pub shape: Dims,
    /// Allocation index in the static plan (for diagnostics).
    pub alloc: u32,
}

impl SmemView {
    /// A view of a whole buffer of `shape` at shared byte `base` (an allocation, or a
    /// reinterpretation's new root).
    pub fn whole(base: u32, dtype: DType, layout: Layout, shape: Dims, alloc: u32) -> SmemView {
        SmemView {
            base,
            dtype,
            layout,
            root: shape,
            origin: Dims::zeros(shape.len()),
            dropped: 0,
            shape,
            alloc,
        }
    }

    /// The root index of view element `idx`.
    pub fn root_index(&self, idx: &[u32]) -> Dims {
        root_index(self.origin, self.dropped, idx)
    }
}

/// The root index of element `idx` of a view whose element 0 is at root index `origin` and
/// that dropped the `dropped` leading root dimensions.
fn root_index(origin: Dims, dropped: u8, idx: &[u32]) -> Dims {
    let mut r = origin;
    let off = dropped as usize;
    for (j, &i) in idx.iter().enumerate() {
        if let Some(x) = r.as_mut_slice().get_mut(off + j) {
            *x += i;
        }
    }
    r
}

/// A view of a tensor-memory buffer (same structure as [`SmemView`]; `col` is the root's first
/// column).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TmemView {
    pub col: u32,
    pub dtype: DType,
    pub block: [u32; 2],
    pub col_stride: u32,
    /// A block-scaled MMA's scale factors (`scales=true`): placed as the hardware reads them,
    /// every row in all four lane quarters ([`crate::views::tmem_element`]).
    pub scales: bool,
    pub root: Dims,
    pub origin: Dims,
    pub dropped: u8,
    pub shape: Dims,
    pub alloc: u32,
}

impl TmemView {
    pub fn root_index(&self, idx: &[u32]) -> Dims {
        root_index(self.origin, self.dropped, idx)
    }
}

/// A register tile: element type, shape and the raw bits of every element (row-major).
/// Keeping bits (not numbers) makes data movement bit exact, NaN payloads included.
#[derive(Clone, Debug, PartialEq)]
pub struct Tile {
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub bits: Vec<u64>,
}

impl Tile {
    pub fn numel(&self) -> usize {
        self.bits.len()
    }
    /// Element `i` as a number (floats decoded, integers sign- or zero-extended).
    pub fn f(&self, i: usize) -> f64 {
        bits_to_f64(self.dtype, self.bits[i])
    }
    /// Element `i` as an integer (floats truncated).
    pub fn i(&self, i: usize) -> i64 {
        bits_to_i64(self.dtype, self.bits[i])
    }
}

/// A runtime value.
#[derive(Clone, Debug, Default)]
pub enum Value {
    /// A slot not written yet.
    #[default]
    Unset,
    Int(i64),
    F32(f32),
    Bool(bool),
    Tile(Arc<Tile>),
    Smem(SmemView),
    Tmem(TmemView),
    /// One mbarrier (`count: None`) or an array of `count` at `addr`, `addr + 8`, ...
    Mbar {
        addr: u32,
        count: Option<u32>,
    },
    /// A `ptr(...)` parameter: index of the global tensor.
    Ptr(u32),
    Tuple(Arc<[Value]>),
}

impl Value {
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Unset => "an unset value",
            Value::Int(_) => "an integer",
            Value::F32(_) => "a float",
            Value::Bool(_) => "a boolean",
            Value::Tile(_) => "a tile",
            Value::Smem(_) => "a shared-memory view",
            Value::Tmem(_) => "a tensor-memory view",
            Value::Mbar { .. } => "an mbarrier",
            Value::Ptr(_) => "a pointer",
            Value::Tuple(_) => "a tuple",
        }
    }
    /// The value as an integer (booleans are 0/1, floats truncate).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            Value::Bool(b) => Some(*b as i64),
            Value::F32(f) => Some(*f as i64),
            _ => None,
        }
    }
    /// The value as a boolean (non-zero is true).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            Value::Int(v) => Some(*v != 0),
            Value::F32(f) => Some(*f != 0.0),
            _ => None,
        }
    }
}

/// Decode element bits to a number.
#[inline]
pub fn bits_to_f64(dtype: DType, bits: u64) -> f64 {
    match dtype {
        DType::F32 => f32::from_bits(bits as u32) as f64,
        DType::F16 => f16::from_bits(bits as u16).to_f64(),
        DType::BF16 => bf16::from_bits(bits as u16).to_f64(),
        d if d.is_int() => bits_to_i64(d, bits) as f64,
        d => numeric::decode(d, bits),
    }
}

/// Decode element bits to an integer (floats truncate toward zero).
#[inline]
pub fn bits_to_i64(dtype: DType, bits: u64) -> i64 {
    match dtype {
        DType::I1 => (bits & 1) as i64,
        DType::I8 => bits as u8 as i8 as i64,
        DType::I16 => bits as u16 as i16 as i64,
        DType::I32 => bits as u32 as i32 as i64,
        DType::I64 | DType::U64 => bits as i64,
        DType::U8 => (bits & 0xff) as i64,
        DType::U16 => (bits & 0xffff) as i64,
        DType::U32 => (bits & 0xffff_ffff) as i64,
        d => {
            let v = bits_to_f64(d, bits);
            if v.is_nan() {
                0
            } else {
                v as i64
            }
        }
    }
}

/// Encode an integer as element bits (wrapping to the width; i1 is `v != 0`).
#[inline]
pub fn i64_to_bits(dtype: DType, v: i64) -> u64 {
    match dtype {
        DType::I1 => (v != 0) as u64,
        d if d.is_int() => (v as u64) & numeric::mask(d),
        d => numeric::encode(d, v as f64),
    }
}

/// Round the exact-or-f64 result of an arithmetic operation to `dtype` (nearest even, directly
/// from f64 so that no double rounding happens for f16/bf16).
#[inline]
pub fn round_to(dtype: DType, v: f64) -> u64 {
    match dtype {
        DType::F32 => (v as f32).to_bits() as u64,
        DType::F16 => f16::from_f64(round_format(v, 10, -14, f16::MAX.to_f64())).to_bits() as u64,
        DType::BF16 => bf16::from_f64(round_format(v, 7, -126, bf16::MAX.to_f64())).to_bits() as u64,
        d if d.is_int() => {
            let i = if v.is_nan() { 0 } else { v.trunc() as i64 };
            i64_to_bits(d, i)
        }
        d => numeric::encode(d, v),
    }
}

/// Round `v` to the nearest value (ties to even) of a binary format with `mant` stored
/// mantissa bits, minimum normal exponent `min_exp` and largest finite value `max`; the result
/// is exactly representable, so converting it afterwards cannot double-round.
fn round_format(v: f64, mant: i32, min_exp: i32, max: f64) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    let a = v.abs();
    let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let q = 2f64.powi(e.max(min_exp) - mant);
    let r = (a / q).round_ties_even() * q;
    let r = if r > max { f64::INFINITY } else { r };
    r.copysign(v)
}

/// Row-major strides of a shape.
pub fn strides(shape: &[u32]) -> Vec<u64> {
    let mut s = vec![1u64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1] as u64;
    }
    s
}

/// Multi-index of linear index `lin` in `shape` (row-major), written into `out`.
pub fn unravel(mut lin: u64, shape: &[u32], out: &mut [u32]) {
    for i in (0..shape.len()).rev() {
        let d = shape[i].max(1) as u64;
        out[i] = (lin % d) as u32;
        lin /= d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_round_trip() {
        let d = Dims::from_slice(&[2, 3, 4]).expect("rank 3 fits");
        assert_eq!(d.as_slice(), &[2, 3, 4]);
        assert_eq!(d.numel(), 24);
        assert!(Dims::from_slice(&[1; 7]).is_none());
    }

    #[test]
    fn unravel_row_major() {
        let mut out = [0u32; 3];
        unravel(23, &[2, 3, 4], &mut out);
        assert_eq!(out, [1, 2, 3]);
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
    }

    #[test]
    fn f16_rounding_is_direct() {
        // 1 + 2^-11 + 2^-40: above the f16 tie point, so it rounds up; rounding through f32
        // first would lose the 2^-40 and produce a tie that rounds to even (down).
        let v = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(round_to(DType::F16, v), 0x3c01);
        assert_eq!(round_to(DType::F16, 1.0 + 2f64.powi(-11)), 0x3c00, "tie to even");
        assert_eq!(round_to(DType::F16, 65520.0), 0x7c00, "overflow to inf");
        assert_eq!(round_to(DType::F16, 65519.0), 0x7bff);
        assert_eq!(
            round_to(DType::F16, 2f64.powi(-25) * 1.5),
            0x0001,
            "subnormal rounds up"
        );
        assert_eq!(
            round_to(DType::BF16, 1.0 + 2f64.powi(-8) + 2f64.powi(-30)),
            0x3f81
        );
        assert_eq!(round_to(DType::BF16, -3.0), 0xc040);
    }
}
