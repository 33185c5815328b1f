//! Pointers as integers: `tt.ptr_to_int`, `tt.int_to_ptr`, the address arithmetic between them,
//! and `i64` kernel parameters that the kernel casts to pointers (a pointer passed as
//! `x.data_ptr()`).
//!
//! bwsim's IR has no numeric addresses: a global pointer is a `ptr` parameter plus element
//! offsets ([`Val::Ptr`]). An address is kept the same way, as the parameter plus a *byte*
//! offset: a [`Val::Ptr`] whose type is an integer (`i64`, or a tensor of `i64`) rather than a
//! pointer. What the kernel computes from it is what stays exact under that representation:
//! adding or subtracting integers, the difference of two addresses of one tensor, and the
//! remainder modulo (or the mask of) a power of two up to 256, from the rule that a tensor's
//! address is a multiple of 256 bytes (CUDA's allocator aligns every allocation at least so).
//! `tt.int_to_ptr` turns the byte offset back into element offsets of the same parameter; the
//! accesses through that pointer are then checked against the tensor's bounds as any other, an
//! access outside it being the illegal address it is on the GPU. An integer that is no
//! address of a kernel argument (a constant, an `i64` read from memory) cannot become a
//! pointer: the import stops there with the reason.

use super::*;
use std::collections::HashMap;

/// The largest power of two that every tensor's address is a multiple of.
const TENSOR_ALIGN: i64 = 256;

/// The pointee of a pointer type, or of a tensor of pointers.
pub(super) fn pointee(ty: &Type) -> Option<Elem> {
    match ty {
        Type::Ptr(inner) => inner.elem(),
        Type::Tensor { elem, .. } => pointee(elem),
        _ => None,
    }
}

/// The `i64` parameters of the kernel whose value the kernel casts to a pointer (through
/// additions, subtractions, masks, splats and broadcasts), each with the pointer type of the
/// first `tt.int_to_ptr` that reaches it: they are pointer parameters passed as integers.
pub(super) fn address_params(ops: &[Op]) -> HashMap<String, Type> {
    fn walk(ops: &[Op], defs: &mut HashMap<String, (String, Vec<String>)>, casts: &mut Vec<(String, Type)>) {
        for op in ops {
            let vals = operand_values(&op.toks);
            for r in &op.results {
                defs.insert(r.clone(), (op.name.clone(), vals.clone()));
            }
            if op.name == "tt.int_to_ptr" {
                let to = op.toks.iter().position(|t| matches!(t.tok, Tok::Punct("->")));
                let ty = to.and_then(|i| parse_type(&mut Cursor::new(&op.toks[i + 1..], op.span)).ok());
                if let (Some(v), Some(ty)) = (vals.first(), ty) {
                    casts.push((v.clone(), ty));
                }
            }
            for r in &op.regions {
                walk(&r.ops, defs, casts);
            }
        }
    }
    let mut defs = HashMap::new();
    let mut casts = Vec::new();
    walk(ops, &mut defs, &mut casts);
    let mut params = HashMap::new();
    for (start, ty) in casts {
        let mut todo = vec![start];
        let mut seen = std::collections::HashSet::new();
        while let Some(v) = todo.pop() {
            if !seen.insert(v.clone()) {
                continue;
            }
            match defs.get(&v) {
                // Defined by no operation: a parameter of the kernel (or of a region, which
                // the import reports where it is used).
                None => {
                    params.entry(v).or_insert_with(|| ty.clone());
                }
                Some((name, operands)) => match name.as_str() {
                    "arith.addi" | "arith.andi" => todo.extend(operands.iter().cloned()),
                    "arith.subi" | "tt.splat" | "tt.broadcast" | "tt.expand_dims" | "ttg.convert_layout" => {
                        todo.extend(operands.first().cloned())
                    }
                    _ => {}
                },
            }
        }
    }
    params
}

impl<'m> Cx<'m> {
    /// The address a value holds: its parameter, byte offset and integer type; `None` for any
    /// other value.
    pub(super) fn address(&self, name: &str, span: Span) -> R<Option<(String, Option<Expr>, Type)>> {
        Ok(match self.get(name, span)? {
            Val::Ptr { base, offs, ty } if !ty.is_ptr_like() => Some((base, offs, ty)),
            _ => None,
        })
    }

    /// The byte size of the elements of pointer parameter `base`.
    fn param_elem_bytes(&self, base: &str, span: Span) -> R<(DType, i64)> {
        let d = *self
            .ptr_params
            .get(base)
            .ok_or_else(|| ImportError::Unsupported {
                op: "address".into(),
                message: format!("`{base}` is not a pointer parameter"),
                span,
                ttgir: span,
            })?;
        Ok((d, d.bytes() as i64))
    }

    /// `%a = tt.ptr_to_int %p : !tt.ptr<T> -> i64` (Gluon's `p.to(gl.int64)`): the address of
    /// the parameter's element offsets, in bytes.
    pub(super) fn ptr_to_int(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let Val::Ptr { base, offs, ty: pty } = self.get(&v[0].0, v[0].1)? else {
            return Err(self.misuse(op, "the pointer is not derived from a pointer parameter"));
        };
        if !pty.is_ptr_like() {
            return Err(self.misuse(op, "the operand is an integer already"));
        }
        let (_, size) = self.param_elem_bytes(&base, span)?;
        let ty = self.result_type(op, 0)?;
        if ty.elem() != Some(Elem::I64) {
            return Err(self.misuse(
                op,
                "an address is an `i64`: a narrower integer drops its high bits",
            ));
        }
        let offs = offs.map(|o| {
            let wide = call("cast", vec![o, name_e("i64", span)], span);
            bin(BinOp::Mul, wide, int_e(size, span), span)
        });
        let r = self.result(op, 0)?;
        self.bind(&r, Val::Ptr { base, offs, ty });
        Ok(())
    }

    /// `%p = tt.int_to_ptr %a : i64 -> !tt.ptr<T>`: an address of a kernel argument's tensor
    /// back as element offsets of it. The address must be a multiple of T's size, as the
    /// GPU's access through the pointer needs (a `device.assert`, reported at this line).
    pub(super) fn int_to_ptr(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let Some((base, offs, _)) = self.address(&v[0].0, v[0].1)? else {
            return Err(self.unsupported(
                op,
                "the integer is not the address of a kernel argument's tensor (`p.to(gl.int64)` \
                 plus or minus integers, or an `i64` argument cast to a pointer): bwsim gives \
                 tensors no fixed addresses, so a pointer made from any other integer has no \
                 meaning in it",
            ));
        };
        let ty = self.result_type(op, 0)?;
        let (d, size) = self.param_elem_bytes(&base, span)?;
        let to = pointee(&ty).map(|e| dtype_of(e, span)).transpose()?;
        if to != Some(d) {
            return Err(self.unsupported(
                op,
                &format!(
                    "a pointer to {} made from the address of `{base}` ({} elements): memory read \
                     as another element type is not supported",
                    to.map(|t| t.name()).unwrap_or("?"),
                    d.name()
                ),
            ));
        }
        let offs = match offs {
            Some(bytes) => {
                if size > 1 {
                    let rem = bin(BinOp::Rem, bytes.clone(), int_e(size, span), span);
                    let cond = bin(BinOp::Eq, rem, int_e(0, span), span);
                    let msg = format!(
                        "misaligned address: a pointer to {} made from an address that is not a multiple of {size} bytes",
                        d.name()
                    );
                    self.op_stmt(
                        OpKind::DeviceAssert {
                            cond,
                            msg: with_span(Expr::new(ExprKind::Str(msg), span), span),
                        },
                        span,
                    );
                }
                let elems = bin(BinOp::Div, bytes, int_e(size, span), span);
                Some(call("cast", vec![elems, name_e("i32", span)], span))
            }
            None => None,
        };
        let r = self.result(op, 0)?;
        self.bind(&r, Val::Ptr { base, offs, ty });
        Ok(())
    }

    /// Integer arithmetic with an address operand (`arith.addi`, `subi`, `remsi`, `remui`,
    /// `andi`): `Some(())` once imported, `None` when no operand is an address.
    pub(super) fn address_arith(&mut self, op: &Op, span: Span) -> R<Option<()>> {
        let v = self.n_operands(op, 2)?;
        let a = self.address(&v[0].0, v[0].1)?;
        let b = self.address(&v[1].0, v[1].1)?;
        if a.is_none() && b.is_none() {
            return Ok(None);
        }
        let r = self.result(op, 0)?;
        let a_ty = self.val_type(&v[0].0, v[0].1)?;
        let b_ty = self.val_type(&v[1].0, v[1].1)?;
        let ty = if a_ty.is_tensor() { a_ty } else { b_ty };
        let zero = |o: Option<Expr>| o.unwrap_or_else(|| int_e(0, span));
        let name = op.name.as_str();
        match (name, a, b) {
            ("arith.addi", Some((base, offs, _)), None) | ("arith.addi", None, Some((base, offs, _))) => {
                let other = if self.address(&v[0].0, v[0].1)?.is_some() {
                    &v[1]
                } else {
                    &v[0]
                };
                let x = self.math_operand(&other.0, other.1)?;
                let offs = Some(bin(BinOp::Add, zero(offs), x, span));
                self.bind(&r, Val::Ptr { base, offs, ty });
            }
            ("arith.subi", Some((base, offs, _)), None) => {
                let x = self.math_operand(&v[1].0, v[1].1)?;
                let offs = Some(bin(BinOp::Sub, zero(offs), x, span));
                self.bind(&r, Val::Ptr { base, offs, ty });
            }
            ("arith.subi", Some((base_a, offs_a, _)), Some((base_b, offs_b, _))) if base_a == base_b => {
                let e = bin(BinOp::Sub, zero(offs_a), zero(offs_b), span);
                self.let_val(&r, e, ty, false, span);
            }
            ("arith.remsi" | "arith.remui" | "arith.andi", Some((base, offs, _)), None) => {
                let c = self.math_operand(&v[1].0, v[1].1)?;
                let c = match c.kind {
                    ExprKind::Int(c) => Some(c),
                    ExprKind::Unary(UnOp::Neg, ref x) => match x.kind {
                        ExprKind::Int(c) => Some(-c),
                        _ => None,
                    },
                    _ => None,
                };
                let pow2 = |m: i64| m > 0 && m <= TENSOR_ALIGN && m & (m - 1) == 0;
                // The remainder of the offset, non-negative as the address's is (a valid
                // address is not negative).
                let low = |m: i64, o: Expr| {
                    let rem = bin(BinOp::Rem, o, int_e(m, span), span);
                    let up = bin(BinOp::Add, rem, int_e(m, span), span);
                    bin(BinOp::Rem, up, int_e(m, span), span)
                };
                match (name, c) {
                    ("arith.remsi" | "arith.remui", Some(m)) if pow2(m) => {
                        self.let_val(&r, low(m, zero(offs)), ty, false, span);
                    }
                    ("arith.andi", Some(m)) if pow2(m + 1) => {
                        self.let_val(&r, low(m + 1, zero(offs)), ty, false, span);
                    }
                    // `a & -m`: the address rounded down to a multiple of m.
                    ("arith.andi", Some(m)) if m < 0 && pow2(-m) => {
                        let o = zero(offs);
                        let down = bin(BinOp::Sub, o.clone(), low(-m, o), span);
                        self.bind(
                            &r,
                            Val::Ptr {
                                base,
                                offs: Some(down),
                                ty,
                            },
                        );
                    }
                    _ => return Err(self.address_misuse(op)),
                }
            }
            _ => return Err(self.address_misuse(op)),
        }
        Ok(Some(()))
    }

    fn address_misuse(&self, op: &Op) -> ImportError {
        self.unsupported(
            op,
            &format!(
                "an address (a pointer as an integer) in `{}`: bwsim keeps an address as its \
                 tensor plus a byte offset and reads integers added to it or subtracted from it, \
                 the difference of two addresses of one tensor, and its remainder modulo (or mask \
                 of) a power of two up to {TENSOR_ALIGN} (a tensor's address being a multiple of \
                 {TENSOR_ALIGN} bytes)",
                op.name
            ),
        )
    }
}
