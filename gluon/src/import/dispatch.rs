//! The dispatch of every TTGIR operation to its import (`Cx::op`): the one match that
//! names each supported operation and refuses the others.

use super::cluster::{contains_a_barrier_use, group_of, uses_a_barrier, Cga};
use super::*;

impl<'m> Cx<'m> {
    pub(super) fn op(&mut self, op: &Op) -> R<()> {
        let span = self.span_of(op);
        let name = op.name.as_str();
        // An operation of a newer Triton that bwsim does not model yet: refused by name and
        // release, with the reason (crate::version::FEATURES).
        if let Some(f) = crate::version::feature(name) {
            if let crate::version::Support::Refused(why) = f.support {
                return Err(self.unsupported(
                    op,
                    &format!(
                        "{why} (`{name}` is {}; this file was read as Triton {})",
                        crate::version::release_range(f),
                        self.version
                    ),
                ));
            }
        }
        // A partition cannot run a cluster barrier: a first use inside `warp_specialize` is
        // released before it.
        let first_use = match name {
            "ttg.warp_specialize" => contains_a_barrier_use(op),
            _ => uses_a_barrier(name),
        };
        if self.init_sync_pending && first_use {
            self.init_sync_pending = false;
            self.cluster_init_sync(span);
        }
        match name {
            "arith.constant" => self.constant(op, span),
            "arith.addi" | "arith.subi" | "arith.muli" | "arith.divsi" | "arith.remsi" | "arith.andi"
            | "arith.ori" | "arith.xori" | "arith.shli" | "arith.shrsi" | "arith.addf" | "arith.subf"
            | "arith.mulf" | "arith.divf" | "arith.remf" | "arith.minsi" | "arith.maxsi"
            | "arith.minimumf" | "arith.maximumf" | "arith.minnumf" | "arith.maxnumf" | "arith.cmpi"
            | "arith.cmpf" | "arith.divui" | "arith.remui" | "arith.shrui" | "arith.minui"
            | "arith.maxui" => self.binary(op, span),
            "arith.ceildivsi" | "arith.floordivsi" | "arith.ceildivui" => self.rounding_div(op, span),
            "arith.select" => {
                let v = self.n_operands(op, 3)?;
                let c = self.math_operand(&v[0].0, v[0].1)?;
                let a = self.math_operand(&v[1].0, v[1].1)?;
                let b = self.math_operand(&v[2].0, v[2].1)?;
                let ty = self.result_type(op, 0)?;
                let f = if ty.is_tensor() { "where" } else { "select" };
                let r = self.result(op, 0)?;
                let scalar_like = |cx: &Self, n: &str| match cx.get(n, span) {
                    Ok(Val::Splat(..)) => true,
                    Ok(Val::E(_, t)) => !t.is_tensor(),
                    _ => false,
                };
                if ty.is_tensor() && v[..3].iter().all(|(n, _)| scalar_like(self, n)) {
                    // Every operand a splat: the result is one too.
                    self.let_val(&r, call("select", vec![c, a, b], span), ty, true, span);
                    return Ok(());
                }
                self.let_val(&r, call(f, vec![c, a, b], span), ty, false, span);
                Ok(())
            }
            "arith.extsi" | "arith.extui" | "arith.trunci" | "arith.sitofp" | "arith.fptosi"
            | "arith.extf" | "arith.truncf" | "arith.index_cast" | "arith.uitofp" => self.cast(op, span),
            "arith.negf" => {
                let v = self.n_operands(op, 1)?;
                let a = self.math_operand(&v[0].0, v[0].1)?;
                self.unary_result(
                    op,
                    ex(ExprKind::Unary(UnOp::Neg, Box::new(a)), span),
                    &v[0].0,
                    span,
                )
            }
            "math.absf" | "math.absi" => {
                let v = self.n_operands(op, 1)?;
                let a = self.math_operand(&v[0].0, v[0].1)?;
                self.unary_result(op, call("abs", vec![a], span), &v[0].0, span)
            }
            "ttng.packed_arith" => self.packed_arith(op, span),
            "tt.ptr_to_int" => self.ptr_to_int(op, span),
            "tt.int_to_ptr" => self.int_to_ptr(op, span),
            // A one-element tile as a scalar (`x.item()`, `reshape(x, ())`, `split` of a [2]
            // tile): the element (`reduce_max` of one element is the element, bit for bit).
            "tt.unsplat" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.val_type(&v[0].0, v[0].1)?;
                let shape = ty.shape().map(|s| s.to_vec()).unwrap_or_default();
                if shape.iter().product::<i64>() != 1 {
                    return Err(self.misuse(op, "the operand has more than one element"));
                }
                let rty = self.result_type(op, 0)?;
                let elem = rty.elem().unwrap_or(Elem::F32);
                let d = dtype_of(elem, span)?;
                if !matches!(d, DType::I1 | DType::I32 | DType::I64 | DType::F32) {
                    return Err(self.misuse(
                        op,
                        format!("a {} scalar: bwsim scalars are i1, i32, i64 or f32", d.name()),
                    ));
                }
                let mut x = self.math_operand(&v[0].0, v[0].1)?;
                if let Val::Splat(s, _) = self.get(&v[0].0, v[0].1)? {
                    let r = self.result(op, 0)?;
                    self.bind(&r, Val::E(s, rty));
                    return Ok(());
                }
                if shape.len() != 1 {
                    x = call("reshape", vec![x, list_e(&[1], span)], span);
                }
                let e = call("reduce_max", vec![x, int_e(0, span)], span);
                let r = self.result(op, 0)?;
                let n = self.let_(&r, Rhs::Expr(e), span);
                self.bind(&r, Val::E(name_e(&n, span), rty));
                Ok(())
            }
            // Cluster launch control (Triton 3.8 and later, Gluon's `blackwell.clc`).
            "ttng.clc_try_cancel" => {
                let v = self.n_operands(op, 2)?;
                let result = self.expr(&v[0].0, v[0].1)?;
                let bar = self.expr(&v[1].0, v[1].1)?;
                // In a cluster kernel Triton issues one request for the cluster, from CTA rank 0,
                // its response multicast into every CTA's buffer and barrier at the same offsets
                // (read from Triton 3.9's PTX: `try_cancel ... .multicast::cluster::all` under
                // `%cluster_ctarank == 0`); each CTA expects the 16 bytes on its own barrier.
                let multicast = self.num_ctas > 1 || self.attr_dict(op)?.has("multicast");
                let cancel = OpKind::ClcTryCancel {
                    result,
                    bar,
                    multicast: multicast.then(|| Expr::new(ExprKind::Bool(true), span)),
                };
                if self.num_ctas > 1 {
                    self.open_block();
                    self.op_stmt(cancel, span);
                    self.close_if(Self::is_leader_e(self.num_ctas - 1, span), span);
                } else {
                    self.op_stmt(cancel, span);
                }
                Ok(())
            }
            "ttng.clc_load_result" => {
                let v = self.n_operands(op, 1)?;
                let result = self.expr(&v[0].0, v[0].1)?;
                let r = self.result(op, 0)?;
                let names: Vec<String> = ["canceled", "x", "y", "z"]
                    .iter()
                    .map(|p| self.fresh(&format!("{r}_{p}")))
                    .collect();
                self.push(
                    StmtKind::Let {
                        names: names.iter().map(|n| Ident::spanned(n.clone(), span)).collect(),
                        value: Rhs::Op(IrOp::new(OpKind::ClcQuery { result }, span)),
                    },
                    span,
                );
                self.bind(&r, Val::Clc(names.iter().map(|n| name_e(n, span)).collect()));
                Ok(())
            }
            "ttng.clc_is_canceled" | "ttng.clc_get_program_id" => {
                let v = self.n_operands(op, 1)?;
                let Val::Clc(parts) = self.get(&v[0].0, v[0].1)? else {
                    return Err(self.misuse(op, "needs the result of `ttng.clc_load_result`"));
                };
                let (i, ty) = if op.name == "ttng.clc_is_canceled" {
                    (0, Elem::I1)
                } else {
                    let mut c = Cursor::new(&op.toks, op.span);
                    c.value()?;
                    c.eat(",");
                    let axis = match c.ident()?.as_str() {
                        "x" => 1,
                        "y" => 2,
                        "z" => 3,
                        other => return Err(self.misuse(op, format!("unknown dimension `{other}`"))),
                    };
                    (axis, Elem::I32)
                };
                let r = self.result(op, 0)?;
                let mut e = parts[i].clone();
                if i == 1 && self.num_ctas > 1 {
                    // The response names the cancelled cluster's first CTA; Triton's program ids
                    // count clusters (of CTAs along x), as `tt.get_program_id` does.
                    e = bin(BinOp::Div, e, int_e(self.num_ctas, span), span);
                }
                self.bind(&r, Val::E(e, Type::Scalar(ty)));
                Ok(())
            }
            // Operations whose meaning is one PTX instruction run as that instruction
            // (the `inline_asm` operation; its semantics are the PTX-subset interpreter's).
            "tt.mulhiui" | "tt.precise_divf" | "tt.bitcast" | "tt.clampf" => {
                let v = self.operands(op)?;
                let x = v.first().ok_or_else(|| self.misuse(op, "needs an operand"))?;
                if name == "tt.bitcast" {
                    if let Some(val) = self.pointer_bitcast(op, x)? {
                        let r = self.result(op, 0)?;
                        self.bind(&r, val);
                        return Ok(());
                    }
                }
                let from = self.val_type(&x.0, x.1)?.elem();
                let to = self.result_type(op, 0)?.elem();
                let mut pack = 1;
                let (asm, cons) = match (name, from, to) {
                    ("tt.mulhiui", Some(Elem::I32), _) => {
                        ("mul.hi.u32 $0, $1, $2;".to_string(), "=r,r,r".to_string())
                    }
                    ("tt.mulhiui", Some(Elem::I64), _) => {
                        ("mul.hi.u64 $0, $1, $2;".to_string(), "=l,l,l".to_string())
                    }
                    ("tt.precise_divf", Some(Elem::F32), _) => {
                        ("div.rn.f32 $0, $1, $2;".to_string(), "=f,f,f".to_string())
                    }
                    ("tt.precise_divf", Some(Elem::F64), _) => {
                        ("div.rn.f64 $0, $1, $2;".to_string(), "=d,d,d".to_string())
                    }
                    ("tt.bitcast", Some(a), Some(b)) => {
                        let class = |e: Elem| match e {
                            Elem::F32 => Some(("f", 32)),
                            Elem::I32 => Some(("r", 32)),
                            Elem::F16 | Elem::BF16 | Elem::I16 => Some(("h", 16)),
                            Elem::F64 => Some(("d", 64)),
                            Elem::I64 => Some(("l", 64)),
                            _ => None,
                        };
                        let byte = |e: Elem| matches!(e, Elem::I8 | Elem::F8E4M3 | Elem::F8E5M2);
                        match (class(a), class(b)) {
                            (Some((ca, wa)), Some((cb, wb))) if wa == wb => {
                                (format!("mov.b{wa} $0, $1;"), format!("={cb},{ca}"))
                            }
                            // 8-bit elements two a call in one 16-bit register (bwsim binds no
                            // 8-bit registers), as `tt.fp_to_fp` takes fp8 pairs.
                            _ if byte(a) && byte(b) => {
                                pack = 2;
                                ("mov.b16 $0, $1;".to_string(), "=h,h".to_string())
                            }
                            _ => {
                                return Err(
                                    self.unsupported(op, "bit casts between element widths are not imported")
                                )
                            }
                        }
                    }
                    ("tt.clampf", Some(e @ (Elem::F32 | Elem::F64)), _) => {
                        // `propagateNan = all`: a NaN x gives NaN (PTX `.NaN`); `none`: the bound.
                        let nan = if op
                            .toks
                            .iter()
                            .any(|t| matches!(&t.tok, Tok::Ident(w) if w == "all"))
                        {
                            ".NaN"
                        } else {
                            ""
                        };
                        let (t, c) = if e == Elem::F32 {
                            ("f32", "=f,f,f,f")
                        } else {
                            ("f64", "=d,d,d,d")
                        };
                        let c = c.to_string();
                        (
                            format!("{{ .reg .{t} lo; max{nan}.{t} lo, $1, $2; min{nan}.{t} $0, lo, $3; }}"),
                            c,
                        )
                    }
                    _ => {
                        return Err(
                            self.unsupported(op, &format!("`{name}` on {from:?} elements is not imported"))
                        )
                    }
                };
                self.ptx_elementwise(op, &asm, &cons, pack, true, span)
            }
            "math.fma" => {
                let v = self.n_operands(op, 3)?;
                let a = self.math_operand(&v[0].0, v[0].1)?;
                let b = self.math_operand(&v[1].0, v[1].1)?;
                let c = self.math_operand(&v[2].0, v[2].1)?;
                self.unary_result(op, call("fma", vec![a, b, c], span), &v[0].0, span)
            }
            "tt.get_program_id" | "tt.get_num_programs" => {
                let mut c = Cursor::new(&op.toks, op.span);
                let axis = match c.ident()?.as_str() {
                    "x" => 0,
                    "y" => 1,
                    "z" => 2,
                    other => return Err(c.err(format!("unknown axis `{other}`"))),
                };
                let f = if name == "tt.get_program_id" {
                    "program_id"
                } else {
                    "num_programs"
                };
                let r = self.result(op, 0)?;
                let mut e = call(f, vec![int_e(axis, span)], span);
                if axis == 0 && self.num_ctas > 1 {
                    // Triton's grid counts clusters (of CTAs along x).
                    e = bin(BinOp::Div, e, int_e(self.num_ctas, span), span);
                }
                self.bind(&r, Val::E(e, Type::Scalar(Elem::I32)));
                Ok(())
            }
            "tt.make_range" => {
                let a = self.attr_dict(op)?;
                let (Some(s), Some(e)) = (
                    a.get("start").and_then(|x| x.as_int()),
                    a.get("end").and_then(|x| x.as_int()),
                ) else {
                    return Err(self.misuse(op, "needs `start` and `end`"));
                };
                let ty = self.result_type(op, 0)?;
                let layout = self.required_layout(&ty, span)?;
                let r = self.result(op, 0)?;
                // In a cluster kernel this CTA holds a piece of the range, from its origin.
                let (e, cga) = match (self.cga_of_ty(Some(&ty), span)?, ty.shape()) {
                    (Some(cga), Some(&[n])) => (s + n, Some(cga)),
                    _ => (e, None),
                };
                let mut range = call("arange", vec![int_e(s, span), int_e(e, span), layout], span);
                if let Some(cga) = cga {
                    range = self.local_coords(&cga, vec![range], span).remove(0);
                }
                let n = self.let_(&r, Rhs::Expr(range), span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "tt.splat" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let r = self.result(op, 0)?;
                let val = match self.get(&v[0].0, v[0].1)? {
                    // A scalar pointer's offset becomes a tile of the tensor's shape.
                    Val::Ptr {
                        base,
                        offs: Some(o),
                        ty: src,
                    } if !src.is_tensor() && ty.is_tensor() => {
                        let z = self.full(&int_tensor(&ty), int_e(0, span), span)?;
                        Val::Ptr {
                            base,
                            offs: Some(bin(BinOp::Add, z, o, span)),
                            ty,
                        }
                    }
                    Val::Ptr { base, offs, .. } => Val::Ptr { base, offs, ty },
                    _ => Val::Splat(self.expr(&v[0].0, v[0].1)?, ty),
                };
                self.bind(&r, val);
                Ok(())
            }
            "tt.addptr" => {
                let v = self.n_operands(op, 2)?;
                let ty = self.result_type(op, 0)?;
                let Val::Ptr { base, offs, .. } = self.get(&v[0].0, v[0].1)? else {
                    return Err(
                        self.misuse(op, "the pointer operand is not derived from a pointer parameter")
                    );
                };
                let off = self.math_operand(&v[1].0, v[1].1)?;
                let offs = Some(match offs {
                    Some(o) => bin(BinOp::Add, o, off, span),
                    None => off,
                });
                let r = self.result(op, 0)?;
                self.bind(&r, Val::Ptr { base, offs, ty });
                Ok(())
            }
            "tt.expand_dims" | "tt.broadcast" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let shape = ty.shape().map(|s| s.to_vec()).unwrap_or_default();
                let axis = self
                    .attr_dict(op)?
                    .get("axis")
                    .and_then(|x| x.as_int())
                    .unwrap_or(0);
                let r = self.result(op, 0)?;
                let wrap = |e: Expr| {
                    if name == "tt.expand_dims" {
                        call("expand_dims", vec![e, int_e(axis, span)], span)
                    } else {
                        call("broadcast", vec![e, list_e(&shape, span)], span)
                    }
                };
                let val = match self.get(&v[0].0, v[0].1)? {
                    Val::Ptr { base, offs, .. } => Val::Ptr {
                        base,
                        offs: offs.map(wrap),
                        ty,
                    },
                    Val::Splat(s, _) => Val::Splat(s, ty),
                    _ => Val::E(wrap(self.expr(&v[0].0, v[0].1)?), ty),
                };
                self.bind(&r, val);
                Ok(())
            }
            "tt.reshape" | "tt.trans" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let r = self.result(op, 0)?;
                if let Val::Splat(s, _) = self.get(&v[0].0, v[0].1)? {
                    self.bind(&r, Val::Splat(s, ty));
                    return Ok(());
                }
                let x = self.expr(&v[0].0, v[0].1)?;
                let e = if name == "tt.reshape" {
                    let shape = ty.shape().map(|s| s.to_vec()).unwrap_or_default();
                    call("reshape", vec![x, list_e(&shape, span)], span)
                } else {
                    let order = self.ints_attr(op, "order")?;
                    call("permute", vec![x, list_e(&order, span)], span)
                };
                let n = self.let_(&r, Rhs::Expr(e), span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "tt.split" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let x = self.expr(&v[0].0, v[0].1)?;
                let a = self.result(op, 0)?;
                let b = self.result(op, 1)?;
                let (na, nb) = (self.fresh(&a), self.fresh(&b));
                self.push(
                    StmtKind::Let {
                        names: vec![Ident::spanned(na.clone(), span), Ident::spanned(nb.clone(), span)],
                        value: Rhs::Expr(call("split", vec![x], span)),
                    },
                    span,
                );
                self.bind(&a, Val::E(name_e(&na, span), ty.clone()));
                self.bind(&b, Val::E(name_e(&nb, span), ty));
                Ok(())
            }
            "tt.cat" => self.cat(op, span),
            "tt.join" => {
                let v = self.n_operands(op, 2)?;
                let ty = self.result_type(op, 0)?;
                let a = self.expr(&v[0].0, v[0].1)?;
                let b = self.expr(&v[1].0, v[1].1)?;
                let r = self.result(op, 0)?;
                let n = self.let_(&r, Rhs::Expr(call("join", vec![a, b], span)), span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "ttg.convert_layout" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let r = self.result(op, 0)?;
                // Its shared scratch, where the file carries Triton's allocation.
                self.scratch_traffic(op, &ty, span)?;
                match self.get(&v[0].0, v[0].1)? {
                    Val::Splat(s, _) => {
                        self.bind(&r, Val::Splat(s, ty));
                        return Ok(());
                    }
                    Val::Ptr { base, offs, .. } => {
                        self.bind(&r, Val::Ptr { base, offs, ty });
                        return Ok(());
                    }
                    _ => {}
                }
                let x = self.expr(&v[0].0, v[0].1)?;
                if self.num_ctas > 1 {
                    // Between two CTA layouts the pieces move between the CTAs.
                    let src = self.val_type(&v[0].0, v[0].1)?;
                    let all = |c: Option<Cga>| {
                        c.unwrap_or(Cga {
                            bits: vec![None; self.num_ctas.trailing_zeros() as usize],
                        })
                    };
                    let from = all(self.cga_of_ty(Some(&src), span)?);
                    let to = all(self.cga_of_ty(Some(&ty), span)?);
                    if from != to {
                        let e = self.cluster_convert(&r, x, &src, &from, &ty, &to, span)?;
                        self.bind(&r, Val::E(e, ty));
                        return Ok(());
                    }
                }
                let layout = match ty.encoding() {
                    Some(enc) => self.layout_expr(&enc.clone(), span)?,
                    None => None,
                };
                match layout {
                    Some(l) => {
                        let n = self.let_(&r, Rhs::Expr(call("convert_layout", vec![x, l], span)), span);
                        self.bind(&r, Val::E(name_e(&n, span), ty));
                    }
                    // A layout bwsim cannot name (a linear layout for tcgen05.st): the values
                    // are the same, so the tile passes through unchanged.
                    None => self.bind(&r, Val::E(x, ty)),
                }
                Ok(())
            }
            "tt.load" => self.global_load(op, span),
            "tt.store" => self.global_store(op, span),
            "tt.reduce" => self.reduce(op, span),
            "tt.map_elementwise" => self.map_elementwise(op, span),
            "tt.scan" => self.scan(op, span),
            "ttg.local_alloc" => self.local_alloc(op, span),
            "ttg.local_dealloc" => Ok(()),
            "ttg.local_load" => {
                let v = self.n_operands(op, 1)?;
                let src = self.expr(&v[0].0, v[0].1)?;
                let ty = self.result_type(op, 0)?;
                let layout = match ty.encoding() {
                    Some(enc) => self.layout_expr(&enc.clone(), span)?,
                    None => None,
                };
                let r = self.result(op, 0)?;
                let n = self.let_op(
                    &r,
                    OpKind::SmemLoad {
                        src,
                        layout,
                        cta: None,
                    },
                    span,
                );
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "tt.gather" => self.register_gather(op, span),
            "ttg.fp4_to_fp" => self.fp4_to_fp(op, span),
            "tt.fp_to_fp" => self.fp_to_fp(op, span),
            "tt.call" => self.call_op(op, span),
            "tt.assert" => self.device_assert(op, span),
            // `gl.device_print`: its output goes to the host's stdout through `vprintf` and
            // changes no value, memory or ordering the kernel sees, so the import leaves it out
            // (docs/gluon.md); its operands (after the prefix and attributes:
            // `tt.print " x: " {..} : %x : type`) must still name values.
            "tt.print" => {
                for t in &op.toks {
                    if let Tok::Value(n) = &t.tok {
                        self.get(n, t.span)?;
                    }
                }
                Ok(())
            }
            "tt.histogram" => self.histogram(op, span),
            "ttg.local_gather" | "ttg.local_scatter" | "ttg.local_atomic_scatter_rmw" => {
                self.local_indexed(op, span)
            }
            "ttg.local_store" => {
                let v = self.n_operands(op, 2)?;
                let value = self.expr(&v[0].0, v[0].1)?;
                let dst = self.expr(&v[1].0, v[1].1)?;
                self.op_stmt(
                    OpKind::SmemStore {
                        dst,
                        value,
                        cta: None,
                    },
                    span,
                );
                Ok(())
            }
            "ttg.memdesc_index" => {
                let v = self.n_operands(op, 2)?;
                let ty = self.result_type(op, 0)?;
                let i = self.expr(&v[1].0, v[1].1)?;
                let base = match self.get(&v[0].0, v[0].1)? {
                    Val::Mbars(e) => e,
                    _ => self.expr(&v[0].0, v[0].1)?,
                };
                let r = self.result(op, 0)?;
                self.bind(&r, Val::E(index(base, vec![IndexItem::Expr(i)], span), ty));
                Ok(())
            }
            "ttg.memdesc_subslice" => {
                let toks = self.operand_toks(op);
                let mut c = Cursor::new(toks, op.span);
                let (src, ssp) = c.value()?;
                let offs: Vec<i64> = match c.peek() {
                    Tok::Punct("[") => c
                        .group()?
                        .iter()
                        .filter_map(|t| if let Tok::Int(v) = t.tok { Some(v) } else { None })
                        .collect(),
                    _ => Vec::new(),
                };
                let ty = self.result_type(op, 0)?;
                let shape = ty.shape().map(|s| s.to_vec()).unwrap_or_default();
                if offs.len() != shape.len() {
                    return Err(self.misuse(op, "offsets and result rank differ"));
                }
                let base = self.expr(&src, ssp)?;
                let items = offs
                    .iter()
                    .zip(&shape)
                    .map(|(&o, &s)| IndexItem::Slice(Some(int_e(o, span)), Some(int_e(o + s, span))))
                    .collect();
                let r = self.result(op, 0)?;
                self.bind(&r, Val::E(index(base, items, span), ty));
                Ok(())
            }
            // 3.6 to 3.8 print `{N = 256}` (a column slice); 3.9 prints `{dim = D, offset = O}`
            // (`slice(start, length, dim=...)`: columns for dim 1, rows for dim 0).
            "ttng.tmem_subslice" => {
                let v = self.n_operands(op, 1)?;
                let attrs = self.attr_dict(op)?;
                let (dim, start) = match (attrs.get("N"), attrs.get("offset")) {
                    (Some(n), _) => (1, n.as_int()),
                    (None, Some(o)) => (attrs.get("dim").and_then(|d| d.as_int()).unwrap_or(1), o.as_int()),
                    _ => (1, None),
                };
                let start = start.ok_or_else(|| self.misuse(op, "needs `N` or `offset`"))?;
                let ty = self.result_type(op, 0)?;
                let shape = ty.shape().map(|s| s.to_vec()).unwrap_or_default();
                if shape.len() != 2 || !(0..2).contains(&dim) {
                    return Err(self.misuse(op, "only 2-D tensor-memory views are supported"));
                }
                let base = self.expr(&v[0].0, v[0].1)?;
                let mut items = vec![IndexItem::Slice(None, None), IndexItem::Slice(None, None)];
                items[dim as usize] = IndexItem::Slice(
                    Some(int_e(start, span)),
                    Some(int_e(start + shape[dim as usize], span)),
                );
                let r = self.result(op, 0)?;
                self.bind(&r, Val::E(index(base, items, span), ty));
                Ok(())
            }
            "ttg.memdesc_reinterpret" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                if let Type::MemDesc {
                    shape,
                    elem,
                    enc,
                    tmem: true,
                    ..
                } = &ty
                {
                    // Gluon's `_reinterpret` of tensor memory (attention's P over S).
                    let src = self.expr(&v[0].0, v[0].1)?;
                    let t = self.shaped(*elem, shape, span)?;
                    let Layout::TmemEncoding {
                        block_m,
                        block_n,
                        col_stride,
                    } = self.attrs.layout(enc, span)?
                    else {
                        return Err(self.misuse(op, "a tensor-memory reinterpret to a scale-factor layout"));
                    };
                    let r = self.result(op, 0)?;
                    let n = self.let_op(
                        &r,
                        OpKind::TmemReinterpret {
                            src,
                            ty: t,
                            block: Some(list_e(&[block_m, block_n], span)),
                            col_stride: Some(int_e(col_stride, span)),
                        },
                        span,
                    );
                    self.bind(&r, Val::E(name_e(&n, span), ty));
                    return Ok(());
                }
                self.smem_reinterpret(op, &v[0], ty, span)
            }
            "ttng.tmem_alloc" => self.tmem_alloc(op, span),
            "ttng.tmem_load" => {
                let v = self.n_operands(op, 1)?;
                let src = self.expr(&v[0].0, v[0].1)?;
                let ty = self.result_type(op, 0)?;
                let block_m = self.tmem_block_m(&v[0].0, v[0].1);
                if let (Some(enc), Some(block_m)) = (ty.encoding(), block_m) {
                    let l = self.attrs.layout(enc, span)?;
                    if let Err(why) = tmem_access_check(&l, block_m) {
                        return Err(self.misuse(
                            op,
                            format!(
                                "register layout {} cannot be loaded from tensor memory: {why}",
                                self.layout_name(enc, span)
                            ),
                        ));
                    }
                }
                let r = self.result(op, 0)?;
                let n = self.let_op(&r, OpKind::TmemLoad { src, layout: None }, span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "ttng.tmem_store" => {
                let v = self.n_operands(op, 2)?;
                let block_m = self.tmem_block_m(&v[1].0, v[1].1);
                let value_ty = self.val_type(&v[0].0, v[0].1)?;
                if let (Some(enc), Some(block_m)) = (value_ty.encoding(), block_m) {
                    let l = self.attrs.layout(enc, span)?;
                    if matches!(l, Layout::Linear { .. }) {
                        if let Err(why) = tmem_access_check(&l, block_m) {
                            return Err(self.misuse(
                                op,
                                format!(
                                    "register layout {} cannot be stored to tensor memory: {why}",
                                    self.layout_name(enc, span)
                                ),
                            ));
                        }
                    }
                }
                let value = self.expr(&v[0].0, v[0].1)?;
                let dst = self.expr(&v[1].0, v[1].1)?;
                let p = self.pred(v.get(2))?;
                self.op_pred(OpKind::TmemStore { dst, value }, p, span);
                Ok(())
            }
            "ttng.tmem_copy" => {
                let v = self.n_operands(op, 2)?;
                let src = self.expr(&v[0].0, v[0].1)?;
                let dst = self.expr(&v[1].0, v[1].1)?;
                self.op_stmt(OpKind::Tcgen05Cp { src, dst }, span);
                if let Some((b, bs)) = v.get(2) {
                    let bar = self.expr(b, *bs)?;
                    self.op_stmt(
                        OpKind::Tcgen05Commit {
                            bar,
                            pred: None,
                            cta_group: None,
                            multicast: None,
                        },
                        span,
                    );
                }
                Ok(())
            }
            "ttng.tc_gen5_mma" | "ttng.tc_gen5_mma_scaled" => self.tc_gen5_mma(op, span),
            "ttng.tc_gen5_commit" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                let pred = self.pred(v.get(1))?;
                if self.attr_dict(op)?.has("two_ctas") {
                    return Err(self.misuse(op, "two-CTA commits are not supported"));
                }
                // In a kernel of two-CTA MMAs the commit is the pair's: the pair's first CTA,
                // which issued the MMAs, commits for both and the arrival reaches both CTAs'
                // barriers (Triton 3.9's PTX: `tcgen05.commit.cta_group::2` with the pair's
                // multicast mask, under a rank-0-of-the-pair predicate).
                let pair = self.two_cta_module;
                // `descs`: the MMA's shared operands; the arrival reaches every CTA sharing one.
                // The types list the barrier's, then the descs' (the predicate has none).
                let typed = self.sig(op)?.inputs.len();
                let multicast = self.commit_mask(op, 1..typed, pair, span)?;
                if pair {
                    self.open_block();
                }
                self.op_stmt(
                    OpKind::Tcgen05Commit {
                        bar,
                        pred,
                        cta_group: pair.then(|| int_e(2, span)),
                        multicast,
                    },
                    span,
                );
                if pair {
                    self.close_if(Self::is_leader_e(1, span), span);
                }
                Ok(())
            }
            "ttng.warp_group_dot" => {
                let v = self.n_operands(op, 3)?;
                let a = self.expr(&v[0].0, v[0].1)?;
                let b = self.expr(&v[1].0, v[1].1)?;
                let acc = self.expr(&v[2].0, v[2].1)?;
                let use_acc = match v.get(3) {
                    Some((n, s)) => {
                        let e = self.expr(n, *s)?;
                        if is_true(&e) {
                            None
                        } else {
                            Some(e)
                        }
                    }
                    None => None,
                };
                let attrs = self.attr_dict(op)?;
                let ty = self.result_type(op, 0)?;
                let r = self.result(op, 0)?;
                let n = self.let_op(&r, OpKind::Wgmma { a, b, acc, use_acc }, span);
                if !attrs.has("isAsync") {
                    self.op_stmt(
                        OpKind::WgmmaWait {
                            pendings: int_e(0, span),
                        },
                        span,
                    );
                }
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "ttng.warp_group_dot_wait" => {
                let v = self.operands(op)?;
                let p = self.int_attr(op, "pendings")?;
                self.op_stmt(
                    OpKind::WgmmaWait {
                        pendings: int_e(p, span),
                    },
                    span,
                );
                for (i, r) in op.results.iter().enumerate() {
                    let (n, s) = v
                        .get(i)
                        .ok_or_else(|| self.misuse(op, "more results than operands"))?;
                    let val = self.get(n, *s)?;
                    self.bind(r, val);
                }
                Ok(())
            }
            "ttng.init_barrier" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                let count = self.int_after_operands(op)?;
                let group = self.operand_group(op, 0, span)?;
                if group == 0 {
                    self.op_stmt(
                        OpKind::MbarInit {
                            bar,
                            count: int_e(count, span),
                        },
                        span,
                    );
                } else {
                    // A barrier of a CTA group lives in the group's first CTA and counts every
                    // CTA's arrivals.
                    let n = count * i64::from(group_of(group).count_ones());
                    self.op_pred(
                        OpKind::MbarInit {
                            bar,
                            count: int_e(n, span),
                        },
                        Some(Self::is_leader_e(group, span)),
                        span,
                    );
                }
                Ok(())
            }
            "ttng.inval_barrier" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                // A barrier of a CTA group is invalidated where it lives, in the group's first
                // CTA, as it is initialised (Triton 3.9's PTX predicates the `mbarrier.inval`
                // on that rank).
                let group = self.operand_group(op, 0, span)?;
                let leader = (group != 0).then(|| Self::is_leader_e(group, span));
                self.op_pred(OpKind::MbarInvalidate { bar }, leader, span);
                Ok(())
            }
            "ttng.barrier_expect" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                let bytes = self.int_after_operands(op)?;
                let pred = self.pred(v.get(1))?;
                // Every CTA of a group expects its own bytes on the group's barrier.
                let group = self.operand_group(op, 0, span)?;
                self.op_stmt(
                    OpKind::MbarExpect {
                        bar,
                        bytes: int_e(bytes, span),
                        pred,
                        cta: (group != 0).then(|| self.leader_e(group, span)),
                    },
                    span,
                );
                Ok(())
            }
            "ttng.wait_barrier" => {
                let v = self.n_operands(op, 2)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                let phase = self.math_operand(&v[1].0, v[1].1)?;
                let pred = self.pred(v.get(2))?;
                // Only the first CTA of a group waits on the group's barrier.
                let group = self.operand_group(op, 0, span)?;
                let lead = (group != 0).then(|| Self::is_leader_e(group, span));
                let pred = Self::and_pred(pred, lead, span);
                self.op_pred(OpKind::MbarWait { bar, phase }, pred, span);
                Ok(())
            }
            "ttng.arrive_barrier" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                let count = self.int_after_operands(op)?;
                let pred = self.pred(v.get(1))?;
                let group = self.operand_group(op, 0, span)?;
                self.op_stmt(
                    OpKind::MbarArrive {
                        bar,
                        count: Some(int_e(count, span)),
                        pred,
                        cta: (group != 0).then(|| self.leader_e(group, span)),
                    },
                    span,
                );
                Ok(())
            }
            "ttng.cluster_arrive" | "ttng.cluster_barrier" => {
                // `cluster_barrier` is an arrive then a wait.
                let relaxed = self.attr_dict(op)?.get("relaxed").and_then(|x| x.as_bool());
                self.op_stmt(
                    OpKind::ClusterArrive {
                        relaxed: (relaxed == Some(true)).then(|| ex(ExprKind::Bool(true), span)),
                    },
                    span,
                );
                if name == "ttng.cluster_barrier" {
                    self.op_stmt(OpKind::ClusterWait {}, span);
                }
                Ok(())
            }
            "ttng.cluster_wait" => {
                self.op_stmt(OpKind::ClusterWait {}, span);
                Ok(())
            }
            "ttng.fence_async_shared" => {
                self.op_stmt(OpKind::FenceAsyncShared {}, span);
                Ok(())
            }
            "ttng.fence_mbarrier_init" | "ttng.fence_mbarrier_init_release_cluster" => {
                self.op_stmt(OpKind::FenceMbarrierInit {}, span);
                Ok(())
            }
            // `gl.thread_barrier()` (3.6: `gpu.barrier`), `gl.barrier()` (3.7 and later:
            // `ttg.barrier all`, or the address spaces it orders): a barrier of the warps that
            // run it, with the memory ordering bar.sync gives within the CTA.
            "gpu.barrier" | "ttg.barrier" => {
                self.op_stmt(OpKind::BarSync {}, span);
                Ok(())
            }
            "ttg.async_copy_global_to_local" => self.async_copy(op, span),
            "ttg.async_commit_group" => {
                self.op_stmt(OpKind::CpAsyncCommit {}, span);
                for r in &op.results {
                    self.bind(r, Val::Token);
                }
                Ok(())
            }
            "ttg.async_wait" => self.async_wait(op, span),
            // `async_copy.mbarrier_arrive(bar[, increment_count=False])` →
            // `cp.async.arrive BAR[, noinc=true]`.
            "ttng.async_copy_mbarrier_arrive" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                if self.operand_group(op, 0, span)? != 0 {
                    return Err(self.unsupported(
                        op,
                        "a cp.async arrival on a barrier shared by a group of CTAs (it arrives on this CTA's barrier only)",
                    ));
                }
                let noinc = self.attr_dict(op)?.has("noIncrement");
                self.op_stmt(
                    OpKind::CpAsyncArrive {
                        bar,
                        noinc: noinc.then(|| ex(ExprKind::Bool(true), span)),
                    },
                    span,
                );
                Ok(())
            }
            "ttng.async_tma_copy_global_to_local" | "ttng.async_tma_gather" => self.tma_load(op, span),
            "ttng.async_tma_copy_local_to_global" | "ttng.async_tma_scatter" | "ttng.async_tma_reduce" => {
                self.tma_store(op, span)
            }
            "ttg.global_scratch_alloc" => self.global_scratch_alloc(op),
            "ttng.tensormap_create" => self.tensormap_create(op, span),
            "ttng.tensormap_fenceproxy_acquire" => self.tensormap_acquire(op, span),
            "ttng.reinterpret_tensor_descriptor" => self.reinterpret_descriptor(op, span),
            "ttng.async_tma_store_wait" => {
                let attrs = self.attr_dict(op)?;
                let p = self.int_attr(op, "pendings")?;
                // 3.6 and 3.7 wait for the stores' reads of shared memory only (and print no
                // attribute); from 3.8 on, `read_only` says so and its absence means a wait for
                // the global writes too (`cp.async.bulk.wait_group N`).
                let full = self.version.has("store-wait-read-only") && !attrs.has("read_only");
                self.op_stmt(
                    OpKind::TmaStoreWait {
                        pendings: int_e(p, span),
                        full: full.then(|| Expr::new(ExprKind::Bool(true), span)),
                    },
                    span,
                );
                Ok(())
            }
            "scf.for" => self.scf_for(op, span),
            "scf.while" => self.scf_while(op, span),
            "scf.if" => self.scf_if(op, span),
            "ttg.warp_specialize" => self.warp_specialize(op, span),
            "math.exp" | "math.exp2" | "math.log" | "math.log2" | "math.sqrt" | "math.rsqrt" | "math.sin"
            | "math.cos" | "math.erf" | "math.floor" | "math.ceil" | "math.tanh" | "math.exp10"
            | "math.log10" | "math.log1p" | "math.expm1" | "math.tan" | "math.atan" | "tt.precise_sqrt" => {
                let f = match name {
                    "tt.precise_sqrt" => "sqrt",
                    n => n.trim_start_matches("math."),
                };
                let v = self.n_operands(op, 1)?;
                let a = self.math_operand(&v[0].0, v[0].1)?;
                self.unary_result(op, call(f, vec![a], span), &v[0].0, span)
            }
            "tt.atomic_rmw" => self.atomic_rmw(op, span),
            "tt.atomic_cas" => self.atomic_cas(op, span),
            "tt.atomic_store" => self.atomic_store(op, span),
            "tt.atomic_poll" => self.atomic_poll(op, span),
            "tt.atomic_load" => self.atomic_load(op, span),
            "tt.extern_elementwise" => {
                // libdevice calls (`libdevice.erf`, `fast_expf`, ...): those with a bwsim math
                // function import as it (the fast forms as the exact function, as the simulator
                // computes every math function); the others are refused by name.
                let symbol = match self.attr_dict(op)?.get("symbol") {
                    Some(AttrVal::Str(s)) => s.clone(),
                    _ => return Err(self.misuse(op, "needs `symbol`")),
                };
                let f = match symbol.trim_start_matches("__nv_").trim_start_matches("fast_") {
                    "expf" => Some("exp"),
                    "exp2f" => Some("exp2"),
                    "logf" => Some("log"),
                    "log2f" => Some("log2"),
                    "sqrtf" => Some("sqrt"),
                    "rsqrtf" => Some("rsqrt"),
                    "erff" => Some("erf"),
                    "floorf" => Some("floor"),
                    "ceilf" => Some("ceil"),
                    "sinf" => Some("sin"),
                    "cosf" => Some("cos"),
                    "tanhf" => Some("tanh"),
                    "exp10f" => Some("exp10"),
                    "log10f" => Some("log10"),
                    "log1pf" => Some("log1p"),
                    "expm1f" => Some("expm1"),
                    "tanf" => Some("tan"),
                    "atanf" => Some("atan"),
                    _ => None,
                };
                let v = self.operands(op)?;
                let (Some(f), [(x, xs)]) = (f, v.as_slice()) else {
                    return Err(self.unsupported(
                        op,
                        &format!(
                            "libdevice `{symbol}` has no bwsim equivalent (bwsim's math functions are exp, exp2, log, log2, sqrt, rsqrt, erf, floor, ceil, sin, cos, tanh, exp10, log10, log1p, expm1, tan and atan)"
                        ),
                    ));
                };
                let a = self.math_operand(x, *xs)?;
                self.unary_result(op, call(f, vec![a], span), x, span)
            }
            "tt.elementwise_inline_asm" => self.inline_asm(op, span),
            "ttg.inline_asm" => self.thread_asm(op, span),
            "ttg.memdesc_trans" => self.memdesc_trans(op, span),
            "ttg.memdesc_reshape" => self.memdesc_dense_view(op, span),
            // Terminators are read by the region that holds them.
            "scf.yield" | "scf.condition" | "tt.return" | "ttg.warp_yield" | "ttg.warp_return" => {
                Err(self.misuse(op, "a terminator outside the region that ends with it"))
            }
            // Not in bwsim_gluon::version::FEATURES, the table of every operation Gluon kernels
            // emit for sm_90a and sm_100a.
            _ => Err(self.unsupported(
                op,
                "it is not one of the operations Triton's Gluon emits for NVIDIA GPUs that bwsim knows \
                 (docs/gluon.md, operation coverage)",
            )),
        }
    }

    /// `tt.bitcast` of a (tensor of) pointer(s) `x`: `None` when `x` is not a pointer. Triton
    /// stores a boolean through a `!tt.ptr<i1>` cast to `!tt.ptr<i8>` (a bool is a byte in
    /// memory, as it is in bwsim's global tensors, and the value stored is its zero extension,
    /// 0 or 1): the pointer stays the parameter's, and a store through it converts the byte to
    /// the parameter's `i1` (exact for 0 and 1; `Cx::bool_ptrs`). A cast between two pointees of
    /// one type is the pointer itself. Any other pointer cast is refused.
    fn pointer_bitcast(&mut self, op: &Op, x: &(String, Span)) -> R<Option<Val>> {
        let v = self.get(&x.0, x.1)?;
        let Val::Ptr { base, offs, ty } = v else {
            return Ok(None);
        };
        let to = self.result_type(op, 0)?;
        let pointee = |t: &Type| match t {
            Type::Ptr(p) => p.elem(),
            Type::Tensor { elem, .. } => match &**elem {
                Type::Ptr(p) => p.elem(),
                _ => None,
            },
            _ => None,
        };
        let byte = |e: Option<Elem>| matches!(e, Some(Elem::I1 | Elem::I8));
        // The operand's type is the one printed after the colon (a pointer value's binding
        // keeps its offsets' type).
        let printed = {
            let c = Cursor::new(&op.toks, op.span);
            c.find_top(":").and_then(|at| {
                let mut tc = Cursor::new(&op.toks[at + 1..], op.span);
                parse_type(&mut tc).ok()
            })
        };
        let from = printed.unwrap_or_else(|| ty.clone());
        let (a, b) = (pointee(&from), pointee(&to));
        if a.is_some() && (a == b || (byte(a) && byte(b))) {
            if a != b {
                if a != Some(Elem::I1) {
                    return Err(self.unsupported(
                        op,
                        "a cast of an i8 pointer to a bool pointer (a byte read or written as a bool) is not imported",
                    ));
                }
                self.bool_ptrs.insert(self.result(op, 0)?);
            }
            return Ok(Some(Val::Ptr { base, offs, ty }));
        }
        Err(self.unsupported(
            op,
            "a pointer bit cast other than between `i1` and `i8` pointees (a bool stored as a byte) is not imported",
        ))
    }
}
