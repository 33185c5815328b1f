//! Lowering expressions: names to slots, constants folded, built-in functions (math,
//! reductions, shape functions) to [`CExpr`] nodes, views and descriptor coordinates.

use super::*;
use bwsim_isa::Code;

impl<'a, 'k> Lower<'a, 'k> {
    pub(super) fn expr(&mut self, e: &Expr) -> Result<CExpr, Diagnostic> {
        if let Some(v) = self.const_of(e) {
            return match v {
                ConstValue::Int(i) => Ok(CExpr::Const(Value::Int(i))),
                ConstValue::Bool(b) => Ok(CExpr::Const(Value::Bool(b))),
                ConstValue::DType(_) => Err(Diagnostic::error(
                    Code::EType,
                    "an element type is not a value",
                    e.span,
                    "here",
                )),
            };
        }
        let bx = |c: CExpr| Box::new(c);
        match &e.kind {
            ExprKind::Int(v) => Ok(CExpr::Const(Value::Int(*v))),
            ExprKind::Float(v) => Ok(CExpr::Const(Value::F32(*v as f32))),
            ExprKind::Bool(b) => Ok(CExpr::Const(Value::Bool(*b))),
            ExprKind::Str(_) => Err(unsupported(e.span, "strings are not values")),
            ExprKind::Name(n) => match self.lookup(n) {
                Some(Binding::Slot(s)) => Ok(CExpr::Slot(*s)),
                Some(Binding::Const(ConstValue::Int(i))) => Ok(CExpr::Const(Value::Int(*i))),
                Some(Binding::Const(ConstValue::Bool(b))) => Ok(CExpr::Const(Value::Bool(*b))),
                Some(Binding::Desc(_)) => {
                    Err(unsupported(e.span, format!("descriptor `{n}` used as a value")))
                }
                None if n == "inf" => Ok(CExpr::Const(Value::F32(f32::INFINITY))),
                None if n == "nan" => Ok(CExpr::Const(Value::F32(f32::NAN))),
                _ => Err(Diagnostic::error(
                    Code::UndefinedName,
                    format!("cannot find `{n}`"),
                    e.span,
                    "not a value",
                )),
            },
            ExprKind::Unary(op, a) => Ok(CExpr::Unary(*op, bx(self.expr(a)?))),
            ExprKind::Binary(op, a, b) => Ok(CExpr::Binary(*op, bx(self.expr(a)?), bx(self.expr(b)?))),
            ExprKind::Call(f, args) => self.call(f, args, e),
            ExprKind::Index(base, items) => self.index(base, items, e),
            ExprKind::Field(base, f) if f == "nbytes" => {
                let d = self.desc_of(base)?;
                Ok(CExpr::Const(Value::Int(self.descs[d as usize].nbytes() as i64)))
            }
            ExprKind::Field(_, f) => Err(Diagnostic::error(
                Code::EType,
                format!("`.{f}` must be indexed"),
                e.span,
                "here",
            )),
            ExprKind::List(_) => Err(Diagnostic::error(
                Code::EType,
                "a list is not a value here",
                e.span,
                "here",
            )),
        }
    }

    pub(super) fn desc_of(&self, e: &Expr) -> Result<u32, Diagnostic> {
        if let ExprKind::Name(n) = &e.kind {
            if let Some(Binding::Desc(d)) = self.lookup(n) {
                return Ok(*d);
            }
        }
        Err(Diagnostic::error(
            Code::EType,
            "expected a tensor descriptor",
            e.span,
            "here",
        ))
    }

    pub(super) fn call(&mut self, f: &str, args: &[Arg], e: &Expr) -> Result<CExpr, Diagnostic> {
        let pos: Vec<&Expr> = args
            .iter()
            .filter(|a| a.key.is_none())
            .map(|a| &a.value)
            .collect();
        let need = |n: usize| -> Result<(), Diagnostic> {
            if pos.len() < n {
                Err(Diagnostic::error(
                    Code::EType,
                    format!("`{f}` takes {n} arguments"),
                    e.span,
                    "here",
                ))
            } else {
                Ok(())
            }
        };
        let bx = |c: CExpr| Box::new(c);
        match f {
            "program_id" | "num_programs" => {
                need(1)?;
                let axis = self.const_int(pos[0])?.clamp(0, 2) as u8;
                Ok(if f == "program_id" {
                    CExpr::ProgramId(axis)
                } else {
                    CExpr::NumPrograms(axis)
                })
            }
            // Clusters run along x over consecutive CTAs (the machine's model): the rank is
            // the x index modulo the cluster's size.
            "cluster_rank" | "cluster_size" => {
                let cs = self.cluster[0].max(1) as i64;
                Ok(if f == "cluster_rank" {
                    CExpr::Binary(
                        BinOp::Rem,
                        bx(CExpr::ProgramId(0)),
                        bx(CExpr::Const(Value::Int(cs))),
                    )
                } else {
                    CExpr::Const(Value::Int(cs))
                })
            }
            "min" | "max" | "cdiv" => {
                need(2)?;
                let b = match f {
                    "min" => Builtin::Min,
                    "max" => Builtin::Max,
                    _ => Builtin::Cdiv,
                };
                Ok(CExpr::Call(b, vec![self.expr(pos[0])?, self.expr(pos[1])?]))
            }
            "select" | "where" => {
                need(3)?;
                Ok(CExpr::Call(
                    Builtin::Select,
                    vec![self.expr(pos[0])?, self.expr(pos[1])?, self.expr(pos[2])?],
                ))
            }
            "abs" => {
                need(1)?;
                Ok(CExpr::Call(Builtin::Abs, vec![self.expr(pos[0])?]))
            }
            _ if bwsim_isa::packed_arith::PackedOp::from_tile_name(f).is_some() => {
                let op = bwsim_isa::packed_arith::PackedOp::from_tile_name(f)
                    .unwrap_or(bwsim_isa::packed_arith::PackedOp::Add);
                need(op.arity() + 1)?;
                let dtype = self.env.dtype(pos[op.arity()])?;
                let args = pos[..op.arity()]
                    .iter()
                    .map(|p| self.expr(p))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(CExpr::Call(Builtin::Packed(op, dtype), args))
            }
            "fma" => {
                need(3)?;
                Ok(CExpr::Call(
                    Builtin::Fma,
                    vec![self.expr(pos[0])?, self.expr(pos[1])?, self.expr(pos[2])?],
                ))
            }
            "arange" => {
                need(2)?;
                Ok(CExpr::Arange {
                    start: self.const_int(pos[0])?,
                    end: self.const_int(pos[1])?,
                })
            }
            "full" => {
                need(3)?;
                let shape = self.const_list(pos[0])?;
                let value = self.expr(pos[1])?;
                let dtype = self.env.dtype(pos[2])?;
                Ok(CExpr::Full {
                    shape,
                    value: bx(value),
                    dtype,
                })
            }
            "cast" => {
                need(2)?;
                let dtype = self.env.dtype(pos[1])?;
                Ok(CExpr::Cast(bx(self.expr(pos[0])?), dtype))
            }
            "convert_layout" => {
                need(1)?;
                self.expr(pos[0])
            }
            "expand_dims" => {
                need(2)?;
                let axis = u32::try_from(self.const_int(pos[1])?).unwrap_or(0);
                Ok(CExpr::ExpandDims(bx(self.expr(pos[0])?), axis))
            }
            "broadcast" => {
                need(2)?;
                Ok(CExpr::Broadcast(bx(self.expr(pos[0])?), self.const_list(pos[1])?))
            }
            "reshape" => {
                need(2)?;
                Ok(CExpr::Reshape(bx(self.expr(pos[0])?), self.const_list(pos[1])?))
            }
            "permute" => {
                need(2)?;
                Ok(CExpr::Permute(bx(self.expr(pos[0])?), self.const_list(pos[1])?))
            }
            "split" => {
                need(1)?;
                Ok(CExpr::Split(bx(self.expr(pos[0])?)))
            }
            "join" => {
                need(2)?;
                Ok(CExpr::Join(bx(self.expr(pos[0])?), bx(self.expr(pos[1])?)))
            }
            _ if ReduceOp::scan_from_name(f).is_some() => {
                need(2)?;
                let op = ReduceOp::scan_from_name(f).unwrap_or(ReduceOp::Sum);
                let axis = u32::try_from(self.const_int(pos[1])?).unwrap_or(0);
                let reverse =
                    bwsim_isa::builtins::scan_reverse(args).map_err(|(span, m)| unsupported(span, m))?;
                Ok(CExpr::Scan(op, bx(self.expr(pos[0])?), axis, reverse))
            }
            _ if ReduceOp::from_name(f).is_some() => {
                need(2)?;
                let op = ReduceOp::from_name(f).unwrap_or(ReduceOp::Sum);
                let axis = u32::try_from(self.const_int(pos[1])?).unwrap_or(0);
                Ok(CExpr::Reduce(op, bx(self.expr(pos[0])?), axis))
            }
            _ if MathFn::from_name(f).is_some() => {
                need(1)?;
                let m = MathFn::from_name(f).unwrap_or(MathFn::Exp);
                Ok(CExpr::Call(Builtin::Math(m), vec![self.expr(pos[0])?]))
            }
            _ => Err(unsupported(e.span, format!("built-in `{f}` is not simulated"))),
        }
    }

    pub(super) fn index(&mut self, base: &Expr, items: &[IndexItem], e: &Expr) -> Result<CExpr, Diagnostic> {
        if let ExprKind::Field(inner, field) = &base.kind {
            let i = match items {
                [IndexItem::Expr(i)] => u32::try_from(self.const_int(i)?).unwrap_or(u32::MAX),
                _ => {
                    return Err(Diagnostic::error(
                        Code::EType,
                        format!("`.{field}` takes one index"),
                        e.span,
                        "here",
                    ))
                }
            };
            if let Ok(d) = self.desc_of(inner) {
                let info = &self.descs[d as usize];
                let v = match field.as_str() {
                    "shape" => info.shape.get(i as usize).map(|&x| x as i64),
                    "block" => info.block.get(i as usize).map(|&x| x as i64),
                    _ => None,
                };
                return v.map(|v| CExpr::Const(Value::Int(v))).ok_or_else(|| {
                    Diagnostic::error(
                        Code::EType,
                        format!("no `.{field}[{i}]` on this descriptor"),
                        e.span,
                        "here",
                    )
                });
            }
            if field == "shape" {
                return Ok(CExpr::ShapeOf(Box::new(self.expr(inner)?), i));
            }
            return Err(Diagnostic::error(
                Code::EType,
                format!("unknown field `{field}`"),
                e.span,
                "here",
            ));
        }
        let b = self.expr(base)?;
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            out.push(match it {
                IndexItem::Expr(x) => IItem::Expr(self.expr(x)?),
                IndexItem::Slice(lo, hi) => IItem::Slice(
                    match lo {
                        Some(x) => Some(self.const_int(x)?),
                        None => None,
                    },
                    match hi {
                        Some(x) => Some(self.const_int(x)?),
                        None => None,
                    },
                ),
                IndexItem::NewAxis => IItem::NewAxis,
            });
        }
        Ok(CExpr::Index(Box::new(b), out))
    }

    pub(super) fn opt(&mut self, e: &Option<Expr>) -> Result<Option<CExpr>, Diagnostic> {
        match e {
            Some(e) => Ok(Some(self.expr(e)?)),
            None => Ok(None),
        }
    }

    /// `desc[coords]`: the descriptor index and the lowered coordinates.
    pub(super) fn desc_coords(&mut self, e: &Expr) -> Result<(u32, Vec<CExpr>), Diagnostic> {
        if let ExprKind::Index(base, items) = &e.kind {
            let d = self.desc_of(base)?;
            let mut coords = Vec::new();
            for it in items {
                match it {
                    IndexItem::Expr(x) => coords.push(self.expr(x)?),
                    _ => {
                        return Err(Diagnostic::error(
                            Code::EType,
                            "TMA coordinates are plain expressions",
                            e.span,
                            "here",
                        ))
                    }
                }
            }
            return Ok((d, coords));
        }
        Err(Diagnostic::error(
            Code::EType,
            "expected `desc[coords]`",
            e.span,
            "here",
        ))
    }

    pub(super) fn cta_group(&self, e: &Option<Expr>) -> Result<u32, Diagnostic> {
        match e {
            Some(e) => Ok(u32::try_from(self.const_int(e)?).unwrap_or(1)),
            None => Ok(1),
        }
    }
}

impl<'a, 'k> Lower<'a, 'k> {
    /// `tma.make_desc` bound to `name`: a new entry of [`Program::descs`] holding what the
    /// descriptor's type fixes (element type, block, layout, fill), and the values the CTA
    /// builds its tensor map from when it runs the operation.
    pub(super) fn make_desc(&mut self, op: &Op, name: &str) -> Result<MakeDesc, Diagnostic> {
        let OpKind::TmaMakeDesc {
            ptr,
            offset,
            shape,
            strides,
            ..
        } = &op.kind
        else {
            return Err(unchecked(op));
        };
        let Some(Ty::Desc(d)) = self.checked.op_type(op, &self.iters) else {
            return Err(unchecked(op));
        };
        let d = d.clone();
        let mut list = |e: &Expr| -> Result<Vec<CExpr>, Diagnostic> {
            match &e.kind {
                ExprKind::List(items) => items.iter().map(|i| self.expr(i)).collect(),
                _ => Err(unchecked(op)),
            }
        };
        let (shape, strides) = (list(shape)?, list(strides)?);
        let desc = self.descs.len() as u32;
        self.descs.push(DescInfo {
            name: name.to_string(),
            dtype: d.dtype,
            block: d.block.clone(),
            layout: Layout::from(&d.layout),
            oob: d.oob,
            tensor: u32::MAX,
            shape: Vec::new(),
            elem_strides: d.elem_strides.clone(),
            base: 0,
            strides: Vec::new(),
            device: true,
        });
        Ok(MakeDesc {
            desc,
            ptr: self.expr(ptr)?,
            offset: self.expr(offset)?,
            shape,
            strides,
        })
    }
}
