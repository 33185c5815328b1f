//! Memory operations: shared and tensor memory allocations and views, TMA copies, the
//! tensor-core MMAs.

use super::*;
use crate::version::Version;

/// A shared-memory view operation's result type and the parts of its operand's and result's
/// types its importers read ([`Cx::shared_view`]).
struct SharedView {
    src_shape: Vec<i64>,
    src_enc: AttrVal,
    alloc: Option<Vec<i64>>,
    shape: Vec<i64>,
    elem: Elem,
    enc: AttrVal,
    ty: Type,
}

/// The operands of `%x[%idx]... {axis}` ([`Cx::indexed_operands`]).
struct Indexed {
    /// `%x` with its bracket.
    first: Item,
    index: Expr,
    axis: Expr,
    /// The operands after `%x[%idx]`.
    rest: Vec<(String, Span)>,
}

impl<'m> Cx<'m> {
    /// The operand's and the result's types of a view operation on shared memory (`what`:
    /// "transposed", "reshaped"): the operand a value of the module, both types shared-memory
    /// descriptors.
    fn shared_view(&mut self, op: &Op, operand: &(String, Span), what: &str) -> R<SharedView> {
        let not_shared = |cx: &Self| cx.misuse(op, format!("only shared-memory views can be {what}"));
        let Val::E(
            _,
            Type::MemDesc {
                shape: src_shape,
                enc: src_enc,
                tmem: false,
                alloc,
                ..
            },
        ) = self.get(&operand.0, operand.1)?
        else {
            return Err(not_shared(self));
        };
        let ty = self.result_type(op, 0)?;
        let Type::MemDesc {
            shape,
            elem,
            enc,
            tmem: false,
            ..
        } = ty.clone()
        else {
            return Err(not_shared(self));
        };
        Ok(SharedView {
            src_shape,
            src_enc,
            alloc,
            shape,
            elem,
            enc,
            ty,
        })
    }

    /// Bind `op`'s result, of the shared-memory type `ty`, to `smem.reinterpret` of
    /// `operand`'s bytes as `ty` says: its shape, element type and layout.
    pub(super) fn smem_reinterpret(
        &mut self,
        op: &Op,
        operand: &(String, Span),
        ty: Type,
        span: Span,
    ) -> R<()> {
        let Type::MemDesc {
            shape,
            elem,
            enc,
            tmem: false,
            ..
        } = &ty
        else {
            return Err(self.misuse(op, "only shared- and tensor-memory views can be reinterpreted"));
        };
        let src = self.expr(&operand.0, operand.1)?;
        let t = self.shaped(*elem, shape, span)?;
        let layout = self.smem_layout(enc, span)?;
        let res = self.result(op, 0)?;
        let n = self.let_op(&res, OpKind::SmemReinterpret { src, ty: t, layout }, span);
        self.bind(&res, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// `ttg.memdesc_trans` (Gluon's `permute((1, 0))` of a shared buffer): an NVMMA matrix
    /// `[R, C]` stored with C contiguous is, byte for byte, the `[C, R]` matrix of the same
    /// swizzle with `transposed` flipped (how an `[N, K]` K-major B tile becomes the `[K, N]`
    /// operand of an MMA), so the view is `smem.reinterpret` of the same bytes. Only whole
    /// matrices (a buffer or an index of one): a subslice's bytes are not one run of memory,
    /// and a transposed view of another shared layout has no bwsim layout.
    pub(super) fn memdesc_trans(&mut self, op: &Op, span: Span) -> R<()> {
        if let Type::MemDesc { enc, .. } = self.result_type(op, 0)? {
            if matches!(self.attrs.layout(&enc, span)?, Layout::SharedLinear { .. }) {
                return self.memdesc_dense_view(op, span);
            }
        }
        let v = self.n_operands(op, 1)?;
        let order = self.ints_attr(op, "order")?;
        let SharedView {
            src_shape,
            src_enc,
            alloc,
            shape,
            enc,
            ty,
            ..
        } = self.shared_view(op, &v[0], "transposed")?;
        let r = order.len();
        let swaps_last_two = r >= 2
            && r == src_shape.len()
            && order.iter().enumerate().all(|(i, &o)| {
                o == if i + 2 == r {
                    r as i64 - 1
                } else if i + 1 == r {
                    r as i64 - 2
                } else {
                    i as i64
                }
            });
        if !swaps_last_two {
            return Err(self.misuse(
                op,
                format!("order {order:?}: only a swap of the last two dimensions (`permute((1, 0))` of a matrix) is imported"),
            ));
        }
        let mut want = src_shape.clone();
        want.swap(r - 2, r - 1);
        if shape != want {
            return Err(self.misuse(
                op,
                "the result shape is not the operand's with its last two dimensions swapped",
            ));
        }
        match (self.attrs.layout(&src_enc, span)?, self.attrs.layout(&enc, span)?) {
            (
                Layout::NvmmaShared {
                    swizzle: a,
                    transposed: ta,
                    fp4_padded: pa,
                },
                Layout::NvmmaShared {
                    swizzle: b,
                    transposed: tb,
                    fp4_padded: pb,
                },
            ) if a == b && ta != tb && pa == pb => {}
            _ => {
                return Err(self.misuse(
                    op,
                    format!(
                        "a transposed view of layout {} has no bwsim layout: only NVMMA-swizzled buffers transpose in place",
                        self.layout_name(&src_enc, span)
                    ),
                ))
            }
        }
        if let Some(a) = alloc {
            if a.len() < 2 || a[a.len() - 2..] != src_shape[r - 2..] {
                return Err(self.misuse(
                    op,
                    "a transposed view of a subslice: transpose the whole buffer, then slice the transposed view",
                ));
            }
        }
        self.smem_reinterpret(op, &v[0], ty, span)
    }

    /// `ttg.memdesc_reshape`, and a `ttg.memdesc_trans` whose result is `shared_linear`: a
    /// new view of a dense buffer (plain, unswizzled NVMMA or linear: memory where an
    /// element's offset is all there is to its address). The result's layout says where each
    /// element lies, counted from the buffer's first element, so the view is `smem.reinterpret`
    /// of the same bytes with that layout. An NVMMA buffer whose leading dimensions are merged
    /// or split (its rows unchanged) is the same kind of view. A subslice (not one run of
    /// memory) or another view of a swizzled buffer (whose swizzle follows the absolute
    /// address) is refused.
    pub(super) fn memdesc_dense_view(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let view = self.shared_view(op, &v[0], "reshaped")?;
        let (src_shape, shape, alloc) = (&view.src_shape, &view.shape, &view.alloc);
        let dense = |l: &Layout| {
            matches!(
                l,
                Layout::NvmmaShared {
                    swizzle: 0,
                    transposed: false,
                    fp4_padded: false,
                } | Layout::SharedLinear { .. }
                    | Layout::SwizzledShared {
                        vec: 1,
                        per_phase: 1,
                        max_phase: 1,
                        ..
                    }
            )
        };
        let (from, to) = (
            self.attrs.layout(&view.src_enc, span)?,
            self.attrs.layout(&view.enc, span)?,
        );
        // An NVMMA buffer stacks rows of its last dimension, each padded to the swizzle span
        // (split into span-wide column blocks per matrix when wider): merging or splitting its
        // leading dimensions keeps every byte in place when a row fits the span or the
        // matrices themselves are kept.
        let stacked_rows = match (&from, &to) {
            (
                Layout::NvmmaShared {
                    swizzle: a,
                    transposed: false,
                    fp4_padded: pa,
                },
                Layout::NvmmaShared {
                    swizzle: b,
                    transposed: false,
                    fp4_padded: pb,
                },
            ) if a == b && pa == pb => {
                let bits = view.elem.dtype().map_or(8, |d| d.bits() as i64);
                let row_bytes = shape.last().copied().unwrap_or(0) * bits / 8 * if *pa { 2 } else { 1 };
                let same_rows = src_shape.last() == shape.last();
                let same_matrix = src_shape.len() >= 2
                    && shape.len() >= 2
                    && src_shape[src_shape.len() - 2..] == shape[shape.len() - 2..];
                same_rows && (row_bytes <= *a || same_matrix)
            }
            _ => false,
        };
        if !stacked_rows && (!dense(&from) || !dense(&to)) {
            return Err(self.misuse(
                op,
                format!(
                    "a reshaped or permuted view of {} as {}: bwsim views only dense buffers (plain, unswizzled NVMMA, shared_linear) this way",
                    self.layout_name(&view.src_enc, span),
                    self.layout_name(&view.enc, span)
                ),
            ));
        }
        if let Some(a) = alloc {
            let r = src_shape.len();
            if a.len() < r || a[a.len() - r..] != src_shape[..] {
                return Err(self.misuse(
                    op,
                    "a reshaped view of a subslice (not one run of memory): reshape the whole buffer",
                ));
            }
        }
        self.smem_reinterpret(op, &v[0], view.ty, span)
    }

    /// `ttg.async_copy_global_to_local %ptrs, %dst [mask %m] [other %o]` (Gluon's
    /// `async_copy_global_to_shared`) → `cp.async DST, PTR, OFFSETS[, mask=M]`. Masked elements
    /// are written as zeros (cp.async's zero fill), so an `other` must be zero. Cache and
    /// eviction hints do not change what is copied; the result is an async token.
    pub(super) fn async_copy(&mut self, op: &Op, span: Span) -> R<()> {
        let mut c = Cursor::new(self.operand_toks(op), op.span);
        let (mut pos, mut mask, mut other) = (Vec::new(), None, None);
        let mut key: Option<String> = None;
        while !c.at_end() {
            match c.peek().clone() {
                Tok::Value(n) => {
                    let s = c.span();
                    c.bump();
                    match key.take().as_deref() {
                        Some("mask") => mask = Some((n, s)),
                        Some("other") => other = Some((n, s)),
                        _ => pos.push((n, s)),
                    }
                }
                Tok::Ident(w) => {
                    key = Some(w);
                    c.bump();
                }
                Tok::Punct("{") => c.skip_item(),
                _ => {
                    c.bump();
                }
            }
        }
        let [(p, ps), (d, ds)] = <[(String, Span); 2]>::try_from(pos)
            .map_err(|_| self.misuse(op, "expects a pointer tensor and a shared-memory destination"))?;
        let Val::Ptr { base, offs, ty: pty } = self.get(&p, ps)? else {
            return Err(self.misuse(op, "the pointers are not derived from a pointer parameter"));
        };
        if !pty.is_tensor() {
            return Err(self.misuse(op, "the source must be a tensor of pointers"));
        }
        if let Some((o, os)) = &other {
            let zero = match self.get(o, *os)? {
                Val::Splat(e, _) => {
                    matches!(e.kind, ExprKind::Int(0)) || matches!(e.kind, ExprKind::Float(x) if x == 0.0)
                }
                _ => false,
            };
            if !zero {
                return Err(self.unsupported(
                    op,
                    "an `other` value that is not zero (cp.async writes zeros where the mask is false)",
                ));
            }
        }
        let offsets = match offs {
            Some(o) => self.offsets_tile(o, &pty, span)?,
            None => self.full(&int_tensor(&pty), int_e(0, span), span)?,
        };
        let dst = self.expr(&d, ds)?;
        let mask = match mask {
            Some((n, s)) => Some(self.math_operand(&n, s)?),
            None => None,
        };
        self.op_stmt(
            OpKind::CpAsync {
                dst,
                ptr: name_e(&base, span),
                offsets,
                mask,
            },
            span,
        );
        for r in &op.results {
            self.bind(r, Val::Token);
        }
        Ok(())
    }

    /// `ttg.async_wait {num = N}` (Gluon's `wait_group(N)`; its token operands order nothing
    /// more) → `cp.async.wait N`.
    pub(super) fn async_wait(&mut self, op: &Op, span: Span) -> R<()> {
        let n = self.int_attr(op, "num")?;
        self.op_stmt(
            OpKind::CpAsyncWait {
                pendings: int_e(n, span),
            },
            span,
        );
        for r in &op.results {
            self.bind(r, Val::Token);
        }
        Ok(())
    }

    pub(super) fn local_alloc(&mut self, op: &Op, span: Span) -> R<()> {
        let (ty, r) = self.alloc_result(op, false)?;
        let Type::MemDesc { shape, elem, enc, .. } = &ty else {
            return Err(self.misuse(op, "expected a shared-memory descriptor"));
        };
        let init = self.operands(op)?;
        // mbarriers: i64 buffers of shape [N, 1] (an array) or [1] (one barrier), unless the
        // kernel reads or writes them as data and never initialises them as barriers.
        let barrier = *elem == Elem::I64
            && (shape.as_slice() == [1] || (shape.len() == 2 && shape[1] == 1))
            && !self.i64_data.contains(&r);
        if barrier {
            if !init.is_empty() {
                return Err(self.misuse(op, "a barrier allocation with an initial value"));
            }
            let count = shape[0];
            let n = self.let_op(
                &r,
                OpKind::MbarAlloc {
                    count: int_e(count, span),
                    offset: None,
                },
                span,
            );
            if shape.len() == 1 {
                self.bind(
                    &r,
                    Val::E(
                        index(name_e(&n, span), vec![IndexItem::Expr(int_e(0, span))], span),
                        ty,
                    ),
                );
            } else {
                self.bind(&r, Val::Mbars(name_e(&n, span)));
            }
            return Ok(());
        }
        let t = self.shaped(*elem, shape, span)?;
        let layout = self.smem_layout(enc, span)?;
        let n = self.let_op(
            &r,
            OpKind::SmemAlloc {
                ty: t,
                layout,
                align: None,
            },
            span,
        );
        self.init_alloc(init.first(), &n, span, |dst, value| OpKind::SmemStore {
            dst,
            value,
            cta: None,
        })?;
        self.place_alloc(op, &r, &n, &ty)?;
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// The result of a `local_alloc` (`tmem` false) or `tmem_alloc` (true): its type, a memory
    /// descriptor of that kind, and its name.
    fn alloc_result(&self, op: &Op, tmem: bool) -> R<(Type, String)> {
        let ty = self.result_type(op, 0)?;
        if !matches!(&ty, Type::MemDesc { tmem: t, .. } if *t == tmem) {
            let what = if tmem { "tensor-memory" } else { "shared-memory" };
            return Err(self.misuse(op, format!("expected a {what} descriptor")));
        }
        Ok((ty, self.result(op, 0)?))
    }

    /// An allocation's initial value `init` (if any) stored into buffer `n` by `store(dst, value)`.
    fn init_alloc(
        &mut self,
        init: Option<&(String, Span)>,
        n: &str,
        span: Span,
        store: impl Fn(Expr, Expr) -> OpKind,
    ) -> R<()> {
        if let Some((iv, is)) = init {
            let value = self.expr(iv, *is)?;
            self.op_stmt(store(name_e(n, span), value), span);
        }
        Ok(())
    }

    pub(super) fn tmem_alloc(&mut self, op: &Op, span: Span) -> R<()> {
        let (ty, r) = self.alloc_result(op, true)?;
        let Type::MemDesc { shape, elem, enc, .. } = &ty else {
            return Err(self.misuse(op, "expected a tensor-memory descriptor"));
        };
        let layout = self.attrs.layout(enc, span)?;
        let t = match (&layout, elem) {
            // Scale factors: Gluon carries ue8m0 factors as uint8 (`i8` in TTGIR) and nvfp4's
            // ue4m3 factors as float8e4nv; the MMA reads them as those formats.
            (Layout::TmemScales, Elem::I8) => self.shaped_as(DType::UE8M0, shape, span),
            (Layout::TmemScales, Elem::F8E4M3) => self.shaped_as(DType::UE4M3, shape, span),
            (Layout::TmemScales, e) => {
                return Err(self.misuse(
                    op,
                    format!("scale factors of type {e:?}: the scaled MMA takes ue8m0 (uint8) or ue4m3 (float8e4nv) factors"),
                ))
            }
            _ => self.shaped(*elem, shape, span)?,
        };
        let (block, col_stride, scales) = match layout {
            Layout::TmemEncoding {
                block_m,
                block_n,
                col_stride,
            } => (
                Some(list_e(&[block_m, block_n], span)),
                Some(int_e(col_stride, span)),
                None,
            ),
            Layout::TmemScales => (None, None, Some(with_span(Expr::bool(true), span))),
            other => {
                return Err(self.misuse(op, format!("tensor-memory encoding {other:?} is not supported")))
            }
        };
        let n = self.let_op(
            &r,
            OpKind::TmemAlloc {
                ty: t,
                block,
                col_stride,
                scales,
                manual: None,
            },
            span,
        );
        let init = self.operands(op)?;
        self.init_alloc(init.first(), &n, span, |dst, value| OpKind::TmemStore {
            dst,
            value,
        })?;
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// `ttng.tc_gen5_mma` and `ttng.tc_gen5_mma_scaled`: `a, b, acc[dep], [a_scale, b_scale,]
    /// use_acc, pred [lhs = F rhs = F][, barrier[pred]]*`. The MMA, then one commit per
    /// completion barrier.
    pub(super) fn tc_gen5_mma(&mut self, op: &Op, span: Span) -> R<()> {
        let scaled = op.name == "ttng.tc_gen5_mma_scaled";
        let fixed = if scaled { 7 } else { 5 };
        let items = self.operand_items(op)?;
        if items.len() < fixed {
            return Err(ImportError::Syntax {
                span: op.span,
                message: format!(
                    "`{}` expects at least {fixed} operands, found {}",
                    op.name,
                    items.len()
                ),
            });
        }
        let attrs = self.attr_dict(op)?;
        let two_ctas = attrs.has("two_ctas");
        let cta_group = two_ctas.then(|| int_e(2, span));
        // A `{multicast}` MMA's completion reaches every CTA that shares one of its operands
        // (Triton's commit mask).
        let mask = if attrs.has("multicast") {
            self.commit_mask(op, 0..2, two_ctas, span)?
        } else {
            None
        };
        let a = self.expr(&items[0].name, items[0].span)?;
        let b = self.expr(&items[1].name, items[1].span)?;
        let acc = self.expr(&items[2].name, items[2].span)?;
        let rest = &items[fixed - 2..];
        let use_acc = self.expr(&rest[0].name, rest[0].span)?;
        let pred = self.pred(Some(&(rest[1].name.clone(), rest[1].span)))?;
        let use_acc = if is_true(&use_acc) { None } else { Some(use_acc) };
        let kind = if scaled {
            let fp4 = self.mma_formats(op, &items[..2])?;
            let a = if fp4[0] {
                self.fp4_view(op, &items[0], a, span)?
            } else {
                a
            };
            let b = if fp4[1] {
                self.fp4_view(op, &items[1], b, span)?
            } else {
                b
            };
            OpKind::Tcgen05MmaScaled {
                a,
                b,
                acc,
                a_scale: self.expr(&items[3].name, items[3].span)?,
                b_scale: self.expr(&items[4].name, items[4].span)?,
                use_acc,
                pred: pred.clone(),
                cta_group: cta_group.clone(),
            }
        } else {
            OpKind::Tcgen05Mma {
                a,
                b,
                acc,
                use_acc,
                pred: pred.clone(),
                cta_group: cta_group.clone(),
            }
        };
        // A two-CTA MMA is issued by the pair's first CTA, for both.
        if two_ctas {
            self.open_block();
        }
        self.op_stmt(kind, span);
        // Completion barriers of the MMA: an arrive when it (and all earlier tcgen05 work) is done.
        for it in &items[fixed..] {
            let bar = self.expr(&it.name, it.span)?;
            let bp = match it.bracket.first() {
                Some(p) => self.pred(Some(p))?,
                None => None,
            };
            let p = match (pred.clone(), bp) {
                (None, x) | (x, None) => x,
                (Some(x), Some(y)) => Some(bin(BinOp::And, x, y, span)),
            };
            self.op_stmt(
                OpKind::Tcgen05Commit {
                    bar,
                    pred: p,
                    cta_group: cta_group.clone(),
                    multicast: mask.clone(),
                },
                span,
            );
        }
        if two_ctas {
            self.close_if(Self::is_leader_e(1, span), span);
        }
        for r in &op.results {
            self.bind(r, Val::Token);
        }
        Ok(())
    }

    /// The multicast mask of a commit whose MMA read the shared buffers that are operands
    /// `operands` of `op`: the union of each buffer's sharing group (the CTAs that differ from
    /// this one only in the buffer's broadcast rank bits), each widened to both CTAs of every
    /// pair in it when the commit is a pair's (`pair`: a two-CTA MMA reads both CTAs' halves).
    /// `None` when no buffer is shared: the commit stays this CTA's (or its pair's). Read from
    /// Triton 3.9's PTX: a pair MMA reading an A block shared by the two pairs of a cluster of
    /// four commits with the mask `0b1111`.
    pub(super) fn commit_mask(
        &self,
        op: &Op,
        operands: std::ops::Range<usize>,
        pair: bool,
        span: Span,
    ) -> R<Option<Expr>> {
        let mut mask: Option<Expr> = None;
        for i in operands {
            let bits = self.operand_group(op, i, span)?;
            if bits != 0 {
                let g = self.group_mask_e(if pair { bits | 1 } else { bits }, span);
                mask = Some(match mask {
                    Some(m) => bin(BinOp::BitOr, m, g, span),
                    None => g,
                });
            }
        }
        Ok(mask)
    }

    /// An fp4 operand: Gluon packs two e2m1 values per byte of a uint8 (`i8`) NVMMA buffer along
    /// K, the contiguous dimension (the last one; the second to last of a transposed view), the
    /// even element in the low nibble as the MMA reads them. bwsim's view of the same bytes is
    /// `smem.reinterpret X, f4e2m1[..], LAYOUT` with that dimension doubled.
    fn fp4_view(&mut self, op: &Op, it: &Item, x: Expr, span: Span) -> R<Expr> {
        let Val::E(
            _,
            Type::MemDesc {
                shape,
                enc,
                tmem: false,
                ..
            },
        ) = self.get(&it.name, it.span)?
        else {
            return Err(self.misuse(op, "an fp4 operand must be a shared-memory buffer"));
        };
        // An `fp4_padded` buffer (the fp4 operand of a mixed mxfp8 x mxfp4 MMA) keeps its
        // layout: the same packed bytes with 8 bytes of padding after every 8.
        let transposed = match self.attrs.layout(&enc, span)? {
            Layout::NvmmaShared { transposed, .. } => transposed,
            _ => return Err(self.misuse(op, "an fp4 operand must be in an NVMMA shared layout")),
        };
        let r = shape.len();
        if r < 2 {
            return Err(self.misuse(op, "an fp4 operand must be a matrix"));
        }
        let mut unpacked = shape.clone();
        unpacked[if transposed { r - 2 } else { r - 1 }] *= 2;
        let ty = self.shaped_as(DType::F4E2M1, &unpacked, span);
        let layout = self.smem_layout(&enc, span)?;
        let n = self.let_op(
            &format!("{}_fp4", it.name.trim_start_matches('%')),
            OpKind::SmemReinterpret { src: x, ty, layout },
            span,
        );
        Ok(name_e(&n, span))
    }

    /// The operand formats of a scaled MMA (`lhs = e4m3 rhs = e2m1`) against the element types
    /// of its shared-memory operands: `e4m3` and `e5m2` must name the buffers' fp8 types, `e2m1`
    /// a byte (`i8`) buffer of packed pairs (true in the result: view it as fp4); other formats
    /// are refused.
    fn mma_formats(&self, op: &Op, operands: &[Item]) -> R<[bool; 2]> {
        let mut fp4 = [false; 2];
        let toks: Vec<&Tok> = op.toks.iter().map(|t| &t.tok).collect();
        for (side, it) in ["lhs", "rhs"].into_iter().zip(operands) {
            let format = toks
                .windows(3)
                .find_map(|w| match w {
                    [Tok::Ident(k), Tok::Punct("="), Tok::Ident(f)] if k == side => Some(f.clone()),
                    _ => None,
                })
                .ok_or_else(|| self.misuse(op, format!("needs `{side} = FORMAT`")))?;
            let elem = match self.get(&it.name, it.span)? {
                Val::E(_, Type::MemDesc { elem, .. }) => Some(elem),
                _ => None,
            };
            let ok = matches!(
                (format.as_str(), elem),
                ("e4m3", Some(Elem::F8E4M3)) | ("e5m2", Some(Elem::F8E5M2)) | ("e2m1", Some(Elem::I8))
            );
            if !ok {
                let why = match format.as_str() {
                    "e4m3" | "e5m2" | "e2m1" => format!("the {side} buffer holds {elem:?}, not {format}"),
                    f => format!("operand format `{f}` is not supported (bwsim's block-scaled MMA takes e4m3, e5m2 and e2m1 operands)"),
                };
                return Err(self.misuse(op, why));
            }
            fp4[usize::from(side == "rhs")] = format == "e2m1";
        }
        Ok(fp4)
    }

    /// `desc[coords...] ...`: the descriptor, its coordinates and the operands after them.
    pub(super) fn desc_operands(&mut self, op: &Op, span: Span) -> R<(Expr, Vec<(String, Span)>)> {
        let items = self.operand_items(op)?;
        let first = items.first().ok_or_else(|| ImportError::Syntax {
            span: op.span,
            message: format!("`{}` needs a descriptor", op.name),
        })?;
        let desc = self.expr(&first.name, first.span)?;
        let mut coords = Vec::new();
        for (n, s) in &first.bracket {
            coords.push(self.math_operand(n, *s)?);
        }
        // A tile copy of a cluster kernel moves this CTA's piece of the block.
        if matches!(
            op.name.as_str(),
            "ttng.async_tma_copy_global_to_local"
                | "ttng.async_tma_copy_local_to_global"
                | "ttng.async_tma_reduce"
        ) {
            if let Some(cga) = self.operand_cga(op, 0, span)? {
                coords = self.local_coords(&cga, coords, span);
            }
        }
        let coords = coords.into_iter().map(IndexItem::Expr).collect();
        let rest = items[1..].iter().map(|i| (i.name.clone(), i.span)).collect();
        Ok((index(desc, coords, span), rest))
    }

    pub(super) fn tma_load(&mut self, op: &Op, span: Span) -> R<()> {
        let (src, rest) = self.desc_operands(op, span)?;
        if rest.len() < 2 {
            return Err(ImportError::Syntax {
                span: op.span,
                message: format!("`{}` expects a destination and a barrier", op.name),
            });
        }
        let dst = self.expr(&rest[0].0, rest[0].1)?;
        let bar = self.expr(&rest[1].0, rest[1].1)?;
        let mut pred = self.pred(rest.get(2))?;
        let kind = if op.name == "ttng.async_tma_gather" {
            OpKind::TmaGather { src, dst, bar, pred }
        } else {
            let shared = self.operand_group(op, 0, span)?;
            let group = self.operand_group(op, 1, span)?;
            let multicast = if shared != 0 && self.attr_dict(op)?.has("multicast") {
                // The group's first CTA reads the block once for every CTA that holds it.
                pred = Self::and_pred(pred, Some(Self::is_leader_e(shared, span)), span);
                Some(self.group_mask_e(shared, span))
            } else {
                None
            };
            // A multicast onto a barrier shared by a CTA pair (Triton 3.9's
            // `cp.async.bulk.tensor.cta_group::2 ... .multicast::cluster` with the barrier's
            // address in the pair's first CTA): the bytes landing in each destination complete
            // on the barrier of that destination's pair's first CTA.
            if multicast.is_some() && group != 0 && group != 1 {
                return Err(self.misuse(
                    op,
                    "a multicast copy completing on a barrier shared by CTAs other than a pair is not supported",
                ));
            }
            OpKind::TmaLoad {
                src,
                dst,
                bar,
                pred,
                multicast,
                // The bytes complete on the group's barrier, in its first CTA.
                bar_cta: (group != 0).then(|| self.leader_e(group, span)),
            }
        };
        self.op_stmt(kind, span);
        Ok(())
    }

    /// The operands of `%x[%idx]... {axis}`: the item `%x` (`what`, for the message that
    /// misses it), its one index, the axis, and the operands after it.
    fn indexed_operands(&mut self, op: &Op, what: &str, span: Span) -> R<Indexed> {
        let mut items = self.operand_items(op)?.into_iter();
        let first = items
            .next()
            .ok_or_else(|| self.misuse(op, format!("needs {what}")))?;
        let [(iname, ispan)] = first.bracket.as_slice() else {
            return Err(self.misuse(op, "takes one index tensor"));
        };
        let index = self.expr(iname, *ispan)?;
        let axis = int_e(self.int_attr(op, "axis")?, span);
        let rest = items.map(|i| (i.name, i.span)).collect();
        Ok(Indexed {
            first,
            index,
            axis,
            rest,
        })
    }

    /// `ttg.local_gather %buf[%idx] {axis}`, `ttg.local_scatter %buf[%idx], %v {axis}` and
    /// `ttg.local_atomic_scatter_rmw KIND, %buf[%idx], %v[, %mask] {axis}` (Gluon's
    /// `shared_memory_descriptor.gather`, `.scatter`, `.atomic_scatter_*`): `smem.gather`,
    /// `smem.scatter`, `smem.atomic KIND` along `axis`.
    pub(super) fn local_indexed(&mut self, op: &Op, span: Span) -> R<()> {
        let Indexed {
            first,
            index,
            axis,
            rest,
        } = self.indexed_operands(op, "a shared-memory buffer", span)?;
        let buf = self.expr(&first.name, first.span)?;
        match op.name.as_str() {
            "ttg.local_gather" => {
                let kind = OpKind::SmemGather {
                    src: buf,
                    index,
                    axis,
                };
                self.define_result(op, kind, span)?;
            }
            "ttg.local_scatter" => {
                let (vn, vs) = rest
                    .first()
                    .ok_or_else(|| self.misuse(op, "needs the scattered values"))?;
                let value = self.expr(vn, *vs)?;
                self.op_stmt(
                    OpKind::SmemScatter {
                        dst: buf,
                        index,
                        value,
                        axis,
                    },
                    span,
                );
            }
            _ => {
                let kind = op.toks.iter().find_map(|t| match &t.tok {
                    Tok::Ident(w) => Some(w.as_str()),
                    _ => None,
                });
                // Triton's RMW kinds: bwsim's atomic operations take the signedness from the
                // buffer's type, so the unsigned forms of signed buffers are refused.
                let name = match kind {
                    Some("add" | "fadd") => "add",
                    Some("max") => "max",
                    Some("min") => "min",
                    Some("and") => "and",
                    Some("or") => "or",
                    Some("xor") => "xor",
                    Some("exch") => "xchg",
                    other => {
                        return Err(self.unsupported(
                            op,
                            &format!(
                                "the shared-memory atomic `{}`; bwsim models add, fadd, max, min, and, or, xor and exch",
                                other.unwrap_or("?")
                            ),
                        ))
                    }
                };
                let (vn, vs) = rest
                    .first()
                    .ok_or_else(|| self.misuse(op, "needs the atomic's values"))?;
                let value = self.expr(vn, *vs)?;
                let mask = match rest.get(1) {
                    Some((m, ms)) => Some(self.expr(m, *ms)?),
                    None => None,
                };
                let kind = OpKind::SmemAtomic {
                    op: name_e(name, span),
                    dst: buf,
                    index,
                    value,
                    axis,
                    mask,
                };
                match op.results.first().filter(|r| self.used.contains(*r)) {
                    Some(_) => self.define_result(op, kind, span)?,
                    None => self.op_stmt(kind, span),
                }
            }
        }
        Ok(())
    }

    /// `tt.gather %src[%idx] {axis}` (Gluon's `gl.gather`): element `p` of the result is `src`
    /// at `p` with coordinate `axis` replaced by `idx[p]`. Imported through a scratch buffer,
    /// as Triton's lowering does when the axis spans warps: `src` stored to a plain
    /// shared-memory buffer, a partition barrier, `smem.gather`, and a barrier before the
    /// buffer's bytes may be reused.
    pub(super) fn register_gather(&mut self, op: &Op, span: Span) -> R<()> {
        let Indexed {
            first, index, axis, ..
        } = self.indexed_operands(op, "a source tensor", span)?;
        let sty = self.val_type(&first.name, first.span)?;
        let (Some(shape), Some(elem)) = (sty.shape().map(<[i64]>::to_vec), sty.elem()) else {
            return Err(self.misuse(op, "gathers from a tensor"));
        };
        let src = self.expr(&first.name, first.span)?;
        let r = self.result(op, 0)?;
        let ty = self.result_type(op, 0)?;
        let buf = self.scratch(&r, dtype_of(elem, span)?, &shape, span);
        self.op_stmt(
            OpKind::SmemStore {
                dst: buf.clone(),
                value: src,
                cta: None,
            },
            span,
        );
        let gather = OpKind::SmemGather {
            src: buf,
            index,
            axis,
        };
        self.scratch_read(&r, ty, gather, span);
        Ok(())
    }

    /// `tt.histogram %x[, %mask]` (Gluon's `gl.histogram`): bin `b` of the i32 result counts
    /// the elements of `x` (where `mask` holds) equal to `b` (N bins, a power of two). A value
    /// outside `0..N` is counted as the release's lowering counts it: from Triton 3.8 on (one
    /// shared-memory atomic per element, guarded by `v <= N - 1` unsigned) in no bin; before,
    /// per warp over W = max(N, 32) bins (one ballot per bit of `v mod W`, each lane owning
    /// W / 32 of them, the first N kept: read off Triton 3.6's and 3.7's PTX, which the PTX
    /// front end runs against the same reference) in bin `v mod W` when that is below N, else
    /// in none. Imported as a scratch buffer of zeros, a barrier, one
    /// `smem.atomic add` per element, a barrier, the load of the buffer in the result's
    /// layout and a barrier before its bytes may be reused.
    pub(super) fn histogram(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.operands(op)?;
        let (xn, xs) = v
            .first()
            .ok_or_else(|| self.misuse(op, "needs an input tensor"))?;
        let xty = self.val_type(xn, *xs)?;
        let ty = self.result_type(op, 0)?;
        let bins = match ty.shape() {
            Some([b]) if *b > 0 && b & (b - 1) == 0 => *b,
            _ => return Err(self.unsupported(op, "a histogram whose bin count is not a power of two")),
        };
        let xshape = xty
            .shape()
            .map(<[i64]>::to_vec)
            .ok_or_else(|| self.misuse(op, "counts a tensor"))?;
        let x = self.expr(xn, *xs)?;
        let mask = match v.get(1) {
            Some((m, ms)) => Some(self.expr(m, *ms)?),
            None => None,
        };
        let r = self.result(op, 0)?;
        let rlayout = self.required_layout(&ty, span)?;
        let xlayout = self.required_layout(&xty, span)?;
        let buf = self.scratch(&r, DType::I32, &[bins], span);
        let zeros = call(
            "full",
            vec![
                list_e(&[bins], span),
                int_e(0, span),
                name_e("i32", span),
                rlayout.clone(),
            ],
            span,
        );
        self.op_stmt(
            OpKind::SmemStore {
                dst: buf.clone(),
                value: zeros,
                cta: None,
            },
            span,
        );
        self.op_stmt(OpKind::BarSync {}, span);
        let ones = call(
            "full",
            vec![
                list_e(&xshape, span),
                int_e(1, span),
                name_e("i32", span),
                xlayout,
            ],
            span,
        );
        let x32 = call("cast", vec![x, name_e("i32", span)], span);
        // Which values the release counts: from 3.8 on those inside the bins; before, those
        // whose `v mod 32` is one of the bins when there are fewer than 32 (the warp's bins
        // N..32 are dropped).
        let counted = if self.version >= Version::V3_8 {
            Some(bin(
                BinOp::And,
                bin(BinOp::Ge, x32.clone(), int_e(0, span), span),
                bin(BinOp::Lt, x32.clone(), int_e(bins, span), span),
                span,
            ))
        } else if bins < 32 {
            Some(bin(
                BinOp::Lt,
                bin(BinOp::BitAnd, x32.clone(), int_e(31, span), span),
                int_e(bins, span),
                span,
            ))
        } else {
            None
        };
        let mask = match (mask, counted) {
            (Some(m), Some(c)) => Some(bin(BinOp::And, m, c, span)),
            (m, c) => m.or(c),
        };
        self.op_stmt(
            OpKind::SmemAtomic {
                op: name_e("add", span),
                dst: buf.clone(),
                index: bin(BinOp::BitAnd, x32, int_e(bins - 1, span), span),
                value: ones,
                axis: int_e(0, span),
                mask,
            },
            span,
        );
        let load = OpKind::SmemLoad {
            src: buf,
            layout: Some(rlayout),
            cta: None,
        };
        self.scratch_read(&r, ty, load, span);
        Ok(())
    }

    /// A plain shared-memory scratch buffer of `d[shape]` (named after `hint`).
    fn scratch(&mut self, hint: &str, d: DType, shape: &[i64], span: Span) -> Expr {
        let n = self.plain_smem(&format!("{hint}_scratch"), d, shape, span);
        name_e(&n, span)
    }

    /// Binds `r` (of type `ty`) to `read`, a read of a scratch buffer the partition's threads
    /// wrote: a partition barrier before it, and one after it before the buffer's bytes may be
    /// reused.
    fn scratch_read(&mut self, r: &str, ty: Type, read: OpKind, span: Span) {
        self.op_stmt(OpKind::BarSync {}, span);
        let n = self.let_op(r, read, span);
        self.op_stmt(OpKind::BarSync {}, span);
        self.bind(r, Val::E(name_e(&n, span), ty));
    }

    /// Allocates a plain (unswizzled, row-major) shared-memory buffer of `d[shape]` named
    /// after `hint`; returns its name.
    pub(super) fn plain_smem(&mut self, hint: &str, d: DType, shape: &[i64], span: Span) -> String {
        let bty = self.shaped_as(d, shape, span);
        self.let_op(
            hint,
            OpKind::SmemAlloc {
                ty: bty,
                layout: name_e("plain", span),
                align: None,
            },
            span,
        )
    }

    pub(super) fn tma_store(&mut self, op: &Op, span: Span) -> R<()> {
        let (dst, rest) = self.desc_operands(op, span)?;
        let (n, s) = rest.first().ok_or_else(|| ImportError::Syntax {
            span: op.span,
            message: format!("`{}` expects a source buffer", op.name),
        })?;
        let src = self.expr(n, *s)?;
        let kind = if op.name == "ttng.async_tma_scatter" {
            OpKind::TmaScatter { dst, src, pred: None }
        } else {
            // `ttng.async_tma_reduce KIND, ...` (Gluon's `tma.async_atomic_*`): a reducing store.
            let reduce = if op.name == "ttng.async_tma_reduce" {
                let kind = op.toks.iter().find_map(|t| match &t.tok {
                    Tok::Ident(w) => Some(w.as_str()),
                    _ => None,
                });
                match kind.and_then(bwsim_isa::value_types::TmaReduceOp::from_name) {
                    Some(r) => Some(name_e(r.name(), span)),
                    None => {
                        return Err(self.unsupported(
                            op,
                            &format!(
                                "the TMA reduction `{}`; bwsim models {}",
                                kind.unwrap_or("?"),
                                bwsim_isa::value_types::TMA_REDUCE_OPS.join(", ")
                            ),
                        ))
                    }
                }
            } else {
                None
            };
            // A block every CTA of a group holds is stored once, by the group's first CTA.
            let shared = self.operand_group(op, 0, span)?;
            let pred = (shared != 0).then(|| Self::is_leader_e(shared, span));
            OpKind::TmaStore {
                dst,
                src,
                pred,
                reduce,
            }
        };
        self.op_stmt(kind, span);
        Ok(())
    }

    // ---- structured control flow --------------------------------------------------------
}
