//! Values and arithmetic: constants, elementwise operations, casts, global loads and
//! stores through pointer tensors, reductions.

use super::combiner::{self, Combiner};
use super::*;
use bwsim_isa::builtins::ReduceOp;
use bwsim_isa::packed_arith::PackedOp;
use bwsim_isa::typeck::{AtomicScope, AtomicSem};

impl<'m> Cx<'m> {
    /// The first integer literal after the operands (`init_barrier %b, 1`).
    pub(super) fn int_after_operands(&self, op: &Op) -> R<i64> {
        self.operand_toks(op)
            .iter()
            .find_map(|t| if let Tok::Int(v) = t.tok { Some(v) } else { None })
            .ok_or_else(|| ImportError::Syntax {
                span: op.span,
                message: format!("`{}` needs an integer operand", op.name),
            })
    }

    pub(super) fn constant(&mut self, op: &Op, span: Span) -> R<()> {
        let mut c = Cursor::new(&op.toks, op.span);
        let v = attr_val(&mut c)?;
        let r = self.result(op, 0)?;
        let ty = match self.sig(op)?.outputs.last() {
            Some(t) => t.clone(),
            None => Type::Scalar(Elem::I1),
        };
        let scalar = |v: &AttrVal, elem: Option<Elem>| -> Option<Expr> {
            Some(match v {
                AttrVal::Int(i) if elem.is_some_and(|e| e.is_float()) => float_e(*i as f64, span)?,
                AttrVal::Int(i) if elem == Some(Elem::I1) => with_span(Expr::bool(*i != 0), span),
                AttrVal::Int(i) => int_e(*i, span),
                AttrVal::Bool(b) => with_span(Expr::bool(*b), span),
                AttrVal::Float(f) => float_e(*f, span)?,
                AttrVal::Hex(bits) => {
                    let f = match elem {
                        Some(Elem::F32) => f32::from_bits(*bits as u32) as f64,
                        Some(Elem::F64) => f64::from_bits(*bits),
                        Some(Elem::F16) => half::f16::from_bits(*bits as u16).to_f64(),
                        Some(Elem::BF16) => half::bf16::from_bits(*bits as u16).to_f64(),
                        _ => return None,
                    };
                    float_e(f, span)?
                }
                _ => return None,
            })
        };
        let val = match (&v, &ty) {
            (AttrVal::Dense(inner), Type::Tensor { .. }) => match scalar(inner, ty.elem()) {
                Some(e) => Val::Splat(e, ty.clone()),
                None => Val::Unusable(format!(
                    "the constant {inner:?} has no bwsim equivalent (non-finite, or not a splat)"
                )),
            },
            (_, Type::Scalar(e)) => match scalar(&v, Some(*e)) {
                Some(x) => Val::E(x, ty.clone()),
                None => Val::Unusable(format!(
                    "the constant {v:?} has no bwsim equivalent (non-finite?)"
                )),
            },
            // A scalar constant inside an elementwise body (a combiner, a map_elementwise
            // function), whose scalar type is read as the tile's: a splat.
            (_, Type::Tensor { .. }) if self.elementwise.is_some() => match scalar(&v, ty.elem()) {
                Some(e) => Val::Splat(e, ty.clone()),
                None => Val::Unusable(format!(
                    "the constant {v:?} has no bwsim equivalent (non-finite?)"
                )),
            },
            _ => Val::Unusable(format!("the constant {v:?} has no bwsim equivalent")),
        };
        self.bind(&r, val);
        Ok(())
    }

    pub(super) fn binary(&mut self, op: &Op, span: Span) -> R<()> {
        if self.address_arith(op, span)?.is_some() {
            return Ok(());
        }
        let mut c = Cursor::new(&op.toks, op.span);
        let pred = if matches!(op.name.as_str(), "arith.cmpi" | "arith.cmpf") {
            let p = c.ident()?;
            c.eat(",");
            Some(p)
        } else {
            None
        };
        let v = self.n_operands(op, 2)?;
        let a_ty = self.val_type(&v[0].0, v[0].1)?;
        let b_ty = self.val_type(&v[1].0, v[1].1)?;
        let both_splat = matches!(self.get(&v[0].0, v[0].1)?, Val::Splat(..))
            && matches!(self.get(&v[1].0, v[1].1)?, Val::Splat(..));
        let a = self.math_operand(&v[0].0, v[0].1)?;
        let b = self.math_operand(&v[1].0, v[1].1)?;
        let unsigned_cmp = op.name == "arith.cmpi" && pred.as_deref().is_some_and(|p| p.starts_with('u'));
        let unsigned = unsigned_cmp
            || matches!(
                op.name.as_str(),
                "arith.divui" | "arith.remui" | "arith.shrui" | "arith.minui" | "arith.maxui"
            );
        let e = if unsigned {
            self.unsigned_expr(op, pred.as_deref(), a, b, &a_ty, span)?
        } else {
            let op_kind = match op.name.as_str() {
                "arith.addi" | "arith.addf" => Some(BinOp::Add),
                "arith.subi" | "arith.subf" => Some(BinOp::Sub),
                "arith.muli" | "arith.mulf" => Some(BinOp::Mul),
                "arith.divsi" | "arith.divf" => Some(BinOp::Div),
                "arith.remsi" | "arith.remf" => Some(BinOp::Rem),
                "arith.andi" => Some(BinOp::BitAnd),
                "arith.ori" => Some(BinOp::BitOr),
                "arith.xori" => Some(BinOp::BitXor),
                "arith.shli" => Some(BinOp::Shl),
                "arith.shrsi" => Some(BinOp::Shr),
                _ => None,
            };
            if let Some(k) = op_kind {
                bin(k, a, b, span)
            } else if let Some(p) = &pred {
                let k = match p.as_str() {
                    "eq" | "oeq" | "ueq" => BinOp::Eq,
                    "ne" | "one" | "une" => BinOp::Ne,
                    "slt" | "olt" | "ult" if op.name == "arith.cmpf" || p != "ult" => BinOp::Lt,
                    "sle" | "ole" | "ule" if op.name == "arith.cmpf" || p != "ule" => BinOp::Le,
                    "sgt" | "ogt" | "ugt" if op.name == "arith.cmpf" || p != "ugt" => BinOp::Gt,
                    "sge" | "oge" | "uge" if op.name == "arith.cmpf" || p != "uge" => BinOp::Ge,
                    other => {
                        return Err(self.misuse(
                            op,
                            format!("comparison `{other}` has no bwsim equivalent (integers are signed)"),
                        ))
                    }
                };
                bin(k, a, b, span)
            } else {
                let f = match op.name.as_str() {
                    "arith.minsi" | "arith.minimumf" | "arith.minnumf" => "min",
                    _ => "max",
                };
                call(f, vec![a, b], span)
            }
        };
        let r = self.result(op, 0)?;
        let mut ty = if a_ty.is_tensor() { a_ty } else { b_ty };
        if pred.is_some() {
            ty = match ty {
                Type::Tensor { shape, enc, .. } => Type::Tensor {
                    shape,
                    elem: Box::new(Type::Scalar(Elem::I1)),
                    enc,
                },
                _ => Type::Scalar(Elem::I1),
            };
        }
        self.let_val(&r, e, ty, both_splat, span);
        Ok(())
    }

    /// `arith.floordivsi`, `arith.ceildivsi`, `arith.ceildivui`: integer division rounded
    /// toward -inf (floor) or +inf (ceil) instead of toward zero. The truncating quotient
    /// `a / b` is the answer unless the remainder is non-zero and the exact quotient lies on
    /// the side it rounds to, where it moves by one: negative for floor (the operands' signs
    /// differ, `(a ^ b) < 0`), positive for ceil (`(a ^ b) >= 0`; always, unsigned). The
    /// unsigned form divides the operands zero-extended to i64, as `arith.divui` does. A
    /// division by zero is what `a / b` makes of it.
    pub(super) fn rounding_div(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 2)?;
        let a_ty = self.val_type(&v[0].0, v[0].1)?;
        let b_ty = self.val_type(&v[1].0, v[1].1)?;
        let both_splat = matches!(self.get(&v[0].0, v[0].1)?, Val::Splat(..))
            && matches!(self.get(&v[1].0, v[1].1)?, Val::Splat(..));
        let a = self.math_operand(&v[0].0, v[0].1)?;
        let b = self.math_operand(&v[1].0, v[1].1)?;
        let ty = if a_ty.is_tensor() { a_ty } else { b_ty };
        let select = if ty.is_tensor() && !both_splat {
            "where"
        } else {
            "select"
        };
        let one = || int_e(1, span);
        let zero = || int_e(0, span);
        let e = if op.name == "arith.ceildivui" {
            let elem = ty.elem().unwrap_or(Elem::I32);
            let Some(mask) = zext_mask(elem) else {
                return Err(self.unsupported(
                    op,
                    &format!(
                        "unsigned {} divisions: bwsim's integers are signed and 64 bits at most",
                        format!("{elem:?}").to_lowercase()
                    ),
                ));
            };
            let (za, zb) = (zext_i64(a, mask, span), zext_i64(b, mask, span));
            let q = bin(BinOp::Div, za.clone(), zb.clone(), span);
            let inexact = bin(BinOp::Ne, bin(BinOp::Rem, za, zb, span), zero(), span);
            let r = call(
                select,
                vec![inexact, bin(BinOp::Add, q.clone(), one(), span), q],
                span,
            );
            let d = dtype_of(elem, span)?;
            call("cast", vec![r, name_e(d.name(), span)], span)
        } else {
            let q = bin(BinOp::Div, a.clone(), b.clone(), span);
            let inexact = bin(
                BinOp::Ne,
                bin(BinOp::Rem, a.clone(), b.clone(), span),
                zero(),
                span,
            );
            let signs = bin(BinOp::BitXor, a, b, span);
            let (side, step) = if op.name == "arith.floordivsi" {
                (bin(BinOp::Lt, signs, zero(), span), BinOp::Sub)
            } else {
                (bin(BinOp::Ge, signs, zero(), span), BinOp::Add)
            };
            let cond = bin(BinOp::BitAnd, inexact, side, span);
            call(select, vec![cond, bin(step, q.clone(), one(), span), q], span)
        };
        let r = self.result(op, 0)?;
        self.let_val(&r, e, ty, both_splat, span);
        Ok(())
    }

    /// An unsigned integer operation on integers of at most 32 bits: bwsim's integers are
    /// signed, so both operands are zero-extended to i64 (`cast(x, i64) & mask`, exact), the
    /// signed i64 operation is the unsigned one, and the result is truncated back.
    fn unsigned_expr(
        &mut self,
        op: &Op,
        pred: Option<&str>,
        a: Expr,
        b: Expr,
        a_ty: &Type,
        span: Span,
    ) -> R<Expr> {
        let elem = a_ty.elem().unwrap_or(Elem::I32);
        let Some(mask) = zext_mask(elem) else {
            return Err(self.unsupported(
                op,
                &format!(
                    "unsigned {} operations: bwsim's integers are signed and 64 bits at most",
                    format!("{elem:?}").to_lowercase()
                ),
            ));
        };
        let zext = |x: Expr| zext_i64(x, mask, span);
        Ok(match (op.name.as_str(), pred) {
            ("arith.cmpi", Some(p)) => {
                let k = match p {
                    "ult" => BinOp::Lt,
                    "ule" => BinOp::Le,
                    "ugt" => BinOp::Gt,
                    _ => BinOp::Ge,
                };
                bin(k, zext(a), zext(b), span)
            }
            (name, _) => {
                let x = match name {
                    "arith.divui" => bin(BinOp::Div, zext(a), zext(b), span),
                    "arith.remui" => bin(BinOp::Rem, zext(a), zext(b), span),
                    "arith.shrui" => bin(BinOp::Shr, zext(a), b, span),
                    "arith.minui" => call("min", vec![zext(a), zext(b)], span),
                    _ => call("max", vec![zext(a), zext(b)], span),
                };
                let d = dtype_of(elem, span)?;
                call("cast", vec![x, name_e(d.name(), span)], span)
            }
        })
    }

    /// Bind the result of a one-operand elementwise operation (`e` already built).
    /// `ttng.packed_arith add|sub|mul|fma` (Gluon's `add2`, `sub2`, `mul2`, `fma2`, Triton 3.8
    /// and later): elementwise arithmetic that the hardware does two lanes at a time
    /// (`add.f32x2`, `fma.rn.f32x2`, `add.f16x2`), each lane rounded to nearest even as the scalar
    /// operation is; so the elementwise expression. `min` and `max` (`min2`, `max2`:
    /// `min.f16x2`, `max.bf16x2`, a NaN losing to a number as in IEEE minNum/maxNum) are the
    /// elementwise `min(a, b)` and `max(a, b)`. The packed fp8/fp4 forms (sm_100a's
    /// `add.e4m3x4.e4m3x4`, `fma.e5m2x4...`, as Triton 3.9 lowers them, without a rounding or
    /// saturation modifier) are [`Self::packed_fp8`]'s.
    pub(super) fn packed_arith(&mut self, op: &Op, span: Span) -> R<()> {
        let mut c = Cursor::new(&op.toks, op.span);
        let kind = c.ident()?;
        let arity = if kind == "fma" { 3 } else { 2 };
        let v = self.n_operands(op, arity)?;
        let ty = self.result_type(op, 0)?;
        let elem = ty.elem();
        if matches!(elem, Some(Elem::F8E4M3 | Elem::F8E5M2)) {
            return self.packed_fp8(op, &kind, &v, span);
        }
        let float = matches!(elem, Some(Elem::F32 | Elem::F16 | Elem::BF16));
        let same = v
            .iter()
            .map(|(n, s)| self.val_type(n, *s).map(|t| t.elem()))
            .collect::<R<Vec<_>>>()?
            .iter()
            .all(|e| *e == elem);
        if !float || !same || !matches!(kind.as_str(), "add" | "sub" | "mul" | "fma" | "min" | "max") {
            return Err(self.unsupported(
                op,
                &format!(
                    "`ttng.packed_arith {kind}` on {}: bwsim imports add, sub, mul, fma, min and max of f32, f16 \
                     or bf16 operands of the result's type (Gluon's add2, sub2, mul2, fma2, min2, max2)",
                    elem.map_or("these operands".to_string(), |e| format!("{e:?}").to_lowercase())
                ),
            ));
        }
        let xs = v
            .iter()
            .map(|(n, s)| self.math_operand(n, *s))
            .collect::<R<Vec<_>>>()?;
        let e = match kind.as_str() {
            "add" => bin(BinOp::Add, xs[0].clone(), xs[1].clone(), span),
            "sub" => bin(BinOp::Sub, xs[0].clone(), xs[1].clone(), span),
            "mul" => bin(BinOp::Mul, xs[0].clone(), xs[1].clone(), span),
            "min" | "max" => call(&kind, xs, span),
            _ => call("fma", xs, span),
        };
        let first_tensor = v
            .iter()
            .find(|(n, s)| !matches!(self.get(n, *s), Ok(Val::Splat(..))))
            .map_or(v[0].0.clone(), |(n, _)| n.clone());
        self.unary_result(op, e, &first_tensor, span)
    }

    /// The fp8 forms of `ttng.packed_arith add|sub|mul|fma` (Triton 3.9 on sm_100a: four-lane
    /// `add.e4m3x4.e4m3x4`, `mul.e5m2x4.e4m3x4.e5m2x4`, `fma...`): the tile language's `add4`,
    /// `sub4`, `mul4`, `fma4` with the result's element type, each lane computed exactly and
    /// rounded once to nearest even, a lane past the largest finite value or of a NaN operand
    /// an `unspecified-result` at run time (bwsim_isa::packed_arith). Operands are fp8 tensors
    /// of the result's shape or fp4 ones (`e2m1x4` lanes): i8 tensors of half its last
    /// dimension, two e2m1 values a byte, the low nibble first, unpacked exactly to f4e2m1
    /// tiles as `ttg.fp4_to_fp` unpacks them.
    fn packed_fp8(&mut self, op: &Op, kind: &str, v: &[(String, Span)], span: Span) -> R<()> {
        let ty = self.result_type(op, 0)?;
        let d = dtype_of(ty.elem().unwrap_or(Elem::F8E4M3), span)?;
        let packed = PackedOp::from_ptx(kind).ok_or_else(|| {
            self.unsupported(
                op,
                &format!(
                    "`ttng.packed_arith {kind}` on fp8: the four-lane fp8 instructions are add, sub, mul and fma"
                ),
            )
        })?;
        let mut xs = Vec::new();
        let r = self.result(op, 0)?;
        for (k, (n, s)) in v.iter().enumerate() {
            let t = self.val_type(n, *s)?;
            let shape = t.shape().map(<[i64]>::to_vec).unwrap_or_default();
            let want = ty.shape().map(<[i64]>::to_vec).unwrap_or_default();
            let mut halved = want.clone();
            if let Some(l) = halved.last_mut() {
                *l /= 2;
            }
            if t.elem() == Some(Elem::I8) && !shape.is_empty() && shape == halved && want.last() != Some(&0) {
                // fp4 operand: e2m1 pairs packed in bytes along the last dimension (the low
                // nibble first), four lanes a 16-bit register.
                let x = self.expr(n, *s)?;
                let last = shape.len() - 1;
                let e = self.unpack_fp4(x, &shape, last, DType::F4E2M1, &format!("{r}_fp4_{k}"), span);
                xs.push(e);
                continue;
            }
            if !matches!(t.elem(), Some(Elem::F8E4M3 | Elem::F8E5M2)) || t.shape() != ty.shape() {
                return Err(self.unsupported(
                    op,
                    &format!(
                        "`ttng.packed_arith {kind}` to {d} with an operand of type {}: the operands are \
                         fp8 (e4m3, e5m2) tensors of the result's shape or fp4 (e2m1 pairs packed in an \
                         i8 tensor of half its last dimension)",
                        t.elem()
                            .map_or("a non-scalar".to_string(), |e| format!("{e:?}").to_lowercase())
                    ),
                ));
            }
            xs.push(self.expr(n, *s)?);
        }
        xs.push(name_e(d.name(), span));
        let e = call(packed.tile_name(), xs, span);
        let first_tensor = v
            .iter()
            .find(|(n, s)| !matches!(self.get(n, *s), Ok(Val::Splat(..))))
            .map_or(v[0].0.clone(), |(n, _)| n.clone());
        self.unary_result(op, e, &first_tensor, span)
    }

    pub(super) fn unary_result(&mut self, op: &Op, e: Expr, operand: &str, span: Span) -> R<()> {
        let r = self.result(op, 0)?;
        let ty = self.result_type(op, 0)?;
        let splat = matches!(self.get(operand, span)?, Val::Splat(..));
        self.let_val(&r, e, ty, splat, span);
        Ok(())
    }

    pub(super) fn cast(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let ty = self.result_type(op, 0)?;
        let elem = ty
            .elem()
            .ok_or_else(|| self.misuse(op, "cast to a non-scalar type"))?;
        let from = self.val_type(&v[0].0, v[0].1)?.elem();
        let zext_mask: Option<i64> =
            match (op.name.as_str(), from) {
                ("arith.extui" | "arith.uitofp", Some(Elem::I1)) => None,
                ("arith.extui" | "arith.uitofp", Some(e)) if zext_mask(e).is_some() => zext_mask(e),
                ("arith.extui" | "arith.uitofp", _) => return Err(self.unsupported(
                    op,
                    "zero extension or unsigned conversion of 64-bit integers: bwsim's integers are signed",
                )),
                _ => None,
            };
        let mut d = dtype_of(if elem == Elem::Index { Elem::I64 } else { elem }, span)?;
        if !ty.is_tensor() && from == Some(Elem::I1) && matches!(d, DType::I8 | DType::I16) {
            // A bool widened to a byte (Triton's store of a bool): 0 or 1 (-1 signed), which
            // an i32 scalar holds exactly.
            d = DType::I32;
        }
        let mut a = self.math_operand(&v[0].0, v[0].1)?;
        if let Some(mask) = zext_mask {
            // Zero extension: the value as i64, masked to its width (exact), then converted.
            a = zext_i64(a, mask, span);
        }
        if !ty.is_tensor() && !matches!(d, DType::I1 | DType::I32 | DType::I64 | DType::F32) {
            return Err(self.misuse(
                op,
                format!("bwsim scalars are i1, i32, i64 or f32, not {}", d.name()),
            ));
        }
        self.unary_result(
            op,
            call("cast", vec![a, name_e(d.name(), span)], span),
            &v[0].0,
            span,
        )
    }

    pub(super) fn global_load(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        if self.bool_ptrs.contains(&v[0].0) {
            return Err(self.unsupported(
                op,
                "a load through a bool pointer cast to an i8 pointer is not imported",
            ));
        }
        let Val::Ptr { base, offs, ty: pty } = self.get(&v[0].0, v[0].1)? else {
            return Err(self.misuse(op, "the pointers are not derived from a pointer parameter"));
        };
        if !pty.is_tensor() {
            return self.scalar_load(op, (&base, offs, &pty), &v, span);
        }
        let offsets = match offs {
            Some(o) => self.offsets_tile(o, &pty, span)?,
            None => self.full(&int_tensor(&pty), int_e(0, span), span)?,
        };
        let mask = match v.get(1) {
            Some((n, s)) => Some(self.math_operand(n, *s)?),
            None => None,
        };
        let other = match v.get(2) {
            Some((n, s)) => Some(self.math_operand(n, *s)?),
            None => None,
        };
        // `tt.load` prints only its pointer type: the result is the pointee's tensor.
        let ty = match self.result_type(op, 0)? {
            Type::Tensor { shape, elem, enc } => match *elem {
                Type::Ptr(p) => Type::Tensor { shape, elem: p, enc },
                e => Type::Tensor {
                    shape,
                    elem: Box::new(e),
                    enc,
                },
            },
            t => t,
        };
        let r = self.result(op, 0)?;
        let n = self.let_op(
            &r,
            OpKind::GlobalLoad {
                ptr: name_e(&base, span),
                offsets,
                mask,
                other,
            },
            span,
        );
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// `tt.load %p[, %mask[, %other]] : !tt.ptr<T>`: one element (Gluon's `gl.load(ptr)`), as
    /// `global.load` of a one-element tile and that element (`reduce_max` of one element is the
    /// element, bit for bit). bwsim scalars are i1, i32, i64 and f32, so other element types
    /// are refused.
    fn scalar_load(&mut self, op: &Op, ptr: ScalarPtr, v: &[(String, Span)], span: Span) -> R<()> {
        let (base, offs, pty) = ptr;
        let (elem, d) = self.scalar_pointee(op, pty, "a scalar load of a pointer to pointers", span)?;
        if !matches!(d, DType::I1 | DType::I32 | DType::I64 | DType::F32) {
            return Err(self.misuse(
                op,
                format!(
                    "a scalar load of {}: bwsim scalars are i1, i32, i64 or f32 (load a tensor instead)",
                    d.name()
                ),
            ));
        }
        let warps = self.warps;
        let one = |x: Expr, d: DType| one_element(x, d, warps, span);
        let offsets = one(offs.unwrap_or_else(|| int_e(0, span)), DType::I32);
        let mask = match v.get(1) {
            Some((n, s)) => Some(one(self.math_operand(n, *s)?, DType::I1)),
            None => None,
        };
        let other = match v.get(2) {
            Some((n, s)) => Some(self.math_operand(n, *s)?),
            None => None,
        };
        let r = self.result(op, 0)?;
        let t = self.let_op(
            &format!("{r}_elem"),
            OpKind::GlobalLoad {
                ptr: name_e(base, span),
                offsets,
                mask,
                other,
            },
            span,
        );
        let e = call("reduce_max", vec![name_e(&t, span), int_e(0, span)], span);
        let n = self.let_(&r, Rhs::Expr(e), span);
        self.bind(
            &r,
            Val::E(name_e(&n, span), Type::Scalar(elem.unwrap_or(Elem::F32))),
        );
        Ok(())
    }

    /// The element a scalar `tt.load`/`tt.store` moves: the pointee of the pointer type the
    /// operation prints after its colon (else `pty`), and its dtype; `what` is the error for a
    /// pointer to pointers.
    fn scalar_pointee(&self, op: &Op, pty: &Type, what: &str, span: Span) -> R<(Option<Elem>, DType)> {
        let pty = self.printed_ptr_type(op).unwrap_or_else(|| pty.clone());
        let elem = match &pty {
            Type::Ptr(p) => p.elem(),
            t => t.elem(),
        };
        match elem.and_then(|e| dtype_of(e, span).ok()) {
            Some(d) => Ok((elem, d)),
            None => Err(self.misuse(op, what)),
        }
    }

    /// The pointer type an operation prints after its colon (`tt.load %p : !tt.ptr<f32>`).
    fn printed_ptr_type(&self, op: &Op) -> Option<Type> {
        let c = Cursor::new(&op.toks, op.span);
        let at = c.find_top(":")?;
        let mut tc = Cursor::new(&op.toks[at + 1..], op.span);
        match parse_type(&mut tc) {
            Ok(t @ Type::Ptr(_)) => Some(t),
            _ => None,
        }
    }

    /// An offset expression as a tile of the pointer tensor's shape.
    pub(super) fn offsets_tile(&mut self, o: Expr, pty: &Type, span: Span) -> R<Expr> {
        // A scalar offset (e.g. `ptr + k` splat to a tensor) needs the tensor's shape.
        let scalar = !matches!(
            o.kind,
            ExprKind::Name(_) | ExprKind::Call(..) | ExprKind::Binary(..)
        );
        if scalar {
            let z = self.full(&int_tensor(pty), int_e(0, span), span)?;
            return Ok(bin(BinOp::Add, z, o, span));
        }
        Ok(o)
    }

    /// `tt.atomic_rmw KIND, SEM, SCOPE, %ptrs, %vals[, %mask]` → `global.atomic` with `sem=`
    /// and `scope=` where they are not the defaults (`acq_rel`, `gpu`).
    pub(super) fn atomic_rmw(&mut self, op: &Op, span: Span) -> R<()> {
        let mut c = Cursor::new(&op.toks, op.span);
        let kind = c.ident()?;
        let (sem, scope) = self.atomic_order(op, span)?;
        let k = match kind.as_str() {
            "add" | "fadd" => "add",
            "max" => "max",
            "min" => "min",
            "and" => "and",
            "or" => "or",
            "xor" => "xor",
            "exch" | "xchg" => "xchg",
            other => {
                return Err(self.unsupported(
                    op,
                    &format!("atomic `{other}` (bwsim's integers are signed: umax/umin have no equivalent)"),
                ))
            }
        };
        let (base, offsets, value, mask) = self.pointer_operands(
            op,
            "scalar atomics are not supported (use a tensor of pointers)",
            span,
        )?;
        let ty = self.result_type(op, 0)?;
        let r = self.result(op, 0)?;
        let kind = OpKind::GlobalAtomic {
            op: name_e(k, span),
            ptr: name_e(&base, span),
            offsets,
            value,
            mask,
            compare: None,
            sem,
            scope,
        };
        // Old values nobody reads: a statement (the PTX backend then needs no owner of each
        // element to hand them to its copies).
        if !self.used.contains(&r) {
            self.op_stmt(kind, span);
            return Ok(());
        }
        let n = self.let_op(&r, kind, span);
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// `tt.atomic_store SEM, SCOPE, %ptrs, %vals[, %mask]` (Triton 3.9) → `global.atomic xchg`
    /// with its ordering, the old values unused: an atomic write of the values.
    pub(super) fn atomic_store(&mut self, op: &Op, span: Span) -> R<()> {
        let (sem, scope) = self.atomic_order(op, span)?;
        let (base, offsets, value, mask) = self.pointer_operands(
            op,
            "scalar atomics are not supported (use a tensor of pointers)",
            span,
        )?;
        // A statement: nobody reads the old values (and the PTX backend then needs no owner of
        // each element to hand them to its copies).
        self.op_stmt(
            OpKind::GlobalAtomic {
                op: name_e("xchg", span),
                ptr: name_e(&base, span),
                offsets,
                value,
                mask,
                compare: None,
                sem,
                scope,
            },
            span,
        );
        Ok(())
    }

    /// `tt.assert %cond, "MESSAGE" : T` (Gluon's `gl.device_assert`, compiled in debug mode;
    /// a `mask=` is already folded into `%cond`) → `device.assert COND, "MESSAGE"`.
    pub(super) fn device_assert(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let cond = self.math_operand(&v[0].0, v[0].1)?;
        let msg = op
            .toks
            .iter()
            .find_map(|t| match &t.tok {
                Tok::Str(m) => Some(m.clone()),
                _ => None,
            })
            .ok_or_else(|| self.misuse(op, "needs its message"))?;
        self.op_stmt(
            OpKind::DeviceAssert {
                cond,
                msg: with_span(Expr::new(ExprKind::Str(msg), span), span),
            },
            span,
        );
        Ok(())
    }

    /// `%r = tt.atomic_load SEM, SCOPE, %ptrs[, %mask]` (Triton 3.9) → `global.atomic load`
    /// with its ordering (`relaxed` or `acquire`; Triton refuses the others): an atomic read,
    /// 0 where masked off (Triton leaves those elements unspecified).
    pub(super) fn atomic_load(&mut self, op: &Op, span: Span) -> R<()> {
        let (sem, scope) = self.atomic_order(op, span)?;
        // `atomic_order` leaves the default `acq_rel` out; a load has no such ordering.
        let Some(sem) = sem else {
            return Err(self.misuse(op, "an atomic load is `relaxed` or `acquire`"));
        };
        let v = self.operands(op)?;
        let ptrs = v.first().ok_or_else(|| self.misuse(op, "needs the pointers"))?;
        let (base, offsets) = self.pointer_tensor(
            op,
            ptrs,
            "scalar atomics are not supported (use a tensor of pointers)",
            span,
        )?;
        let mask = match v.get(1) {
            Some((n, s)) => Some(self.math_operand(n, *s)?),
            None => None,
        };
        let ty = self.result_type(op, 0)?;
        let r = self.result(op, 0)?;
        let n = self.let_op(
            &r,
            OpKind::GlobalAtomic {
                op: name_e("load", span),
                ptr: name_e(&base, span),
                offsets,
                value: int_e(0, span),
                mask,
                compare: None,
                sem: Some(sem),
                scope,
            },
            span,
        );
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// `%r = tt.atomic_poll SEM, SCOPE, %ptrs, %expected` (Triton 3.9), the spin-wait until
    /// every element equals `%expected` → a `while` loop of atomic reads (`global.atomic add` of
    /// 0, with the poll's ordering) counting the elements that match; `%r` (all true once the
    /// loop ends) is the comparison of the last values read.
    pub(super) fn atomic_poll(&mut self, op: &Op, span: Span) -> R<()> {
        let (sem, scope) = self.atomic_order(op, span)?;
        let v = self.n_operands(op, 2)?;
        let (base, offsets) = self.pointer_tensor(
            op,
            &v[0],
            "scalar atomics are not supported (use a tensor of pointers)",
            span,
        )?;
        let expected = self.expr(&v[1].0, v[1].1)?;
        let ty = self.result_type(op, 0)?;
        let n: i64 = match &ty {
            Type::Tensor { shape, .. } => shape.iter().product(),
            _ => 1,
        };
        let r = self.result(op, 0)?;
        let last = self.let_(
            "polled",
            Rhs::Expr(bin(BinOp::Ne, expected.clone(), expected.clone(), span)),
            span,
        );
        let seen = self.let_("matched", Rhs::Expr(int_e(0, span)), span);
        self.blocks.push(Vec::new());
        let old = self.let_op(
            "flag",
            OpKind::GlobalAtomic {
                op: name_e("add", span),
                ptr: name_e(&base, span),
                offsets,
                value: int_e(0, span),
                mask: None,
                compare: None,
                sem,
                scope,
            },
            span,
        );
        let eq = bin(BinOp::Eq, name_e(&old, span), expected, span);
        for (name, value) in [
            (&last, eq.clone()),
            (
                &seen,
                call(
                    "sum",
                    vec![call("cast", vec![eq, name_e("i32", span)], span), int_e(0, span)],
                    span,
                ),
            ),
        ] {
            self.assign(name, Rhs::Expr(value), span);
        }
        let stmts = self.blocks.pop().unwrap_or_default();
        self.push(
            StmtKind::While {
                cond: bin(BinOp::Lt, name_e(&seen, span), int_e(n, span), span),
                body: Block {
                    stmts,
                    end_comments: Vec::new(),
                },
            },
            span,
        );
        self.bind(&r, Val::E(name_e(&last, span), ty));
        Ok(())
    }

    /// The `SEM, SCOPE` words of a `tt.atomic_rmw`/`tt.atomic_cas` (the first two words naming
    /// an ordering and a scope, before its operands) as `sem=`/`scope=` operands, each left out
    /// where it is the default (`acq_rel`, `gpu`).
    fn atomic_order(&mut self, op: &Op, span: Span) -> R<(Option<Expr>, Option<Expr>)> {
        let words: Vec<&str> = op
            .toks
            .iter()
            .map(|t| &t.tok)
            .take_while(|t| !matches!(t, Tok::Value(_)))
            .filter_map(|t| match t {
                Tok::Ident(w) => Some(w.as_str()),
                _ => None,
            })
            .collect();
        let sem = words.iter().find_map(|w| AtomicSem::from_name(w));
        let scope = words.iter().find_map(|w| AtomicScope::from_name(w));
        let (Some(sem), Some(scope)) = (sem, scope) else {
            return Err(self.unsupported(op, "an atomic without its ordering and scope words"));
        };
        let sem = (sem != AtomicSem::AcqRel).then(|| name_e(sem.name(), span));
        let scope = (scope != AtomicScope::Gpu).then(|| name_e(scope.name(), span));
        Ok((sem, scope))
    }

    /// `tt.atomic_cas SEM, SCOPE, %ptrs, %cmp, %val` → `global.atomic cas, ..., compare=`
    /// (its ordering as for `tt.atomic_rmw`).
    pub(super) fn atomic_cas(&mut self, op: &Op, span: Span) -> R<()> {
        let (sem, scope) = self.atomic_order(op, span)?;
        let v = self.n_operands(op, 3)?;
        let (base, offsets) = self.pointer_tensor(
            op,
            &v[0],
            "scalar atomics are not supported (use a tensor of pointers)",
            span,
        )?;
        let compare = self.expr(&v[1].0, v[1].1)?;
        let value = self.expr(&v[2].0, v[2].1)?;
        let ty = self.result_type(op, 0)?;
        let r = self.result(op, 0)?;
        let n = self.let_op(
            &r,
            OpKind::GlobalAtomic {
                op: name_e("cas", span),
                ptr: name_e(&base, span),
                offsets,
                value,
                mask: None,
                compare: Some(compare),
                sem,
                scope,
            },
            span,
        );
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// The operands of a store or atomic through a tensor of pointers (`%ptrs, %vals[, %mask]`):
    /// the pointer parameter, the offsets tile, the value and the mask. `scalar` is the
    /// refusal of a scalar pointer.
    fn pointer_operands(
        &mut self,
        op: &Op,
        scalar: &str,
        span: Span,
    ) -> R<(String, Expr, Expr, Option<Expr>)> {
        let v = self.n_operands(op, 2)?;
        let (base, offsets) = self.pointer_tensor(op, &v[0], scalar, span)?;
        let value = self.expr(&v[1].0, v[1].1)?;
        let mask = match v.get(2) {
            Some((n, s)) => Some(self.math_operand(n, *s)?),
            None => None,
        };
        Ok((base, offsets, value, mask))
    }

    /// A tensor of pointers derived from a pointer parameter: the parameter and the offsets
    /// tile. `scalar` is the refusal of a scalar pointer.
    fn pointer_tensor(
        &mut self,
        op: &Op,
        ptrs: &(String, Span),
        scalar: &str,
        span: Span,
    ) -> R<(String, Expr)> {
        let Val::Ptr { base, offs, ty: pty } = self.get(&ptrs.0, ptrs.1)? else {
            return Err(self.misuse(op, "the pointers are not derived from a pointer parameter"));
        };
        if !pty.is_tensor() {
            return Err(self.misuse(op, scalar));
        }
        let offsets = match offs {
            Some(o) => self.offsets_tile(o, &pty, span)?,
            None => self.full(&int_tensor(&pty), int_e(0, span), span)?,
        };
        Ok((base, offsets))
    }

    pub(super) fn global_store(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 2)?;
        if let Val::Ptr { base, offs, ty } = self.get(&v[0].0, v[0].1)? {
            if !ty.is_tensor() {
                return self.scalar_store(op, (&base, offs, &ty), &v, span);
            }
        }
        let (base, offsets, mut value, mask) =
            self.pointer_operands(op, "scalar stores are not supported (store a tensor)", span)?;
        if self.bool_ptrs.contains(&v[0].0) {
            value = call("cast", vec![value, name_e(DType::I1.name(), span)], span);
        }
        self.op_stmt(
            OpKind::GlobalStore {
                ptr: name_e(&base, span),
                offsets,
                value,
                mask,
            },
            span,
        );
        Ok(())
    }

    /// `tt.store %p, %v[, %mask] : !tt.ptr<T>`: one element (Gluon's `gl.store(ptr, x)`), as
    /// `global.store` of one-element tiles (every thread of the partition stores the same value
    /// to the same address on the GPU: one store).
    fn scalar_store(&mut self, op: &Op, ptr: ScalarPtr, v: &[(String, Span)], span: Span) -> R<()> {
        let (base, offs, pty) = ptr;
        let (_, d) = self.scalar_pointee(op, pty, "a scalar store through a pointer to pointers", span)?;
        let warps = self.warps;
        let tile = |x: Expr, d: DType| one_element(x, d, warps, span);
        let offsets = tile(offs.unwrap_or_else(|| int_e(0, span)), DType::I32);
        let mut value = tile(self.math_operand(&v[1].0, v[1].1)?, d);
        if self.bool_ptrs.contains(&v[0].0) {
            value = call("cast", vec![value, name_e(DType::I1.name(), span)], span);
        }
        let mask = match v.get(2) {
            Some((n, s)) => Some(tile(self.math_operand(n, *s)?, DType::I1)),
            None => None,
        };
        self.op_stmt(
            OpKind::GlobalStore {
                ptr: name_e(base, span),
                offsets,
                value,
                mask,
            },
            span,
        );
        Ok(())
    }

    /// `ttg.fp4_to_fp %x {axis}` (Gluon's `gl.fp4_to_fp`): each byte of the i8 tile `x` holds
    /// two e2m1 values, the low nibble first along `axis`, which doubles. Each nibble decodes
    /// exactly (sign bit 3; exponent bits 2:1, mantissa bit 0: `m / 2` for exponent 0, else
    /// `(1 + m / 2) * 2^(e - 1)`: 0, 0.5, 1, 1.5, 2, 3, 4, 6) and converts to the result's
    /// element type without rounding; the halves are joined and the pair dimension folded into
    /// `axis`.
    pub(super) fn fp4_to_fp(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let xty = self.val_type(&v[0].0, v[0].1)?;
        let shape = xty
            .shape()
            .map(<[i64]>::to_vec)
            .ok_or_else(|| self.misuse(op, "unpacks a tensor"))?;
        let axis = self.int_attr(op, "axis")?;
        let a = usize::try_from(axis)
            .ok()
            .filter(|&a| a < shape.len())
            .ok_or_else(|| self.misuse(op, format!("axis {axis} of a rank-{} tensor", shape.len())))?;
        let ty = self.result_type(op, 0)?;
        let d = dtype_of(
            ty.elem().ok_or_else(|| self.misuse(op, "unpacks to floats"))?,
            span,
        )?;
        let x = self.expr(&v[0].0, v[0].1)?;
        let r = self.result(op, 0)?;
        let e = self.unpack_fp4(x, &shape, a, d, &r, span);
        let n = self.let_(&r, Rhs::Expr(e), span);
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// The expression unpacking the i8 tile `x` of `shape` (two e2m1 values a byte, the low
    /// nibble first along axis `a`, which doubles) to elements of `d`, exactly; its steps are
    /// bound to names made from `r`.
    fn unpack_fp4(&mut self, x: Expr, shape: &[i64], a: usize, d: DType, r: &str, span: Span) -> Expr {
        let x32 = self.let_(
            &format!("{r}_bytes"),
            Rhs::Expr(call("cast", vec![x, name_e("i32", span)], span)),
            span,
        );
        let x32 = name_e(&x32, span);
        let int = |v: i64| int_e(v, span);
        let decode = |nib: Expr| -> Expr {
            let k = bin(BinOp::BitAnd, nib.clone(), int(7), span);
            let e = bin(BinOp::Shr, k.clone(), int(1), span);
            let m = bin(BinOp::BitAnd, k, int(1), span);
            // 4 * |value|: 2m for exponent 0, (2 + m) << e otherwise.
            let num = call(
                "where",
                vec![
                    bin(BinOp::Eq, e.clone(), int(0), span),
                    bin(BinOp::Mul, m.clone(), int(2), span),
                    bin(BinOp::Shl, bin(BinOp::Add, m, int(2), span), e, span),
                ],
                span,
            );
            let mag = bin(
                BinOp::Mul,
                call("cast", vec![num, name_e("f32", span)], span),
                float_e(0.25, span).unwrap_or_else(|| int(0)),
                span,
            );
            let neg = bin(BinOp::Ne, bin(BinOp::BitAnd, nib, int(8), span), int(0), span);
            let signed = call(
                "where",
                vec![
                    neg,
                    ex(ExprKind::Unary(UnOp::Neg, Box::new(mag.clone())), span),
                    mag,
                ],
                span,
            );
            call("cast", vec![signed, name_e(d.name(), span)], span)
        };
        let lo = decode(bin(BinOp::BitAnd, x32.clone(), int(15), span));
        let hi = decode(bin(
            BinOp::BitAnd,
            bin(BinOp::Shr, x32, int(4), span),
            int(15),
            span,
        ));
        let lo = name_e(&self.let_(&format!("{r}_lo"), Rhs::Expr(lo), span), span);
        let hi = name_e(&self.let_(&format!("{r}_hi"), Rhs::Expr(hi), span), span);
        // [..., 2] with the pair last; moved just after `axis`, then folded into it.
        let rank = shape.len();
        let mut e = call("join", vec![lo, hi], span);
        if a + 1 != rank {
            let order: Vec<i64> = (0..=a)
                .chain(std::iter::once(rank))
                .chain(a + 1..rank)
                .map(|i| i as i64)
                .collect();
            e = call("permute", vec![e, list_e(&order, span)], span);
        }
        let mut out = shape.to_vec();
        out[a] *= 2;
        call("reshape", vec![e, list_e(&out, span)], span)
    }

    /// `tt.scan` of one operand with a one-op combiner (`gl.associative_scan` of an add, a
    /// multiply, a maximum or a minimum): `cumsum`, `cumprod`, `cummax`, `cummin`, with
    /// `reverse=true` for a reverse scan.
    pub(super) fn scan(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let attrs = self.attr_dict(op)?;
        let axis = self.int_attr(op, "axis")?;
        let reverse = matches!(attrs.get("reverse"), Some(AttrVal::Bool(true)));
        let (combiner, c) = one_op_combiner(op, "tt.scan.return");
        let f = match c.filter(|_| v.len() == 1 && op.results.len() == 1) {
            Some(ReduceOp::Sum) => Some("cumsum"),
            Some(ReduceOp::Prod) => Some("cumprod"),
            Some(ReduceOp::Max) => Some("cummax"),
            Some(ReduceOp::Min) => Some("cummin"),
            _ => None,
        };
        let Some(f) = f else {
            if let Some(folds) = self
                .f32_pair_folds(op, &v, "tt.scan.return")?
                .filter(|f| f.len() == 1)
            {
                let name = match folds[0] {
                    ReduceOp::Sum => "cumsum",
                    ReduceOp::Prod => "cumprod",
                    ReduceOp::Max => "cummax",
                    _ => "cummin",
                };
                let x = self.expr(&v[0].0, v[0].1)?;
                let fold = |e: Expr| {
                    let args = vec![e, int_e(axis, span)];
                    if reverse {
                        call_kw(
                            name,
                            args,
                            vec![("reverse", with_span(Expr::bool(true), span))],
                            span,
                        )
                    } else {
                        call(name, args, span)
                    }
                };
                return self.f32_pair_fold(op, 0, x, &fold, span);
            }
            return Err(self.unsupported(
                op,
                &format!(
                    "a scan whose combiner is `{}`; bwsim imports one-operand scans of add, mul, max and min",
                    combiner.join("; ")
                ),
            ));
        };
        let x = self.expr(&v[0].0, v[0].1)?;
        let ty = self.result_type(op, 0)?;
        let r = self.result(op, 0)?;
        let args = vec![x, int_e(axis, span)];
        let e = if reverse {
            call_kw(
                f,
                args,
                vec![("reverse", with_span(Expr::bool(true), span))],
                span,
            )
        } else {
            call(f, args, span)
        };
        let n = self.let_(&r, Rhs::Expr(e), span);
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    pub(super) fn reduce(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let axis = self.int_attr(op, "axis")?;
        let (combiner, f) = one_op_combiner(op, "tt.reduce.return");
        let found = match f {
            Some(f) if v.len() == 1 && op.results.len() == 1 => Some(Combiner::Folds(vec![f])),
            // Any other combiner: identified by what it computes (combiner::identify).
            _ => {
                let mut floats = Vec::with_capacity(v.len());
                for (n, s) in &v {
                    floats.push(self.val_type(n, *s)?.elem().is_some_and(|e| e.is_float()));
                }
                op.regions
                    .first()
                    .filter(|_| op.results.len() == v.len())
                    .and_then(|r| combiner::identify(r, "tt.reduce.return", &floats))
            }
        };
        let Some(found) = found else {
            if let Some(folds) = self.f32_pair_folds(op, &v, "tt.reduce.return")? {
                for (i, f) in folds.into_iter().enumerate() {
                    let x = self.expr(&v[i].0, v[i].1)?;
                    self.f32_pair_fold(
                        op,
                        i,
                        x,
                        &|e| call(f.name(), vec![e, int_e(axis, span)], span),
                        span,
                    )?;
                }
                return Ok(());
            }
            // Any other combiner: its steps unrolled in the GPU's order (general_reduce).
            let _ = combiner;
            return self.general_reduce(op, &v, axis, span);
        };
        let xs = v
            .iter()
            .map(|(n, s)| self.expr(n, *s))
            .collect::<R<Vec<Expr>>>()?;
        match found {
            Combiner::Folds(folds) => {
                for (i, (x, f)) in xs.into_iter().zip(folds).enumerate() {
                    let ty = self.result_type(op, i)?;
                    let r = self.result(op, i)?;
                    let n = self.let_(
                        &r,
                        Rhs::Expr(call(f.name(), vec![x, int_e(axis, span)], span)),
                        span,
                    );
                    // In a cluster kernel the reduced axis may be split over the CTAs.
                    let operand = self.val_type(&v[i].0, v[i].1)?;
                    let e = match self.cga_of_ty(Some(&operand), span)? {
                        Some(cga) => self.cluster_reduce(
                            &r,
                            name_e(&n, span),
                            &ty,
                            &operand,
                            &cga,
                            axis as usize,
                            f,
                            span,
                        )?,
                        None => name_e(&n, span),
                    };
                    self.bind(&r, Val::E(e, ty));
                }
            }
            Combiner::ArgExtreme { max, first } => {
                // The extreme value, then the smallest (largest) index among the positions that
                // hold it.
                let (vty, ity) = (self.result_type(op, 0)?, self.result_type(op, 1)?);
                let shape = match self.val_type(&v[0].0, v[0].1)? {
                    Type::Tensor { shape, .. } => shape,
                    _ => return Err(self.misuse(op, "reduces a tensor")),
                };
                let rv = self.result(op, 0)?;
                let ext = if max { "reduce_max" } else { "reduce_min" };
                let m = self.let_(
                    &rv,
                    Rhs::Expr(call(ext, vec![xs[0].clone(), int_e(axis, span)], span)),
                    span,
                );
                self.bind(&rv, Val::E(name_e(&m, span), vty));
                let back = call(
                    "broadcast",
                    vec![
                        call("expand_dims", vec![name_e(&m, span), int_e(axis, span)], span),
                        list_e(&shape, span),
                    ],
                    span,
                );
                let wide = matches!(ity.elem(), Some(Elem::I64));
                let sentinel = match (first, wide) {
                    (true, false) => i32::MAX as i64,
                    (false, false) => i32::MIN as i64,
                    (true, true) => i64::MAX,
                    (false, true) => i64::MIN,
                };
                let candidates = call(
                    "where",
                    vec![
                        bin(BinOp::Eq, xs[0].clone(), back, span),
                        xs[1].clone(),
                        int_e(sentinel, span),
                    ],
                    span,
                );
                let pick = if first { "reduce_min" } else { "reduce_max" };
                let ri = self.result(op, 1)?;
                let i = self.let_(
                    &ri,
                    Rhs::Expr(call(pick, vec![candidates, int_e(axis, span)], span)),
                    span,
                );
                self.bind(&ri, Val::E(name_e(&i, span), ity));
            }
        }
        Ok(())
    }
}

/// The combiner region of a `tt.reduce` or `tt.scan` (its op names) and, when it is one
/// arithmetic operation followed by `ret` (the region's return), that operation's fold.
fn one_op_combiner<'o>(op: &'o Op, ret: &str) -> (Vec<&'o str>, Option<ReduceOp>) {
    let body = op.regions.first().map(|r| &r.ops[..]).unwrap_or(&[]);
    let names: Vec<&str> = body.iter().map(|o| o.name.as_str()).collect();
    let f = match names.as_slice() {
        [c, r] if *r == ret => match *c {
            "arith.addf" | "arith.addi" => Some(ReduceOp::Sum),
            "arith.mulf" | "arith.muli" => Some(ReduceOp::Prod),
            "arith.maxnumf" | "arith.maximumf" | "arith.maxsi" => Some(ReduceOp::Max),
            "arith.minnumf" | "arith.minimumf" | "arith.minsi" => Some(ReduceOp::Min),
            "arith.andi" => Some(ReduceOp::And),
            "arith.ori" => Some(ReduceOp::Or),
            "arith.xori" => Some(ReduceOp::Xor),
            _ => None,
        },
        _ => None,
    };
    (names, f)
}

/// The mask of an integer type's bits, for zero extension to i64 (none for i64 itself).
fn zext_mask(e: Elem) -> Option<i64> {
    match e {
        Elem::I1 => Some(1),
        Elem::I8 => Some(0xff),
        Elem::I16 => Some(0xffff),
        Elem::I32 => Some(0xffff_ffff),
        _ => None,
    }
}

/// `x` zero-extended to i64: `cast(x, i64) & mask` (exact for `mask` of x's width).
fn zext_i64(x: Expr, mask: i64, span: Span) -> Expr {
    bin(
        BinOp::BitAnd,
        call("cast", vec![x, name_e("i64", span)], span),
        int_e(mask, span),
        span,
    )
}

/// The register layout of a one-element tile (a scalar load's or store's): the element on every
/// lane of every warp of the partition (`warps`).
fn scalar_layout(warps: i64, span: Span) -> Expr {
    call(
        "blocked",
        vec![
            list_e(&[1], span),
            list_e(&[32], span),
            list_e(&[warps], span),
            list_e(&[0], span),
        ],
        span,
    )
}

/// A scalar pointer operand: its base parameter, its offset (none: the base itself) and the
/// pointer type.
type ScalarPtr<'a> = (&'a str, Option<Expr>, &'a Type);

/// `full([1], x, dtype, layout)`: the one-element tile of a scalar access, in the layout every
/// thread of a `warps`-warp partition holds it.
fn one_element(x: Expr, d: DType, warps: i64, span: Span) -> Expr {
    call(
        "full",
        vec![
            list_e(&[1], span),
            x,
            name_e(d.name(), span),
            scalar_layout(warps, span),
        ],
        span,
    )
}
