//! The shared scratch of layout conversions, where the TTGIR carries Triton's allocation.
//!
//! A `ttg.convert_layout` that moves elements between warps goes through shared memory that
//! Triton's allocator (`AllocateSharedMemory`, run when the TTGIR is lowered) places, possibly
//! over the bytes of a `ttg.local_alloc` whose last use in program order is over, although a
//! TMA store may still be reading them. The TTGIR stage has no addresses; a file that went
//! through the allocation pass (`tools/gluon_to_ttgir.py --allocation`) carries them as
//! `allocation.offset` on each buffer and each scratch user, and `allocation.size` on the
//! scratch users from Triton 3.9 on.
//!
//! With that data the importer records each buffer's byte range ([`Cx::place_alloc`]) and, at
//! each conversion that has scratch, writes then reads the bytes of every visible buffer the
//! scratch overlaps ([`Cx::scratch_traffic`]), as generic shared accesses at the conversion's
//! line: an `i32` view of the buffer, `smem.scatter` of zeros to the overlapped words and
//! `smem.gather` of them. A partition is one agent of the checker, so the barriers Triton
//! puts between the warps' scratch writes and reads need no statement. Without the attributes
//! nothing is added.

use super::{bin, call, int_e, list_e, name_e, Cx, Val, R};
use crate::syntax::Op;
use crate::types::{Elem, Type};
use bwsim_isa::ir::{BinOp, Expr, ExprKind, OpKind, Rhs};
use bwsim_isa::{DType, Span};

/// A shared-memory buffer at the offset Triton's allocator gave it.
pub(super) struct Placed {
    /// The buffer's SSA name in the TTGIR.
    ssa: String,
    /// Its `smem.alloc`'s name: the record holds where the SSA name is still bound to it.
    tile: String,
    /// `allocation.offset` and the buffer's size, in bytes.
    offset: i64,
    bytes: i64,
}

/// Bytes of one element of `elem` in shared memory (`i1` is stored in a byte).
fn elem_bytes(elem: Elem) -> Option<i64> {
    elem.dtype().map(|d| i64::from(d.bytes()))
}

/// Bytes of a tile or buffer of type `ty`, when its element type has a size.
fn type_bytes(ty: &Type) -> Option<i64> {
    let n: i64 = ty.shape()?.iter().product();
    Some(n * elem_bytes(ty.elem()?)?)
}

impl Cx<'_> {
    /// The integer attribute `key` of `op`, if it has one.
    fn opt_int_attr(&self, op: &Op, key: &str) -> R<Option<i64>> {
        Ok(self.attr_dict(op)?.get(key).and_then(|x| x.as_int()))
    }

    /// Records the shared buffer `tile` (SSA value `ssa`, of type `ty`) of `op` at its
    /// `allocation.offset`, when the file carries one (not inside an inlined callee, whose
    /// offsets Triton counts from the callee's own base).
    pub(super) fn place_alloc(&mut self, op: &Op, ssa: &str, tile: &str, ty: &Type) -> R<()> {
        if !self.inlining.is_empty() {
            return Ok(());
        }
        let (Some(offset), Some(bytes)) = (self.opt_int_attr(op, "allocation.offset")?, type_bytes(ty))
        else {
            return Ok(());
        };
        self.placed.push(Placed {
            ssa: ssa.to_string(),
            tile: tile.to_string(),
            offset,
            bytes,
        });
        Ok(())
    }

    /// The scratch traffic of conversion `op` (result type `ty`): for each recorded buffer
    /// still in scope whose bytes its scratch range overlaps, generic writes then reads of the
    /// overlapped 4-byte words. The range is `allocation.offset` and `allocation.size`, or,
    /// where Triton prints no size (3.6 to 3.8), the converted tile's bytes, what a conversion
    /// in one round uses (one in several rounds reuses a smaller scratch).
    pub(super) fn scratch_traffic(&mut self, op: &Op, ty: &Type, span: Span) -> R<()> {
        if !self.inlining.is_empty() || self.placed.is_empty() {
            return Ok(());
        }
        let Some(offset) = self.opt_int_attr(op, "allocation.offset")? else {
            return Ok(());
        };
        let Some(size) = self
            .opt_int_attr(op, "allocation.size")?
            .or_else(|| type_bytes(ty))
        else {
            return Ok(());
        };
        let mut hits = Vec::new();
        for p in &self.placed {
            let (lo, hi) = (offset.max(p.offset), (offset + size).min(p.offset + p.bytes));
            let visible = matches!(
                self.get(&p.ssa, span),
                Ok(Val::E(Expr { kind: ExprKind::Name(ref n), .. }, _)) if *n == p.tile
            );
            // Buffers of whole 4-byte words, the granule of the checker's shared-memory shadow
            // (a smaller or odd-sized buffer is left out); the words that hold the overlap.
            if lo < hi && visible && p.bytes % 4 == 0 {
                hits.push((
                    p.tile.clone(),
                    p.bytes / 4,
                    (lo - p.offset) / 4,
                    (hi - p.offset + 3) / 4,
                ));
            }
        }
        for (tile, words, first, end) in hits {
            self.word_traffic(&tile, words, first, end, span);
        }
        Ok(())
    }

    /// `smem.scatter` of zeros to words `first..end` of buffer `tile` (`words` 4-byte words),
    /// then `smem.gather` of them, through an `i32[words]` view of its bytes.
    fn word_traffic(&mut self, tile: &str, words: i64, first: i64, end: i64, span: Span) {
        let view_ty = self.shaped_as(DType::I32, &[words.max(1)], span);
        let view = self.let_op(
            &format!("{tile}_scratch"),
            OpKind::SmemReinterpret {
                src: name_e(tile, span),
                ty: view_ty,
                layout: name_e("plain", span),
            },
            span,
        );
        // One index a word, in a power-of-two tile: the last word repeated past the end.
        let n = u64::try_from(end - first).unwrap_or(1).max(1);
        let len = i64::try_from(n.next_power_of_two()).unwrap_or(i64::MAX);
        let layout = call(
            "blocked",
            vec![
                list_e(&[1], span),
                list_e(&[32], span),
                list_e(&[self.warps], span),
                list_e(&[0], span),
            ],
            span,
        );
        let range = call(
            "arange",
            vec![int_e(0, span), int_e(len, span), layout.clone()],
            span,
        );
        let shifted = bin(BinOp::Add, range, int_e(first, span), span);
        let idx_e = call("min", vec![shifted, int_e(end - 1, span)], span);
        let idx = self.let_(&format!("{tile}_words"), Rhs::Expr(idx_e), span);
        let zeros = call(
            "full",
            vec![list_e(&[len], span), int_e(0, span), name_e("i32", span), layout],
            span,
        );
        self.op_stmt(
            OpKind::SmemScatter {
                dst: name_e(&view, span),
                index: name_e(&idx, span),
                value: zeros,
                axis: int_e(0, span),
            },
            span,
        );
        self.let_op(
            &format!("{tile}_scratch_read"),
            OpKind::SmemGather {
                src: name_e(&view, span),
                index: name_e(&idx, span),
                axis: int_e(0, span),
            },
            span,
        );
    }
}
