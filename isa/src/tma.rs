//! How one TMA tile copy moves a shared-memory buffer through a descriptor: the hardware box
//! and the messages, as Triton 3.6 lowers Gluon's `async_copy_global_to_shared` and
//! `async_copy_shared_to_global` (docs/hardware/tma-messages.md).
//!
//! - The **hardware box** (the tensor map's `boxDim`) is the descriptor's block with every
//!   dimension clipped to 256 elements and, under a swizzle, the inner dimension clipped to the
//!   swizzle span (`span_bytes * 8 / bits` elements); an unswizzled inner dimension is not
//!   clipped. Element strides then traverse `ceil(box / stride)` of each outer dimension.
//! - A copy issues **messages** (`cp.async.bulk.tensor`, one box each) over the *buffer*: Triton
//!   applies the same clipping to the buffer's own shape, and issues one message per such
//!   piece of the buffer, message `k` at coordinates `coords + k * piece` and at the buffer's
//!   element `k * piece`. The transaction bytes of a load are the messages' boxes.
//! - The copy is well formed when the buffer's piece *is* the hardware box. Otherwise the
//!   kernel still runs: every message moves one hardware box from where the piece starts (past
//!   the buffer's end, or leaving part of it unmoved); [`Plan::mismatch`] says so, and the
//!   verifier reports it without stopping the simulation (`tma-buffer-box`).
//!
//! The verifier ([`crate::typeck`]), the simulator, the timing model, the PTX backend and the
//! runner's tensor maps all take the box and the messages from here.

use crate::types::DType;

/// The largest box dimension a tensor map takes (`cuTensorMapEncodeTiled`: `boxDim[i] <= 256`).
pub const MAX_BOX: u32 = 256;

/// The clipped shape of `shape` (a descriptor's block, or a buffer's shape in the
/// descriptor's element type): every dimension at most [`MAX_BOX`], the inner one at most the
/// swizzle span (`swizzle_bytes` of 32, 64 or 128; 0 clips nothing there).
pub fn clip(shape: &[u32], bits: u32, swizzle_bytes: u32) -> Vec<u32> {
    let r = shape.len();
    shape
        .iter()
        .enumerate()
        .map(|(k, &d)| {
            let mut d = d.min(MAX_BOX);
            if k + 1 == r && swizzle_bytes > 0 && bits > 0 {
                d = d.min((swizzle_bytes * 8 / bits).max(1));
            }
            d
        })
        .collect()
}

/// The hardware box of a descriptor: its block clipped ([`clip`]).
pub fn hw_box(block: &[u32], dtype: DType, swizzle_bytes: u32) -> Vec<u32> {
    clip(block, dtype.bits(), swizzle_bytes)
}

/// How a copy falls short of moving exactly its buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The buffer's piece per message (what Triton derives from the buffer's shape).
    pub piece: Vec<u32>,
    /// What each message moves (the descriptor's traversed box).
    pub moved: Vec<u32>,
}

/// The messages of one tile copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// What one message moves: the descriptor's hardware box, traversed (element strides
    /// applied), in the descriptor's dimension order.
    pub boxd: Vec<u32>,
    /// The buffer's piece per message, in buffer elements of the physical shape; message `k`
    /// (a multi-index over `grid`) starts at the buffer's element `k * piece` and at the
    /// coordinates `coords + k * piece`.
    pub piece: Vec<u32>,
    /// Messages along each dimension.
    pub grid: Vec<u32>,
    /// Set when the pieces are not the box: each message still moves `boxd`.
    pub mismatch: Option<Mismatch>,
}

/// Why a buffer cannot be copied through a descriptor at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// The buffer has another rank than the descriptor and is not one box.
    Rank,
    /// A buffer dimension is not a whole number of its pieces.
    Partial { dim: usize, size: u32, piece: u32 },
    /// More than one message through a descriptor with element strides.
    Strided,
}

impl Plan {
    /// Number of messages.
    pub fn messages(&self) -> u64 {
        self.grid.iter().map(|&g| g as u64).product()
    }
    /// Elements one message moves.
    pub fn box_elems(&self) -> u64 {
        self.boxd.iter().map(|&d| d as u64).product()
    }
    /// Bytes one message moves (and completes on its barrier, out-of-bounds part included).
    pub fn box_bytes(&self, dtype: DType) -> u64 {
        self.box_elems().saturating_mul(dtype.bits() as u64) / 8
    }
    /// Bytes the whole copy moves: what a load's barrier must expect.
    pub fn bytes(&self, dtype: DType) -> u64 {
        self.box_bytes(dtype).saturating_mul(self.messages())
    }
    /// The multi-index of message `m` over [`Plan::grid`] (row-major, innermost last).
    pub fn index(&self, m: u64) -> Vec<u32> {
        let mut out = vec![0; self.grid.len()];
        let mut rest = m;
        for (o, &g) in out.iter_mut().zip(&self.grid).rev() {
            let g = g.max(1) as u64;
            *o = (rest % g) as u32;
            rest /= g;
        }
        out
    }
    /// Where message `m` starts: its offset in every dimension (buffer elements of the
    /// physical shape, and coordinates added to the copy's).
    pub fn origin(&self, m: u64) -> Vec<u32> {
        self.index(m)
            .iter()
            .zip(&self.piece)
            .map(|(&k, &p)| k.saturating_mul(p))
            .collect()
    }
}

/// The messages of a copy of a buffer of physical shape `buf` (the shape in memory order: the
/// last two dimensions swapped for an MN-major buffer) through a descriptor of `block`,
/// `dtype`, swizzle span `swizzle_bytes` and element strides `strides` (outermost first; 1
/// when missing). The pieces are clipped in the descriptor's element type (Triton takes the
/// width from the buffer's layout, which is the descriptor's).
pub fn plan(
    block: &[u32],
    dtype: DType,
    swizzle_bytes: u32,
    strides: &[u32],
    buf: &[u32],
) -> Result<Plan, PlanError> {
    let hw = hw_box(block, dtype, swizzle_bytes);
    let boxd = crate::value_types::traversed_box(&hw, strides);
    let strided = strides.iter().any(|&s| s > 1);
    let numel = |s: &[u32]| s.iter().fold(1u64, |a, &d| a.saturating_mul(d as u64));
    if buf.len() != block.len() || strided {
        // One box seen as a buffer of another rank (a reshaped view of the same bytes), or a
        // strided box: exactly one message.
        if numel(buf) == numel(&boxd) && buf.last() == boxd.last() {
            return Ok(Plan {
                piece: buf.to_vec(),
                grid: vec![1; buf.len()],
                boxd,
                mismatch: None,
            });
        }
        return Err(if strided && buf.len() == block.len() {
            PlanError::Strided
        } else {
            PlanError::Rank
        });
    }
    let piece = clip(buf, dtype.bits(), swizzle_bytes);
    let mut grid = Vec::with_capacity(buf.len());
    for (dim, (&size, &p)) in buf.iter().zip(&piece).enumerate() {
        if p == 0 || !size.is_multiple_of(p) {
            return Err(PlanError::Partial { dim, size, piece: p });
        }
        grid.push(size / p);
    }
    let mismatch = (piece != boxd).then(|| Mismatch {
        piece: piece.clone(),
        moved: boxd.clone(),
    });
    Ok(Plan {
        boxd,
        piece,
        grid,
        mismatch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tutorial 08 (Triton 3.6's PTX, docs/hardware/tma-messages.md): A's [128, 64] in one
    /// message, B's [64, 256] in four at columns 0, 64, 128 and 192, and each [128, 64] store
    /// of the subtiled epilogue through a [128, 256] descriptor in one.
    #[test]
    fn tutorial_08_copies_issue_the_messages_triton_emits() {
        let a = plan(&[128, 64], DType::F16, 128, &[], &[128, 64]).expect("a");
        assert_eq!((a.messages(), a.boxd.clone()), (1, vec![128, 64]));
        let b = plan(&[64, 256], DType::F16, 128, &[], &[64, 256]).expect("b");
        assert_eq!((b.messages(), b.boxd.clone()), (4, vec![64, 64]));
        let cols: Vec<u32> = (0..4).map(|m| b.origin(m)[1]).collect();
        assert_eq!(cols, [0, 64, 128, 192]);
        assert_eq!(b.bytes(DType::F16), 64 * 256 * 2);
        let c = plan(&[128, 256], DType::F16, 128, &[], &[128, 64]).expect("c");
        assert_eq!(
            (c.messages(), c.boxd.clone(), c.mismatch.clone()),
            (1, vec![128, 64], None)
        );
        assert_eq!(c.bytes(DType::F16), 128 * 64 * 2);
    }

    /// Outer dimensions clip at 256 elements (a [512, 64] block: box [256, 64], two messages
    /// 256 rows apart); an unswizzled inner dimension does not clip.
    #[test]
    fn outer_dimensions_clip_at_256_and_unswizzled_rows_do_not_clip() {
        let p = plan(&[512, 64], DType::F16, 128, &[], &[512, 64]).expect("512 rows");
        assert_eq!((p.boxd.clone(), p.grid.clone()), (vec![256, 64], vec![2, 1]));
        assert_eq!(p.origin(1), [256, 0]);
        let p = plan(&[64, 256], DType::F16, 0, &[], &[64, 256]).expect("unswizzled");
        assert_eq!((p.boxd.clone(), p.messages()), (vec![64, 256], 1));
        assert_eq!(hw_box(&[8, 64], DType::F32, 128), [8, 32]);
        assert_eq!(hw_box(&[8, 16], DType::F32, 128), [8, 16]);
        assert_eq!(hw_box(&[8, 64], DType::F8E4M3, 32), [8, 32]);
    }

    /// A buffer whose own pieces are not the descriptor's box: Triton still issues one message
    /// per piece, and each moves a whole box.
    #[test]
    fn pieces_that_are_not_the_box_are_a_mismatch() {
        // [256, 64] through a [128, 64] block: one piece of 256 rows, a box of 128.
        let p = plan(&[128, 64], DType::F16, 128, &[], &[256, 64]).expect("plan");
        assert_eq!(p.messages(), 1);
        assert_eq!(
            p.mismatch,
            Some(Mismatch {
                piece: vec![256, 64],
                moved: vec![128, 64]
            })
        );
        // [64, 64] through a [128, 64] block: 128 rows land in a 64-row buffer.
        let p = plan(&[128, 64], DType::F16, 128, &[], &[64, 64]).expect("plan");
        assert!(p.mismatch.is_some());
        assert_eq!(p.bytes(DType::F16), 128 * 64 * 2);
    }

    #[test]
    fn shapes_that_cannot_be_cut_into_pieces_are_errors() {
        assert_eq!(
            plan(&[8, 64], DType::F16, 128, &[], &[8, 96]),
            Err(PlanError::Partial {
                dim: 1,
                size: 96,
                piece: 64
            })
        );
        assert_eq!(
            plan(&[8, 64], DType::F16, 128, &[], &[2, 4, 64]).map(|p| p.messages()),
            Ok(1),
            "one box seen with another rank"
        );
        assert_eq!(
            plan(&[8, 64], DType::F16, 128, &[], &[4, 4, 64]),
            Err(PlanError::Rank)
        );
        assert_eq!(
            plan(&[8, 32], DType::F32, 128, &[2, 1], &[4, 32]).map(|p| p.boxd),
            Ok(vec![4, 32]),
            "a strided box is one message"
        );
        assert_eq!(
            plan(&[8, 32], DType::F32, 128, &[2, 1], &[8, 32]),
            Err(PlanError::Strided)
        );
    }
}
