//! Cluster kernels (`ttg.num-ctas` > 1): TTGIR describes one program for the whole cluster
//! (Gluon's CGA layouts), bwsim's IR one program per CTA. This module owns the translation
//! between the two:
//!
//! - every tensor, shared buffer, tensor-memory buffer, barrier array and descriptor block is
//!   read as the piece one CTA holds ([`Cx::localize`]): its CGA layout (`CGALayout` of a shared
//!   or tensor-memory encoding, `block` bases of a linear layout, 3.7's `CTASplitM`) says, for
//!   each bit of the CTA's rank in the cluster, which dimension that bit splits, or that the CTAs
//!   along it hold the same piece (a broadcast);
//! - a TMA copy moves the CTA's piece, its coordinates offset by the piece's origin; a
//!   `{multicast}` load of a broadcast block is issued by the first CTA of each broadcast group
//!   and lands in all of them (`multicast=MASK`);
//! - a barrier broadcast over a CTA pair (`allocate_mbarrier(two_ctas=True)`) lives in the
//!   pair's first CTA: it is initialised there for both CTAs' arrivals, both CTAs' expects and
//!   copies complete on it (`cta=`, `bar_cta=`), and only that CTA waits on it;
//! - a `{two_ctas}` MMA is issued by the pair's first CTA as `cta_group=2`, its commits arriving
//!   on both CTAs' barriers; a `{multicast}` MMA's commits arrive on every CTA that shares its
//!   operands;
//! - `program_id(0)` is the cluster's index (Triton's grid counts clusters);
//! - a reduction along a dimension split over CTAs (to a tensor, or of a 1-D tensor to a
//!   scalar), and a layout conversion between two CTA layouts, exchange the pieces through
//!   distributed shared memory between cluster barriers ([`Cx::cluster_reduce`],
//!   [`Cx::cluster_convert`]);
//! - what Triton's compiler adds for cluster kernels is added too: from 3.8, when a barrier can
//!   be reached from another CTA ([`Cx::needs_init_sync`]), the barriers' initialisation is
//!   made visible to the cluster right before the first operation that uses a barrier
//!   (`fence.mbarrier_init` and a relaxed cluster barrier; inside a loop when that operation
//!   is, so every iteration starts with it; before the `warp_specialize` when the first use is
//!   in one of its partitions, which cannot run cluster barriers), and a kernel ends with a
//!   cluster barrier, so that no CTA leaves while another may still reach its shared memory.
//!
//! What Triton 3.9 emits for each of these was read from its PTX for the fixtures in
//! tests/gluon (docs/semantics.md#clusters-and-cta-pairs).

use super::*;
use bwsim_isa::builtins::ReduceOp;

/// How a tensor, buffer or barrier array is spread over the CTAs of a cluster: for each bit of
/// the CTA's rank, the dimension that bit splits and the element offset it moves the CTA's
/// piece by, or `None` when the CTAs that differ in that bit hold the same piece.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Cga {
    pub bits: Vec<Option<(usize, i64)>>,
}

impl Cga {
    /// The rank bits along which the CTAs hold the same piece.
    pub fn broadcast_mask(&self) -> i64 {
        self.bits
            .iter()
            .enumerate()
            .filter(|(_, b)| b.is_none())
            .map(|(i, _)| 1i64 << i)
            .sum()
    }

    /// How many CTAs each dimension is split over.
    fn splits(&self, rank: usize) -> Vec<i64> {
        let mut s = vec![1i64; rank];
        for (d, _) in self.bits.iter().flatten() {
            if let Some(x) = s.get_mut(*d) {
                *x *= 2;
            }
        }
        s
    }
}

/// `a` and `b` (two CTAs' partials) combined by `f`.
fn fold_e(f: ReduceOp, a: Expr, b: Expr, span: Span) -> R<Expr> {
    Ok(match f {
        ReduceOp::Sum => bin(BinOp::Add, a, b, span),
        ReduceOp::Prod => bin(BinOp::Mul, a, b, span),
        ReduceOp::Max => call("max", vec![a, b], span),
        ReduceOp::Min => call("min", vec![a, b], span),
        ReduceOp::And => bin(BinOp::BitAnd, a, b, span),
        ReduceOp::Or => bin(BinOp::BitOr, a, b, span),
        ReduceOp::Xor => bin(BinOp::BitXor, a, b, span),
        ReduceOp::Argmax | ReduceOp::Argmin => return Err(argext_error(span)),
    })
}

fn argext_error(span: Span) -> ImportError {
    ImportError::UnsupportedType {
        message: "an argmax or argmin across the CTAs of a cluster is not supported".into(),
        span,
    }
}

/// The CTAs that differ from rank 0 only in the rank bits of `bits`, as a mask.
pub(super) fn group_of(bits: i64) -> i64 {
    let mut m = 0i64;
    let mut sub = bits;
    loop {
        m |= 1 << sub;
        if sub == 0 {
            break;
        }
        sub = (sub - 1) & bits;
    }
    m
}

/// Whether TTGIR operation `name` uses an mbarrier: before the first such operation after a
/// cluster kernel's barrier initialisation, Triton (3.8 and later) releases the inits to the
/// cluster. It places that release where the first use is, inside a loop when the use is, so
/// that it then runs every iteration (read from Triton 3.9's PTX: the relaxed cluster barrier
/// heads the loop).
pub(super) fn uses_a_barrier(name: &str) -> bool {
    matches!(
        name,
        "ttng.barrier_expect"
            | "ttng.wait_barrier"
            | "ttng.arrive_barrier"
            | "ttng.async_tma_copy_global_to_local"
            | "ttng.async_tma_gather"
            | "ttng.tc_gen5_mma"
            | "ttng.tc_gen5_mma_scaled"
            | "ttng.tc_gen5_commit"
            | "ttng.async_copy_mbarrier_arrive"
            | "ttng.clc_try_cancel"
    )
}

/// Whether `op`, or an operation nested in its regions, uses an mbarrier ([`uses_a_barrier`]).
pub(super) fn contains_a_barrier_use(op: &Op) -> bool {
    uses_a_barrier(&op.name)
        || op
            .regions
            .iter()
            .any(|r| r.ops.iter().any(contains_a_barrier_use))
}

impl Cx<'_> {
    /// Whether Triton's compiler (3.8 and later) releases the barriers' initialisation to the
    /// cluster in a kernel whose body is `ops`: only when a barrier can be reached from another
    /// CTA, because it is shared by a group of CTAs (`allocate_mbarrier(two_ctas=True)`: a
    /// broadcast bit in its CTA layout) or because an operation that signals barriers across
    /// the cluster is present (a multicast TMA load, a two-CTA MMA, whose commits reach the
    /// peer, or a CLC query, whose response is multicast). Barriers every CTA keeps to itself get
    /// no release (read from Triton 3.9's `ClusterBarrierInsertion`, which decides this per
    /// barrier; here any such operation in the kernel counts for all of them).
    pub(super) fn needs_init_sync(&self, ops: &[Op]) -> R<bool> {
        for op in ops {
            let span = self.span_of(op);
            let reaches_peers = match op.name.as_str() {
                "ttng.init_barrier" => self.operand_group(op, 0, span)? != 0,
                "ttng.tc_gen5_mma" | "ttng.tc_gen5_mma_scaled" => self.attr_dict(op)?.has("two_ctas"),
                "ttng.async_tma_copy_global_to_local" | "ttng.async_tma_gather" => {
                    self.attr_dict(op)?.has("multicast")
                }
                "ttng.clc_try_cancel" => true,
                _ => false,
            };
            if reaches_peers {
                return Ok(true);
            }
            for r in &op.regions {
                if self.needs_init_sync(&r.ops)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Whether `ops` (or an operation nested in them) is a two-CTA MMA (`{two_ctas}`). Triton
    /// then lowers every `tcgen05_commit` of the kernel as the pair's (`cta_group::2`, issued by
    /// the pair's first CTA and multicast to both), as its MMAs are the pair's.
    pub(super) fn has_two_cta_mma(&self, ops: &[Op]) -> R<bool> {
        for op in ops {
            if matches!(op.name.as_str(), "ttng.tc_gen5_mma" | "ttng.tc_gen5_mma_scaled")
                && self.attr_dict(op)?.has("two_ctas")
            {
                return Ok(true);
            }
            for r in &op.regions {
                if self.has_two_cta_mma(&r.ops)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The CTA layout of operand `i` of `op` (its printed type), in a cluster kernel.
    pub(super) fn operand_cga(&self, op: &Op, i: usize, span: Span) -> R<Option<Cga>> {
        if self.num_ctas <= 1 {
            return Ok(None);
        }
        self.cga_of_ty(self.sig(op)?.inputs.get(i), span)
    }

    /// The broadcast rank bits of operand `i` of `op`: nonzero for a block every CTA of a group
    /// holds, or a barrier shared by a group of CTAs (`allocate_mbarrier(two_ctas=True)`, which
    /// lives in the group's first CTA).
    pub(super) fn operand_group(&self, op: &Op, i: usize, span: Span) -> R<i64> {
        Ok(self
            .operand_cga(op, i, span)?
            .map(|c| c.broadcast_mask())
            .unwrap_or(0))
    }

    /// The CTA layout of a value of type `ty` (one CTA's piece).
    pub(super) fn cga_of_ty(&self, ty: Option<&Type>, span: Span) -> R<Option<Cga>> {
        match ty {
            Some(Type::MemDesc { shape, enc, .. }) => self.cga(enc, shape, true, span),
            Some(Type::TensorDesc {
                block, enc: Some(e), ..
            }) => self.cga(e, block, true, span),
            Some(Type::Tensor {
                shape, enc: Some(e), ..
            }) => self.cga(e, shape, true, span),
            _ => Ok(None),
        }
    }

    /// The CTA layout of encoding `enc` for a whole-cluster `shape` (one CTA's piece when
    /// `local`), when the module is a cluster kernel and the encoding spreads anything over it.
    pub(super) fn cga(&self, enc: &AttrVal, shape: &[i64], local: bool, span: Span) -> R<Option<Cga>> {
        if self.num_ctas <= 1 {
            return Ok(None);
        }
        let mut v = enc.clone();
        for _ in 0..32 {
            match v {
                AttrVal::Alias(ref n) if !n.contains('.') => v = self.attrs.alias(n, span)?,
                _ => break,
            }
        }
        let AttrVal::Dialect(kind, d) = &v else {
            return Ok(None);
        };
        if kind == "ttg.slice" {
            // A slice of a layout: the parent's CTA layout without the sliced dimension, the
            // CTAs that differed only along it now holding the same values.
            let (Some(dim), Some(parent)) = (d.get("dim").and_then(|x| x.as_int()), d.get("parent")) else {
                return Ok(None);
            };
            let dim = dim as usize;
            let mut pshape = shape.to_vec();
            pshape.insert(dim.min(pshape.len()), 1);
            let Some(p) = self.cga(parent, &pshape, local, span)? else {
                return Ok(None);
            };
            return Ok(Some(Cga {
                bits: p
                    .bits
                    .iter()
                    .map(|b| match *b {
                        Some((dd, _)) if dd == dim => None,
                        Some((dd, off)) if dd > dim => Some((dd - 1, off)),
                        other => other,
                    })
                    .collect(),
            }));
        }
        let bad = |what: &str| ImportError::UnsupportedType {
            message: format!("a CTA layout bwsim cannot read: {what}"),
            span,
        };
        let bases = |k: &str| -> R<Option<Vec<Vec<i64>>>> {
            match d.get(k) {
                Some(AttrVal::List(l)) => l
                    .iter()
                    .map(|b| b.ints().ok_or_else(|| bad(k)))
                    .collect::<R<Vec<_>>>()
                    .map(Some),
                Some(_) => Err(bad(k)),
                None => Ok(None),
            }
        };
        let one_dim = |b: &[i64]| -> R<Option<(usize, i64)>> {
            let nz: Vec<(usize, i64)> = b.iter().copied().enumerate().filter(|(_, x)| *x != 0).collect();
            match nz.as_slice() {
                [] => Ok(None),
                [(d, x)] if *x > 0 => Ok(Some((*d, *x))),
                _ => Err(bad(&format!("the basis {b:?} moves along several dimensions"))),
            }
        };
        let cga = if let Some(bs) = bases("block")? {
            // A linear layout: bases in elements.
            Cga {
                bits: bs.iter().map(|b| one_dim(b)).collect::<R<_>>()?,
            }
        } else if let Some(bs) = bases("CGALayout")? {
            // A shared or tensor-memory encoding: bases in CTA pieces. An encoding of fewer
            // dimensions than the buffer (a ring of stages `[S, M, K]`, a batch of barriers
            // `[N, 2]`, allocated with the layout of one entry) spreads the trailing
            // dimensions; the leading ones index whole entries and are never split.
            let lead = bs.first().map_or(0, |b| shape.len().saturating_sub(b.len()));
            let units = Cga {
                bits: bs
                    .iter()
                    .map(|b| Ok(one_dim(b)?.map(|(d, x)| (d + lead, x))))
                    .collect::<R<_>>()?,
            };
            let splits = units.splits(shape.len());
            let piece = |d: usize| if local { shape[d] } else { shape[d] / splits[d] };
            Cga {
                bits: units
                    .bits
                    .iter()
                    .map(|b| b.map(|(d, k)| (d, k * piece(d))))
                    .collect(),
            }
        } else if let Some(m) = d.get("CTASplitM").and_then(|x| x.as_int()) {
            // Triton 3.7's tensor-memory encoding: rows split over `m` CTAs.
            let n = m.max(1).trailing_zeros() as usize;
            let rows = shape.first().copied().unwrap_or(0);
            let piece = if local { rows } else { rows / m.max(1) };
            Cga {
                bits: (0..n).map(|i| Some((0, piece << i))).collect(),
            }
        } else {
            return Ok(None);
        };
        let want = self.num_ctas.trailing_zeros() as usize;
        if cga.bits.len() != want {
            return Err(bad(&format!(
                "{} rank bits for a cluster of {} CTAs",
                cga.bits.len(),
                self.num_ctas
            )));
        }
        Ok(Some(cga))
    }

    /// The piece of a whole-cluster shape one CTA holds.
    fn local_shape(&self, enc: Option<&AttrVal>, shape: &[i64], span: Span) -> R<Vec<i64>> {
        let Some(cga) = enc
            .map(|e| self.cga(e, shape, false, span))
            .transpose()?
            .flatten()
        else {
            return Ok(shape.to_vec());
        };
        Ok(shape
            .iter()
            .zip(cga.splits(shape.len()))
            .map(|(x, s)| x / s)
            .collect())
    }

    /// `t` as one CTA of the cluster sees it (its shapes divided as its CTA layout splits them).
    pub(super) fn localize(&self, t: Type, span: Span) -> R<Type> {
        if self.num_ctas <= 1 {
            return Ok(t);
        }
        Ok(match t {
            Type::Tensor { shape, elem, enc } => Type::Tensor {
                shape: self.local_shape(enc.as_ref(), &shape, span)?,
                elem,
                enc,
            },
            Type::MemDesc {
                shape,
                elem,
                enc,
                tmem,
                alloc,
            } => Type::MemDesc {
                shape: self.local_shape(Some(&enc), &shape, span)?,
                alloc: alloc
                    .map(|a| self.local_shape(Some(&enc), &a, span))
                    .transpose()?,
                elem,
                enc,
                tmem,
            },
            Type::TensorDesc { block, elem, enc } => Type::TensorDesc {
                block: self.local_shape(enc.as_ref(), &block, span)?,
                elem,
                enc,
            },
            other => other,
        })
    }

    /// `cluster_rank()`.
    pub(super) fn rank_e(span: Span) -> Expr {
        call("cluster_rank", Vec::new(), span)
    }

    /// Bit `b` of the CTA's rank: `cluster_rank() >> b & 1`.
    fn rank_bit_e(b: usize, span: Span) -> Expr {
        let r = match b {
            0 => Self::rank_e(span),
            _ => bin(BinOp::Shr, Self::rank_e(span), int_e(b as i64, span), span),
        };
        bin(BinOp::BitAnd, r, int_e(1, span), span)
    }

    /// The rank of the first CTA of this CTA's group of the broadcast rank bits `mask`:
    /// `cluster_rank() & KEEP` (0 when every bit is broadcast).
    pub(super) fn leader_e(&self, mask: i64, span: Span) -> Expr {
        match (self.num_ctas - 1) & !mask {
            0 => int_e(0, span),
            keep => bin(BinOp::BitAnd, Self::rank_e(span), int_e(keep, span), span),
        }
    }

    /// Whether this CTA is the first of its broadcast group: `cluster_rank() & mask == 0`.
    pub(super) fn is_leader_e(mask: i64, span: Span) -> Expr {
        bin(
            BinOp::Eq,
            bin(BinOp::BitAnd, Self::rank_e(span), int_e(mask, span), span),
            int_e(0, span),
            span,
        )
    }

    /// The multicast mask of this CTA's group of the broadcast rank bits `bits`.
    pub(super) fn group_mask_e(&self, bits: i64, span: Span) -> Expr {
        match self.leader_e(bits, span) {
            e if matches!(e.kind, ExprKind::Int(0)) => int_e(group_of(bits), span),
            lead => bin(BinOp::Shl, int_e(group_of(bits), span), lead, span),
        }
    }

    /// `a and b`, where either may be absent (true).
    pub(super) fn and_pred(a: Option<Expr>, b: Option<Expr>, span: Span) -> Option<Expr> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(x), Some(y)) => Some(bin(BinOp::And, x, y, span)),
        }
    }

    /// `coords` moved to this CTA's piece: each coordinate plus the offsets of the rank bits
    /// that split its dimension.
    pub(super) fn local_coords(&self, cga: &Cga, coords: Vec<Expr>, span: Span) -> Vec<Expr> {
        let mut out = coords;
        for (b, bit) in cga.bits.iter().enumerate() {
            let Some((d, off)) = *bit else { continue };
            let Some(c) = out.get_mut(d) else { continue };
            let set = Self::rank_bit_e(b, span);
            let add = bin(BinOp::Mul, set, int_e(off, span), span);
            *c = bin(BinOp::Add, c.clone(), add, span);
        }
        out
    }

    /// `partial`, this CTA's reduction by `f` along `axis` of a tensor whose CTA layout
    /// `operand` splits that axis, combined with the partials of the other CTAs of its group:
    /// each CTA stores its partial into a slot of a shared buffer in every CTA of the group
    /// (distributed shared memory), a cluster barrier hands them over, and each CTA folds the
    /// slots in group order; a second cluster barrier keeps the buffer until every CTA has read
    /// it. `ty` is the result's (one CTA's) type. The result is the same in every CTA of the
    /// group, as the result's CTA layout (a slice) says.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cluster_reduce(
        &mut self,
        hint: &str,
        partial: Expr,
        ty: &Type,
        operand_ty: &Type,
        operand: &Cga,
        axis: usize,
        f: ReduceOp,
        span: Span,
    ) -> R<Expr> {
        let split: Vec<usize> = operand
            .bits
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, Some((d, _)) if *d == axis))
            .map(|(i, _)| i)
            .collect();
        if split.is_empty() {
            return Ok(partial);
        }
        let (Some(shape), Some(elem)) = (ty.shape(), ty.elem()) else {
            return self.cluster_reduce_scalar(hint, partial, ty, operand_ty, &split, f, span);
        };
        let layout = self.required_layout(ty, span)?;
        let group = 1i64 << split.len();
        // Slot j is rows j*R0 .. (j+1)*R0 of the buffer: constant slices, which every back end
        // takes.
        let r0 = shape.first().copied().unwrap_or(1);
        let mut bshape = shape.to_vec();
        bshape[0] = group * r0;
        let buf = self.plain_smem(&format!("{hint}_cluster"), dtype_of(elem, span)?, &bshape, span);
        let rank = shape.len();
        let slot = |j: i64| {
            let mut items = vec![IndexItem::Slice(
                Some(int_e(j * r0, span)),
                Some(int_e((j + 1) * r0, span)),
            )];
            items.extend((1..rank).map(|_| IndexItem::Slice(None, None)));
            index(name_e(&buf, span), items, span)
        };
        // This CTA's place in its group, and the group's first rank.
        let mut me: Option<Expr> = None;
        for (i, &b) in split.iter().enumerate() {
            let bit = Self::rank_bit_e(b, span);
            let term = match i {
                0 => bit,
                _ => bin(BinOp::Shl, bit, int_e(i as i64, span), span),
            };
            me = Some(match me {
                Some(m) => bin(BinOp::BitOr, m, term, span),
                None => term,
            });
        }
        let me = me.unwrap_or_else(|| int_e(0, span));
        let mask: i64 = split.iter().map(|&b| 1i64 << b).sum();
        let base = self.leader_e(mask, span);
        // CTA `k` of the group writes slot `k` of every CTA of the group.
        for k in 0..group {
            self.open_block();
            for j in 0..group {
                let peer: i64 = split.iter().enumerate().map(|(i, &b)| ((j >> i) & 1) << b).sum();
                let rank = match (&base.kind, peer) {
                    (_, 0) => base.clone(),
                    (ExprKind::Int(0), p) => int_e(p, span),
                    _ => bin(BinOp::BitOr, base.clone(), int_e(peer, span), span),
                };
                self.op_stmt(
                    OpKind::SmemStore {
                        dst: slot(k),
                        value: partial.clone(),
                        cta: Some(rank),
                    },
                    span,
                );
            }
            self.close_if(bin(BinOp::Eq, me.clone(), int_e(k, span), span), span);
        }
        self.cluster_exit_sync(span);
        let mut acc: Option<Expr> = None;
        for j in 0..group {
            let n = self.let_op(
                &format!("{hint}_part"),
                OpKind::SmemLoad {
                    src: slot(j),
                    layout: Some(layout.clone()),
                    cta: None,
                },
                span,
            );
            let v = name_e(&n, span);
            acc = Some(match acc {
                None => v,
                Some(a) => fold_e(f, a, v, span)?,
            });
        }
        let total = self.let_(hint, Rhs::Expr(acc.unwrap_or(partial)), span);
        self.cluster_exit_sync(span);
        Ok(name_e(&total, span))
    }

    /// [`Cx::cluster_reduce`] of a 1-D tensor to a scalar, as Triton 3.9 lowers it: each CTA
    /// stores its partial into its own shared memory, a cluster barrier publishes the
    /// partials, each CTA reads every partial of its group from the CTA that holds it
    /// (distributed shared memory) and folds them in group order, and a second cluster barrier
    /// keeps the partials until every CTA has read them (Triton's lowering has it before the
    /// next use of the scratch buffer, or at the kernel's end). The partial travels as a
    /// one-element tile in the operand's layout; `ty` is the scalar result's type.
    #[allow(clippy::too_many_arguments)]
    fn cluster_reduce_scalar(
        &mut self,
        hint: &str,
        partial: Expr,
        ty: &Type,
        operand_ty: &Type,
        split: &[usize],
        f: ReduceOp,
        span: Span,
    ) -> R<Expr> {
        let (Some(elem), Some(1)) = (ty.elem(), operand_ty.shape().map(<[i64]>::len)) else {
            return Err(ImportError::UnsupportedType {
                message: "a reduction across the CTAs of a cluster to a scalar of a tensor that is not 1-D"
                    .into(),
                span,
            });
        };
        if matches!(f, ReduceOp::Argmax | ReduceOp::Argmin) {
            return Err(argext_error(span));
        }
        let d = dtype_of(elem, span)?;
        let layout = self.required_layout(operand_ty, span)?;
        let one = self.let_(
            &format!("{hint}_one"),
            Rhs::Expr(call(
                "full",
                vec![
                    list_e(&[1], span),
                    partial,
                    name_e(d.name(), span),
                    layout.clone(),
                ],
                span,
            )),
            span,
        );
        let buf = self.plain_smem(&format!("{hint}_cluster"), d, &[1], span);
        self.op_stmt(
            OpKind::SmemStore {
                dst: name_e(&buf, span),
                value: name_e(&one, span),
                cta: None,
            },
            span,
        );
        self.cluster_exit_sync(span);
        let mask: i64 = split.iter().map(|&b| 1i64 << b).sum();
        let base = self.leader_e(mask, span);
        let mut acc: Option<Expr> = None;
        for j in 0..(1i64 << split.len()) {
            let peer: i64 = split.iter().enumerate().map(|(i, &b)| ((j >> i) & 1) << b).sum();
            let rank = match (&base.kind, peer) {
                (_, 0) => base.clone(),
                (ExprKind::Int(0), p) => int_e(p, span),
                _ => bin(BinOp::BitOr, base.clone(), int_e(peer, span), span),
            };
            let n = self.let_op(
                &format!("{hint}_part"),
                OpKind::SmemLoad {
                    src: name_e(&buf, span),
                    layout: Some(layout.clone()),
                    cta: Some(rank),
                },
                span,
            );
            let v = name_e(&n, span);
            acc = Some(match acc {
                None => v,
                Some(a) => fold_e(f, a, v, span)?,
            });
        }
        let folded = acc.unwrap_or_else(|| name_e(&one, span));
        let total = self.let_(
            hint,
            Rhs::Expr(call(f.name(), vec![folded, int_e(0, span)], span)),
            span,
        );
        self.cluster_exit_sync(span);
        Ok(name_e(&total, span))
    }

    /// What Triton's compiler adds after a cluster kernel's barrier initialisation (3.8 and
    /// later): the inits are released to the cluster before any CTA uses another's barrier.
    /// `ttg.convert_layout` of `x` (one CTA's piece, of type `src`, spread as `from`) to type
    /// `dst` spread as `to`, when the two CTA layouts differ: the pieces move between the CTAs
    /// through distributed shared memory, as Triton's lowering moves them (an exchange through
    /// shared memory between cluster barriers). A buffer of the whole tensor in every CTA;
    /// the first CTA of each group holding the same source piece writes it into every CTA's
    /// buffer at the piece's place; a cluster barrier; each CTA reads its destination piece;
    /// a cluster barrier again, so that no CTA writes the next exchange (or leaves) while a
    /// peer still reads.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cluster_convert(
        &mut self,
        hint: &str,
        x: Expr,
        src: &Type,
        from: &Cga,
        dst: &Type,
        to: &Cga,
        span: Span,
    ) -> R<Expr> {
        let (Some(src_shape), Some(dst_shape), Some(elem)) = (src.shape(), dst.shape(), dst.elem()) else {
            return Err(ImportError::UnsupportedType {
                message: "a layout conversion across the CTAs of a cluster of a scalar".into(),
                span,
            });
        };
        let (src_shape, dst_shape) = (src_shape.to_vec(), dst_shape.to_vec());
        let rank = src_shape.len();
        let whole: Vec<i64> = src_shape
            .iter()
            .zip(from.splits(rank))
            .map(|(x, k)| x * k)
            .collect();
        let layout = self.required_layout(dst, span)?;
        let buf = self.plain_smem(&format!("{hint}_exchange"), dtype_of(elem, span)?, &whole, span);
        // The region of the whole tensor the CTA of rank `k` holds under `cga`.
        let region = |cga: &Cga, shape: &[i64], k: i64| {
            let mut start = vec![0i64; shape.len()];
            for (b, bit) in cga.bits.iter().enumerate() {
                if let Some((d, off)) = *bit {
                    if (k >> b) & 1 == 1 {
                        start[d] += off;
                    }
                }
            }
            let items = start
                .iter()
                .zip(shape)
                .map(|(s0, n)| IndexItem::Slice(Some(int_e(*s0, span)), Some(int_e(s0 + n, span))))
                .collect();
            index(name_e(&buf, span), items, span)
        };
        let ctas = self.num_ctas;
        let bcast = from.broadcast_mask();
        for k in (0..ctas).filter(|k| k & bcast == 0) {
            self.open_block();
            for j in 0..ctas {
                self.op_stmt(
                    OpKind::SmemStore {
                        dst: region(from, &src_shape, k),
                        value: x.clone(),
                        cta: Some(int_e(j, span)),
                    },
                    span,
                );
            }
            self.close_if(bin(BinOp::Eq, Self::rank_e(span), int_e(k, span), span), span);
        }
        self.cluster_exit_sync(span);
        // This CTA's destination piece: the first one read, the others replacing it where the
        // CTA's split rank bits name them.
        let split = (ctas - 1) & !to.broadcast_mask();
        let load = |k: i64| OpKind::SmemLoad {
            src: region(to, &dst_shape, k),
            layout: Some(layout.clone()),
            cta: None,
        };
        let out = self.let_op(hint, load(0), span);
        for k in (1..ctas).filter(|k| k & !split == 0) {
            self.open_block();
            self.assign(&out, Rhs::Op(IrOp::new(load(k), span)), span);
            self.close_if(
                bin(
                    BinOp::Eq,
                    bin(BinOp::BitAnd, Self::rank_e(span), int_e(split, span), span),
                    int_e(k, span),
                    span,
                ),
                span,
            );
        }
        self.cluster_exit_sync(span);
        Ok(name_e(&out, span))
    }

    pub(super) fn cluster_init_sync(&mut self, span: Span) {
        self.op_stmt(OpKind::FenceMbarrierInit {}, span);
        self.op_stmt(
            OpKind::ClusterArrive {
                relaxed: Some(ex(ExprKind::Bool(true), span)),
            },
            span,
        );
        self.op_stmt(OpKind::ClusterWait {}, span);
    }

    /// What Triton's compiler adds at the end of a cluster kernel: a cluster barrier, so that
    /// no CTA exits while another may still access its shared memory.
    pub(super) fn cluster_exit_sync(&mut self, span: Span) {
        self.op_stmt(OpKind::ClusterArrive { relaxed: None }, span);
        self.op_stmt(OpKind::ClusterWait {}, span);
    }
}

#[cfg(test)]
mod tests {
    use super::{group_of, Cga};

    #[test]
    fn broadcast_groups_and_their_masks() {
        // Two CTAs sharing one piece: both in the group.
        let c = Cga { bits: vec![None] };
        assert_eq!((c.broadcast_mask(), group_of(c.broadcast_mask())), (1, 0b11));
        // Four CTAs, rows split by bit 0, bit 1 broadcast: CTAs r and r + 2 share a piece.
        let c = Cga {
            bits: vec![Some((0, 64)), None],
        };
        assert_eq!((c.broadcast_mask(), group_of(c.broadcast_mask())), (2, 0b101));
        // Nothing broadcast: a CTA is its own group.
        let c = Cga {
            bits: vec![Some((0, 128))],
        };
        assert_eq!((c.broadcast_mask(), group_of(c.broadcast_mask())), (0, 1));
    }
}
