//! The operand forms of the `tcgen05` instructions the machine runs beyond the dense
//! shared-memory MMA: an A in tensor memory, the copy shapes of `tcgen05.cp`, the lane and
//! column maps of the `tcgen05.ld`/`tcgen05.st` shapes.

use super::{TmemRef, Val};

/// The A operand of a `tcgen05.mma`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MmaA {
    /// A shared-memory matrix descriptor.
    Desc(Val),
    /// A tensor-memory address (`[a]`).
    Tmem(TmemRef),
}

/// The shape of a `tcgen05.ld`/`tcgen05.st` (PTX ISA, "Matrix fragments for tcgen05.ld/st"):
/// the tensor-memory lanes and bits one repetition of the warp moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmemShape {
    /// 32 lanes x 32 bits: one lane per thread.
    S32x32b,
    /// 16 lanes x 64 bits.
    S16x64b,
    /// 16 lanes x 128 bits.
    S16x128b,
    /// 16 lanes x 256 bits.
    S16x256b,
    /// Two 16 lanes x 32 bits halves, the second `imm` columns after the first.
    S16x32bx2(u32),
}

/// The bound on a `16x32bx2` column offset: tensor memory's 512 columns.
pub(super) const COLUMNS_OFFSET_LIMIT: u64 = 512;

impl TmemShape {
    /// Registers per thread of one repetition (`.x1`).
    pub fn regs_per_rep(self) -> usize {
        match self {
            TmemShape::S32x32b | TmemShape::S16x64b | TmemShape::S16x32bx2(_) => 1,
            TmemShape::S16x128b => 2,
            TmemShape::S16x256b => 4,
        }
    }

    /// Where register `r` of lane `l` of one repetition lies, relative to the access's
    /// first lane and column (PTX ISA, "Matrix fragments for tcgen05.ld/st"; the same maps as
    /// Triton 3.9's `get_tmem_reg_layout` for these shapes).
    pub fn cell(self, l: u32, r: u32) -> (u32, u32) {
        match self {
            TmemShape::S32x32b => (l, 0),
            TmemShape::S16x64b => (l / 4 + 8 * (l % 2), (l / 2) % 2),
            TmemShape::S16x128b => (l / 4 + 8 * (r % 2), l % 4),
            TmemShape::S16x256b => (l / 4 + 8 * (r / 2 % 2), r % 2 + 2 * (l % 4)),
            TmemShape::S16x32bx2(imm) => (l % 16, if l < 16 { 0 } else { imm }),
        }
    }

    /// Columns one repetition spans (the next repetition's first column is this far on).
    pub fn cols_per_rep(self) -> u32 {
        match self {
            TmemShape::S32x32b | TmemShape::S16x32bx2(_) => 1,
            TmemShape::S16x64b => 2,
            TmemShape::S16x128b => 4,
            TmemShape::S16x256b => 8,
        }
    }
}

/// The shape of a `tcgen05.cp` (PTX ISA, "tcgen05.cp"): the rows of shared memory it copies,
/// their bytes, and the lanes each row lands in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpShape {
    /// 128 rows of 32 bytes into lanes 0 to 127.
    S128x256b,
    /// 128 rows of 16 bytes into lanes 0 to 127.
    S128x128b,
    /// 32 rows of 16 bytes, each into lane `r` of every lane quarter (`.warpx4`).
    S32x128bWarpx4,
}

impl CpShape {
    /// Rows and bytes per row.
    pub fn rows_bytes(self) -> (u32, u32) {
        match self {
            CpShape::S128x256b => (128, 32),
            CpShape::S128x128b => (128, 16),
            CpShape::S32x128bWarpx4 => (32, 16),
        }
    }

    /// The lanes row `r` lands in, relative to the destination's lane.
    pub fn lanes(self, r: u32) -> Vec<u32> {
        match self {
            CpShape::S128x256b | CpShape::S128x128b => vec![r],
            CpShape::S32x128bWarpx4 => (0..4).map(|q| 32 * q + r).collect(),
        }
    }
}
