//! Tensor maps (`CUtensorMap`) as a launch gives them to a PTX kernel, and the boxes
//! `cp.async.bulk.tensor` moves with them (tiled mode).
//!
//! A kernel receives a tensor map as a `.param .align 64 .b8 NAME[128]` parameter whose bytes
//! the driver encodes. The PTX front end does not decode those bytes: the launch gives the
//! fields ([`TensorMap`]: the launch buffer it starts at, element size, dimensions, strides,
//! box, swizzle), which are what `cuTensorMapEncodeTiled` takes (CUDA Driver API reference).
//! The box lands in shared memory densely, innermost dimension first, and the swizzle permutes
//! the 16-byte chunks of each 128-byte row span by the bits of the absolute shared address
//! ([`Swizzle::apply`], the placement bwsim's `.tile` path uses; docs/semantics.md, "Shared
//! memory swizzle"). Elements outside the tensor read as zero and are not written by stores.

use bwsim_isa::types::{DType, Swizzle};
use bwsim_isa::value_types::TmaReduceOp;

/// One tensor map: a tiled view of a launch buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorMap {
    /// The launch buffer the tensor starts at (its first byte).
    pub buffer: usize,
    /// Bytes of one element (1, 2, 4 or 8).
    pub elem_bytes: u32,
    /// The element type (the map's data type, which a TMA reduction combines elements as).
    pub dtype: DType,
    /// Elements along each dimension, innermost first.
    pub dims: Vec<u64>,
    /// Bytes between consecutive indices of each dimension but the innermost (whose elements
    /// are contiguous), innermost first: `strides[k]` steps dimension `k + 1`.
    pub strides: Vec<u64>,
    /// The box: elements along each dimension, innermost first.
    pub box_dims: Vec<u32>,
    pub swizzle: Swizzle,
}

/// One element of a box: its shared-memory byte (after the swizzle) and its byte offset in
/// the launch buffer (`None` outside the tensor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxElem {
    pub smem: u32,
    pub global: Option<u64>,
}

impl TensorMap {
    /// Why the map cannot be encoded, if it cannot (the limits `cuTensorMapEncodeTiled`
    /// states: 1 to 5 dimensions, box sides 1 to 256, an inner box of a multiple of 16 bytes
    /// that fits the swizzle span, 16-byte multiple strides).
    pub fn validate(&self) -> Result<(), String> {
        let n = self.dims.len();
        if !(1..=5).contains(&n) || self.box_dims.len() != n || self.strides.len() + 1 != n {
            return Err(format!(
                "a tensor map of {n} dimensions needs {n} box sides and {} strides",
                n.saturating_sub(1)
            ));
        }
        if !matches!(self.elem_bytes, 1 | 2 | 4 | 8) {
            return Err(format!("elements of {} bytes", self.elem_bytes));
        }
        if self.box_dims.iter().any(|&b| !(1..=256).contains(&b)) {
            return Err(format!("box {:?}: each side must be 1 to 256", self.box_dims));
        }
        let inner = self.box_dims[0] * self.elem_bytes;
        if !inner.is_multiple_of(16) {
            return Err(format!(
                "the box's inner side is {inner} bytes, not a multiple of 16"
            ));
        }
        if self.swizzle != Swizzle::None && inner > self.swizzle.bytes() {
            return Err(format!(
                "the box's inner side is {inner} bytes, wider than its {}-byte swizzle",
                self.swizzle.bytes()
            ));
        }
        if self.strides.iter().any(|s| s % 16 != 0) {
            return Err(format!(
                "strides {:?} must be multiples of 16 bytes",
                self.strides
            ));
        }
        Ok(())
    }

    /// Bytes of one box (what a load delivers to its mbarrier, out-of-bounds elements included).
    pub fn box_bytes(&self) -> u64 {
        self.box_dims.iter().map(|&b| b as u64).product::<u64>() * self.elem_bytes as u64
    }

    /// The elements of the box at `coords` (innermost first) placed at shared byte `dst`, in
    /// shared-memory order.
    pub fn elements(&self, coords: &[i64], dst: u32) -> Vec<BoxElem> {
        let n = self.box_dims.len();
        let total: u64 = self.box_dims.iter().map(|&b| b as u64).product();
        let mut out = Vec::with_capacity(total as usize);
        let mut idx = vec![0u32; n];
        for k in 0..total {
            let mut inside = true;
            let mut g = 0u64;
            for (d, &i) in idx.iter().enumerate() {
                let c = coords.get(d).copied().unwrap_or(0) + i as i64;
                if c < 0 || c as u64 >= self.dims[d] {
                    inside = false;
                    break;
                }
                g += if d == 0 {
                    c as u64 * self.elem_bytes as u64
                } else {
                    c as u64 * self.strides[d - 1]
                };
            }
            let linear = dst as u64 + k * self.elem_bytes as u64;
            out.push(BoxElem {
                smem: self.swizzle.apply(linear as u32),
                global: inside.then_some(g),
            });
            for (i, &side) in idx.iter_mut().zip(&self.box_dims) {
                *i += 1;
                if *i < side {
                    break;
                }
                *i = 0;
            }
        }
        out
    }

    /// The elements a gather4 (`scatter`: a scatter4) moves: the rows `coords[1..5]` of the
    /// 2-D tensor, `box_dims[0]` elements each from column `coords[0]`, placed in shared memory
    /// as four consecutive rows of the box layout from `dst` (PTX ISA, `cp.async.bulk.tensor`,
    /// `.tile::gather4`). The map's box is one row. Rows and columns outside the tensor read as
    /// zero and are not written; a column whose byte offset is not a multiple of 16, and a
    /// scatter's negative row or column, are errors (the hardware traps).
    pub fn rows4(&self, coords: &[i64], dst: u32, scatter: bool) -> Result<Vec<BoxElem>, String> {
        let what = if scatter { "scatter4" } else { "gather4" };
        if self.dims.len() != 2 || self.box_dims.get(1) != Some(&1) || coords.len() != 5 {
            return Err(format!(
                "{what} takes a 2-D tensor map with a box of one row, a column and four rows"
            ));
        }
        let col = coords[0];
        if (col * self.elem_bytes as i64).rem_euclid(16) != 0 {
            return Err(format!(
                "{what} at column {col}, whose byte offset is not a multiple of 16"
            ));
        }
        let row_bytes = self.box_dims[0] * self.elem_bytes;
        let mut out = Vec::with_capacity(4 * self.box_dims[0] as usize);
        for (i, &r) in coords[1..].iter().enumerate() {
            if scatter && (r < 0 || col < 0) {
                return Err(format!("scatter4 at the negative row {r} or column {col}"));
            }
            out.extend(self.elements(&[col, r], dst + i as u32 * row_bytes));
        }
        Ok(out)
    }
}

/// A TMA reduction's update of one global element `dst` by the shared element `src` (both
/// little-endian elements of type `d`): the simulator's reduction arithmetic
/// ([`TmaReduceOp::apply`]).
pub fn reduce_into(dst: &mut [u8], src: &[u8], op: TmaReduceOp, d: DType) {
    let word = |b: &[u8]| {
        b.iter()
            .take(8)
            .enumerate()
            .fold(0u64, |v, (i, x)| v | (*x as u64) << (8 * i))
    };
    let new = op.apply(d, word(dst), word(src));
    for (i, x) in dst.iter_mut().enumerate() {
        *x = if i < 8 { (new >> (8 * i)) as u8 } else { 0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(swizzle: Swizzle) -> TensorMap {
        TensorMap {
            buffer: 0,
            elem_bytes: 4,
            dtype: DType::F32,
            dims: vec![64, 32],
            strides: vec![256],
            box_dims: vec![32, 32],
            swizzle,
        }
    }

    #[test]
    fn boxes_are_dense_then_swizzled_by_absolute_address() {
        let m = map(Swizzle::None);
        assert_eq!(m.validate(), Ok(()));
        let e = m.elements(&[32, 1], 1024);
        // Element (row 0, col 1) of the box: global row 1, column 33.
        assert_eq!(
            e[1],
            BoxElem {
                smem: 1028,
                global: Some(256 + 33 * 4)
            }
        );
        // Row 1 of the box starts 128 bytes in.
        assert_eq!(e[32].smem, 1024 + 128);
        let s = map(Swizzle::B128).elements(&[0, 0], 1024);
        // 128B swizzle: in row r (of 128 bytes), chunk c lands at chunk c ^ (r % 8).
        assert_eq!(s[32].smem, 1024 + 128 + 16);
        assert_eq!(s[32 + 4].smem, 1024 + 128);
        assert_eq!(m.box_bytes(), 4096);
    }

    #[test]
    fn out_of_bounds_elements_have_no_global_byte() {
        let e = map(Swizzle::None).elements(&[48, 30], 0);
        assert_eq!(e[15].global, Some(30 * 256 + 63 * 4));
        assert_eq!(e[16].global, None);
        assert_eq!(e[2 * 32].global, None);
    }

    #[test]
    fn bad_maps_are_refused() {
        let mut m = map(Swizzle::B64);
        assert!(m.validate().is_err_and(|e| e.contains("wider than")));
        m.swizzle = Swizzle::None;
        m.box_dims[0] = 2;
        assert!(m.validate().is_err_and(|e| e.contains("multiple of 16")));
    }
}
