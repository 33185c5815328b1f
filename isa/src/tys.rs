//! The type vocabulary of the tile IR: register tiles and their layouts, shared and tensor
//! memory buffers, tensor descriptors, and the values an expression can have (`Ty`), with the
//! layout arithmetic they carry (TMEM blocks and scale-factor placement). The type checker
//! (`typeck`) assigns these types; the operation rules (`rules`), the launch checks and the
//! backends read them.

use crate::types::*;

/// The TMEM layout block of a tensor-memory buffer written without `block=`: its last two
/// dimensions, M at most 128.
pub fn default_tmem_block(shape: &[u32]) -> [u32; 2] {
    let m = if shape.len() >= 2 {
        shape[shape.len() - 2]
    } else {
        128
    };
    [m.min(128), shape.last().copied().unwrap_or(1)]
}

/// The read-modify-write operations of `global.atomic`.
pub const ATOMIC_OPS: [&str; 8] = ["add", "max", "min", "and", "or", "xor", "xchg", "cas"];

/// Shared-memory layout of a buffer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SmemLayout {
    /// Row-major, unswizzled.
    Plain,
    /// Gluon's `NVMMASharedLayout`: rows of the innermost dimension padded to the swizzle span
    /// and swizzled by absolute address. `transposed` marks an MN-major MMA operand.
    /// `fp4_padded` is the layout of an fp4 operand of a mixed-precision block-scaled MMA
    /// (`fp4_padded=True`): every 8 bytes of data (16 fp4 values) followed by 8 bytes of
    /// padding, so a row takes twice its data's bytes.
    Nvmma {
        swizzle: Swizzle,
        transposed: bool,
        fp4_padded: bool,
    },
    /// Gluon's `SwizzledSharedLayout(vec, per_phase, max_phase)` (generic ld/st only).
    Swizzled {
        vec: u32,
        per_phase: u32,
        max_phase: u32,
    },
    /// Gluon's `SharedLinearLayout`: bit `i` of an element's offset (in elements from the
    /// view's first byte, unswizzled memory) contributes the coordinates `bases[i]`, XORed
    /// together. What a reshaped or permuted view of a dense buffer has (tutorial 11 views its
    /// packed-block scale factors this way for `tcgen05.cp`). See [`LinearSmem`].
    Linear { bases: Vec<Vec<u32>> },
}

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

impl SmemLayout {
    /// `linear([[c0, c1, ..], ..])`: the offset bases of a `linear` layout, written as integer
    /// literals (the one argument of the call). `None` when the argument is not a list of
    /// lists of non-negative integer literals.
    pub fn linear_from_args(args: &[crate::ir::Arg]) -> Option<SmemLayout> {
        use crate::ir::ExprKind;
        let [a] = args else { return None };
        if a.key.is_some() {
            return None;
        }
        let ExprKind::List(items) = &a.value.kind else {
            return None;
        };
        let bases = items
            .iter()
            .map(|b| match &b.kind {
                ExprKind::List(cs) => cs
                    .iter()
                    .map(|c| match c.kind {
                        ExprKind::Int(v) => u32::try_from(v).ok(),
                        _ => None,
                    })
                    .collect::<Option<Vec<u32>>>(),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(SmemLayout::Linear { bases })
    }

    pub fn swizzle(&self) -> Swizzle {
        match self {
            SmemLayout::Nvmma { swizzle, .. } => *swizzle,
            _ => Swizzle::None,
        }
    }
    /// An NVMMA layout with every 8 data bytes followed by 8 bytes of padding.
    pub fn fp4_padded(&self) -> bool {
        matches!(self, SmemLayout::Nvmma { fp4_padded: true, .. })
    }
    /// Alignment the allocator gives a buffer of this layout: the swizzle period for
    /// swizzled NVMMA layouts (PTX.md section 2), else 128 bytes (the TMA requirement).
    pub fn alignment(&self) -> u32 {
        match self {
            SmemLayout::Nvmma { swizzle, .. } => swizzle.period().max(128),
            _ => 128,
        }
    }
    pub fn describe(&self) -> String {
        match self {
            SmemLayout::Plain => "plain".into(),
            SmemLayout::Nvmma {
                swizzle,
                transposed,
                fp4_padded,
            } => {
                format!(
                    "nvmma({}{}{})",
                    swizzle.bytes(),
                    if *transposed { ", transposed=true" } else { "" },
                    if *fp4_padded { ", fp4_padded=true" } else { "" }
                )
            }
            SmemLayout::Swizzled {
                vec,
                per_phase,
                max_phase,
            } => format!("swizzled({vec}, {per_phase}, {max_phase})"),
            SmemLayout::Linear { bases } => format!("linear({bases:?})"),
        }
    }
}

/// Register-tile layout (how a partition's threads hold a tile). Used by lowering; the
/// functional simulator ignores it except where a rule depends on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TileLayout {
    Blocked {
        spt: Vec<u32>,
        tpw: Vec<u32>,
        wpc: Vec<u32>,
        order: Vec<u32>,
    },
    Slice {
        dim: u32,
        parent: Box<TileLayout>,
    },
    /// One TMEM lane (accumulator row) per thread: `tcgen05.ld 32x32b`.
    Tmem32x32b,
    /// The wgmma accumulator fragment (PTX.md section 9).
    Wgmma {
        warps: [u32; 2],
        n: u32,
    },
}

impl TileLayout {
    /// Rank of tiles this layout can describe (None: any).
    pub fn rank(&self) -> Option<usize> {
        match self {
            TileLayout::Blocked { spt, .. } => Some(spt.len()),
            TileLayout::Slice { parent, .. } => parent.rank().map(|r| r.saturating_sub(1)),
            TileLayout::Tmem32x32b | TileLayout::Wgmma { .. } => Some(2),
        }
    }
}

/// A TMA descriptor parameter's static part (global shape and strides come at launch).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DescTy {
    pub dtype: DType,
    pub block: Vec<u32>,
    pub layout: SmemLayout,
    pub oob: OobFill,
    /// `elementStrides` of the tensor map, one per dimension (outermost first, all 1 unless
    /// `elem_strides=[...]` is given).
    pub elem_strides: Vec<u32>,
}

impl DescTy {
    /// The box a copy moves: `ceil(block / stride)` elements in every dimension but the
    /// innermost, where a stride has no effect (`INTERLEAVE_NONE`) [PTX.md section 3, H100].
    pub fn box_shape(&self) -> Vec<u32> {
        traversed_box(&self.block, &self.elem_strides)
    }
    /// Bytes one copy moves and completes on its barrier (Gluon's `block_type.nbytes` when
    /// every stride is 1).
    pub fn nbytes(&self) -> u64 {
        (self.box_shape().iter())
            .fold(1u64, |a, &d| a.saturating_mul(d as u64))
            .saturating_mul(self.dtype.bits() as u64)
            / 8
    }
}

/// `ceil(block[k] / strides[k])` for every dimension but the innermost (see
/// [`DescTy::box_shape`]); a missing stride counts as 1.
pub fn traversed_box(block: &[u32], strides: &[u32]) -> Vec<u32> {
    let r = block.len();
    block
        .iter()
        .enumerate()
        .map(|(k, &b)| {
            let s = strides.get(k).copied().unwrap_or(1).max(1);
            if k + 1 == r {
                b
            } else {
                b.div_ceil(s)
            }
        })
        .collect()
}

/// A shared-memory buffer or view of one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SmemTy {
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub layout: SmemLayout,
    /// The allocation this view lies in.
    pub alloc: usize,
}

/// A tensor-memory buffer or view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TmemTy {
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub block: [u32; 2],
    pub col_stride: u32,
    pub scales: bool,
    pub alloc: usize,
}

impl TmemTy {
    /// TMEM columns one `[M, N]` matrix of this type occupies.
    pub fn matrix_cols(&self) -> u32 {
        let n = self.shape.last().copied().unwrap_or(1);
        let m = if self.shape.len() >= 2 {
            self.shape[self.shape.len() - 2]
        } else {
            1
        };
        if self.scales {
            return scale_matrix_cols(m, n, self.dtype.bits());
        }
        let mblocks = m.div_ceil(self.block[0].max(1)).max(1);
        let bits = self.dtype.bits().saturating_mul(self.col_stride);
        mblocks.saturating_mul(n.saturating_mul(bits).div_ceil(32))
    }
    /// TMEM columns of the whole buffer.
    pub fn cols(&self) -> u32 {
        let outer: u32 = if self.shape.len() > 2 {
            self.shape[..self.shape.len() - 2]
                .iter()
                .fold(1u32, |a, &b| a.saturating_mul(b))
        } else {
            1
        };
        outer.saturating_mul(self.matrix_cols())
    }
}

/// Lanes of one TMEM lane quarter (a warp reaches one quarter, PTX.md section 8).
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

/// A register tile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileTy {
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub layout: Option<TileLayout>,
}

/// The type of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Scalar(ScalarTy),
    Tile(TileTy),
    Smem(SmemTy),
    /// `count: Some(n)` an array of n barriers; `None` one barrier.
    Mbar {
        count: Option<u32>,
        alloc: usize,
    },
    Tmem(TmemTy),
    Desc(DescTy),
    Ptr(DType),
    Tuple(Vec<Ty>),
    /// A layout or element-type name used as an argument.
    Layout(TileLayout),
    DType(DType),
}

impl Ty {
    pub fn describe(&self) -> String {
        match self {
            Ty::Scalar(s) => s.name().to_string(),
            Ty::Tile(t) => format!("tile<{}{:?}>", t.dtype, t.shape),
            Ty::Smem(s) => format!("smem<{}{:?}, {}>", s.dtype, s.shape, s.layout.describe()),
            Ty::Mbar { count: Some(n), .. } => format!("mbar<{n}>"),
            Ty::Mbar { count: None, .. } => "mbar".into(),
            Ty::Tmem(t) => format!("tmem<{}{:?}>", t.dtype, t.shape),
            Ty::Desc(d) => format!("tensor_desc<{}{:?}>", d.dtype, d.block),
            Ty::Ptr(d) => format!("ptr({d})"),
            Ty::Tuple(ts) => format!(
                "({})",
                ts.iter().map(|t| t.describe()).collect::<Vec<_>>().join(", ")
            ),
            Ty::Layout(_) => "layout".into(),
            Ty::DType(d) => format!("dtype {d}"),
        }
    }
    pub fn is_scalar(&self) -> bool {
        matches!(self, Ty::Scalar(_))
    }
    pub fn is_int_scalar(&self) -> bool {
        matches!(self, Ty::Scalar(ScalarTy::I32 | ScalarTy::I64 | ScalarTy::I1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
