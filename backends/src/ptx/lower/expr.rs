//! Scalar expressions, names and views (`bufs[i]`, `tm[0:128, 64:128]`, `bars[i]`).
//!
//! Scalars are uniform per partition: every thread computes them. Constant subexpressions
//! are folded with the kernel's [`ConstEnv`](bwsim_isa::consts::ConstEnv) (static_for variables
//! included); the rest become PTX arithmetic on `s32`/`s64`/`f32`/predicate registers with
//! the IR's semantics (truncating `/` and `%`, arithmetic `>>`).

use super::*;
use crate::ptx::emit::f32_imm;
use bwsim_isa::consts::binop;
use bwsim_isa::typeck::{self, TmemTy};

fn const_val(c: ConstValue) -> Val {
    match c {
        ConstValue::Int(i) => Val::Int(i),
        ConstValue::Bool(b) => Val::Bool(b),
        ConstValue::DType(d) => Val::DType(d),
    }
}

/// The register type of a scalar computed in the checker's type `t` (`typeck::promote`,
/// `typeck::scalar_binary`: the type is the checker's): an `i1` that takes part in arithmetic,
/// a comparison or a `selp` is held as 0 or 1 in a 32-bit register, a representation choice
/// (predicate registers have no arithmetic).
fn reg_ty(t: ScalarTy) -> ScalarTy {
    match t {
        ScalarTy::I1 => ScalarTy::I32,
        t => t,
    }
}

fn int_suffix(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::I64 => "s64",
        ScalarTy::F32 => "f32",
        _ => "s32",
    }
}

fn bits_suffix(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::I64 => "b64",
        ScalarTy::F32 => "f32",
        _ => "b32",
    }
}

impl<'c, 'k> Lowerer<'c, 'k> {
    /// Whether an expression mentions a name bound by `let`/loops (so it is not constant).
    fn mentions_var(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Name(n) => self.lookup_var(n).is_some() || self.k.params.contains_key(n),
            ExprKind::Unary(_, a) => self.mentions_var(a),
            ExprKind::Binary(_, a, b) => self.mentions_var(a) || self.mentions_var(b),
            ExprKind::Call(_, args) => args.iter().any(|a| self.mentions_var(&a.value)),
            ExprKind::Index(b, items) => {
                self.mentions_var(b)
                    || items.iter().any(|i| match i {
                        IndexItem::Expr(x) => self.mentions_var(x),
                        IndexItem::Slice(a, b) => {
                            a.as_ref().is_some_and(|x| self.mentions_var(x))
                                || b.as_ref().is_some_and(|x| self.mentions_var(x))
                        }
                        IndexItem::NewAxis => false,
                    })
            }
            ExprKind::Field(b, _) => self.mentions_var(b),
            ExprKind::List(xs) => xs.iter().any(|x| self.mentions_var(x)),
            _ => false,
        }
    }

    /// The value of an expression made only of compile-time constants.
    pub fn try_const(&mut self, e: &Expr) -> LResult<Option<Val>> {
        if !self.consts.is_const(e) || self.mentions_var(e) {
            return Ok(None);
        }
        Ok(self.consts.eval(e).ok().map(const_val))
    }

    /// A constant integer (an IR operand the type checker required to be constant).
    pub fn const_int(&mut self, e: &Expr, op: &str) -> LResult<i64> {
        match self.expr(e)? {
            Val::Int(i) => Ok(i),
            Val::Bool(b) => Ok(b as i64),
            other => Err(wrong_kind(op, e.span, "expected a compile-time integer", &other)),
        }
    }

    /// A scalar of type `t` in a fresh register `d`, written by the one instruction `ins(d)`.
    fn scalar_ins(&mut self, t: ScalarTy, ins: impl FnOnce(Reg) -> String) -> Val {
        let d = self.e.reg(scalar_class(t));
        self.e.ins(ins(d));
        Val::Scalar(t, d)
    }

    pub fn expr(&mut self, e: &Expr) -> LResult<Val> {
        if let Some(v) = self.try_const(e)? {
            return Ok(v);
        }
        match &e.kind {
            ExprKind::Int(i) => Ok(Val::Int(*i)),
            ExprKind::Float(f) => Ok(Val::Float(*f)),
            ExprKind::Bool(b) => Ok(Val::Bool(*b)),
            ExprKind::Str(_) => Err(invalid("expression", e.span, "a string is not a value")),
            ExprKind::Name(n) => self.name(n, e.span),
            ExprKind::Unary(op, a) => {
                let v = self.expr(a)?;
                self.unary(*op, v, e.span)
            }
            ExprKind::Binary(op, a, b) => {
                let x = self.expr(a)?;
                let y = self.expr(b)?;
                self.binary(*op, x, y, e.span)
            }
            ExprKind::Call(f, args) => self.call(f, args, e),
            ExprKind::Index(base, items) => self.index(base, items, e),
            ExprKind::Field(base, f) => {
                let b = self.expr(base)?;
                match (&b, f.as_str()) {
                    (Val::Desc(n), "nbytes") => {
                        let d = self.desc_ty(n, e.span)?;
                        Ok(Val::Int(d.nbytes() as i64))
                    }
                    _ => Err(invalid(
                        "expression",
                        e.span,
                        format!("{} has no field `{f}`", b.kind()),
                    )),
                }
            }
            ExprKind::List(_) => Err(invalid("expression", e.span, "a list is not a value here")),
        }
    }

    pub fn desc_ty(&self, name: &str, span: Span) -> LResult<bwsim_isa::typeck::DescTy> {
        match self.ck.param(name).map(|p| &p.ty) {
            Some(Ty::Desc(d)) => Ok(d.clone()),
            _ => Err(invalid(
                "descriptor",
                span,
                format!("`{name}` is not a tensor descriptor parameter"),
            )),
        }
    }

    fn name(&mut self, n: &str, span: Span) -> LResult<Val> {
        if let Some(v) = self.lookup_var(n) {
            return Ok(v.clone());
        }
        if let Some(c) = self.consts.get(n) {
            return Ok(const_val(c));
        }
        if let Some(v) = self.k.params.get(n) {
            return Ok(v.clone());
        }
        if self.ck.layouts.contains_key(n) {
            return Ok(Val::Layout);
        }
        if let Some(d) = DType::from_name(n) {
            return Ok(Val::DType(d));
        }
        match n {
            "inf" => return Ok(Val::Float(f64::INFINITY)),
            "nan" => return Ok(Val::Float(f64::NAN)),
            _ => {}
        }
        Err(invalid("expression", span, format!("cannot find `{n}`")))
    }

    // ----- scalar helpers -----

    /// The scalar type of `v`, an operand of `op` that must be a scalar.
    pub(super) fn scalar_ty_arg(&self, v: &Val, op: &str, span: Span) -> LResult<ScalarTy> {
        self.scalar_ty_of(v)
            .ok_or_else(|| invalid(op, span, "not a scalar"))
    }

    pub fn scalar_ty_of(&self, v: &Val) -> Option<ScalarTy> {
        match v {
            Val::Int(i) => Some(if i32::try_from(*i).is_ok() {
                ScalarTy::I32
            } else {
                ScalarTy::I64
            }),
            Val::Bool(_) => Some(ScalarTy::I1),
            Val::Float(_) => Some(ScalarTy::F32),
            Val::Scalar(t, _) => Some(*t),
            _ => None,
        }
    }

    /// An operand of type `t` for a scalar value: an immediate or a register (converted).
    pub fn scalar_operand(&mut self, v: &Val, t: ScalarTy, span: Span) -> LResult<String> {
        Ok(match (v, t) {
            (Val::Int(i), ScalarTy::F32) => f32_imm(*i as f64),
            (Val::Int(i), ScalarTy::I1) => (if *i != 0 { "1" } else { "0" }).into(),
            (Val::Int(i), ScalarTy::I32) => {
                // The bits of an i32 (values past i32 range wrap, as the hardware would).
                (*i as i32).to_string()
            }
            (Val::Int(i), ScalarTy::I64) => i.to_string(),
            (Val::Bool(b), ScalarTy::F32) => f32_imm(if *b { 1.0 } else { 0.0 }),
            (Val::Bool(b), _) => (if *b { "1" } else { "0" }).into(),
            (Val::Float(f), ScalarTy::F32) => f32_imm(*f),
            (Val::Float(f), ScalarTy::I1) => (if *f != 0.0 { "1" } else { "0" }).into(),
            (Val::Float(f), _) => (*f as i64).to_string(),
            (Val::Scalar(st, r), _) if *st == t => r.to_string(),
            (Val::Scalar(st, r), _) => self.convert_scalar(*st, *r, t).to_string(),
            (other, _) => return Err(wrong_kind("expression", span, "expected a scalar", other)),
        })
    }

    /// A register holding a scalar value converted to `t`.
    pub fn scalar_reg(&mut self, v: &Val, t: ScalarTy, span: Span) -> LResult<Reg> {
        if let Val::Scalar(st, r) = v {
            if *st == t {
                return Ok(*r);
            }
        }
        let op = self.scalar_operand(v, t, span)?;
        let r = self.e.reg(scalar_class(t));
        self.mov(r, &op);
        Ok(r)
    }

    fn convert_scalar(&mut self, from: ScalarTy, r: Reg, to: ScalarTy) -> Reg {
        use ScalarTy::*;
        let d = self.e.reg(scalar_class(to));
        let ins = match (from, to) {
            (I32, I64) => format!("cvt.s64.s32 {d}, {r}"),
            (I64, I32) => format!("cvt.u32.u64 {d}, {r}"),
            (I32, F32) => format!("cvt.rn.f32.s32 {d}, {r}"),
            (I64, F32) => format!("cvt.rn.f32.s64 {d}, {r}"),
            (F32, I32) => format!("cvt.rzi.s32.f32 {d}, {r}"),
            (F32, I64) => format!("cvt.rzi.s64.f32 {d}, {r}"),
            (I1, I32) => format!("selp.b32 {d}, 1, 0, {r}"),
            (I1, I64) => format!("selp.b64 {d}, 1, 0, {r}"),
            (I1, F32) => format!("selp.f32 {d}, 0f3F800000, 0f00000000, {r}"),
            (I32, I1) => format!("setp.ne.s32 {d}, {r}, 0"),
            (I64, I1) => format!("setp.ne.s64 {d}, {r}, 0"),
            (F32, I1) => format!("setp.neu.f32 {d}, {r}, 0f00000000"),
            _ => format!("mov.{} {d}, {r}", bits_suffix(to)),
        };
        self.e.ins(ins);
        d
    }

    /// A predicate register for a condition.
    pub fn pred_of(&mut self, v: &Val, span: Span) -> LResult<Reg> {
        match v {
            Val::Scalar(ScalarTy::I1, r) => Ok(*r),
            Val::Bool(_) | Val::Int(_) | Val::Float(_) | Val::Scalar(..) => {
                self.scalar_reg(v, ScalarTy::I1, span)
            }
            other => Err(wrong_kind(
                "condition",
                span,
                "expected a scalar condition",
                other,
            )),
        }
    }

    // ----- operators -----

    fn unary(&mut self, op: UnOp, v: Val, span: Span) -> LResult<Val> {
        match (op, v) {
            (UnOp::Neg, Val::Int(i)) => Ok(Val::Int(i.wrapping_neg())),
            (UnOp::Neg, Val::Float(f)) => Ok(Val::Float(-f)),
            (UnOp::Not, Val::Bool(b)) => Ok(Val::Bool(!b)),
            (UnOp::Not, Val::Int(i)) => Ok(Val::Int(!i)),
            (_, Val::Tile(t)) => Ok(Val::Tile(self.tile_unary(op, &t, span)?)),
            (UnOp::Neg, Val::Scalar(t, r)) => {
                let d = self.e.reg(scalar_class(t));
                match t {
                    ScalarTy::I1 => return Ok(Val::Scalar(t, r)),
                    _ => self.e.ins(format!("neg.{} {d}, {r}", int_suffix(t))),
                }
                Ok(Val::Scalar(t, d))
            }
            (UnOp::Not, Val::Scalar(t, r)) => {
                let d = self.e.reg(scalar_class(t));
                match t {
                    ScalarTy::I1 => self.e.ins(format!("not.pred {d}, {r}")),
                    ScalarTy::F32 => return Err(invalid("!", span, "`!` of a float")),
                    _ => self.e.ins(format!("not.{} {d}, {r}", bits_suffix(t))),
                }
                Ok(Val::Scalar(t, d))
            }
            (_, other) => Err(invalid(
                "expression",
                span,
                format!("operator applied to {}", other.kind()),
            )),
        }
    }

    pub fn binary(&mut self, op: BinOp, a: Val, b: Val, span: Span) -> LResult<Val> {
        if matches!(a, Val::Tile(_)) || matches!(b, Val::Tile(_)) {
            return self.tile_binary(op, a, b, span).map(Val::Tile);
        }
        // Constant folding.
        let cv = |v: &Val| match v {
            Val::Int(i) => Some(ConstValue::Int(*i)),
            Val::Bool(b) => Some(ConstValue::Bool(*b)),
            _ => None,
        };
        if let (Some(x), Some(y)) = (cv(&a), cv(&b)) {
            return binop(op, x, y)
                .map(const_val)
                .map_err(|m| invalid(op.symbol(), span, m));
        }
        let fl = |v: &Val| match v {
            Val::Int(i) => Some(*i as f64),
            Val::Float(f) => Some(*f),
            Val::Bool(b) => Some(*b as i64 as f64),
            _ => None,
        };
        if matches!(a, Val::Float(_)) || matches!(b, Val::Float(_)) {
            if let (Some(x), Some(y)) = (fl(&a), fl(&b)) {
                let (x, y) = (x as f32, y as f32);
                return Ok(match op {
                    BinOp::Add => Val::Float((x + y) as f64),
                    BinOp::Sub => Val::Float((x - y) as f64),
                    BinOp::Mul => Val::Float((x * y) as f64),
                    BinOp::Div => Val::Float((x / y) as f64),
                    _ => match op.compare(x, y) {
                        Some(t) => Val::Bool(t),
                        None => return Err(invalid(op.symbol(), span, "operator does not apply to floats")),
                    },
                });
            }
        }
        let ta = self
            .scalar_ty_of(&a)
            .ok_or_else(|| invalid(op.symbol(), span, format!("operand is {}", a.kind())))?;
        let tb = self
            .scalar_ty_of(&b)
            .ok_or_else(|| invalid(op.symbol(), span, format!("operand is {}", b.kind())))?;
        let both_pred = ta == ScalarTy::I1 && tb == ScalarTy::I1;
        match op {
            BinOp::And | BinOp::Or => {
                let x = self.pred_of(&a, span)?;
                let y = self.pred_of(&b, span)?;
                let d = self.e.reg(RegClass::Pred);
                let o = if op == BinOp::And { "and" } else { "or" };
                self.e.ins(format!("{o}.pred {d}, {x}, {y}"));
                Ok(Val::Scalar(ScalarTy::I1, d))
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Eq | BinOp::Ne if both_pred => {
                let x = self.pred_of(&a, span)?;
                let y = self.pred_of(&b, span)?;
                let d = self.e.reg(RegClass::Pred);
                match op {
                    BinOp::BitAnd => self.e.ins(format!("and.pred {d}, {x}, {y}")),
                    BinOp::BitOr => self.e.ins(format!("or.pred {d}, {x}, {y}")),
                    BinOp::BitXor | BinOp::Ne => self.e.ins(format!("xor.pred {d}, {x}, {y}")),
                    _ => {
                        let t = self.e.reg(RegClass::Pred);
                        self.e.ins(format!("xor.pred {t}, {x}, {y}"));
                        self.e.ins(format!("not.pred {d}, {t}"));
                    }
                }
                Ok(Val::Scalar(ScalarTy::I1, d))
            }
            _ if op.is_comparison() => {
                let t = reg_ty(typeck::promote(ta, tb));
                let x = self.scalar_operand(&a, t, span)?;
                let y = self.scalar_operand(&b, t, span)?;
                let x = self.reg_if_imm(&x, t);
                let d = self.e.reg(RegClass::Pred);
                let c = match (op, t) {
                    (BinOp::Ne, ScalarTy::F32) => "neu",
                    (BinOp::Eq, _) => "eq",
                    (BinOp::Ne, _) => "ne",
                    (BinOp::Lt, _) => "lt",
                    (BinOp::Le, _) => "le",
                    (BinOp::Gt, _) => "gt",
                    _ => "ge",
                };
                self.e.ins(format!("setp.{c}.{} {d}, {x}, {y}", int_suffix(t)));
                Ok(Val::Scalar(ScalarTy::I1, d))
            }
            _ => {
                let t = reg_ty(typeck::scalar_binary(op, ta, tb));
                let x = self.scalar_operand(&a, t, span)?;
                let shift = matches!(op, BinOp::Shl | BinOp::Shr);
                let y = if shift {
                    self.scalar_operand(&b, ScalarTy::I32, span)?
                } else {
                    self.scalar_operand(&b, t, span)?
                };
                let x = self.reg_if_imm(&x, t);
                let d = self.e.reg(scalar_class(t));
                let s = int_suffix(t);
                let bits = bits_suffix(t);
                let ins = match (op, t) {
                    // `.rn` keeps ptxas from contracting a mul and an add into one fma (see
                    // the tile form in tile.rs).
                    (BinOp::Add, ScalarTy::F32) => format!("add.rn.f32 {d}, {x}, {y}"),
                    (BinOp::Sub, ScalarTy::F32) => format!("sub.rn.f32 {d}, {x}, {y}"),
                    (BinOp::Mul, ScalarTy::F32) => format!("mul.rn.f32 {d}, {x}, {y}"),
                    (BinOp::Add, _) => format!("add.{s} {d}, {x}, {y}"),
                    (BinOp::Sub, _) => format!("sub.{s} {d}, {x}, {y}"),
                    (BinOp::Mul, _) => format!("mul.lo.{s} {d}, {x}, {y}"),
                    (BinOp::Div, ScalarTy::F32) => format!("div.rn.f32 {d}, {x}, {y}"),
                    (BinOp::Div, _) => format!("div.{s} {d}, {x}, {y}"),
                    (BinOp::Rem, ScalarTy::F32) => return Err(unsupported("%", span, "float remainder")),
                    (BinOp::Rem, _) => format!("rem.{s} {d}, {x}, {y}"),
                    (_, ScalarTy::F32) => return Err(invalid(op.symbol(), span, "bit operation on a float")),
                    (BinOp::BitAnd, _) => format!("and.{bits} {d}, {x}, {y}"),
                    (BinOp::BitOr, _) => format!("or.{bits} {d}, {x}, {y}"),
                    (BinOp::BitXor, _) => format!("xor.{bits} {d}, {x}, {y}"),
                    (BinOp::Shl, _) => format!("shl.{bits} {d}, {x}, {y}"),
                    (BinOp::Shr, _) => format!("shr.{s} {d}, {x}, {y}"),
                    _ => return Err(invalid(op.symbol(), span, "unexpected operator")),
                };
                self.e.ins(ins);
                Ok(Val::Scalar(t, d))
            }
        }
    }

    /// A register for an operand string that is an immediate (first operands of some
    /// instructions must be registers).
    fn reg_if_imm(&mut self, s: &str, t: ScalarTy) -> String {
        if s.starts_with('%') {
            return s.to_string();
        }
        let r = self.e.reg(scalar_class(t));
        self.mov(r, s);
        r.to_string()
    }

    fn call(&mut self, f: &str, args: &[Arg], e: &Expr) -> LResult<Val> {
        let pos: Vec<&Expr> = args
            .iter()
            .filter(|a| a.key.is_none())
            .map(|a| &a.value)
            .collect();
        let arity = |n: usize| -> LResult<()> {
            if pos.len() != n {
                Err(invalid(f, e.span, format!("takes {n} arguments")))
            } else {
                Ok(())
            }
        };
        match f {
            "program_id" | "num_programs" => {
                arity(1)?;
                let axis = self.const_int(pos[0], f)?;
                let a = ["x", "y", "z"]
                    .get(axis as usize)
                    .ok_or_else(|| invalid(f, e.span, "axis must be 0, 1 or 2"))?;
                let r = self.e.reg(RegClass::B32);
                let sreg = if f == "program_id" { "%ctaid" } else { "%nctaid" };
                self.e.ins(format!("mov.u32 {r}, {sreg}.{a}"));
                Ok(Val::Scalar(ScalarTy::I32, r))
            }
            "cluster_rank" | "cluster_size" => {
                arity(0)?;
                let r = self.e.reg(RegClass::B32);
                let sreg = if f == "cluster_rank" {
                    "%cluster_ctarank"
                } else {
                    "%cluster_nctarank"
                };
                self.e.ins(format!("mov.u32 {r}, {sreg}"));
                self.uses_cluster = true;
                Ok(Val::Scalar(ScalarTy::I32, r))
            }
            "min" | "max" => {
                arity(2)?;
                let a = self.expr(pos[0])?;
                let b = self.expr(pos[1])?;
                if matches!(a, Val::Tile(_)) || matches!(b, Val::Tile(_)) {
                    return self.tile_minmax(f == "min", a, b, e.span).map(Val::Tile);
                }
                let ta = self.scalar_ty_arg(&a, f, e.span)?;
                let tb = self.scalar_ty_arg(&b, f, e.span)?;
                let t = reg_ty(typeck::promote(ta, tb));
                let x = self.scalar_operand(&a, t, e.span)?;
                let y = self.scalar_operand(&b, t, e.span)?;
                let x = self.reg_if_imm(&x, t);
                Ok(self.scalar_ins(t, |d| format!("{f}.{} {d}, {x}, {y}", int_suffix(t))))
            }
            "cdiv" => {
                arity(2)?;
                let a = self.expr(pos[0])?;
                let b = self.expr(pos[1])?;
                let s = self.binary(BinOp::Add, a, b.clone(), e.span)?;
                let s = self.binary(BinOp::Sub, s, Val::Int(1), e.span)?;
                self.binary(BinOp::Div, s, b, e.span)
            }
            "abs" => {
                arity(1)?;
                match self.expr(pos[0])? {
                    Val::Tile(t) => self.tile_abs(&t, e.span).map(Val::Tile),
                    v => {
                        let t = self.scalar_ty_arg(&v, f, e.span)?;
                        let x = self.scalar_reg(&v, t, e.span)?;
                        Ok(self.scalar_ins(t, |d| format!("abs.{} {d}, {x}", int_suffix(t))))
                    }
                }
            }
            "select" | "where" => {
                arity(3)?;
                let c = self.expr(pos[0])?;
                let a = self.expr(pos[1])?;
                let b = self.expr(pos[2])?;
                if matches!(c, Val::Tile(_)) || matches!(a, Val::Tile(_)) || matches!(b, Val::Tile(_)) {
                    return self.tile_where(c, a, b, e.span).map(Val::Tile);
                }
                let p = self.pred_of(&c, e.span)?;
                let ta = self.scalar_ty_arg(&a, f, e.span)?;
                let tb = self.scalar_ty_arg(&b, f, e.span)?;
                let t = reg_ty(typeck::promote(ta, tb));
                if ta == ScalarTy::I1 && tb == ScalarTy::I1 {
                    let x = self.pred_of(&a, e.span)?;
                    let y = self.pred_of(&b, e.span)?;
                    let [d, t1, t2] = self.e.regs(RegClass::Pred);
                    self.e.ins(format!("and.pred {t1}, {p}, {x}"));
                    self.e.ins(format!("and.pred {t2}, !{p}, {y}"));
                    self.e.ins(format!("or.pred {d}, {t1}, {t2}"));
                    return Ok(Val::Scalar(ScalarTy::I1, d));
                }
                let x = self.scalar_operand(&a, t, e.span)?;
                let y = self.scalar_operand(&b, t, e.span)?;
                Ok(self.scalar_ins(t, |d| format!("selp.{} {d}, {x}, {y}, {p}", bits_suffix(t))))
            }
            "cast" => {
                arity(2)?;
                let v = self.expr(pos[0])?;
                let d = match self.expr(pos[1])? {
                    Val::DType(d) => d,
                    other => return Err(wrong_kind("cast", e.span, "expected an element type", &other)),
                };
                match v {
                    Val::Tile(t) => self.cast_tile(&t, d, e.span).map(Val::Tile),
                    v => {
                        let to = ScalarTy::from_name(d.name())
                            .ok_or_else(|| invalid("cast", e.span, format!("scalars cannot be {d}")))?;
                        let r = self.scalar_reg(&v, to, e.span)?;
                        Ok(Val::Scalar(to, r))
                    }
                }
            }
            _ => self.tile_call(f, &pos, e),
        }
    }

    // ----- views -----

    fn index(&mut self, base: &Expr, items: &[IndexItem], e: &Expr) -> LResult<Val> {
        if let ExprKind::Field(inner, field) = &base.kind {
            let b = self.expr(inner)?;
            let [IndexItem::Expr(ix)] = items else {
                return Err(invalid("index", e.span, format!("`.{field}` takes one index")));
            };
            let i = self.const_int(ix, "index")? as usize;
            return match (&b, field.as_str()) {
                (Val::Desc(n), "shape") => {
                    let r = self
                        .k
                        .tmaps
                        .get(n)
                        .and_then(|t| t.1.get(i))
                        .copied()
                        .ok_or_else(|| invalid("shape", e.span, "dimension out of range"))?;
                    Ok(Val::Scalar(ScalarTy::I32, r))
                }
                (Val::Desc(n), "block") => {
                    let d = self.desc_ty(n, e.span)?;
                    d.block
                        .get(i)
                        .map(|&x| Val::Int(x as i64))
                        .ok_or_else(|| invalid("block", e.span, "dimension out of range"))
                }
                (Val::Smem(s), "shape") => s
                    .shape
                    .get(i)
                    .map(|&x| Val::Int(x as i64))
                    .ok_or_else(|| invalid("shape", e.span, "dimension out of range")),
                (Val::Tmem(t), "shape") => t
                    .shape
                    .get(i)
                    .map(|&x| Val::Int(x as i64))
                    .ok_or_else(|| invalid("shape", e.span, "dimension out of range")),
                (Val::Tile(t), "shape") => {
                    t.ll.shape
                        .get(i)
                        .map(|&x| Val::Int(x as i64))
                        .ok_or_else(|| invalid("shape", e.span, "dimension out of range"))
                }
                _ => Err(invalid(
                    "index",
                    e.span,
                    format!("{} has no field `{field}`", b.kind()),
                )),
            };
        }
        let b = self.expr(base)?;
        match b {
            Val::Smem(v) => self.smem_index(v, items, e.span).map(Val::Smem),
            Val::Tmem(v) => self.tmem_index(v, items, e.span).map(Val::Tmem),
            Val::Mbar { base, count: Some(n) } => {
                let [IndexItem::Expr(ix)] = items else {
                    return Err(invalid("index", e.span, "index a barrier array with one integer"));
                };
                let i = self.expr(ix)?;
                match i {
                    Val::Int(i) => {
                        if i < 0 || i >= n as i64 {
                            return Err(invalid("index", e.span, format!("barrier {i} of {n}")));
                        }
                        Ok(Val::Mbar {
                            base: Addr {
                                reg: base.reg,
                                off: base.off + 8 * i,
                            },
                            count: None,
                        })
                    }
                    v => {
                        let r = self.scalar_reg(&v, ScalarTy::I32, ix.span)?;
                        let a = self.e.reg(RegClass::B32);
                        self.e.ins(format!("mad.lo.u32 {a}, {r}, 8, {}", base.reg));
                        Ok(Val::Mbar {
                            base: Addr {
                                reg: a,
                                off: base.off,
                            },
                            count: None,
                        })
                    }
                }
            }
            Val::Tile(t) => self.tile_new_axes(&t, items, e.span).map(Val::Tile),
            other => Err(invalid(
                "index",
                e.span,
                format!("{} cannot be indexed here", other.kind()),
            )),
        }
    }

    /// Integer indices (leading dimensions) and constant slices of a view.
    /// Returns the dropped leading indices and the (offset, extent) of the remaining dims.
    #[allow(clippy::type_complexity)]
    fn view_items(
        &mut self,
        shape: &[u32],
        items: &[IndexItem],
        span: Span,
    ) -> LResult<(Vec<Val>, Vec<(u32, u32)>)> {
        if items.len() > shape.len() {
            return Err(invalid("index", span, "too many indices"));
        }
        let mut idx = Vec::new();
        let mut rest = Vec::new();
        for (k, it) in items.iter().enumerate() {
            match it {
                IndexItem::Expr(x) => {
                    if k != idx.len() {
                        return Err(invalid("index", span, "integer indices must come before slices"));
                    }
                    idx.push(self.expr(x)?);
                }
                IndexItem::Slice(a, b) => {
                    let lo = match a {
                        Some(a) => self.const_int(a, "slice")?,
                        None => 0,
                    };
                    let hi = match b {
                        Some(b) => self.const_int(b, "slice")?,
                        None => shape[k] as i64,
                    };
                    if lo < 0 || hi > shape[k] as i64 || lo >= hi {
                        return Err(invalid(
                            "slice",
                            span,
                            format!("slice {lo}:{hi} out of 0..{}", shape[k]),
                        ));
                    }
                    rest.push((lo as u32, (hi - lo) as u32));
                }
                IndexItem::NewAxis => {
                    return Err(invalid("index", span, "`None` indexes register tiles only"))
                }
            }
        }
        for &d in &shape[items.len().min(shape.len())..] {
            rest.push((0, d));
        }
        Ok((idx, rest))
    }

    fn smem_index(&mut self, v: SmemView, items: &[IndexItem], span: Span) -> LResult<SmemView> {
        let (idx, rest) = self.view_items(&v.shape, items, span)?;
        let mut v = v;
        for i in idx {
            // Re-base on the sub-region: only leading dimensions of the whole region; a row of
            // a matrix only when its layout is row-major and unswizzled (a row is then the
            // contiguous bytes r * row .. (r + 1) * row; a swizzled row is not a region).
            let unswizzled = match &v.geom.layout {
                SmemLayout::Plain => true,
                SmemLayout::Swizzled { max_phase, .. } => *max_phase <= 1,
                _ => false,
            };
            let matrix_row = v.geom.full.len() == 2 && unswizzled;
            if (v.geom.full.len() < 3 && !matrix_row) || v.offsets[0] != 0 || v.shape[0] != v.geom.full[0] {
                return Err(unsupported(
                    "index",
                    span,
                    "integer indices into the rows or columns of a shared-memory matrix (use slices)",
                ));
            }
            let sub = Geom {
                dtype: v.geom.dtype,
                full: v.geom.full[1..].to_vec(),
                layout: v.geom.layout.clone(),
            };
            let stride = sub.total_bytes();
            match i {
                Val::Int(c) => {
                    if c < 0 || c >= v.geom.full[0] as i64 {
                        return Err(invalid(
                            "index",
                            span,
                            format!("index {c} out of 0..{}", v.geom.full[0]),
                        ));
                    }
                    v.base.off += c * stride as i64;
                    v.align = align_of(v.align, (c as u64) * stride);
                }
                other => {
                    let r = self.scalar_reg(&other, ScalarTy::I32, span)?;
                    let a = self.e.reg(RegClass::B32);
                    let st = u32::try_from(stride).map_err(|_| invalid("index", span, "buffer too large"))?;
                    self.e.ins(format!("mad.lo.u32 {a}, {r}, {st}, {}", v.base.reg));
                    v.base.reg = a;
                    v.align = align_of(v.align, stride);
                }
            }
            v.geom = sub;
            drop_leading(&mut v.shape, &mut v.offsets);
        }
        apply_slices(&mut v.shape, &mut v.offsets, rest);
        Ok(v)
    }

    fn tmem_index(&mut self, v: TmemView, items: &[IndexItem], span: Span) -> LResult<TmemView> {
        let (idx, rest) = self.view_items(&v.shape, items, span)?;
        let mut v = v;
        for i in idx {
            if v.full.len() < 3 || v.offsets[0] != 0 || v.shape[0] != v.full[0] {
                return Err(unsupported(
                    "index",
                    span,
                    "integer indices into the rows or columns of a tensor-memory matrix (use slices)",
                ));
            }
            let sub_full = v.full[1..].to_vec();
            let tt = TmemTy {
                dtype: v.dtype,
                shape: sub_full.clone(),
                block: v.block,
                col_stride: v.col_stride,
                scales: v.scales,
                alloc: 0,
            };
            let stride = tt.cols();
            match i {
                Val::Int(c) => v.cols += c as u32 * stride,
                other => {
                    let r = self.scalar_reg(&other, ScalarTy::I32, span)?;
                    let a = self.e.reg(RegClass::B32);
                    match v.dynamic {
                        Some(d) => self.e.ins(format!("mad.lo.u32 {a}, {r}, {stride}, {d}")),
                        None => self.e.ins(format!("mul.lo.u32 {a}, {r}, {stride}")),
                    }
                    v.dynamic = Some(a);
                }
            }
            v.full = sub_full;
            drop_leading(&mut v.shape, &mut v.offsets);
        }
        apply_slices(&mut v.shape, &mut v.offsets, rest);
        Ok(v)
    }

    /// The TMEM address register of a view's region (lane 0, first column).
    pub fn tmem_region_addr(&mut self, v: &TmemView) -> Reg {
        let r = self.e.reg(RegClass::B32);
        match v.dynamic {
            Some(d) => {
                self.e.ins(format!("add.u32 {r}, {}, {d}", v.reg));
                if v.cols != 0 {
                    self.e.ins(format!("add.u32 {r}, {r}, {}", v.cols));
                }
            }
            None => self.e.ins(format!("add.u32 {r}, {}, {}", v.reg, v.cols)),
        }
        r
    }
}

/// A view after an integer index of its leading dimension: that dimension is gone.
fn drop_leading(shape: &mut Vec<u32>, offsets: &mut Vec<u32>) {
    shape.remove(0);
    offsets.remove(0);
}

/// A view narrowed by its slices: `rest` (from `view_items`) gives the (offset, extent) of
/// each remaining dimension.
fn apply_slices(shape: &mut [u32], offsets: &mut [u32], rest: Vec<(u32, u32)>) {
    for (d, (lo, ext)) in rest.into_iter().enumerate() {
        offsets[d] += lo;
        shape[d] = ext;
    }
}

/// Alignment of `base + off` given the alignment of `base`.
pub(super) fn align_of(align: u64, off: u64) -> u64 {
    if off == 0 {
        align
    } else {
        align.min(1u64 << off.trailing_zeros())
    }
}
