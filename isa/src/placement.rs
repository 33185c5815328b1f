//! Where an element lives: a shared-memory buffer element → byte offset (and bit) with its
//! swizzle, the bytes a buffer occupies, and a tensor-memory buffer element → (lane, column,
//! bit), scale-factor views included. This is THE placement of bwsim: the simulator places
//! every access with it and the PTX backend builds its address maps from it, so the two
//! cannot disagree about where an element is. It knows nothing of views, values or
//! registers; callers index a buffer's full shape.
//!
//! NVMMA layouts (Gluon's `NVMMASharedLayout`, what TMA writes and tensor cores read):
//! - the contiguous dimension is the last one (the second to last when `transposed`, i.e. an
//!   MN-major operand): a buffer `[.., R, C]` is a stack of matrices with rows of `C` elements;
//! - a row narrower than the swizzle span still occupies a whole span (padding)
//!   [docs/semantics.md#shared-memory-swizzle];
//! - a row wider than the span is split into column blocks, each a dense `[R, span]` block
//!   (how Triton issues span-wide TMA messages);
//! - `fp4_padded`: every 8 data bytes of a row are followed by 8 bytes of padding;
//! - the XOR swizzle is applied to the ABSOLUTE shared-memory address with
//!   [`Swizzle::apply`](crate::types::Swizzle::apply) [docs/semantics.md#shared-memory-swizzle,
//!   H100], so a buffer not aligned to the pattern period sees a shifted pattern.
//!
//! `plain` is dense row-major; `swizzled(vec, per_phase, max_phase)` is Gluon's
//! `SwizzledSharedLayout` (order `[.., 1, 0]`), a permutation within each row; `linear(bases)`
//! is Gluon's `SharedLinearLayout` (a reshaped or permuted view of a dense buffer): offset bit
//! `i` holds coordinates `bases[i]`, inverted once ([`LinearSmem`]) into the offset of each
//! coordinate bit.
//!
//! Tensor memory (docs/semantics.md#tensor-memory, Triton's `TensorMemoryLayout`): element (m, n)
//! of an `[M, N]` buffer with block `[BM, BN]` and `cs` = bits * col_stride / 32 columns per
//! element lives in lane `m % BM` (BM = 128) or `(r / 16) * 32 + r % 16` with `r = m % 64` (BM =
//! 64), column `(m / BM) * ceil(N / BN) * BN * cs + (n / BN) * BN * cs + (n % BN) * cs`; leading
//! dimensions stack whole matrices along the columns.
//!
//! Scale factors of a block-scaled MMA (`scales=true`, docs/hardware/tmem-scales.md): factor
//! (m, kb) of an `[M, nk]` matrix lives in lane `m % 32` of every lane quarter, column
//! `(kb / 4) * ceil(M / 32) + m / 32`, byte `kb % 4` ([`scale_cell`]).

use crate::types::DType;
use crate::value_types::{SmemLayout, SmemLayoutOf};

/// Largest rank of a buffer placement handles (the IR allows 6 dimensions).
pub const MAX_RANK: usize = 6;

/// Largest number of offset bits (elements `2^16`) a `linear` shared layout may have.
pub const LINEAR_SMEM_MAX_BITS: usize = 16;

/// A `linear` shared layout inverted: for each coordinate bit (dimension 0's bits first, low
/// bit first), the element offset it contributes. Built from the offset bases by Gaussian
/// elimination over GF(2); exists only for a bijection between the offsets `0..2^n` and the
/// coordinates of a shape whose dimensions are powers of two.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearSmem {
    /// Bits of each dimension: the dimension's size is `1 << dim_bits[d]`.
    pub dim_bits: Vec<u8>,
    /// Offset contributed by each coordinate bit, in the order of `dim_bits`.
    pub offsets: Vec<u32>,
}

/// Why offset bases make no linear shared layout.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinearSmemError {
    #[error(
        "{0} offset bits: linear shared layouts of at most 2^{LINEAR_SMEM_MAX_BITS} elements are supported"
    )]
    TooManyBits(usize),
    #[error("every offset basis needs one coordinate per dimension")]
    Ragged,
    #[error("{offsets} offset bits map onto {coords} coordinate bits: not one to one")]
    BitCount { offsets: usize, coords: usize },
    #[error("the offset bases are linearly dependent: not one to one")]
    Dependent,
}

impl LinearSmem {
    /// Inverts offset bases (`bases[i]`: the coordinates of offset bit `i`). Errors name what
    /// is wrong: ragged bases, too many bits, or a map that is not one to one.
    pub fn new(bases: &[Vec<u32>]) -> Result<LinearSmem, LinearSmemError> {
        let n = bases.len();
        if n > LINEAR_SMEM_MAX_BITS {
            return Err(LinearSmemError::TooManyBits(n));
        }
        let rank = bases.first().map_or(0, |b| b.len());
        if bases.iter().any(|b| b.len() != rank) {
            return Err(LinearSmemError::Ragged);
        }
        // Bits each dimension needs: the highest coordinate bit any basis sets.
        let dim_bits: Vec<u8> = (0..rank)
            .map(|d| {
                let all = bases.iter().fold(0u32, |a, b| a | b[d]);
                (32 - all.leading_zeros()) as u8
            })
            .collect();
        let total: usize = dim_bits.iter().map(|&b| b as usize).sum();
        if total != n {
            return Err(LinearSmemError::BitCount {
                offsets: n,
                coords: total,
            });
        }
        // Row i: the coordinate-bit vector of offset bit i (as a u32 bit set), augmented with
        // the identity; eliminate to find which offsets give each coordinate bit.
        let pos: Vec<usize> = dim_bits
            .iter()
            .scan(0usize, |acc, &b| {
                let p = *acc;
                *acc += b as usize;
                Some(p)
            })
            .collect();
        let mut rows: Vec<(u32, u32)> = bases
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let mut v = 0u32;
                for (d, &c) in b.iter().enumerate() {
                    v |= c << pos[d];
                }
                (v, 1u32 << i)
            })
            .collect();
        let mut offsets = vec![0u32; n];
        for col in 0..n {
            let Some(p) = (col..n).find(|&r| rows[r].0 >> col & 1 == 1) else {
                return Err(LinearSmemError::Dependent);
            };
            rows.swap(col, p);
            let pivot = rows[col];
            for (r, row) in rows.iter_mut().enumerate() {
                if r != col && row.0 >> col & 1 == 1 {
                    row.0 ^= pivot.0;
                    row.1 ^= pivot.1;
                }
            }
        }
        for (col, off) in offsets.iter_mut().enumerate() {
            *off = rows[col].1;
        }
        Ok(LinearSmem { dim_bits, offsets })
    }

    /// The shape this layout covers.
    pub fn shape(&self) -> Vec<u32> {
        self.dim_bits.iter().map(|&b| 1u32 << b).collect()
    }

    /// Element offset of coordinates `idx`.
    pub fn offset(&self, idx: &[u32]) -> u32 {
        let mut o = 0;
        let mut k = 0;
        for (d, &b) in self.dim_bits.iter().enumerate() {
            let x = idx.get(d).copied().unwrap_or(0);
            for bit in 0..b {
                if x >> bit & 1 == 1 {
                    o ^= self.offsets[k];
                }
                k += 1;
            }
        }
        o
    }
}

/// The offset bases of the row-major layout of `shape` (dimensions powers of two): what
/// `linear(...)` a plain buffer is.
pub fn row_major_bases(shape: &[u32]) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for d in (0..shape.len()).rev() {
        let mut c = 1;
        while c < shape[d] {
            let mut v = vec![0; shape.len()];
            v[d] = c;
            out.push(v);
            c <<= 1;
        }
    }
    out
}

/// Lanes of one TMEM lane quarter (a warp reaches one quarter, docs/semantics.md#tensor-memory).
pub const TMEM_QUARTER_LANES: u32 = 32;

/// TMEM columns of one `[rows, nk]` matrix of block-scaled MMA scale factors of `bits` bits
/// each, in the hardware's placement (see [`scale_cell`]): `ceil(rows / 32)` columns per 32
/// bits of a row's factors. A 128-row matrix of up to four 8-bit factors per row takes 4
/// columns (docs/hardware/tmem-scales.md).
pub fn scale_matrix_cols(rows: u32, nk: u32, bits: u32) -> u32 {
    let per_row = nk.saturating_mul(bits).div_ceil(32).max(1);
    rows.div_ceil(TMEM_QUARTER_LANES).max(1).saturating_mul(per_row)
}

/// Where factor `(m, kb)` (row `m`, K block `kb`) of a `[rows, nk]` scale-factor matrix of
/// `bits`-bit factors lives, relative to the matrix's first column: `(lane within a lane
/// quarter, column, bit shift inside the 32-bit cell)`. Row `m` sits in lane `m % 32` of EVERY
/// lane quarter (the four copies are what the four datapaths of the MMA read), column
/// `m / 32` of its group of 4 K blocks, the K blocks of a group as consecutive bytes of the
/// cell, which the MMA selects with the scale-factor id of its instruction descriptor; the
/// next group of K blocks follows after `ceil(rows / 32)` columns.
///
/// Provenance: docs/hardware/tmem-scales.md (CUTLASS `UMMA::tmem_sf_frg`, Triton 3.6's
/// `TensorMemoryScalesLayout` stores and instruction descriptors).
pub fn scale_cell(rows: u32, m: u32, kb: u32, bits: u32) -> (u32, u32, u32) {
    let bits = bits.clamp(1, 32);
    let per_cell = 32 / bits;
    let chunks = rows.div_ceil(TMEM_QUARTER_LANES).max(1);
    (
        m % TMEM_QUARTER_LANES,
        (kb / per_cell)
            .saturating_mul(chunks)
            .saturating_add(m / TMEM_QUARTER_LANES),
        (kb % per_cell) * bits,
    )
}

/// A shared-memory layout ready for placement: a `Copy` value, a `linear` layout already
/// inverted ([`LinearMap`]). Built from the checker's [`SmemLayout`].
pub type Layout = SmemLayoutOf<LinearMap>;

/// A `linear` shared layout as a `Copy` value: the element offset each coordinate bit
/// contributes (dimension 0's bits first), XORed ([`LinearSmem`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinearMap {
    pub dim_bits: [u8; MAX_RANK],
    pub offsets: [u16; LINEAR_SMEM_MAX_BITS],
}

impl LinearMap {
    /// From the offset bases; `None` for a map the type checker refuses (not one to one,
    /// too many bits or dimensions).
    pub fn new(bases: &[Vec<u32>]) -> Option<LinearMap> {
        let l = LinearSmem::new(bases).ok()?;
        if l.dim_bits.len() > MAX_RANK {
            return None;
        }
        let mut m = LinearMap {
            dim_bits: [0; MAX_RANK],
            offsets: [0; LINEAR_SMEM_MAX_BITS],
        };
        m.dim_bits[..l.dim_bits.len()].copy_from_slice(&l.dim_bits);
        for (o, &x) in m.offsets.iter_mut().zip(&l.offsets) {
            *o = u16::try_from(x).ok()?;
        }
        Some(m)
    }

    /// Element offset of coordinates `idx`.
    pub fn offset(&self, idx: &[u32]) -> u64 {
        let mut o = 0u64;
        let mut k = 0;
        for (d, &x) in idx.iter().enumerate().take(MAX_RANK) {
            for bit in 0..self.dim_bits[d] {
                if x >> bit & 1 == 1 {
                    o ^= self.offsets[k] as u64;
                }
                k += 1;
            }
        }
        o
    }
}

impl From<&SmemLayout> for Layout {
    fn from(l: &SmemLayout) -> Layout {
        // The type checker refuses a linear layout without an inverse; an unchecked one reads
        // as plain.
        l.map_linear(|bases| LinearMap::new(bases).map_or(Layout::Plain, |m| Layout::Linear { bases: m }))
    }
}

/// Bit offset of element `idx` of a buffer, relative to the buffer's first byte, before any
/// swizzle. `shape` and `idx` have the same rank.
pub fn offset_bits(dtype: DType, shape: &[u32], layout: Layout, idx: &[u32]) -> u64 {
    let bits = dtype.bits() as u64;
    let r = shape.len();
    match layout {
        Layout::Plain => {
            let mut lin = 0u64;
            for k in 0..r {
                lin = lin * shape[k] as u64 + idx[k] as u64;
            }
            lin * bits
        }
        Layout::Linear { bases: m } => m.offset(idx) * bits,
        Layout::Swizzled {
            vec,
            per_phase,
            max_phase,
        } => {
            let c_dim = shape.last().copied().unwrap_or(1).max(1) as u64;
            let c = idx.last().copied().unwrap_or(0) as u64;
            let mut row = 0u64;
            for k in 0..r.saturating_sub(1) {
                row = row * shape[k] as u64 + idx[k] as u64;
            }
            let vec = vec.max(1) as u64;
            let groups = (c_dim / vec).max(1);
            let phase = (row / per_phase.max(1) as u64) % max_phase.max(1) as u64;
            let cs = (((c / vec) ^ phase) % groups) * vec + c % vec;
            (row * c_dim + cs) * bits
        }
        Layout::Nvmma {
            swizzle,
            transposed,
            fp4_padded,
        } => {
            // Physical matrix [rows, cols] of the last two dims; cols is the contiguous one.
            let (rows, cols, ri, ci) = match r {
                0 => (1u64, 1u64, 0u64, 0u64),
                1 => (1, shape[0] as u64, 0, idx[0] as u64),
                _ => {
                    let (a, b) = (shape[r - 2] as u64, shape[r - 1] as u64);
                    let (ia, ib) = (idx[r - 2] as u64, idx[r - 1] as u64);
                    if transposed {
                        (b, a, ib, ia)
                    } else {
                        (a, b, ia, ib)
                    }
                }
            };
            let mut outer = 0u64;
            for k in 0..r.saturating_sub(2) {
                outer = outer * shape[k] as u64 + idx[k] as u64;
            }
            let mut row_bits = cols * bits;
            let mut cbit = ci * bits;
            if fp4_padded {
                // Every 8 data bytes are followed by 8 bytes of padding.
                row_bits *= 2;
                cbit = cbit / 64 * 128 + cbit % 64;
            }
            let span_bits = swizzle.bytes() as u64 * 8;
            if span_bits == 0 {
                outer * rows * row_bits + ri * row_bits + cbit
            } else if row_bits <= span_bits {
                outer * rows * span_bits + ri * span_bits + cbit
            } else {
                let nblocks = row_bits.div_ceil(span_bits);
                let block = cbit / span_bits;
                outer * rows * nblocks * span_bits
                    + block * rows * span_bits
                    + ri * span_bits
                    + cbit % span_bits
            }
        }
    }
}

/// Bytes one buffer of this shape occupies under the layout (the matrix stack, padded rows
/// included): rows of an NVMMA layout run along the contiguous dimension (the last one, the
/// second to last when transposed) and take a whole number of swizzle spans.
pub fn buffer_bytes(dtype: DType, shape: &[u32], layout: Layout) -> u64 {
    let bits = dtype.bits() as u64;
    let numel: u64 = shape.iter().map(|&x| x as u64).product();
    match layout {
        Layout::Plain | Layout::Swizzled { .. } | Layout::Linear { .. } => (numel * bits).div_ceil(8),
        Layout::Nvmma {
            swizzle,
            transposed,
            fp4_padded,
        } => {
            let r = shape.len();
            let (rows, cols) = match r {
                0 => (1u64, 1u64),
                1 => (1, shape[0] as u64),
                _ if transposed => (shape[r - 1] as u64, shape[r - 2] as u64),
                _ => (shape[r - 2] as u64, shape[r - 1] as u64),
            };
            let outer: u64 = shape[..r.saturating_sub(2)].iter().map(|&x| x as u64).product();
            let row_bits = cols * bits * if fp4_padded { 2 } else { 1 };
            let span_bits = swizzle.bytes() as u64 * 8;
            let padded = if span_bits == 0 {
                row_bits
            } else {
                row_bits.div_ceil(span_bits) * span_bits
            };
            (outer * rows * padded).div_ceil(8)
        }
    }
}

/// Physical location of an element in shared memory: `(byte address, bit shift within the
/// byte)`. `base` is the buffer's first byte (absolute shared address); the swizzle applies to
/// the absolute address. `None` when the address does not fit 32 bits.
pub fn smem_element(
    base: u32,
    dtype: DType,
    shape: &[u32],
    layout: Layout,
    idx: &[u32],
) -> Option<(u32, u32)> {
    let off = offset_bits(dtype, shape, layout, idx);
    let byte = (base as u64).checked_add(off / 8)?;
    let byte = u32::try_from(byte).ok()?;
    let phys = match layout {
        Layout::Nvmma { swizzle, .. } => swizzle.apply(byte),
        _ => byte,
    };
    Some((phys, (off % 8) as u32))
}

/// The TMEM layout of a buffer: what placing its elements needs besides its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TmemLayout {
    pub dtype: DType,
    pub block: [u32; 2],
    pub col_stride: u32,
    /// A block-scaled MMA's scale factors, placed by [`scale_cell`].
    pub scales: bool,
}

/// A tensor-memory cell: lane, column, and the element's bit offset inside the 32-bit cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TmemCell {
    pub lane: u32,
    pub col: u32,
    pub shift: u32,
}

impl TmemLayout {
    /// Bits one element takes along a lane (its width times the column stride).
    pub fn element_bits(&self) -> u64 {
        self.dtype.bits() as u64 * self.col_stride.max(1) as u64
    }

    /// Columns one `[M, N]` matrix of a buffer of shape `shape` occupies (its last two
    /// dimensions; leading ones stack matrices).
    pub fn matrix_cols(&self, shape: &[u32]) -> u64 {
        let n = shape.last().copied().unwrap_or(1) as u64;
        let m = if shape.len() >= 2 {
            shape[shape.len() - 2] as u64
        } else {
            1
        };
        if self.scales {
            return scale_matrix_cols(m as u32, n as u32, self.dtype.bits()) as u64;
        }
        let mblocks = m.div_ceil(self.block[0].max(1) as u64).max(1);
        mblocks * (n * self.element_bits()).div_ceil(32)
    }

    /// Where element `idx` (full rank) of a buffer of shape `shape` whose first column is
    /// `first_col` lives in lane quarter `quarter`: a scale-factor buffer has a copy of every
    /// row in each quarter; any other buffer has one cell (`quarter` is ignored).
    pub fn cell(&self, first_col: u32, shape: &[u32], idx: &[u32], quarter: u32) -> TmemCell {
        let r = shape.len();
        let (m, n, nn) = match r {
            0 => (0u64, 0u64, 1u64),
            1 => (0, idx[0] as u64, shape[0] as u64),
            _ => (idx[r - 2] as u64, idx[r - 1] as u64, shape[r - 1] as u64),
        };
        let mut outer = 0u64;
        for k in 0..r.saturating_sub(2) {
            outer = outer * shape[k] as u64 + idx[k] as u64;
        }
        if self.scales {
            let rows = if r >= 2 { shape[r - 2] } else { 1 };
            let (lane, col, shift) = scale_cell(rows, m as u32, n as u32, self.dtype.bits());
            let col = first_col as u64 + outer * self.matrix_cols(shape) + col as u64;
            return TmemCell {
                lane: lane + (quarter % 4) * TMEM_QUARTER_LANES,
                col: u32::try_from(col).unwrap_or(u32::MAX),
                shift,
            };
        }
        let bm = self.block[0].max(1) as u64;
        let bn = self.block[1].max(1) as u64;
        let eb = self.element_bits();
        let rr = m % bm;
        let lane = if bm == 64 { (rr / 16) * 32 + rr % 16 } else { rr };
        let bit = (m / bm) * nn.div_ceil(bn) * bn * eb + (n / bn) * bn * eb + (n % bn) * eb;
        let col = first_col as u64 + outer * self.matrix_cols(shape) + bit / 32;
        TmemCell {
            lane: lane as u32,
            col: u32::try_from(col).unwrap_or(u32::MAX),
            shift: (bit % 32) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Swizzle;

    /// Tutorial 11's packed-block scale factors seen as the `[128, 4]` matrix `tcgen05.cp`
    /// takes: offset bits 0-1 are the column, 2-3 the row's group of 32, 4-8 the row within
    /// the group, so row `32 j + i`, column `c` sits at `16 i + 4 j + c`.
    #[test]
    fn packed_block_view_inverts() {
        let bases = vec![
            vec![0, 1],
            vec![0, 2],
            vec![32, 0],
            vec![64, 0],
            vec![1, 0],
            vec![2, 0],
            vec![4, 0],
            vec![8, 0],
            vec![16, 0],
        ];
        let l = LinearSmem::new(&bases).expect("one to one");
        assert_eq!(l.shape(), vec![128, 4]);
        for r in 0..128u32 {
            for c in 0..4u32 {
                assert_eq!(l.offset(&[r, c]), 16 * (r % 32) + 4 * (r / 32) + c, "({r}, {c})");
            }
        }
    }

    #[test]
    fn row_major_bases_are_the_plain_layout() {
        let l = LinearSmem::new(&row_major_bases(&[4, 8, 2])).expect("one to one");
        assert_eq!(l.shape(), vec![4, 8, 2]);
        assert_eq!(l.offset(&[3, 5, 1]), 3 * 16 + 5 * 2 + 1);
    }

    #[test]
    fn xor_bases_invert() {
        // Offset bit 1 holds (1, 1): offset 2 is element (1, 1), so (1, 0) is at 2 ^ 1 = 3.
        let l = LinearSmem::new(&[vec![0, 1], vec![1, 1]]).expect("one to one");
        assert_eq!(l.offset(&[0, 1]), 1);
        assert_eq!(l.offset(&[1, 1]), 2);
        assert_eq!(l.offset(&[1, 0]), 3);
    }

    #[test]
    fn maps_that_are_not_one_to_one_are_refused() {
        // Two offset bits onto the one coordinate bit of dimension 1.
        let e = LinearSmem::new(&[vec![0, 1], vec![0, 1]]).unwrap_err();
        assert_eq!(
            e,
            LinearSmemError::BitCount {
                offsets: 2,
                coords: 1
            }
        );
        assert!(e.to_string().contains("not one to one"), "{e}");
        let e = LinearSmem::new(&[vec![0, 1], vec![0, 2, 0]]).unwrap_err();
        assert_eq!(e, LinearSmemError::Ragged);
        assert!(e.to_string().contains("one coordinate per dimension"), "{e}");
        // Offset bits 0 and 1 both map to coordinate bits of dimension 1 (value 3 needs 2 bits)
        // but there is one offset bit: 1 offset bit onto 2 coordinate bits.
        let e = LinearSmem::new(&[vec![0, 3]]).unwrap_err();
        assert_eq!(
            e,
            LinearSmemError::BitCount {
                offsets: 1,
                coords: 2
            }
        );
        assert!(e.to_string().contains("not one to one"), "{e}");
    }

    fn nv(s: Swizzle) -> Layout {
        Layout::Nvmma {
            swizzle: s,
            transposed: false,
            fp4_padded: false,
        }
    }

    /// The 21 H100-measured vectors of docs/semantics.md#shared-memory-swizzle, through the
    /// placement function: a byte buffer whose rows are exactly one span wide at base 0, so the
    /// logical address of element (r, c) is r * span + c.
    #[test]
    fn swizzle_table_through_smem_element() {
        for (a, s32, s64, s128) in crate::types::SWIZZLE_VECTORS {
            for (sw, want) in [(Swizzle::B32, s32), (Swizzle::B64, s64), (Swizzle::B128, s128)] {
                let span = sw.bytes();
                let shape = [64u32, span];
                let idx = [a / span, a % span];
                let (phys, shift) = smem_element(0, DType::U8, &shape, nv(sw), &idx).expect("fits");
                assert_eq!((phys, shift), (want, 0), "{}B swizzle at {a}", span);
            }
        }
    }

    #[test]
    fn swizzle_uses_absolute_address() {
        // A 128B-swizzled buffer at 128 (mod 1024): its row 0 is physical row 1 of the pattern.
        let shape = [8u32, 64];
        let (p, _) = smem_element(128, DType::F16, &shape, nv(Swizzle::B128), &[0, 0]).expect("fits");
        assert_eq!(p, 128 ^ 16);
        let (p0, _) = smem_element(1024, DType::F16, &shape, nv(Swizzle::B128), &[0, 0]).expect("fits");
        assert_eq!(p0, 1024);
    }

    #[test]
    fn narrow_rows_are_padded_and_wide_rows_split() {
        // f32[4, 8] with 64B swizzle: 32-byte rows padded to 64.
        let l = nv(Swizzle::B64);
        assert_eq!(offset_bits(DType::F32, &[4, 8], l, &[1, 0]) / 8, 64);
        // f16[2, 128] with 128B swizzle: 256-byte rows = 2 column blocks of [2, 128 B].
        let l = nv(Swizzle::B128);
        assert_eq!(offset_bits(DType::F16, &[2, 128], l, &[0, 64]) / 8, 2 * 128);
        assert_eq!(offset_bits(DType::F16, &[2, 128], l, &[1, 64]) / 8, 3 * 128);
        assert_eq!(buffer_bytes(DType::F16, &[2, 128], l), 512);
        // Leading dims stack whole matrices.
        assert_eq!(offset_bits(DType::F16, &[3, 2, 128], l, &[1, 0, 0]) / 8, 512);
    }

    #[test]
    fn transposed_swaps_roles() {
        // [K=64, N=128] f16 MN-major... transposed=true means contiguous along K: element
        // (k, n) is physical row n, column k.
        let l = Layout::Nvmma {
            swizzle: Swizzle::B128,
            transposed: true,
            fp4_padded: false,
        };
        assert_eq!(
            offset_bits(DType::F16, &[64, 128], l, &[5, 3]),
            (3 * 128 + 5 * 2) * 8
        );
    }

    #[test]
    fn fp4_elements_pack_two_per_byte() {
        let (b0, s0) = smem_element(0, DType::F4E2M1, &[1, 64], Layout::Plain, &[0, 3]).expect("fits");
        assert_eq!((b0, s0), (1, 4));
    }

    /// `fp4_padded`: 8 data bytes, then 8 bytes of padding, so a 64-byte row of packed fp4 takes
    /// a whole 128-byte span; the bytes and the fp4 view of them agree, and the swizzle then
    /// applies as for any row (16-byte chunk `c` of row `r` lands in chunk `c ^ (r % 8)`).
    #[test]
    fn fp4_padded_rows_interleave_data_and_padding() {
        let padded = Layout::Nvmma {
            swizzle: Swizzle::B128,
            transposed: false,
            fp4_padded: true,
        };
        assert_eq!(buffer_bytes(DType::I8, &[128, 64], padded), 128 * 128);
        for (r, j) in [(0u32, 0u32), (0, 7), (0, 8), (1, 9), (3, 63), (127, 40)] {
            let (byte, shift) = smem_element(0, DType::I8, &[128, 64], padded, &[r, j]).expect("fits");
            let chunk = (j / 8) ^ (r % 8);
            assert_eq!((byte, shift), (r * 128 + chunk * 16 + j % 8, 0), "({r}, {j})");
            // The same byte through the fp4 view: elements 2j (low nibble) and 2j + 1.
            let lo = smem_element(0, DType::F4E2M1, &[128, 128], padded, &[r, 2 * j]).expect("fits");
            let hi = smem_element(0, DType::F4E2M1, &[128, 128], padded, &[r, 2 * j + 1]).expect("fits");
            assert_eq!((lo, hi), ((byte, 0), (byte, 4)), "({r}, {j})");
        }
    }

    fn nvmma(transposed: bool) -> SmemLayout {
        SmemLayout::Nvmma {
            swizzle: Swizzle::B128,
            transposed,
            fp4_padded: false,
        }
    }

    #[test]
    fn smem_bytes_pads_rows_along_the_contiguous_dimension() {
        let smem_bytes =
            |dtype, shape: &[u32], layout: &SmemLayout| buffer_bytes(dtype, shape, layout.into());
        // [16, 32] f32: 16 rows of 128 bytes; seen transposed as [32, 16], the same rows.
        assert_eq!(smem_bytes(DType::F32, &[16, 32], &nvmma(false)), 2048);
        assert_eq!(smem_bytes(DType::F32, &[32, 16], &nvmma(true)), 2048);
        // [2, 64, 16] f16 transposed: 2 x 16 rows of 64 elements (128 bytes).
        assert_eq!(smem_bytes(DType::F16, &[2, 64, 16], &nvmma(true)), 4096);
        // Not transposed: 2 x 64 rows of 32 bytes, each padded to the 128-byte span.
        assert_eq!(smem_bytes(DType::F16, &[2, 64, 16], &nvmma(false)), 16384);
        assert_eq!(smem_bytes(DType::F32, &[16], &nvmma(true)), 128);
        assert_eq!(smem_bytes(DType::F32, &[16, 32], &SmemLayout::Plain), 2048);
        // fp4_padded: 64 data bytes a row take 128.
        let padded = SmemLayout::Nvmma {
            swizzle: Swizzle::B128,
            transposed: false,
            fp4_padded: true,
        };
        assert_eq!(smem_bytes(DType::I8, &[128, 64], &padded), 16384);
    }

    /// A TMEM accumulator: m = 130 of an `[256, 128]` buffer with block `[128, 64]` is lane 2
    /// of the second M block (2 blocks of 64 columns further), n = 70 in N block 1, column 6;
    /// 64-row blocks interleave lanes by 16; f16 packs two elements per column.
    #[test]
    fn tmem_cells() {
        let l = TmemLayout {
            dtype: DType::F32,
            block: [128, 64],
            col_stride: 1,
            scales: false,
        };
        let cell = |lane, col, shift| TmemCell { lane, col, shift };
        assert_eq!(
            l.cell(256, &[256, 128], &[130, 70], 0),
            cell(2, 256 + 128 + 64 + 6, 0)
        );
        let l64 = TmemLayout { block: [64, 64], ..l };
        assert_eq!(l64.cell(0, &[64, 64], &[17, 0], 0).lane, 33);
        let lh = TmemLayout {
            dtype: DType::F16,
            ..l
        };
        assert_eq!(lh.cell(256, &[256, 128], &[0, 3], 0), cell(0, 257, 16));
        // Scale factors: row m in lane m % 32 of every quarter, the K block's byte in the cell.
        let sf = TmemLayout {
            dtype: DType::UE8M0,
            block: [128, 8],
            col_stride: 1,
            scales: true,
        };
        assert_eq!(sf.cell(40, &[128, 8], &[33, 1], 0), cell(1, 41, 8));
        assert_eq!(sf.cell(40, &[128, 8], &[70, 6], 0), cell(6, 46, 16));
        assert_eq!(sf.cell(40, &[128, 8], &[33, 1], 2), cell(65, 41, 8));
        assert_eq!(sf.matrix_cols(&[128, 8]), 8);
        assert_eq!(sf.cell(40, &[2, 64, 4], &[1, 40, 2], 0), cell(8, 43, 16));
    }
}
