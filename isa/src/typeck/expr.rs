//! Types of expressions: names, operators, the built-in functions (`arange`, `cast`, the
//! math functions and reductions, ...), views and indexing.

use super::*;
use crate::builtins::{MathFn, ReduceOp};
use crate::packed_arith::{self, PackedOp};

impl<'k> Cx<'k> {
    pub(super) fn expr(&mut self, e: &'k Expr) -> Option<Ty> {
        match self.expr_inner(e) {
            Ok(t) => Some(t),
            Err(d) => {
                self.emit(d);
                None
            }
        }
    }

    /// The type of `e`; register tiles larger than [`MAX_TILE_NUMEL`] are an error wherever
    /// they arise (a call, a broadcast, a load).
    pub(super) fn expr_inner(&mut self, e: &'k Expr) -> Result<Ty, Diagnostic> {
        let t = self.expr_ty(e)?;
        if let Ty::Tile(tt) = &t {
            check_tile_size(&tt.shape, e.span)?;
        }
        Ok(t)
    }

    pub(super) fn expr_ty(&mut self, e: &'k Expr) -> Result<Ty, Diagnostic> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Ty::Scalar(if i32::try_from(*v).is_ok() {
                ScalarTy::I32
            } else {
                ScalarTy::I64
            })),
            ExprKind::Float(_) => Ok(Ty::Scalar(ScalarTy::F32)),
            ExprKind::Bool(_) => Ok(Ty::Scalar(ScalarTy::I1)),
            ExprKind::Str(_) => Err(e_type(e.span, "strings only appear in static_assert", "here")),
            ExprKind::Name(n) => {
                if let Some(t) = self.lookup(n, e.span) {
                    self.use_allocs(&t);
                    return Ok(t);
                }
                if let Some(v) = self.checked.consts.get(n) {
                    return Ok(match v {
                        ConstValue::Int(i) => Ty::Scalar(if i32::try_from(i).is_ok() {
                            ScalarTy::I32
                        } else {
                            ScalarTy::I64
                        }),
                        ConstValue::Bool(_) => Ty::Scalar(ScalarTy::I1),
                        ConstValue::DType(d) => Ty::DType(d),
                    });
                }
                if let Some(d) = DType::from_name(n) {
                    return Ok(Ty::DType(d));
                }
                if let Some(l) = self.checked.layouts.get(n) {
                    return Ok(Ty::Layout(l.clone()));
                }
                if n == "tmem32x32b" {
                    return Ok(Ty::Layout(TileLayout::Tmem32x32b));
                }
                if n == "inf" || n == "nan" {
                    // The f32 infinity and quiet NaN (`-inf` is the negation).
                    return Ok(Ty::Scalar(ScalarTy::F32));
                }
                Err(Diagnostic::error(
                    Code::UndefinedName,
                    format!("cannot find `{n}` in this scope"),
                    e.span,
                    "not found",
                )
                .with_help(
                    "names come from `let`, loop variables, `param`, `const` and `layout` declarations",
                ))
            }
            ExprKind::Unary(op, a) => {
                let t = self.expr_inner(a)?;
                match (&t, op) {
                    (Ty::Scalar(_), _) | (Ty::Tile(_), _) => {
                        Ok(if *op == UnOp::Not && matches!(t, Ty::Scalar(ScalarTy::I1)) {
                            t
                        } else {
                            t.clone()
                        })
                    }
                    _ => Err(e_type(
                        e.span,
                        format!("operator does not apply to {}", t.describe()),
                        "here",
                    )),
                }
            }
            ExprKind::Binary(op, a, b) => {
                let (ta, tb) = (self.expr_inner(a)?, self.expr_inner(b)?);
                self.binary(*op, &ta, &tb, e.span)
            }
            ExprKind::Call(f, args) => self.call(f, args, e),
            ExprKind::Index(base, items) => self.index(base, items, e),
            ExprKind::Field(base, f) => {
                let t = self.expr_inner(base)?;
                match (&t, f.as_str()) {
                    (Ty::Desc(_), "nbytes") => Ok(Ty::Scalar(ScalarTy::I32)),
                    (Ty::Desc(_), "shape")
                    | (Ty::Desc(_), "block")
                    | (Ty::Smem(_), "shape")
                    | (Ty::Tmem(_), "shape")
                    | (Ty::Tile(_), "shape") => Err(e_type(
                        e.span,
                        format!("`.{f}` must be indexed: `.{f}[i]`"),
                        "here",
                    )),
                    _ => Err(e_type(
                        e.span,
                        format!("{} has no field `{f}`", t.describe()),
                        "unknown field",
                    )
                    .with_help("fields: desc.nbytes, desc.shape[i], desc.block[i], buf.shape[i]")),
                }
            }
            ExprKind::List(_) => Err(e_type(e.span, "a list is not a value here", "here")),
        }
    }

    /// The type of a value that is one of `a` and `b` (`select`, `min`, `max`): scalars
    /// [`promote`]; tiles broadcast as the operands of `+` do.
    fn join(&mut self, a: &Ty, b: &Ty, span: Span) -> Result<Ty, Diagnostic> {
        match (a, b) {
            (Ty::Scalar(x), Ty::Scalar(y)) => Ok(Ty::Scalar(promote(*x, *y))),
            _ => self.binary(BinOp::Add, a, b, span),
        }
    }

    pub(super) fn binary(&mut self, op: BinOp, ta: &Ty, tb: &Ty, span: Span) -> Result<Ty, Diagnostic> {
        let cmp = op.is_comparison() || matches!(op, BinOp::And | BinOp::Or);
        match (ta, tb) {
            (Ty::Scalar(x), Ty::Scalar(y)) => Ok(Ty::Scalar(scalar_binary(op, *x, *y))),
            (Ty::Tile(t), Ty::Scalar(_)) | (Ty::Scalar(_), Ty::Tile(t)) => {
                let mut t = t.clone();
                if cmp {
                    t.dtype = DType::I1;
                }
                Ok(Ty::Tile(t))
            }
            (Ty::Tile(x), Ty::Tile(y)) => {
                let shape = broadcast_shapes(&x.shape, &y.shape).ok_or_else(|| {
                    e_type(
                        span,
                        format!("tile shapes {:?} and {:?} do not broadcast", x.shape, y.shape),
                        "incompatible shapes",
                    )
                })?;
                if x.dtype != y.dtype && !cmp {
                    return Err(e_type(
                        span,
                        format!("tiles of {} and {} need an explicit cast", x.dtype, y.dtype),
                        "mixed element types",
                    )
                    .with_help("convert one side with `cast(x, DTYPE)`"));
                }
                let layout = if x.shape == shape {
                    x.layout.clone()
                } else {
                    y.layout.clone()
                };
                Ok(Ty::Tile(TileTy {
                    dtype: if cmp { DType::I1 } else { x.dtype },
                    shape,
                    layout,
                }))
            }
            _ => Err(e_type(
                span,
                format!(
                    "`{}` does not apply to {} and {}",
                    op.symbol(),
                    ta.describe(),
                    tb.describe()
                ),
                "here",
            )),
        }
    }

    /// A register-layout operand, recorded for the later stages ([`Checked::layout_of`]).
    pub(super) fn layout_arg(&mut self, e: &'k Expr) -> Result<TileLayout, Diagnostic> {
        let l = self.tile_layout(e)?;
        if let Some(layouts) = at_mut(&mut self.checked.tile_layouts, e.id) {
            (layouts.get_or_insert_with(HashMap::new)).insert(self.iters.clone(), l.clone());
        }
        Ok(l)
    }

    pub(super) fn tile_arg(&mut self, e: &'k Expr, what: &str) -> Result<TileTy, Diagnostic> {
        match self.expr_inner(e)? {
            Ty::Tile(t) => Ok(t),
            other => Err(e_type(
                e.span,
                format!("{what} must be a register tile, found {}", other.describe()),
                "not a tile",
            )),
        }
    }

    pub(super) fn call(&mut self, f: &str, args: &'k [Arg], e: &'k Expr) -> Result<Ty, Diagnostic> {
        let pos: Vec<&'k Expr> = args
            .iter()
            .filter(|a| a.key.is_none())
            .map(|a| &a.value)
            .collect();
        let arity = |n: usize| -> Result<(), Diagnostic> {
            if pos.len() != n {
                Err(e_type(
                    e.span,
                    format!("`{f}` takes {n} arguments, found {}", pos.len()),
                    "wrong number of arguments",
                ))
            } else {
                Ok(())
            }
        };
        match f {
            "program_id" | "num_programs" => {
                arity(1)?;
                let axis = self.checked.consts.int(pos[0])?;
                if !(0..3).contains(&axis) {
                    return Err(e_type(pos[0].span, "axis must be 0, 1 or 2", "here"));
                }
                Ok(Ty::Scalar(ScalarTy::I32))
            }
            // %cluster_ctarank and %cluster_nctarank: this CTA's rank in its cluster and the
            // cluster's CTA count (1 and 0 without clusters).
            "cluster_rank" | "cluster_size" => {
                arity(0)?;
                Ok(Ty::Scalar(ScalarTy::I32))
            }
            "min" | "max" => {
                arity(2)?;
                let (a, b) = (self.expr_inner(pos[0])?, self.expr_inner(pos[1])?);
                self.join(&a, &b, e.span)
            }
            "cdiv" => {
                arity(2)?;
                let (a, b) = (self.expr_inner(pos[0])?, self.expr_inner(pos[1])?);
                self.binary(BinOp::Div, &a, &b, e.span)
            }
            "abs" => {
                arity(1)?;
                self.expr_inner(pos[0])
            }
            "select" | "where" => {
                arity(3)?;
                let c = self.expr_inner(pos[0])?;
                let (a, b) = (self.expr_inner(pos[1])?, self.expr_inner(pos[2])?);
                let v = self.join(&a, &b, e.span)?;
                match (&c, v) {
                    (Ty::Tile(ct), Ty::Tile(mut vt)) => {
                        vt.shape = broadcast_shapes(&ct.shape, &vt.shape)
                            .ok_or_else(|| e_type(e.span, "condition and values do not broadcast", "here"))?;
                        Ok(Ty::Tile(vt))
                    }
                    (Ty::Tile(ct), Ty::Scalar(s)) => Ok(Ty::Tile(TileTy {
                        dtype: s.dtype(),
                        shape: ct.shape.clone(),
                        layout: ct.layout.clone(),
                    })),
                    (_, v) => Ok(v),
                }
            }
            "log2" if !self.checked.consts.is_const(pos.first().copied().unwrap_or(e)) => {
                self.math(f, &pos, e)
            }
            "bitwidth" | "log2" => Ok(Ty::Scalar(ScalarTy::I32)),
            _ if MathFn::from_name(f).is_some() => self.math(f, &pos, e),
            "arange" => {
                arity(3)?;
                let a = self.checked.consts.int(pos[0])?;
                let b = self.checked.consts.int(pos[1])?;
                if b <= a {
                    return Err(e_type(e.span, "arange needs start < end", "empty range"));
                }
                let len = b
                    .checked_sub(a)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(u32::MAX);
                check_tile_size(&[len], e.span)?;
                let layout = self.layout_arg(pos[2])?;
                Ok(Ty::Tile(TileTy {
                    dtype: DType::I32,
                    shape: vec![len],
                    layout: Some(layout),
                }))
            }
            "full" => {
                arity(4)?;
                let shape = self.int_list(pos[0])?;
                self.expr_inner(pos[1])?;
                let dtype = self.checked.consts.dtype(pos[2])?;
                let layout = self.layout_arg(pos[3])?;
                Ok(Ty::Tile(TileTy {
                    dtype,
                    shape,
                    layout: Some(layout),
                }))
            }
            "cast" => {
                arity(2)?;
                let dtype = self.checked.consts.dtype(pos[1])?;
                match self.expr_inner(pos[0])? {
                    Ty::Tile(mut t) => {
                        t.dtype = dtype;
                        Ok(Ty::Tile(t))
                    }
                    Ty::Scalar(_) => ScalarTy::from_name(dtype.name())
                        .map(Ty::Scalar)
                        .ok_or_else(|| e_type(e.span, format!("scalars cannot be {dtype}"), "here")),
                    other => Err(e_type(
                        e.span,
                        format!("cannot cast {}", other.describe()),
                        "here",
                    )),
                }
            }
            "convert_layout" => {
                arity(2)?;
                let mut t = self.tile_arg(pos[0], "convert_layout's operand")?;
                t.layout = Some(self.layout_arg(pos[1])?);
                Ok(Ty::Tile(t))
            }
            "expand_dims" => {
                arity(2)?;
                let mut t = self.tile_arg(pos[0], "expand_dims's operand")?;
                let axis = self.checked.consts.dim(pos[1])? as usize;
                if axis > t.shape.len() {
                    return Err(e_type(pos[1].span, "axis out of range", "here"));
                }
                t.shape.insert(axis, 1);
                t.layout = None;
                Ok(Ty::Tile(t))
            }
            "broadcast" | "reshape" => {
                arity(2)?;
                let mut t = self.tile_arg(pos[0], "the operand")?;
                let shape = self.int_list(pos[1])?;
                if f == "reshape" {
                    let (a, b): (u64, u64) = (
                        t.shape.iter().fold(1u64, |a, &x| a.saturating_mul(x as u64)),
                        shape.iter().fold(1u64, |a, &x| a.saturating_mul(x as u64)),
                    );
                    if a != b {
                        return Err(e_type(
                            e.span,
                            format!(
                                "reshape from {:?} to {shape:?} changes the element count",
                                t.shape
                            ),
                            "here",
                        ));
                    }
                } else if broadcast_shapes(&t.shape, &shape).as_deref() != Some(shape.as_slice()) {
                    return Err(e_type(
                        e.span,
                        format!("cannot broadcast {:?} to {shape:?}", t.shape),
                        "here",
                    ));
                }
                t.shape = shape;
                t.layout = None;
                Ok(Ty::Tile(t))
            }
            "permute" => {
                arity(2)?;
                let mut t = self.tile_arg(pos[0], "permute's operand")?;
                let order = self.int_list(pos[1])?;
                let mut sorted = order.clone();
                sorted.sort();
                if sorted != (0..t.shape.len() as u32).collect::<Vec<_>>() {
                    return Err(e_type(
                        pos[1].span,
                        "permute order must be a permutation of the dimensions",
                        "here",
                    ));
                }
                t.shape = order.iter().map(|&i| t.shape[i as usize]).collect();
                t.layout = None;
                Ok(Ty::Tile(t))
            }
            "split" => {
                arity(1)?;
                let mut t = self.tile_arg(pos[0], "split's operand")?;
                if t.shape.last() != Some(&2) {
                    return Err(e_type(
                        e.span,
                        format!("split needs a last dimension of 2, found {:?}", t.shape),
                        "here",
                    )
                    .with_help("reshape to [..., 2] (and permute) first, as Gluon's `_split_n` does"));
                }
                t.shape.pop();
                t.layout = None;
                Ok(Ty::Tuple(vec![Ty::Tile(t.clone()), Ty::Tile(t)]))
            }
            "join" => {
                arity(2)?;
                let a = self.tile_arg(pos[0], "join's operand")?;
                let b = self.tile_arg(pos[1], "join's operand")?;
                if a.shape != b.shape || a.dtype != b.dtype {
                    return Err(e_type(
                        e.span,
                        "join needs two tiles of the same shape and type",
                        "here",
                    ));
                }
                let mut t = a;
                t.shape.push(2);
                t.layout = None;
                Ok(Ty::Tile(t))
            }
            "fma" => {
                arity(3)?;
                let a = self.expr_inner(pos[0])?;
                let b = self.expr_inner(pos[1])?;
                let c = self.expr_inner(pos[2])?;
                let ab = self.binary(BinOp::Mul, &a, &b, e.span)?;
                self.binary(BinOp::Add, &ab, &c, e.span)
            }
            _ if PackedOp::from_tile_name(f).is_some() => {
                let op = PackedOp::from_tile_name(f).unwrap_or(PackedOp::Add);
                arity(op.arity() + 1)?;
                let dtype = self.checked.consts.dtype(pos[op.arity()])?;
                if !packed_arith::is_result_type(dtype) {
                    return Err(e_type(
                        pos[op.arity()].span,
                        format!("`{f}` gives f8e4m3 or f8e5m2 lanes, not {dtype}"),
                        "result type",
                    ));
                }
                let mut out: Option<TileTy> = None;
                for &p in &pos[..op.arity()] {
                    let t = self.tile_arg(p, &format!("{f}'s operand"))?;
                    if !packed_arith::is_operand_type(t.dtype) {
                        return Err(e_type(
                            p.span,
                            format!("`{f}` takes f8e4m3, f8e5m2 or f4e2m1 tiles, found {}", t.dtype),
                            "operand type",
                        ));
                    }
                    out = Some(match out {
                        None => t,
                        Some(o) => {
                            let shape = broadcast_shapes(&o.shape, &t.shape).ok_or_else(|| {
                                e_type(
                                    p.span,
                                    format!("tile shapes {:?} and {:?} do not broadcast", o.shape, t.shape),
                                    "incompatible shapes",
                                )
                            })?;
                            let layout = if o.shape == shape {
                                o.layout
                            } else if t.shape == shape {
                                t.layout
                            } else {
                                None
                            };
                            TileTy {
                                dtype: o.dtype,
                                shape,
                                layout,
                            }
                        }
                    });
                }
                let mut t = out.ok_or_else(|| e_type(e.span, format!("`{f}` needs operands"), "here"))?;
                t.dtype = dtype;
                Ok(Ty::Tile(t))
            }
            _ if ReduceOp::scan_from_name(f).is_some() => {
                arity(2)?;
                scan_reverse_arg(args)?;
                let t = self.tile_arg(pos[0], &format!("{f}'s operand"))?;
                let axis = self.checked.consts.dim(pos[1])? as usize;
                if axis >= t.shape.len() {
                    return Err(e_type(pos[1].span, "axis out of range", "here"));
                }
                Ok(Ty::Tile(t))
            }
            _ if ReduceOp::from_name(f).is_some() => {
                arity(2)?;
                let op = ReduceOp::from_name(f).unwrap_or(ReduceOp::Sum);
                let mut t = self.tile_arg(pos[0], &format!("{f}'s operand"))?;
                if op.is_bitwise() && t.dtype.is_float() {
                    return Err(e_type(
                        pos[0].span,
                        format!("`{f}` needs an integer tile, found {}", t.dtype),
                        "a float tile",
                    ));
                }
                let axis = self.checked.consts.dim(pos[1])? as usize;
                if axis >= t.shape.len() {
                    return Err(e_type(pos[1].span, "axis out of range", "here"));
                }
                t.shape.remove(axis);
                t.layout = None;
                if op.is_arg() {
                    t.dtype = DType::I32;
                }
                if t.shape.is_empty() {
                    // The scalar of the element type where bwsim has one (i1, i32, i64, f32);
                    // narrower floats widen to f32 and narrower integers to i32, exactly.
                    return Ok(Ty::Scalar(match ScalarTy::from_name(t.dtype.name()) {
                        Some(s) => s,
                        None if t.dtype.is_float() => ScalarTy::F32,
                        None => ScalarTy::I32,
                    }));
                }
                Ok(Ty::Tile(t))
            }
            _ => Err(Diagnostic::error(
                Code::UndefinedName,
                format!("unknown function `{f}`"),
                e.span,
                "not a built-in",
            )
            .with_help("see docs/tile-format.md for the built-in functions")),
        }
    }

    /// A math function (`exp2(x)`, `sqrt(x)`, ...): one float tile or float scalar, same type out.
    fn math(&mut self, f: &str, pos: &[&'k Expr], e: &'k Expr) -> Result<Ty, Diagnostic> {
        let [x] = pos else {
            return Err(e_type(
                e.span,
                format!("`{f}` takes 1 argument, found {}", pos.len()),
                "wrong number of arguments",
            ));
        };
        match self.expr_inner(x)? {
            Ty::Tile(t) if t.dtype.is_float() => Ok(Ty::Tile(t)),
            Ty::Scalar(ScalarTy::F32) => Ok(Ty::Scalar(ScalarTy::F32)),
            other => Err(e_type(
                x.span,
                format!("`{f}` needs a float tile or scalar, found {}", other.describe()),
                "not a float",
            )
            .with_help("cast integers first: `cast(x, f32)`")),
        }
    }

    pub(super) fn index(
        &mut self,
        base: &'k Expr,
        items: &'k [IndexItem],
        e: &'k Expr,
    ) -> Result<Ty, Diagnostic> {
        // `desc.shape[i]`, `desc.block[i]`, `buf.shape[i]`
        if let ExprKind::Field(inner, field) = &base.kind {
            let t = self.expr_inner(inner)?;
            let [IndexItem::Expr(i)] = items else {
                return Err(e_type(e.span, format!("`.{field}` takes one index"), "here"));
            };
            let idx = self.checked.consts.int(i)?;
            let rank = match (&t, field.as_str()) {
                (Ty::Desc(d), "shape" | "block") => d.block.len(),
                (Ty::Smem(s), "shape") => s.shape.len(),
                (Ty::Tmem(s), "shape") => s.shape.len(),
                (Ty::Tile(s), "shape") => s.shape.len(),
                _ => {
                    return Err(e_type(
                        base.span,
                        format!("{} has no field `{field}`", t.describe()),
                        "here",
                    ))
                }
            };
            if idx < 0 || idx as usize >= rank {
                return Err(e_type(
                    i.span,
                    format!("index {idx} out of range for rank {rank}"),
                    "here",
                ));
            }
            return Ok(Ty::Scalar(ScalarTy::I32));
        }
        let bt = self.expr_inner(base)?;
        match bt {
            Ty::Smem(s) => {
                let (shape, _) = self.view_shape(&s.shape, items, e)?;
                Ok(Ty::Smem(SmemTy { shape, ..s }))
            }
            Ty::Tmem(t) => {
                let (shape, _) = self.view_shape(&t.shape, items, e)?;
                Ok(Ty::Tmem(TmemTy { shape, ..t }))
            }
            Ty::Mbar {
                count: Some(_),
                alloc,
            } => match items {
                [IndexItem::Expr(i)] => {
                    let ti = self.expr_inner(i)?;
                    if !ti.is_int_scalar() {
                        return Err(e_type(i.span, "barrier index must be an integer scalar", "here"));
                    }
                    Ok(Ty::Mbar { count: None, alloc })
                }
                _ => Err(e_type(
                    e.span,
                    "index a barrier array with one integer: `bars[i]`",
                    "here",
                )),
            },
            Ty::Tile(mut t) => {
                // `x[:, None]`-style new axes and constant slices `x[:, a:b]` (a sub-tile, as
                // Gluon's reshape/permute/split tree of `_split_n` produces).
                let mut shape = Vec::new();
                let mut src = t.shape.iter();
                for it in items {
                    match it {
                        IndexItem::NewAxis => shape.push(1),
                        IndexItem::Slice(a, b) => {
                            let dim = *src
                                .next()
                                .ok_or_else(|| e_type(e.span, "too many `:` for this tile", "here"))?;
                            let lo = match a {
                                Some(a) => self.checked.consts.int(a)?,
                                None => 0,
                            };
                            let hi = match b {
                                Some(b) => self.checked.consts.int(b)?,
                                None => dim as i64,
                            };
                            if lo < 0 || hi > dim as i64 || lo >= hi {
                                return Err(Diagnostic::error(
                                    Code::ViewBounds,
                                    format!("slice {lo}:{hi} out of range 0..{dim}"),
                                    e.span,
                                    "out of bounds",
                                ));
                            }
                            shape.push((hi - lo) as u32);
                        }
                        IndexItem::Expr(_) => return Err(e_type(
                            e.span,
                            "register tiles can only be indexed with `:`, constant slices `a:b` and `None`",
                            "here",
                        )
                        .with_help("use shared memory views to address parts of a buffer")),
                    }
                }
                shape.extend(src);
                t.shape = shape;
                t.layout = None;
                Ok(Ty::Tile(t))
            }
            other => Err(e_type(
                base.span,
                format!("{} cannot be indexed here", other.describe()),
                "here",
            )),
        }
    }

    /// Shape of a view `buf[items]`: leading integer indices drop dimensions; slices keep them.
    pub(super) fn view_shape(
        &mut self,
        shape: &[u32],
        items: &'k [IndexItem],
        e: &Expr,
    ) -> Result<(Vec<u32>, usize), Diagnostic> {
        if items.len() > shape.len() {
            return Err(e_type(
                e.span,
                format!("{} indices for a view of rank {}", items.len(), shape.len()),
                "too many indices",
            ));
        }
        let mut out = Vec::new();
        let mut dropped = 0;
        for (k, it) in items.iter().enumerate() {
            match it {
                IndexItem::Expr(i) => {
                    if k != dropped {
                        return Err(e_type(i.span, "integer indices must come before slices", "here"));
                    }
                    let ti = self.expr_inner(i)?;
                    if !ti.is_int_scalar() {
                        return Err(e_type(
                            i.span,
                            format!("index must be an integer scalar, found {}", ti.describe()),
                            "here",
                        ));
                    }
                    if self.checked.consts.is_const(i) {
                        let v = self.checked.consts.int(i)?;
                        if v < 0 || v >= shape[k] as i64 {
                            return Err(Diagnostic::error(
                                Code::ViewBounds,
                                format!("index {v} out of range 0..{}", shape[k]),
                                i.span,
                                "out of bounds",
                            ));
                        }
                    }
                    dropped += 1;
                }
                IndexItem::Slice(a, b) => {
                    let lo = match a {
                        Some(a) => self.checked.consts.int(a)?,
                        None => 0,
                    };
                    let hi = match b {
                        Some(b) => self.checked.consts.int(b)?,
                        None => shape[k] as i64,
                    };
                    if lo < 0 || hi > shape[k] as i64 || lo >= hi {
                        return Err(Diagnostic::error(
                            Code::ViewBounds,
                            format!("slice {lo}:{hi} out of range 0..{}", shape[k]),
                            e.span,
                            "out of bounds",
                        ));
                    }
                    out.push((hi - lo) as u32);
                }
                IndexItem::NewAxis => return Err(e_type(e.span, "`None` is for register tiles", "here")),
            }
        }
        out.extend_from_slice(&shape[items.len()..]);
        if out.is_empty() {
            out.push(1);
        }
        Ok((out, dropped))
    }
}

/// A scan's `reverse=` keyword, checked (`builtins::scan_reverse`).
fn scan_reverse_arg(args: &[Arg]) -> Result<bool, Diagnostic> {
    crate::builtins::scan_reverse(args).map_err(|(span, m)| e_type(span, m, "here"))
}
