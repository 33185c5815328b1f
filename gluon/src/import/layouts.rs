//! Layouts and types: TTGIR encodings (register, shared-memory and tensor-memory layouts)
//! as bwsim layout expressions, the tensor-memory message layouts a warp may use, and the
//! shaped types and filled tiles built from them.

use super::*;

impl<'m> Cx<'m> {
    // ---- layouts and types --------------------------------------------------------------

    /// A register layout as a bwsim layout expression (declaring named layouts for aliases).
    /// Every register layout alias a `ttng.tmem_load` produces or a `ttng.tmem_store` stores
    /// from, when it is a layout tensor memory can be accessed with (checked again, with its
    /// error, at the operation).
    pub(super) fn collect_tmem_layouts(&mut self, ops: &[Op]) {
        for op in ops {
            let found = match op.name.as_str() {
                "ttng.tmem_load" => self.sig(op).ok().and_then(|s| s.outputs.last().cloned()),
                "ttng.tmem_store" => {
                    let c = Cursor::new(&op.toks, op.span);
                    c.find_top(":").and_then(|at| {
                        let mut tc = Cursor::new(&op.toks[at + 1..], op.span);
                        parse_type(&mut tc).ok()
                    })
                }
                _ => None,
            };
            if let Some(Type::Tensor {
                enc: Some(AttrVal::Alias(a)),
                ..
            }) = found
            {
                if let Ok(l) = self.attrs.layout(&AttrVal::Alias(a.clone()), op.span) {
                    // The block is checked at the operation; any block will do to recognise one.
                    if [128, 64].iter().any(|&bm| tmem_access_check(&l, bm).is_ok()) {
                        self.tmem_layouts.insert(a);
                    }
                }
            }
            for r in &op.regions {
                self.collect_tmem_layouts(&r.ops);
            }
        }
    }

    /// The block rows of the tensor-memory buffer `%name` (128 when not known); None for a
    /// scale-factor buffer, whose every row has a copy in each lane quarter
    /// (docs/hardware/tmem-scales.md), so any warp reaches it.
    pub(super) fn tmem_block_m(&self, name: &str, span: Span) -> Option<i64> {
        match self.val_type(name, span) {
            Ok(Type::MemDesc { enc, .. }) => match self.attrs.layout(&enc, span) {
                Ok(Layout::TmemEncoding { block_m, .. }) => Some(block_m),
                Ok(Layout::TmemScales) => None,
                _ => Some(128),
            },
            _ => Some(128),
        }
    }

    pub(super) fn layout_expr(&mut self, v: &AttrVal, span: Span) -> R<Option<Expr>> {
        if let AttrVal::Alias(a) = v {
            if self.tmem_layouts.contains(a) {
                return Ok(Some(name_e("tmem32x32b", span)));
            }
            if !a.contains('.') {
                if let Some(n) = self.layout_names.get(a) {
                    return Ok(Some(name_e(n, span)));
                }
                let l = self.attrs.layout(v, span)?;
                let Some(e) = self.layout_value(&l, span)? else {
                    return Ok(None);
                };
                let n = self.fresh(&format!("{a}_layout"));
                self.layout_names.insert(a.clone(), n.clone());
                self.layouts.push(LayoutDecl {
                    comments: Vec::new(),
                    name: Ident::spanned(n.clone(), span),
                    value: e,
                    span,
                });
                return Ok(Some(name_e(&n, span)));
            }
        }
        match v {
            AttrVal::Dialect(n, d) if n == "ttg.slice" => {
                let dim =
                    d.get("dim")
                        .and_then(|x| x.as_int())
                        .ok_or_else(|| ImportError::UnsupportedType {
                            message: "slice layout without `dim`".into(),
                            span,
                        })?;
                let parent = d.get("parent").ok_or_else(|| ImportError::UnsupportedType {
                    message: "slice layout without `parent`".into(),
                    span,
                })?;
                Ok(self
                    .layout_expr(parent, span)?
                    .map(|p| call("slice", vec![int_e(dim, span), p], span)))
            }
            _ => {
                let l = self.attrs.layout(v, span)?;
                self.layout_value(&l, span)
            }
        }
    }

    pub(super) fn layout_value(&mut self, l: &Layout, span: Span) -> R<Option<Expr>> {
        Ok(match l {
            Layout::Blocked { spt, tpw, wpc, order } => Some(call(
                "blocked",
                vec![
                    list_e(spt, span),
                    list_e(tpw, span),
                    list_e(wpc, span),
                    list_e(order, span),
                ],
                span,
            )),
            Layout::Slice { dim, parent } => self
                .layout_value(parent, span)?
                .map(|p| call("slice", vec![int_e(*dim, span), p], span)),
            Layout::NvidiaMma {
                major: 3,
                warps,
                instr,
            } if warps.len() == 2 && instr.len() == 3 => Some(call_kw(
                "wgmma",
                vec![],
                vec![("warps", list_e(warps, span)), ("n", int_e(instr[1], span))],
                span,
            )),
            // The 32x32b TMEM message layout (one row per thread), as `get_tmem_reg_layout`
            // gives it for 128-row tiles; slices of it are the row vectors of an online softmax.
            l if is_tmem_32x32b(l) => Some(name_e("tmem32x32b", span)),
            _ => None,
        })
    }

    /// A layout that must be expressible (arange, full).
    pub(super) fn required_layout(&mut self, ty: &Type, span: Span) -> R<Expr> {
        let enc = ty.encoding().ok_or_else(|| ImportError::UnsupportedType {
            message: "a tensor without a layout".into(),
            span,
        })?;
        match self.layout_expr(enc, span)? {
            Some(e) => Ok(e),
            None => Err(ImportError::UnsupportedType {
                message: format!(
                    "layout {} has no bwsim equivalent here",
                    self.layout_name(enc, span)
                ),
                span,
            }),
        }
    }

    pub(super) fn layout_name(&self, v: &AttrVal, span: Span) -> String {
        match self.attrs.layout(v, span) {
            Ok(Layout::Linear { .. }) => "#ttg.linear".into(),
            Ok(Layout::NvidiaMma { major, .. }) => format!("#ttg.nvidia_mma (version {major})"),
            Ok(Layout::Other(n)) => format!("#{n}"),
            Ok(l) => format!("{l:?}"),
            Err(_) => format!("{v:?}"),
        }
    }

    pub(super) fn smem_layout(&mut self, enc: &AttrVal, span: Span) -> R<Expr> {
        match self.attrs.layout(enc, span)? {
            Layout::NvmmaShared {
                swizzle,
                transposed,
                fp4_padded,
            } => {
                let mut kw = Vec::new();
                if transposed {
                    kw.push(("transposed", with_span(Expr::bool(true), span)));
                }
                if fp4_padded {
                    kw.push(("fp4_padded", with_span(Expr::bool(true), span)));
                }
                Ok(call_kw("nvmma", vec![int_e(swizzle, span)], kw, span))
            }
            Layout::SwizzledShared {
                vec: 1,
                per_phase: 1,
                max_phase: 1,
                ..
            } => Ok(name_e("plain", span)),
            Layout::SwizzledShared {
                vec,
                per_phase,
                max_phase,
                order,
            } if order.windows(2).all(|w| w[0] > w[1]) => Ok(call(
                "swizzled",
                vec![int_e(vec, span), int_e(per_phase, span), int_e(max_phase, span)],
                span,
            )),
            Layout::SharedLinear { offset } => Ok(call(
                "linear",
                vec![ex(
                    ExprKind::List(offset.iter().map(|b| list_e(b, span)).collect()),
                    span,
                )],
                span,
            )),
            other => Err(ImportError::UnsupportedType {
                message: format!("shared-memory layout {other:?} has no bwsim equivalent"),
                span,
            }),
        }
    }

    /// The operands of `tensor_desc(DTYPE[block], LAYOUT)` for a descriptor type's block,
    /// element and shared layout: the block type and the layout.
    pub(super) fn desc_parts(
        &mut self,
        block: &[i64],
        elem: Elem,
        enc: &Option<AttrVal>,
        span: Span,
    ) -> R<(Expr, Expr)> {
        let enc = enc.clone().ok_or_else(|| ImportError::UnsupportedType {
            message: "a tensor descriptor without a shared layout".into(),
            span,
        })?;
        let layout = self.smem_layout(&enc, span)?;
        Ok((self.shaped(elem, block, span)?, layout))
    }

    pub(super) fn shaped(&self, elem: Elem, shape: &[i64], span: Span) -> R<Expr> {
        Ok(self.shaped_as(dtype_of(elem, span)?, shape, span))
    }

    /// `DTYPE[dims]` as a type expression.
    pub(super) fn shaped_as(&self, d: DType, shape: &[i64], span: Span) -> Expr {
        index(
            name_e(d.name(), span),
            shape.iter().map(|&x| IndexItem::Expr(int_e(x, span))).collect(),
            span,
        )
    }

    /// A tile of `ty` filled with `v`.
    pub(super) fn full(&mut self, ty: &Type, v: Expr, span: Span) -> R<Expr> {
        let (Some(shape), Some(elem)) = (ty.shape(), ty.elem()) else {
            return Err(ImportError::UnsupportedType {
                message: "expected a tensor type".into(),
                span,
            });
        };
        let d = dtype_of(elem, span)?;
        let layout = self.required_layout(ty, span)?;
        Ok(call(
            "full",
            vec![list_e(shape, span), v, name_e(d.name(), span), layout],
            span,
        ))
    }
}

/// The tensor-memory lane that holds row `m` of a buffer whose blocks are `block_m` rows
/// (Triton's `TensorMemoryLayout`; bwsim_sim::views places elements the same way): row
/// `m % 128` for 128-row blocks; for 64-row blocks, rows 16 at a time in the first 16 lanes of
/// each 32-lane quarter.
pub(super) fn tmem_lane(block_m: i64, m: i64) -> i64 {
    if block_m == 64 {
        let r = m.rem_euclid(64);
        (r / 16) * 32 + r % 16
    } else {
        m.rem_euclid(block_m.max(1))
    }
}

/// Whether a register layout is one a warp can load from or store to tensor memory with
/// `tcgen05.ld`/`tcgen05.st` (any message shape: 32x32b, 16x64b, 16x128b, 16x256b,
/// 16x32bx2, repeated): every element a warp holds lies in the tensor-memory lanes of its
/// quarter (PTX: warp `w` of a warpgroup accesses lanes `32 (w % 4)` to `32 (w % 4) + 31`).
/// A `#ttg.linear` layout is read as the map it denotes (register, lane and warp bits to
/// coordinates, combined by XOR); the error says which warp would reach which lane.
pub(super) fn tmem_access_check(l: &Layout, block_m: i64) -> Result<(), String> {
    match l {
        Layout::Linear { register, lane, warp } => {
            let coord = |bases: &[Vec<i64>], bits: usize| -> i64 {
                bases
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| bits >> i & 1 == 1)
                    .fold(0, |acc, (_, b)| acc ^ b.first().copied().unwrap_or(0))
            };
            if register.len() > 16 || lane.len() > 5 || warp.len() > 5 {
                return Err("a layout larger than a CTA".into());
            }
            for w in 0..1usize << warp.len() {
                let quarter = (w % 4) as i64;
                for t in 0..1usize << lane.len() {
                    for r in 0..1usize << register.len() {
                        let row = coord(warp, w) ^ coord(lane, t) ^ coord(register, r);
                        let tl = tmem_lane(block_m, row);
                        if tl / 32 != quarter {
                            return Err(format!(
                                "warp {w} would hold row {row}, which lives in tensor-memory lane {tl}, outside the \
                                 lanes {}..{} its position in the warpgroup reaches",
                                32 * quarter,
                                32 * quarter + 31
                            ));
                        }
                    }
                }
            }
            Ok(())
        }
        other if is_tmem_32x32b(other) => Ok(()),
        _ => {
            Err("it is not a tensor-memory message layout (a `#ttg.linear` from get_tmem_reg_layout)".into())
        }
    }
}

/// Whether a TMEM load's register layout is the 32x32b message: thread t of warp w holds row
/// 32 * (w % 4) + t (lanes walk rows 1, 2, 4, 8, 16; the first two warp bases rows 32, 64), or,
/// for a TMEM block of 64 rows, its 16x32bx2 form (what `get_tmem_reg_layout` gives there).
pub(super) fn is_tmem_32x32b(l: &Layout) -> bool {
    match l {
        Layout::Linear { lane, warp, .. } => {
            let rows_ok = lane.len() == 5
                && lane
                    .iter()
                    .enumerate()
                    .all(|(i, b)| b.first() == Some(&(1 << i)) && b.iter().skip(1).all(|&x| x == 0));
            let warps_ok = warp.len() >= 2
                && warp[0].first() == Some(&32)
                && warp[1].first() == Some(&64)
                && warp[..2].iter().all(|b| b.iter().skip(1).all(|&x| x == 0));
            // TMEM block M = 64 (`tcgen05.ld.16x32bx2`): lanes 0..15 walk rows 1, 2, 4, 8, the
            // upper 16 lanes take a column half, warps walk rows 16 and 32 (docs/hardware/tmem-scales.md).
            let row_only = |b: &Vec<i64>, r: i64| b.first() == Some(&r) && b.iter().skip(1).all(|&x| x == 0);
            let m64 = lane.len() == 5
                && (0..4).all(|i| row_only(&lane[i], 1 << i))
                && lane[4].first() == Some(&0)
                && lane[4].iter().skip(1).any(|&x| x != 0)
                && warp.len() >= 2
                && row_only(&warp[0], 16)
                && row_only(&warp[1], 32);
            (rows_ok && warps_ok) || m64
        }
        Layout::Blocked { spt, tpw, wpc, .. } => {
            // One row per thread, the whole row in its registers.
            spt.len() == 2
                && spt[0] == 1
                && tpw.as_slice() == [32, 1]
                && wpc.first().is_some_and(|&w| w == 4 || w == 8)
        }
        _ => false,
    }
}
