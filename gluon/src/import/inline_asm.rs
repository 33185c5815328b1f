//! Inline PTX of `tt.elementwise_inline_asm` (Gluon's `gl.inline_asm_elementwise`).
//!
//! Two ways in. The small language of 32-bit moves and f32 arithmetic on `r`/`f` registers
//! that kernels use to pair f32 lanes (`mul.f32x2`, `add.f32x2`, `fma.rn.f32x2`) or to hide a
//! value from the compiler (`mov.b32 $0, $1`) is interpreted symbolically ([`interpret`])
//! into one plain elementwise expression per result (`a * b`, `fma(a, b, c)`, `a`), so the
//! kernels that used it read as before. Every other snippet of the PTX subset of
//! [`bwsim_isa::inline_ptx`] (64-bit and packed operands, integer and bit tricks, rounding
//! modes, conversions, predicates) imports as the `inline_asm` operation, which the
//! simulator runs instruction by instruction; a snippet outside the subset is refused naming
//! its instruction, at the Python line of the call.
//!
//! Operand numbering follows Triton's lowering: with `pack` elements per operand, `$0 ..`
//! are the outputs (result `r`, element `e` is `$(r * pack + e)` for 32-bit elements), then
//! each argument's `pack` elements in argument order.

use super::*;
use bwsim_isa::builtins::ReduceOp;

/// One result of an inline-asm snippet as an elementwise expression of its arguments.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum AsmExpr {
    /// Argument `i` (the same element as the result's).
    Arg(usize),
    /// An IEEE f32 operation rounded to nearest.
    Add(Box<AsmExpr>, Box<AsmExpr>),
    Sub(Box<AsmExpr>, Box<AsmExpr>),
    Mul(Box<AsmExpr>, Box<AsmExpr>),
    /// `a * b + c` with one rounding.
    Fma(Box<AsmExpr>, Box<AsmExpr>, Box<AsmExpr>),
}

impl AsmExpr {
    /// Whether the expression does f32 arithmetic (rather than only moving bits).
    pub(super) fn is_arith(&self) -> bool {
        !matches!(self, AsmExpr::Arg(_))
    }

    /// The arguments the expression reads.
    pub(super) fn args(&self) -> Vec<usize> {
        match self {
            AsmExpr::Arg(i) => vec![*i],
            AsmExpr::Add(a, b) | AsmExpr::Sub(a, b) | AsmExpr::Mul(a, b) => [a.args(), b.args()].concat(),
            AsmExpr::Fma(a, b, c) => [a.args(), b.args(), c.args()].concat(),
        }
    }
}

/// A 32-bit value inside the snippet: argument `arg`'s element `elem`, or arithmetic on such.
#[derive(Clone, Debug, PartialEq)]
enum Sym {
    In { arg: usize, elem: usize },
    Add(Box<Sym>, Box<Sym>),
    Sub(Box<Sym>, Box<Sym>),
    Mul(Box<Sym>, Box<Sym>),
    Fma(Box<Sym>, Box<Sym>, Box<Sym>),
}

impl Sym {
    /// The expression when every leaf reads element `elem`; None when a leaf reads another.
    fn at_elem(&self, elem: usize) -> Option<AsmExpr> {
        let b = |s: &Sym| s.at_elem(elem).map(Box::new);
        Some(match self {
            Sym::In { arg, elem: e } => {
                if *e != elem {
                    return None;
                }
                AsmExpr::Arg(*arg)
            }
            Sym::Add(x, y) => AsmExpr::Add(b(x)?, b(y)?),
            Sym::Sub(x, y) => AsmExpr::Sub(b(x)?, b(y)?),
            Sym::Mul(x, y) => AsmExpr::Mul(b(x)?, b(y)?),
            Sym::Fma(x, y, z) => AsmExpr::Fma(b(x)?, b(y)?, b(z)?),
        })
    }
}

/// What a register holds: one 32-bit value, or a 64-bit pair (low, high).
#[derive(Clone, Debug)]
enum Reg {
    B32(Sym),
    Pair(Sym, Sym),
}

/// Interprets `asm` with its `constraints` for `n_args` arguments of `pack` elements and
/// returns one expression per result (`n_results` of them).
pub(super) fn interpret(
    asm: &str,
    constraints: &str,
    n_args: usize,
    n_results: usize,
    pack: usize,
) -> Result<Vec<AsmExpr>, String> {
    if pack == 0 {
        return Err("`packed_element` is 0".into());
    }
    let cons: Vec<&str> = constraints
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let n_out = cons.iter().filter(|c| c.starts_with('=')).count();
    let n_in = cons.len() - n_out;
    if n_out != n_results * pack || n_in != n_args * pack {
        return Err(format!(
            "constraints `{constraints}` name {n_out} outputs and {n_in} inputs; {n_results} result(s) and {n_args} argument(s) of {pack} element(s) need {} and {}",
            n_results * pack,
            n_args * pack
        ));
    }
    if let Some(c) = cons
        .iter()
        .find(|c| !matches!(c.trim_start_matches('='), "r" | "f"))
    {
        return Err(format!(
            "constraint `{c}`: bwsim imports 32-bit register operands (`r`, `f`) only"
        ));
    }
    let mut regs: HashMap<String, Reg> = HashMap::new();
    for a in 0..n_args {
        for e in 0..pack {
            regs.insert(
                format!("${}", n_out + a * pack + e),
                Reg::B32(Sym::In { arg: a, elem: e }),
            );
        }
    }
    for ins in instructions(asm) {
        step(&ins, &mut regs, n_out)?;
    }
    let mut out = Vec::with_capacity(n_results);
    for r in 0..n_results {
        let mut first: Option<AsmExpr> = None;
        for e in 0..pack {
            let name = format!("${}", r * pack + e);
            let Some(Reg::B32(s)) = regs.get(&name) else {
                return Err(format!("the snippet never writes its output `{name}`"));
            };
            let Some(x) = s.at_elem(e) else {
                return Err(format!(
                    "output `{name}` mixes elements of the packed operands (not elementwise)"
                ));
            };
            match &first {
                None => first = Some(x),
                Some(f) if *f == x => {}
                Some(_) => {
                    return Err(format!(
                        "output `{name}` computes something else than the result's first element"
                    ))
                }
            }
        }
        out.extend(first);
    }
    Ok(out)
}

/// The instructions of a snippet: statements split at `;`, scope braces and `.reg`
/// declarations dropped, whitespace collapsed.
fn instructions(asm: &str) -> Vec<String> {
    let flat: String = asm
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    flat.split(';')
        .map(|s| {
            // Scope braces open and close between statements (a statement starts with its
            // opcode), so only leading braces are scope braces, never the `{a, b}` operands.
            let s = s.trim_start_matches(|c: char| c == '{' || c == '}' || c.is_whitespace());
            s.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .filter(|s| !s.is_empty() && !s.starts_with(".reg"))
        .collect()
}

/// Operands of one instruction, split at top-level commas (`{a, b}` is one operand).
fn operand_list(s: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => {
                v.push(cur.trim().to_string());
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        v.push(cur.trim().to_string());
    }
    v
}

/// `{a, b}` as its two names.
fn vector(s: &str) -> Option<(String, String)> {
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    let mut it = inner.split(',').map(|x| x.trim().to_string());
    let (a, b) = (it.next()?, it.next()?);
    it.next().is_none().then_some((a, b))
}

fn step(ins: &str, regs: &mut HashMap<String, Reg>, n_out: usize) -> Result<(), String> {
    let (opcode, rest) = ins.split_once(' ').unwrap_or((ins, ""));
    let ops = operand_list(rest);
    let read32 = |regs: &HashMap<String, Reg>, name: &str| -> Result<Sym, String> {
        match regs.get(name) {
            Some(Reg::B32(s)) => Ok(s.clone()),
            Some(Reg::Pair(..)) => Err(format!("`{ins}` reads the 64-bit `{name}` as 32 bits")),
            None if is_output(name, n_out) => Err(format!(
                "`{ins}` reads the output `{name}` before writing it (its value is undefined)"
            )),
            None => Err(format!(
                "`{ins}` reads `{name}`, which holds no value (immediates are not imported)"
            )),
        }
    };
    let read_pair = |regs: &HashMap<String, Reg>, name: &str| -> Result<(Sym, Sym), String> {
        match regs.get(name) {
            Some(Reg::Pair(a, b)) => Ok((a.clone(), b.clone())),
            _ => Err(format!("`{ins}` reads `{name}`, which holds no 64-bit pair")),
        }
    };
    let parts: Vec<&str> = opcode.split('.').collect();
    match parts.as_slice() {
        ["mov", "b64"] if ops.len() == 2 => {
            if let Some((lo, hi)) = vector(&ops[1]) {
                let p = Reg::Pair(read32(regs, &lo)?, read32(regs, &hi)?);
                regs.insert(ops[0].clone(), p);
            } else if let Some((lo, hi)) = vector(&ops[0]) {
                let (a, b) = read_pair(regs, &ops[1])?;
                regs.insert(lo, Reg::B32(a));
                regs.insert(hi, Reg::B32(b));
            } else {
                let p = regs
                    .get(&ops[1])
                    .cloned()
                    .ok_or_else(|| format!("`{ins}` reads `{}`, which holds no value", ops[1]))?;
                regs.insert(ops[0].clone(), p);
            }
        }
        ["mov", "b32" | "f32" | "u32" | "s32"] if ops.len() == 2 => {
            let v = read32(regs, &ops[1])?;
            regs.insert(ops[0].clone(), Reg::B32(v));
        }
        [op @ ("add" | "sub" | "mul" | "fma"), mods @ .., ty @ ("f32" | "f32x2")] => {
            if let Some(m) = mods.iter().find(|m| **m != "rn") {
                return Err(format!(
                    "`{ins}`: the `.{m}` modifier is not imported (bwsim's f32 arithmetic rounds to nearest and keeps subnormals)"
                ));
            }
            if *op == "fma" && mods.is_empty() {
                return Err(format!("`{ins}`: `fma` needs a rounding mode"));
            }
            let n = if *op == "fma" { 4 } else { 3 };
            if ops.len() != n {
                return Err(format!("`{ins}` takes {n} operands"));
            }
            let f = |x: &[Sym]| -> Sym {
                let b = |i: usize| Box::new(x[i].clone());
                match *op {
                    "add" => Sym::Add(b(0), b(1)),
                    "sub" => Sym::Sub(b(0), b(1)),
                    "mul" => Sym::Mul(b(0), b(1)),
                    _ => Sym::Fma(b(0), b(1), b(2)),
                }
            };
            if *ty == "f32" {
                let x = ops[1..]
                    .iter()
                    .map(|o| read32(regs, o))
                    .collect::<Result<Vec<_>, _>>()?;
                regs.insert(ops[0].clone(), Reg::B32(f(&x)));
            } else {
                let x = ops[1..]
                    .iter()
                    .map(|o| read_pair(regs, o))
                    .collect::<Result<Vec<_>, _>>()?;
                let lo: Vec<Sym> = x.iter().map(|p| p.0.clone()).collect();
                let hi: Vec<Sym> = x.iter().map(|p| p.1.clone()).collect();
                regs.insert(ops[0].clone(), Reg::Pair(f(&lo), f(&hi)));
            }
        }
        _ => {
            return Err(format!(
                "`{ins}`: bwsim imports inline PTX made of `mov.b32`, `mov.b64` (pairs) and `add`, `sub`, `mul`, `fma.rn` on `.f32` and `.f32x2`"
            ))
        }
    }
    Ok(())
}

/// The `inline_asm` operation: PTX `asm` with operands bound by `constraints` run on `args`,
/// results of the types `res_dtypes`, `pack` elements per run (written only when not 1), and
/// `pure` (written only when false).
pub(super) fn inline_asm_kind(
    asm: &str,
    constraints: &str,
    args: Vec<Expr>,
    res_dtypes: &[DType],
    pack: usize,
    pure: bool,
    span: Span,
) -> OpKind {
    OpKind::InlineAsm {
        asm: with_span(Expr::new(ExprKind::Str(asm.to_string()), span), span),
        constraints: with_span(Expr::new(ExprKind::Str(constraints.to_string()), span), span),
        args: with_span(Expr::list(args), span),
        dtypes: with_span(
            Expr::list(res_dtypes.iter().map(|d| name_e(d.name(), span)).collect()),
            span,
        ),
        pack: (pack != 1).then(|| int_e(pack as i64, span)),
        pure: (!pure).then(|| with_span(Expr::bool(false), span)),
    }
}

/// What a `tt.elementwise_inline_asm` or `ttg.inline_asm` operation says of its PTX: the text,
/// the operand constraints, the elements per call (`packed_element`, default 1) and whether
/// it is pure (default: yes).
pub(super) struct AsmText {
    pub(super) asm: String,
    pub(super) constraints: String,
    pub(super) pack: usize,
    pub(super) pure: bool,
}

impl<'m> Cx<'m> {
    /// The PTX text, constraints, packing and purity of the inline-assembly operation `op`.
    pub(super) fn asm_text(&self, op: &Op) -> R<AsmText> {
        let asm = match op.toks.first().map(|t| &t.tok) {
            Some(Tok::Str(s)) => s.clone(),
            _ => return Err(self.misuse(op, "needs its PTX text")),
        };
        let attrs = self.attr_dict(op)?;
        let constraints = match attrs.get("constraints") {
            Some(AttrVal::Str(c)) => c.clone(),
            _ => return Err(self.misuse(op, "needs `constraints`")),
        };
        let pack = attrs
            .get("packed_element")
            .and_then(|x| x.as_int())
            .unwrap_or(1)
            .max(0) as usize;
        let pure = !matches!(attrs.get("pure"), Some(AttrVal::Bool(false)));
        Ok(AsmText {
            asm,
            constraints,
            pack,
            pure,
        })
    }

    /// `tt.elementwise_inline_asm`: a plain expression per result when the snippet is the
    /// f32 pairing language ([`interpret`]), else the `inline_asm` operation.
    pub(super) fn inline_asm(&mut self, op: &Op, span: Span) -> R<()> {
        let AsmText {
            asm,
            constraints,
            pack,
            pure,
        } = self.asm_text(op)?;
        let args = self.operands(op)?;
        let mut arg_elems = Vec::with_capacity(args.len());
        for (n, s) in &args {
            arg_elems.push(self.val_type(n, *s)?.elem());
        }
        if let Ok(exprs) = interpret(&asm, &constraints, args.len(), op.results.len(), pack) {
            if self.plain_asm_types(op, &exprs, &arg_elems)? {
                return self.plain_asm(op, &exprs, &args, span);
            }
        }
        self.ptx_elementwise(op, &asm, &constraints, pack, pure, span)
    }

    /// Operation `op` as the `inline_asm` operation running the PTX snippet `asm` (operands
    /// bound by `constraints`, `pack` elements per call) on its operands elementwise, its
    /// results `op`'s: the general path of `tt.elementwise_inline_asm`, and how operations
    /// whose meaning is one PTX instruction (`tt.mulhiui`: `mul.hi`, `tt.precise_divf`:
    /// `div.rn`, ...) are imported, so the simulator runs that instruction's semantics and the
    /// PTX backend emits it.
    pub(super) fn ptx_elementwise(
        &mut self,
        op: &Op,
        asm: &str,
        constraints: &str,
        pack: usize,
        pure: bool,
        span: Span,
    ) -> R<()> {
        let args = self.operands(op)?;
        let mut arg_elems = Vec::with_capacity(args.len());
        for (n, s) in &args {
            arg_elems.push(self.val_type(n, *s)?.elem());
        }
        // The general path: the snippet checked by the PTX-subset interpreter.
        let mut arg_dtypes = Vec::with_capacity(args.len());
        for e in &arg_elems {
            arg_dtypes.push(match e.and_then(|e| e.dtype()) {
                Some(d) => d,
                None => return Err(self.unsupported(op, "inline PTX on operands that are not numbers")),
            });
        }
        let mut res_types = Vec::with_capacity(op.results.len());
        let mut res_dtypes = Vec::with_capacity(op.results.len());
        for r in 0..op.results.len() {
            let ty = self.result_type(op, r)?;
            match ty.elem().and_then(|e| e.dtype()) {
                Some(d) => res_dtypes.push(d),
                None => return Err(self.unsupported(op, "inline PTX with results that are not numbers")),
            }
            res_types.push(ty);
        }
        if let Err(e) = bwsim_isa::inline_ptx::compile(asm, constraints, &arg_dtypes, &res_dtypes, pack) {
            return Err(self.unsupported(op, &format!("inline PTX: {}", e.message)));
        }
        // Splats go in as their scalar (the op broadcasts scalars); when every argument is
        // one, the op computes scalars and the results are splats of them.
        let mut splat = Vec::with_capacity(args.len());
        for (n, s) in &args {
            splat.push(matches!(self.get(n, *s)?, Val::Splat(..)));
        }
        let scalar_results = res_dtypes
            .iter()
            .all(|d| matches!(d, DType::I32 | DType::I64 | DType::F32));
        let all_splat = splat.iter().all(|b| *b) && scalar_results && pack == 1;
        let any_tile = splat.iter().any(|b| !b);
        let mut arg_exprs = Vec::with_capacity(args.len());
        for ((n, s), sp) in args.iter().zip(&splat) {
            arg_exprs.push(if *sp && (any_tile || all_splat) {
                self.math_operand(n, *s)?
            } else {
                self.expr(n, *s)?
            });
        }
        let kind = inline_asm_kind(asm, constraints, arg_exprs, &res_dtypes, pack, pure, span);
        let mut names = Vec::with_capacity(op.results.len());
        for r in 0..op.results.len() {
            let res = self.result(op, r)?;
            names.push((res.clone(), self.fresh(&res)));
        }
        self.push(
            StmtKind::Let {
                names: names
                    .iter()
                    .map(|(_, n)| Ident::spanned(n.clone(), span))
                    .collect(),
                value: Rhs::Op(IrOp::new(kind, span)),
            },
            span,
        );
        for ((res, n), ty) in names.into_iter().zip(res_types) {
            let v = if all_splat && matches!(ty, Type::Tensor { .. }) {
                Val::Splat(name_e(&n, span), ty)
            } else {
                Val::E(name_e(&n, span), ty)
            };
            self.bind(&res, v);
        }
        Ok(())
    }

    /// The folds of a reduction or scan of i64 operands that each hold two f32 lanes, when
    /// its combiner folds them lane by lane (`add.f32x2` in inline PTX, Gluon's paired f32
    /// values): `None` when the operands or the combiner are anything else.
    pub(super) fn f32_pair_folds(
        &self,
        op: &Op,
        v: &[(String, Span)],
        ret: &str,
    ) -> R<Option<Vec<ReduceOp>>> {
        for (n, s) in v {
            if self.val_type(n, *s)?.elem() != Some(Elem::I64) {
                return Ok(None);
            }
        }
        Ok(op
            .regions
            .first()
            .filter(|_| op.results.len() == v.len())
            .and_then(|r| super::combiner::identify_f32_pairs(r, ret, v.len())))
    }

    /// Result `i` of a reduction or scan of f32 pairs: the operand split into its lanes
    /// (`mov.b64 {$0, $1}, $2`), each lane folded by `fold` (a `sum`, a `cumsum`, ...), the
    /// lanes paired again (`mov.b64 $0, {$1, $2}`). Lane by lane is what the combiner
    /// computes, so this is the reduction the kernel wrote.
    pub(super) fn f32_pair_fold(
        &mut self,
        op: &Op,
        i: usize,
        x: Expr,
        fold: &dyn Fn(Expr) -> Expr,
        span: Span,
    ) -> R<()> {
        let res = self.result(op, i)?;
        let ty = self.result_type(op, i)?;
        let (lo, hi) = (self.fresh(&format!("{res}_lo")), self.fresh(&format!("{res}_hi")));
        let asm_op = |asm: &str, cons: &str, args: Vec<Expr>, dtypes: &[&str]| OpKind::InlineAsm {
            asm: with_span(Expr::new(ExprKind::Str(asm.into()), span), span),
            constraints: with_span(Expr::new(ExprKind::Str(cons.into()), span), span),
            args: with_span(Expr::list(args), span),
            dtypes: with_span(Expr::list(dtypes.iter().map(|d| name_e(d, span)).collect()), span),
            pack: None,
            pure: None,
        };
        self.push(
            StmtKind::Let {
                names: vec![Ident::spanned(lo.clone(), span), Ident::spanned(hi.clone(), span)],
                value: Rhs::Op(IrOp::new(
                    asm_op("mov.b64 { $0, $1 }, $2;", "=r,=r,l", vec![x], &["f32", "f32"]),
                    span,
                )),
            },
            span,
        );
        let flo = self.let_(&lo, Rhs::Expr(fold(name_e(&lo, span))), span);
        let fhi = self.let_(&hi, Rhs::Expr(fold(name_e(&hi, span))), span);
        let n = self.let_op(
            &res,
            asm_op(
                "mov.b64 $0, { $1, $2 };",
                "=l,r,r",
                vec![name_e(&flo, span), name_e(&fhi, span)],
                &["i64"],
            ),
            span,
        );
        self.bind(&res, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// Whether the f32 expressions of [`interpret`] type-check as plain math: f32 arithmetic
    /// on f32 operands, moves between values of one element type.
    fn plain_asm_types(&self, op: &Op, exprs: &[AsmExpr], arg_elems: &[Option<Elem>]) -> R<bool> {
        for (r, x) in exprs.iter().enumerate() {
            let ty = self.result_type(op, r)?;
            let used = x.args();
            let ok = if x.is_arith() {
                ty.elem() == Some(Elem::F32) && used.iter().all(|&i| arg_elems[i] == Some(Elem::F32))
            } else {
                used.iter().all(|&i| arg_elems[i] == ty.elem())
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn plain_asm(&mut self, op: &Op, exprs: &[AsmExpr], args: &[(String, Span)], span: Span) -> R<()> {
        let all_splat = args
            .iter()
            .map(|(n, s)| self.get(n, *s).map(|v| matches!(v, Val::Splat(..))))
            .collect::<R<Vec<bool>>>()?
            .into_iter()
            .all(|b| b);
        for (r, x) in exprs.iter().enumerate() {
            let ty = self.result_type(op, r)?;
            let e = self.asm_expr(x, args, span)?;
            let res = self.result(op, r)?;
            self.let_val(&res, e, ty, all_splat, span);
        }
        Ok(())
    }

    fn asm_expr(&mut self, x: &AsmExpr, args: &[(String, Span)], span: Span) -> R<Expr> {
        Ok(match x {
            AsmExpr::Arg(i) => self.math_operand(&args[*i].0, args[*i].1)?,
            AsmExpr::Add(a, b) => bin(
                BinOp::Add,
                self.asm_expr(a, args, span)?,
                self.asm_expr(b, args, span)?,
                span,
            ),
            AsmExpr::Sub(a, b) => bin(
                BinOp::Sub,
                self.asm_expr(a, args, span)?,
                self.asm_expr(b, args, span)?,
                span,
            ),
            AsmExpr::Mul(a, b) => bin(
                BinOp::Mul,
                self.asm_expr(a, args, span)?,
                self.asm_expr(b, args, span)?,
                span,
            ),
            AsmExpr::Fma(a, b, c) => {
                let v = vec![
                    self.asm_expr(a, args, span)?,
                    self.asm_expr(b, args, span)?,
                    self.asm_expr(c, args, span)?,
                ];
                call("fma", v, span)
            }
        })
    }
}

fn is_output(name: &str, n_out: usize) -> bool {
    name.strip_prefix('$')
        .and_then(|n| n.parse::<usize>().ok())
        .is_some_and(|n| n < n_out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use AsmExpr::*;

    fn b(e: AsmExpr) -> Box<AsmExpr> {
        Box::new(e)
    }

    const MUL2: &str = "{ .reg .b64 ra, rb, rc;\n mov.b64 ra, { $2, $3 };\n mov.b64 rb, { $4, $5 };\n mul.f32x2 rc, ra, rb;\n mov.b64 { $0, $1 }, rc; }";

    #[test]
    fn paired_multiply_is_elementwise_multiply() {
        assert_eq!(
            interpret(MUL2, "=r,=r,r,r,r,r", 2, 1, 2),
            Ok(vec![Mul(b(Arg(0)), b(Arg(1)))])
        );
    }

    #[test]
    fn paired_fma_and_scalar_forms() {
        let fma = "{ .reg .b64 a, b, c, d; mov.b64 a, {$2, $3}; mov.b64 b, {$4, $5}; mov.b64 c, {$6, $7}; fma.rn.f32x2 d, a, b, c; mov.b64 {$0, $1}, d; }";
        assert_eq!(
            interpret(fma, "=r,=r,r,r,r,r,r,r", 3, 1, 2),
            Ok(vec![Fma(b(Arg(0)), b(Arg(1)), b(Arg(2)))])
        );
        assert_eq!(
            interpret("sub.rn.f32 $0, $2, $1;", "=r,r,r", 2, 1, 1),
            Ok(vec![Sub(b(Arg(1)), b(Arg(0)))])
        );
        assert_eq!(interpret("mov.b32 $0, $1;", "=r,r", 1, 1, 1), Ok(vec![Arg(0)]));
    }

    #[test]
    fn two_results_of_one_pair_operation() {
        // Two row sums folded at once: ($0, $1) = ($2 + $3, $4 + $5) with pack 1.
        let s = "{ .reg .b64 c, a, b; mov.b64 a, { $2, $4 }; mov.b64 b, { $3, $5 }; add.f32x2 c, a, b; mov.b64 { $0, $1 }, c; }";
        assert_eq!(
            interpret(s, "=r,=r,r,r,r,r", 4, 2, 1),
            Ok(vec![Add(b(Arg(0)), b(Arg(1))), Add(b(Arg(2)), b(Arg(3)))])
        );
    }

    #[test]
    fn refusals_name_the_reason() {
        let e = interpret("mov.b32 $0, $0;", "=r,r", 1, 1, 1).unwrap_err();
        assert!(e.contains("before writing it"), "{e}");
        let e = interpret("ex2.approx.f32 $0, $1;", "=r,r", 1, 1, 1).unwrap_err();
        assert!(e.contains("ex2.approx.f32"), "{e}");
        let e = interpret("mul.ftz.f32 $0, $1, $2;", "=r,r,r", 2, 1, 1).unwrap_err();
        assert!(e.contains(".ftz"), "{e}");
        // Lanes swapped: element 0 of the result reads element 1 of the argument.
        let swap = "{ .reg .b64 a; mov.b64 a, {$3, $2}; mov.b64 {$0, $1}, a; }";
        let e = interpret(swap, "=r,=r,r,r", 1, 1, 2).unwrap_err();
        assert!(e.contains("mixes elements"), "{e}");
        let e = interpret("mov.b32 $0, $1;", "=l,l", 1, 1, 1).unwrap_err();
        assert!(e.contains("32-bit"), "{e}");
    }
}
