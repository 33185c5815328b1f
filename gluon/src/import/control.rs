//! Control flow: `scf.for`, `scf.while` and `scf.if` (iteration arguments and results as
//! variables),
//! `ttg.warp_specialize` and the naming of its workers after their Python functions.

use super::*;

impl<'m> Cx<'m> {
    /// A variable holding a loop-carried or `if`-produced value, initialised to `init`.
    pub(super) fn carried(&mut self, hint: &str, init: Val, span: Span) -> R<(Option<String>, Val)> {
        Ok(match init {
            Val::Token => (None, Val::Token),
            Val::E(e, ty) => {
                let n = self.let_(hint, Rhs::Expr(e), span);
                (Some(n.clone()), Val::E(name_e(&n, span), ty))
            }
            Val::Splat(s, ty) => {
                let f = self.full(&ty, s, span)?;
                let n = self.let_(hint, Rhs::Expr(f), span);
                (Some(n.clone()), Val::E(name_e(&n, span), ty))
            }
            Val::Mbars(e) => {
                let n = self.let_(hint, Rhs::Expr(e), span);
                (Some(n.clone()), Val::Mbars(name_e(&n, span)))
            }
            Val::Ptr { .. } => {
                return Err(ImportError::Unsupported {
                    op: "scf.for".into(),
                    message: "pointers carried through a loop are not supported".into(),
                    span,
                    ttgir: span,
                })
            }
            Val::Clc(_) => {
                return Err(ImportError::Unsupported {
                    op: "scf.for".into(),
                    message: "a cluster-launch-control response (`clc.load_result`) carried through a loop or \
                              `if` is not supported: query it (`is_canceled()`, `program_id(d)`) where it is loaded"
                        .into(),
                    span,
                    ttgir: span,
                })
            }
            Val::Unusable(m) => (None, Val::Unusable(m)),
            Val::Poison => (None, Val::Poison),
        })
    }

    /// Import the operations of a region body into the current block, its `scf.yield`
    /// turned into assignments to `vars` ([`Cx::assign_yields`]; an error there is reported
    /// and the import goes on).
    fn yielding_ops(&mut self, ops: &[Op], vars: &[Option<String>]) -> R<()> {
        for o in ops {
            if o.name == "scf.yield" {
                let y = self.operands(o)?;
                let yspan = self.span_of(o);
                if let Err(e) = self.assign_yields(vars, &y, yspan) {
                    self.errors.push(e);
                }
                continue;
            }
            self.op_or_report(o);
        }
        Ok(())
    }

    /// Assign yielded values to their variables (through temporaries when one reads a
    /// variable assigned before it).
    pub(super) fn assign_yields(
        &mut self,
        vars: &[Option<String>],
        yields: &[(String, Span)],
        span: Span,
    ) -> R<()> {
        let mut pairs = Vec::new();
        for (var, (y, ys)) in vars.iter().zip(yields) {
            let Some(var) = var else { continue };
            if matches!(self.get(y, *ys)?, Val::Token) {
                continue;
            }
            let e = self.expr(y, *ys)?;
            if matches!(&e.kind, ExprKind::Name(n) if n == var) {
                continue;
            }
            pairs.push((var.clone(), e));
        }
        let conflict = pairs
            .iter()
            .enumerate()
            .any(|(i, (_, e))| pairs[..i].iter().any(|(v, _)| mentions(e, v)));
        if conflict {
            let mut temps = Vec::new();
            for (v, e) in &pairs {
                let t = self.let_(&format!("{v}_next"), Rhs::Expr(e.clone()), span);
                temps.push((v.clone(), name_e(&t, span)));
            }
            pairs = temps;
        }
        for (v, e) in pairs {
            self.assign(&v, Rhs::Expr(e), span);
        }
        Ok(())
    }

    pub(super) fn scf_for(&mut self, op: &Op, span: Span) -> R<()> {
        let toks = &op.toks;
        let mut c = Cursor::new(toks, op.span);
        let (iv, _) = c.value()?;
        c.expect("=")?;
        let (lb, lbs) = c.value()?;
        if !c.eat_ident("to") {
            return Err(c.err("expected `to`"));
        }
        let (ub, ubs) = c.value()?;
        if !c.eat_ident("step") {
            return Err(c.err("expected `step`"));
        }
        let (st, sts) = c.value()?;
        let iters = if c.eat_ident("iter_args") {
            arg_inits(c.group()?, op.span)?
        } else {
            Vec::new()
        };
        if self.attr_dict(op)?.has("unsignedCmp") {
            return Err(self.misuse(op, "unsigned loop bounds are not supported"));
        }
        let Some(Tok::Region(ri)) = toks.iter().map(|t| &t.tok).find(|t| matches!(t, Tok::Region(_))) else {
            return Err(self.misuse(op, "a loop without a body"));
        };
        let region = &op.regions[*ri];
        let start = self.math_operand(&lb, lbs)?;
        let end = self.math_operand(&ub, ubs)?;
        let step = self.math_operand(&st, sts)?;
        let step = if matches!(step.kind, ExprKind::Int(1)) {
            None
        } else {
            Some(step)
        };
        let yields = match region.ops.last() {
            Some(y) if y.name == "scf.yield" => self.operands(y)?,
            _ => Vec::new(),
        };
        let mut vars = Vec::new();
        let mut bindings = Vec::new();
        for (i, (a, init, is)) in iters.iter().enumerate() {
            // The iteration argument's name, unless it is MLIR's `argN`: then the name of the
            // value the body yields for it (the Python variable's), else the result's.
            let yielded = yields.get(i).map(|(y, _)| y.split('#').next().unwrap_or(y));
            let hint = if !generic_name(a) {
                a.as_str()
            } else if let Some(y) = yielded.filter(|y| !generic_name(y)) {
                y
            } else {
                op.results.get(i).and_then(|r| r.split('#').next()).unwrap_or(a)
            };
            let v = self.get(init, *is)?;
            let (var, val) = self.carried(hint, v, span)?;
            vars.push(var);
            bindings.push((a.clone(), val));
        }
        let ivn = self.fresh(&iv);
        bindings.push((iv.clone(), Val::E(name_e(&ivn, span), Type::Scalar(Elem::I32))));
        // The body, with the yield turned into assignments.
        self.scopes.push(HashMap::new());
        for (n, v) in &bindings {
            self.bind(n, v.clone());
        }
        self.blocks.push(Vec::new());
        self.yielding_ops(&region.ops, &vars)?;
        let stmts = self.blocks.pop().unwrap_or_default();
        self.scopes.pop();
        self.push(
            StmtKind::For(ForLoop {
                var: Ident::spanned(ivn, span),
                start,
                end,
                step,
                body: Block {
                    stmts,
                    end_comments: Vec::new(),
                },
                unrolled: false,
            }),
            span,
        );
        for (i, r) in op.results.iter().enumerate() {
            let v = bindings.get(i).map(|b| b.1.clone()).unwrap_or(Val::Poison);
            self.bind(r, v);
        }
        Ok(())
    }

    /// `scf.while (%a = %init, ...) { before } do { ^bb0(%b...): after }`: the before region
    /// computes the condition and the values it forwards (`scf.condition(%c) %f...`) to the
    /// after region and to the results; the after region yields the next iteration's `%a`.
    /// bwsim has a test-first `while`, so the before region is imported twice, ahead of the
    /// loop and at the end of its body:
    ///
    /// ```text
    /// let a = init; [before]; let c = cond; let f = forwarded
    /// while c { [after, with b = f]; a = yields; [before]; c = cond; f = forwarded }
    /// ```
    pub(super) fn scf_while(&mut self, op: &Op, span: Span) -> R<()> {
        let mut c = Cursor::new(&op.toks, op.span);
        let inits = arg_inits(c.group()?, op.span)?;
        let regions: Vec<&Region> = op
            .toks
            .iter()
            .filter_map(|t| match t.tok {
                Tok::Region(i) => op.regions.get(i),
                _ => None,
            })
            .collect();
        let (Some(before), Some(after)) = (regions.first(), regions.get(1)) else {
            return Err(self.misuse(op, "a `while` without its two regions"));
        };
        let Some(cond_op) = before.ops.last().filter(|o| o.name == "scf.condition") else {
            return Err(self.misuse(op, "the `before` region does not end in `scf.condition`"));
        };
        // The after region's block arguments, in order.
        let mut after_args = Vec::new();
        let mut ac = Cursor::new(&after.label_args, op.span);
        while !ac.at_end() {
            let (a, _) = ac.value()?;
            after_args.push(a);
            while !ac.at_end() && !ac.eat(",") {
                ac.skip_item();
            }
        }
        // Variables for the before region's arguments.
        let mut vars = Vec::new();
        let mut bindings = Vec::new();
        for (a, init, is) in &inits {
            let v = self.get(init, *is)?;
            let hint = if generic_name(a) { "w" } else { a.as_str() };
            let (var, val) = self.carried(hint, v, span)?;
            vars.push(var);
            bindings.push((a.clone(), val));
        }
        // The before region once: the condition and the forwarded values as variables.
        let (cond_e, fwd) = self.while_before(before, cond_op, &bindings)?;
        let (cond_var, _) = self.carried("cond", Val::E(cond_e, Type::Scalar(Elem::I1)), span)?;
        let mut fvars = Vec::new();
        let mut fvals = Vec::new();
        for (i, f) in fwd.into_iter().enumerate() {
            let hint = after_args
                .get(i)
                .filter(|a| !generic_name(a))
                .cloned()
                .unwrap_or_else(|| "fwd".to_string());
            let (var, val) = self.carried(&hint, f, span)?;
            fvars.push(var);
            fvals.push(val);
        }
        let Some(cond_var) = cond_var else {
            return Err(self.misuse(op, "the `while` condition has no value"));
        };
        // The body: after region, yields to the before arguments, then the before region again.
        self.scopes.push(HashMap::new());
        for (n, v) in after_args.iter().zip(&fvals) {
            self.bind(n, v.clone());
        }
        for (n, v) in &bindings {
            if !after_args.contains(n) {
                self.bind(n, v.clone());
            }
        }
        self.blocks.push(Vec::new());
        self.yielding_ops(&after.ops, &vars)?;
        self.scopes.pop();
        let (c2, f2) = self.while_before(before, cond_op, &bindings)?;
        let cspan = self.span_of(cond_op);
        self.assign(&cond_var, Rhs::Expr(c2), cspan);
        for (var, f) in fvars.iter().zip(f2) {
            let Some(var) = var else { continue };
            if let Val::E(e, _) | Val::Splat(e, _) = f {
                self.assign(var, Rhs::Expr(e), cspan);
            }
        }
        let stmts = self.blocks.pop().unwrap_or_default();
        self.push(
            StmtKind::While {
                cond: name_e(&cond_var, span),
                body: Block {
                    stmts,
                    end_comments: Vec::new(),
                },
            },
            span,
        );
        for (i, r) in op.results.iter().enumerate() {
            let v = fvals.get(i).cloned().unwrap_or(Val::Poison);
            self.bind(r, v);
        }
        Ok(())
    }

    /// Import a `while`'s before region (in a scope of its own, its arguments bound to the
    /// loop variables): the condition and the forwarded values.
    fn while_before(
        &mut self,
        before: &Region,
        cond_op: &Op,
        bindings: &[(String, Val)],
    ) -> R<(Expr, Vec<Val>)> {
        self.scopes.push(HashMap::new());
        for (n, v) in bindings {
            self.bind(n, v.clone());
        }
        for o in &before.ops[..before.ops.len() - 1] {
            self.op_or_report(o);
        }
        let r = (|| {
            let operands = self.operands(cond_op)?;
            let Some(((cn, cs), rest)) = operands.split_first() else {
                return Err(self.misuse(cond_op, "`scf.condition` without a condition"));
            };
            let cond = self.math_operand(cn, *cs)?;
            let mut fwd = Vec::new();
            for (f, fs) in rest {
                fwd.push(self.get(f, *fs)?);
            }
            Ok((cond, fwd))
        })();
        self.scopes.pop();
        r
    }

    pub(super) fn scf_if(&mut self, op: &Op, span: Span) -> R<()> {
        let mut c = Cursor::new(&op.toks, op.span);
        let (cond, cs) = c.value()?;
        let cond = self.math_operand(&cond, cs)?;
        let regions: Vec<&Region> = op
            .toks
            .iter()
            .filter_map(|t| {
                if let Tok::Region(i) = t.tok {
                    op.regions.get(i)
                } else {
                    None
                }
            })
            .collect();
        let then_r = regions
            .first()
            .ok_or_else(|| self.misuse(op, "an `if` without a body"))?;
        // Results: variables declared before the `if`, zero until a branch assigns them.
        let mut vars = Vec::new();
        for (i, r) in op.results.iter().enumerate() {
            let ty = self.result_type(op, i)?;
            let zero = match &ty {
                Type::Scalar(Elem::I1) => Val::E(with_span(Expr::bool(false), span), ty.clone()),
                Type::Scalar(e) if e.is_float() => {
                    Val::E(float_e(0.0, span).unwrap_or_else(|| int_e(0, span)), ty.clone())
                }
                Type::Scalar(_) => Val::E(int_e(0, span), ty.clone()),
                Type::Tensor { elem, .. } if !matches!(**elem, Type::Ptr(_)) => {
                    let z = if ty.elem().is_some_and(|e| e.is_float()) {
                        float_e(0.0, span).unwrap_or_else(|| int_e(0, span))
                    } else {
                        int_e(0, span)
                    };
                    Val::Splat(z, ty.clone())
                }
                _ => return Err(self.misuse(op, "an `if` producing buffers or pointers is not supported")),
            };
            let (var, val) = self.carried(r, zero, span)?;
            vars.push((var, val));
        }
        let var_names: Vec<Option<String>> = vars.iter().map(|v| v.0.clone()).collect();
        let branch = |cx: &mut Cx, r: &Region| -> R<Block> {
            cx.scopes.push(HashMap::new());
            cx.blocks.push(Vec::new());
            cx.yielding_ops(&r.ops, &var_names)?;
            let stmts = cx.blocks.pop().unwrap_or_default();
            cx.scopes.pop();
            Ok(Block {
                stmts,
                end_comments: Vec::new(),
            })
        };
        let then_body = branch(self, then_r)?;
        let else_body = match regions.get(1) {
            Some(r) if !r.ops.is_empty() => Some(branch(self, r)?),
            _ => None,
        };
        self.push(
            StmtKind::If {
                cond,
                then_body,
                else_body,
            },
            span,
        );
        for (r, (_, v)) in op.results.iter().zip(vars) {
            self.bind(r, v);
        }
        Ok(())
    }

    /// `tt.map_elementwise(%a, ...) <{pack = 1}> ({ ^bb0(%x, ...): ... tt.map_elementwise.return %r })`
    /// (Gluon's `gl.map_elementwise(fn, a, ...)`): the body's scalar operations applied to
    /// every element, which is what the same operations do on whole tiles. The body is imported
    /// inline with its block arguments bound to the operand tiles and its scalar types read as
    /// the result's tensor type. `pack > 1` (several elements per call) is refused.
    pub(super) fn map_elementwise(&mut self, op: &Op, span: Span) -> R<()> {
        let pack = self
            .attr_dict(op)?
            .get("pack")
            .and_then(|p| p.as_int())
            .unwrap_or(1);
        if pack != 1 {
            return Err(self.unsupported(
                op,
                &format!(
                    "`pack = {pack}`: bwsim imports map_elementwise bodies applied to one element at a time"
                ),
            ));
        }
        let Some(region) = op.regions.first() else {
            return Err(self.misuse(op, "needs a body"));
        };
        let operands = self.operands(op)?;
        let args = combiner::block_args(region);
        if args.len() != operands.len() {
            return Err(self.misuse(
                op,
                format!("{} operands for {} block arguments", operands.len(), args.len()),
            ));
        }
        let ty = self.result_type(op, 0)?;
        if !ty.is_tensor() {
            return Err(self.misuse(op, "a map over scalars"));
        }
        let mut bindings = Vec::new();
        for ((name, sp), arg) in operands.iter().zip(&args) {
            bindings.push((arg.clone(), self.get(name, *sp)?));
        }
        self.scopes.push(HashMap::new());
        for (n, v) in bindings {
            self.bind(&n, v);
        }
        let saved = self.elementwise.replace(ty);
        let mut returned = Vec::new();
        for inner in &region.ops {
            if inner.name == "tt.map_elementwise.return" {
                for (n, sp) in self.operands(inner)? {
                    returned.push(self.get(&n, sp));
                }
                continue;
            }
            self.op_or_report(inner);
        }
        self.elementwise = saved;
        self.scopes.pop();
        if returned.len() != op.results.len() {
            return Err(self.misuse(
                op,
                format!(
                    "the body returns {} values for {} results",
                    returned.len(),
                    op.results.len()
                ),
            ));
        }
        for (i, (r, v)) in op.results.iter().zip(returned).enumerate() {
            let v = v?;
            let rty = self.result_type(op, i)?;
            // A body that returns an operand or a constant as it is: make it a tile.
            let v = match v {
                Val::Splat(e, _) => Val::Splat(e, rty),
                Val::E(e, t) if !t.is_tensor() => Val::Splat(e, rty),
                other => other,
            };
            let _ = span;
            self.bind(r, v);
        }
        Ok(())
    }

    pub(super) fn warp_specialize(&mut self, op: &Op, span: Span) -> R<()> {
        if !op.results.is_empty() {
            return Err(self.misuse(op, "a default partition that returns values is not supported"));
        }
        let mut c = Cursor::new(&op.toks, op.span);
        let mut captured = Vec::new();
        if matches!(c.peek(), Tok::Punct("(")) {
            for t in c.group()? {
                if let Tok::Value(v) = &t.tok {
                    captured.push((v.clone(), t.span));
                }
            }
        }
        let attrs = self.attr_dict(op)?;
        let regs = attrs
            .get("requestedRegisters")
            .and_then(|x| x.ints())
            .unwrap_or_default();
        let mut default = None;
        let mut workers = Vec::new();
        while !c.at_end() {
            match c.peek().clone() {
                Tok::Ident(w) if w == "default" => {
                    c.bump();
                    let Tok::Region(ri) = *c.peek() else {
                        return Err(c.err("expected the default partition's body"));
                    };
                    c.bump();
                    let r = &op.regions[ri];
                    let body = self.region_block(r, &[])?;
                    default = Some(DefaultPartition {
                        comments: Vec::new(),
                        regs: None,
                        body,
                        span,
                    });
                }
                Tok::Ident(w) if w.starts_with("partition") => {
                    c.bump();
                    let args = if matches!(c.peek(), Tok::Punct("(")) {
                        c.group()?
                    } else {
                        &[]
                    };
                    let params = partition_params(args);
                    let mut warps = 1;
                    if c.eat_ident("num_warps") {
                        let g = c.group()?;
                        if let Some(Tok::Int(n)) = g.first().map(|t| &t.tok) {
                            warps = *n;
                        }
                    }
                    let Tok::Region(ri) = *c.peek() else {
                        return Err(c.err("expected the partition's body"));
                    };
                    c.bump();
                    let k = workers.len();
                    let mut bindings = Vec::new();
                    for (i, p) in params.iter().enumerate() {
                        let (n, s) = captured.get(i).ok_or_else(|| {
                            self.misuse(op, "more partition arguments than captured values")
                        })?;
                        bindings.push((p.clone(), self.get(n, *s)?));
                    }
                    let r = &op.regions[ri];
                    let wname = self.worker_name(r, k);
                    let outer_warps = std::mem::replace(&mut self.warps, warps);
                    let body = self.region_block(r, &bindings);
                    self.warps = outer_warps;
                    let body = body?;
                    let reg = *regs.get(k).ok_or_else(|| {
                        self.misuse(
                            op,
                            format!("no register budget for partition {k} (requestedRegisters)"),
                        )
                    })?;
                    workers.push(Worker {
                        comments: Vec::new(),
                        name: Ident::spanned(wname, span),
                        warps: int_e(warps, span),
                        regs: int_e(reg, span),
                        body,
                        span,
                    });
                }
                _ => {
                    c.bump();
                }
            }
        }
        let default = default.ok_or_else(|| self.misuse(op, "no default partition"))?;
        self.push(StmtKind::WarpSpecialize { default, workers }, span);
        Ok(())
    }

    /// A worker's name: the Python function its code comes from, when the file is readable.
    pub(super) fn worker_name(&mut self, r: &Region, k: usize) -> String {
        let from_python = r.ops.iter().find_map(|o| {
            let f = self.locs.user_frame(o.loc.as_deref()?)?;
            if !self.src.is_real(&f.file) {
                return None;
            }
            let sp = self.src.span(&f)?;
            enclosing_def(&self.src.file.text, sp.start as usize)
        });
        let base = match from_python {
            Some(n) => n.trim_end_matches("_partition").to_string(),
            None => format!("partition{k}"),
        };
        let mut name = base.clone();
        let mut i = 2;
        while self.workers_named.contains(&name) || self.names.contains(&name) {
            name = format!("{base}_{i}");
            i += 1;
        }
        self.workers_named.insert(name.clone());
        name
    }
}

/// The name of the Python `def` enclosing byte `at` of `text` (the nearest `def` above it
/// that is less indented).
pub(super) fn enclosing_def(text: &str, at: usize) -> Option<String> {
    let before = text.get(..at)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let here = &text[line_start..];
    let indent = here.len() - here.trim_start().len();
    for line in before[..line_start].lines().rev() {
        let t = line.trim_start();
        let ind = line.len() - t.len();
        if ind < indent {
            if let Some(rest) = t.strip_prefix("def ") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                return (!name.is_empty()).then_some(name);
            }
            if !t.is_empty() && !t.starts_with('#') && !t.starts_with('@') && !t.starts_with(')') {
                // A less indented statement that is not a `def`: keep looking outwards.
                continue;
            }
        }
    }
    None
}

/// Whether an SSA name says nothing of the Python variable (`%arg16`, `%0`, `%c1_i32`, `%true`).
pub(super) fn generic_name(n: &str) -> bool {
    n.strip_prefix("arg")
        .is_some_and(|d| d.chars().all(|c| c.is_ascii_digit()))
        || n.starts_with(|c: char| c.is_ascii_digit())
        || n.starts_with("cst")
        || n.starts_with("true")
        || n.starts_with("false")
        || (n.starts_with('c') && n[1..].starts_with(|c: char| c.is_ascii_digit()))
}

/// The `(%a = %init, ...)` group of a loop's iteration arguments (`scf.for`'s `iter_args`,
/// `scf.while`'s initial values): each block argument's name with its initial value and that
/// value's span.
fn arg_inits(g: &[Token], end: Span) -> R<Vec<(String, String, Span)>> {
    let mut gc = Cursor::new(g, end);
    let mut inits = Vec::new();
    while !gc.at_end() {
        let (a, _) = gc.value()?;
        gc.expect("=")?;
        let (init, is) = gc.value()?;
        inits.push((a, init, is));
        gc.eat(",");
    }
    Ok(inits)
}

/// The parameter names of a `partitionN(%a: T, %b: U, ...)` header (the tokens inside its
/// parentheses), in order: each is bound to the captured operand at its position.
pub(super) fn partition_params(args: &[Token]) -> Vec<String> {
    let mut params = Vec::new();
    let mut depth = 0i64;
    for (i, t) in args.iter().enumerate() {
        match t.tok {
            Tok::Punct("(") | Tok::Punct("<") | Tok::Punct("[") | Tok::Punct("{") => depth += 1,
            Tok::Punct(")") | Tok::Punct(">") | Tok::Punct("]") | Tok::Punct("}") => depth -= 1,
            Tok::Value(ref v)
                if depth == 0 && matches!(args.get(i + 1).map(|t| &t.tok), Some(Tok::Punct(":"))) =>
            {
                params.push(v.clone())
            }
            _ => {}
        }
    }
    params
}

/// The names of the module's `ttg.local_alloc`s that hold data although their type is an
/// mbarrier's (`i64`, shape `[1]` or `[N, 1]`): read or written by `ttg.local_load` /
/// `ttg.local_store` (through views and `warp_specialize` captures) and never initialised as a
/// barrier. Such a buffer (a tile id handed between partitions, say) is a plain buffer.
///
/// Each view is resolved to its allocation where it is defined: a `warp_specialize` partition
/// is isolated from the code around it, so its value names (`%2`, its parameters `%arg1`)
/// restart and may name other values in the next partition or outside; the names a
/// partition defines are forgotten once the `warp_specialize` has been read.
pub(super) fn i64_data_allocs(ops: &[Op]) -> HashSet<String> {
    fn root(alias: &HashMap<String, String>, n: &str) -> String {
        let mut cur = n.to_string();
        // Each link points at an earlier definition; the walk ends.
        for _ in 0..alias.len() + 1 {
            match alias.get(&cur) {
                Some(next) => cur = next.clone(),
                None => break,
            }
        }
        cur
    }
    fn walk(
        ops: &[Op],
        alias: &mut HashMap<String, String>,
        data: &mut Vec<String>,
        bars: &mut Vec<String>,
        allocs: &mut Vec<String>,
    ) {
        for op in ops {
            let vals = operand_values(&op.toks);
            match op.name.as_str() {
                "ttg.local_alloc" => allocs.extend(op.results.iter().cloned()),
                n if n.starts_with("ttg.memdesc_") => {
                    if let (Some(r), Some(src)) = (op.results.first(), vals.first()) {
                        let to = root(alias, src);
                        alias.insert(r.clone(), to);
                    }
                }
                "ttg.local_load" => data.extend(vals.first().map(|v| root(alias, v))),
                "ttg.local_store" => data.extend(vals.get(1).map(|v| root(alias, v))),
                "ttng.init_barrier" => bars.extend(vals.first().map(|v| root(alias, v))),
                "ttg.warp_specialize" => {
                    let outer = alias.clone();
                    let mut c = Cursor::new(&op.toks, op.span);
                    let captured = match c.peek() {
                        Tok::Punct("(") => c.group().map(operand_values).unwrap_or_default(),
                        _ => Vec::new(),
                    };
                    while !c.at_end() {
                        if matches!(c.peek(), Tok::Ident(w) if w.starts_with("partition")) {
                            c.bump();
                            if matches!(c.peek(), Tok::Punct("(")) {
                                let params = c.group().map(partition_params).unwrap_or_default();
                                for (p, v) in params.into_iter().zip(&captured) {
                                    let to = root(&outer, v);
                                    alias.insert(p, to);
                                }
                            }
                        } else {
                            c.bump();
                        }
                    }
                    for r in &op.regions {
                        walk(&r.ops, alias, data, bars, allocs);
                    }
                    *alias = outer;
                    continue;
                }
                _ => {}
            }
            for r in &op.regions {
                walk(&r.ops, alias, data, bars, allocs);
            }
        }
    }
    let (mut alias, mut data, mut bars, mut allocs) = Default::default();
    walk(ops, &mut alias, &mut data, &mut bars, &mut allocs);
    let bars: HashSet<String> = bars.into_iter().collect();
    let data: HashSet<String> = data.into_iter().collect();
    allocs
        .into_iter()
        .filter(|a| data.contains(a) && !bars.contains(a))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::i64_data_allocs;

    fn data_allocs(text: &str) -> Vec<String> {
        let toks = crate::lexer::lex(text, 0).expect("lexes");
        let m = crate::syntax::parse(toks).expect("parses");
        let mut v: Vec<String> = i64_data_allocs(&m.ops).into_iter().collect();
        v.sort();
        v
    }

    /// The partitions of a `warp_specialize` reuse the names `%2` and `%3` for views of
    /// different captures, and `%2` for a name of the code around them (partitions are
    /// isolated from above): the barrier batch `%bar` is initialised as barriers through the
    /// outer `%2`, `%ids` is an i64 buffer only loaded and stored (partition1's `%2`).
    #[test]
    fn views_resolve_where_they_are_defined_in_each_partition() {
        let text = r#"
module {
  tt.func public @k() {
    %c0 = arith.constant 0 : i32
    %bar = ttg.local_alloc : () -> !ttg.memdesc<4x1xi64, #shared, #smem, mutable>
    %ids = ttg.local_alloc : () -> !ttg.memdesc<1xi64, #shared, #smem, mutable>
    %2 = ttg.memdesc_index %bar[%c0] : !ttg.memdesc<4x1xi64, #shared, #smem, mutable> -> !ttg.memdesc<1xi64, #shared, #smem, mutable>
    ttng.init_barrier %2, 1 : !ttg.memdesc<1xi64, #shared, #smem, mutable>
    ttg.warp_specialize(%ids, %bar)
    default {
      ttg.warp_yield
    }
    partition0(%arg1: !ttg.memdesc<1xi64, #shared, #smem, mutable>, %arg2: !ttg.memdesc<4x1xi64, #shared, #smem, mutable>) num_warps(1) {
      %c0_1 = arith.constant 0 : i32
      %2 = ttg.memdesc_index %arg2[%c0_1] : !ttg.memdesc<4x1xi64, #shared, #smem, mutable> -> !ttg.memdesc<1xi64, #shared, #smem, mutable>
      ttng.wait_barrier %2, %c0_1 : !ttg.memdesc<1xi64, #shared, #smem, mutable>
      %3 = ttg.local_load %arg1 : !ttg.memdesc<1xi64, #shared, #smem, mutable> -> tensor<1xi64, #blocked>
      ttg.warp_return
    }
    partition1(%arg1: !ttg.memdesc<1xi64, #shared, #smem, mutable>, %arg2: !ttg.memdesc<4x1xi64, #shared, #smem, mutable>) num_warps(1) {
      %c0_1 = arith.constant 0 : i32
      %2 = ttg.memdesc_subslice %arg1[0] : !ttg.memdesc<1xi64, #shared, #smem, mutable> -> !ttg.memdesc<1xi64, #shared, #smem, mutable>
      %cst = arith.constant dense<0> : tensor<1xi64, #blocked>
      ttg.local_store %cst, %2 : tensor<1xi64, #blocked> -> !ttg.memdesc<1xi64, #shared, #smem, mutable>
      %3 = ttg.memdesc_index %arg2[%c0_1] : !ttg.memdesc<4x1xi64, #shared, #smem, mutable> -> !ttg.memdesc<1xi64, #shared, #smem, mutable>
      ttng.arrive_barrier %3, 1 : !ttg.memdesc<1xi64, #shared, #smem, mutable>
      ttg.warp_return
    }
    tt.return
  }
}
"#;
        assert_eq!(data_allocs(text), vec!["ids".to_string()]);
    }
}
