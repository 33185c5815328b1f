//! Control flow: unrolled and dynamic loops (`static_for`, `for`, `while`) with their phi
//! registers and parallel copies, dynamic `if`, and `warp_specialize` (partition entry, the
//! leader election, the fork and the join).

use super::*;

impl<'c, 'k> Lowerer<'c, 'k> {
    /// The constant range of a `static_for`: start, end and the (positive) step.
    pub(super) fn static_range(
        &self,
        start: &Expr,
        end: &Expr,
        step: Option<&Expr>,
        span: Span,
    ) -> LResult<(i64, i64, i64)> {
        let int = |e: &Expr| {
            self.consts
                .int(e)
                .map_err(|d| invalid("static_for", span, d.message))
        };
        let (a, b) = (int(start)?, int(end)?);
        let st = match step {
            Some(e) => int(e)?,
            None => 1,
        };
        if st <= 0 {
            return Err(invalid("static_for", span, "step must be positive"));
        }
        Ok((a, b, st))
    }

    /// `static_for`: the body once per value of `var` in the range, `var` a constant in each.
    pub(super) fn static_for(
        &mut self,
        var: &Ident,
        (a, b, st): (i64, i64, i64),
        body: &Block,
    ) -> LResult<()> {
        let prev = self.consts.get(&var.name);
        let mut i = a;
        self.depth += 1;
        self.static_depth += 1;
        let mut r = Ok(());
        while i < b {
            self.consts.bind(&var.name, ConstValue::Int(i));
            self.scopes.push(HashMap::new());
            self.iters.push(i);
            r = self.block(body);
            self.iters.pop();
            self.scopes.pop();
            if r.is_err() {
                break;
            }
            i += st;
        }
        self.depth -= 1;
        self.static_depth -= 1;
        match prev {
            Some(v) => self.consts.bind(&var.name, v),
            None => self.consts.unbind(&var.name),
        }
        r
    }

    /// Phi registers for the outer names a region assigns: each gets fresh registers holding
    /// its current value, and is rebound to them.
    pub(super) fn make_phis(&mut self, body: &[&Block], span: Span) -> LResult<Vec<(String, Val)>> {
        let mut names = BTreeSet::new();
        for b in body {
            assigned_names(b, &mut names);
        }
        let mut phis = Vec::new();
        for n in names {
            let Some(cur) = self.lookup_var(&n).cloned() else {
                continue;
            };
            // A register tile that no other binding shares serves as its own phi: the back
            // edge then writes the next value over it. Copying it instead would keep two
            // accumulators live across the loop, and ptxas serializes every wgmma of a loop
            // whose accumulator is moved between register sets (C7511, "insufficient register
            // resources for the wgmma pipeline").
            if let Val::Tile(t) = &cur {
                if !self.tile_regs_shared(&n, &t.regs) {
                    phis.push((n, cur));
                    continue;
                }
            }
            let phi = self.fresh_like(&cur, span)?;
            self.parallel_copy(&[(phi.clone(), cur)], span)?;
            self.rebind(&n, phi.clone());
            phis.push((n, phi));
        }
        Ok(phis)
    }

    /// Whether a binding other than `name`'s innermost one holds any of `regs`.
    pub(super) fn tile_regs_shared(&self, name: &str, regs: &[Reg]) -> bool {
        fn holds(v: &Val, set: &BTreeSet<String>) -> bool {
            match v {
                Val::Tile(t) => t.regs.iter().any(|r| set.contains(&r.to_string())),
                Val::Tuple(vs) => vs.iter().any(|x| holds(x, set)),
                _ => false,
            }
        }
        let set: BTreeSet<String> = regs.iter().map(|r| r.to_string()).collect();
        let owner = self.scopes.iter().rposition(|s| s.contains_key(name));
        self.scopes.iter().enumerate().any(|(i, scope)| {
            scope
                .iter()
                .any(|(n, v)| !(Some(i) == owner && n == name) && holds(v, &set))
        })
    }

    /// Fresh registers with the shape of a value.
    pub(super) fn fresh_like(&mut self, v: &Val, span: Span) -> LResult<Val> {
        Ok(match v {
            Val::Scalar(t, _) => Val::Scalar(*t, self.e.reg(scalar_class(*t))),
            Val::Tile(t) => {
                let regs = t.regs.iter().map(|r| self.e.reg(r.class)).collect();
                Val::Tile(Tile { regs, ..t.clone() })
            }
            Val::Smem(s) => {
                let reg = self.e.reg(RegClass::B32);
                Val::Smem(SmemView {
                    base: Addr { reg, off: 0 },
                    ..s.clone()
                })
            }
            Val::Tmem(t) => {
                let reg = self.e.reg(RegClass::B32);
                Val::Tmem(TmemView {
                    dynamic: Some(reg),
                    cols: 0,
                    ..t.clone()
                })
            }
            other => {
                return Err(unsupported(
                    "=",
                    span,
                    format!("reassigning {} inside a loop or a dynamic `if`", other.kind()),
                ))
            }
        })
    }

    /// Copy each source value into its phi registers, all reads before all writes.
    pub(super) fn parallel_copy(&mut self, pairs: &[(Val, Val)], span: Span) -> LResult<()> {
        let mut moves: Vec<(Reg, String)> = Vec::new();
        let refused = |reason: &dyn std::fmt::Display| unsupported("=", span, reason);
        for (phi, src) in pairs {
            match (phi, src) {
                (Val::Scalar(t, d), s) => {
                    let op = self.scalar_operand(s, *t, span)?;
                    moves.push((*d, op));
                }
                (Val::Tile(pt), Val::Tile(st)) => {
                    let st = if st.ll == pt.ll {
                        st.clone()
                    } else {
                        self.convert(st, &pt.ll, span)?
                    };
                    for (d, s) in pt.regs.iter().zip(&st.regs) {
                        moves.push((*d, s.to_string()));
                    }
                }
                (Val::Smem(ps), Val::Smem(ss)) => {
                    if ps.geom != ss.geom || ps.shape != ss.shape || ps.offsets != ss.offsets {
                        return Err(refused(
                            &"a shared-memory view reassigned with another shape or layout in a loop",
                        ));
                    }
                    let r = self.addr_reg(&ss.base);
                    moves.push((ps.base.reg, r.to_string()));
                }
                (Val::Tmem(pt), Val::Tmem(st)) => {
                    if pt.shape != st.shape || pt.offsets != st.offsets || pt.reg != st.reg {
                        return Err(refused(
                            &"a tensor-memory view reassigned with another shape in a loop",
                        ));
                    }
                    let r = self.e.reg(RegClass::B32);
                    match st.dynamic {
                        Some(d) => self.e.ins(format!("add.u32 {r}, {d}, {}", st.cols)),
                        None => self.e.ins(format!("mov.u32 {r}, {}", st.cols)),
                    }
                    if let Some(d) = pt.dynamic {
                        moves.push((d, r.to_string()));
                    }
                }
                (p, s) => return Err(refused(&format!("merging {} into {}", s.kind(), p.kind()))),
            }
        }
        let dsts: BTreeSet<String> = moves.iter().map(|(d, _)| d.to_string()).collect();
        let conflict = moves.iter().any(|(d, s)| dsts.contains(s) && &d.to_string() != s);
        if conflict {
            let mut tmp = Vec::new();
            for (d, s) in &moves {
                let t = self.e.reg(d.class);
                self.mov(t, s);
                tmp.push((*d, t));
            }
            for (d, t) in tmp {
                self.mov(d, &t.to_string());
            }
        } else {
            for (d, s) in moves {
                self.mov(d, &s);
            }
        }
        Ok(())
    }

    /// Register holding a shared address.
    pub fn addr_reg(&mut self, a: &Addr) -> Reg {
        if a.off == 0 {
            return a.reg;
        }
        let r = self.e.reg(RegClass::B32);
        self.e.ins(format!("add.u32 {r}, {}, {}", a.reg, a.off));
        r
    }

    pub(super) fn back_edge(&mut self, phis: &[(String, Val)], span: Span) -> LResult<()> {
        let mut pairs = Vec::new();
        for (n, phi) in phis {
            if let Some(cur) = self.lookup_var(n).cloned() {
                pairs.push((phi.clone(), cur));
            }
        }
        self.parallel_copy(&pairs, span)
    }

    pub(super) fn restore_phis(&mut self, phis: &[(String, Val)]) {
        for (n, phi) in phis {
            self.rebind(n, phi.clone());
        }
    }

    pub(super) fn dynamic_for(
        &mut self,
        var: &Ident,
        start: &Expr,
        end: &Expr,
        step: Option<&Expr>,
        body: &Block,
        span: Span,
    ) -> LResult<()> {
        let s = self.expr(start)?;
        let e = self.expr(end)?;
        let s = self.scalar_operand(&s, ScalarTy::I32, start.span)?;
        let e_op = self.scalar_operand(&e, ScalarTy::I32, end.span)?;
        let endr = self.e.reg(RegClass::B32);
        self.mov(endr, &e_op);
        let (step_op, negative) = match step {
            None => ("1".to_string(), false),
            Some(x) => {
                let v = self.expr(x)?;
                let neg = matches!(v, Val::Int(i) if i < 0);
                if matches!(v, Val::Int(0)) {
                    return Err(invalid("for", x.span, "step 0"));
                }
                let o = self.scalar_operand(&v, ScalarTy::I32, x.span)?;
                let r = self.e.reg(RegClass::B32);
                self.mov(r, &o);
                (r.to_string(), neg)
            }
        };
        let phis = self.make_phis(&[body], span)?;
        let i = self.e.reg(RegClass::B32);
        self.mov(i, &s);
        let p = self.e.reg(RegClass::Pred);
        let (head, exit) = self.loop_head("for");
        self.e.ins(format!(
            "setp.{}.s32 {p}, {i}, {endr}",
            if negative { "le" } else { "ge" }
        ));
        self.e.ins(format!("@{p} bra {exit}"));
        let latch = format!("add.s32 {i}, {i}, {step_op}");
        let bound = (var.name.as_str(), Val::Scalar(ScalarTy::I32, i));
        self.loop_rest(body, Some(bound), &phis, Some(latch), (&head, &exit), span)
    }

    /// `while c { body }`: the variables the body assigns live in phi registers; the condition
    /// is evaluated at the loop head from them.
    pub(super) fn dynamic_while(&mut self, cond: &Expr, body: &Block, span: Span) -> LResult<()> {
        let phis = self.make_phis(&[body], span)?;
        let (head, exit) = self.loop_head("while");
        let c = self.expr(cond)?;
        let p = self.pred_of(&c, cond.span)?;
        self.e.ins(format!("@!{p} bra {exit}"));
        self.loop_rest(body, None, &phis, None, (&head, &exit), span)
    }

    /// A loop's labels (`{hint}_head`, `{hint}_exit`), with the head placed. The head is
    /// reached again from the back edge, so every access before it counts as pending there.
    fn loop_head(&mut self, hint: &str) -> (String, String) {
        let head = self.e.label(&format!("{hint}_head"));
        let exit = self.e.label(&format!("{hint}_exit"));
        self.part.all_dirty = true;
        self.part.issue_dirty = true;
        self.e.place(&head);
        (head, exit)
    }

    /// A loop after its exit test: the body in its own scope (with `bound`, the loop variable,
    /// declared), the back edge into the phis, `latch` (the induction update), the jump to the
    /// head and the exit label, after which the phis hold the loop's variables.
    fn loop_rest(
        &mut self,
        body: &Block,
        bound: Option<(&str, Val)>,
        phis: &[(String, Val)],
        latch: Option<String>,
        (head, exit): (&str, &str),
        span: Span,
    ) -> LResult<()> {
        self.depth += 1;
        self.scopes.push(HashMap::new());
        if let Some((name, v)) = bound {
            self.declare(name, v);
        }
        let r = self.block(body);
        self.scopes.pop();
        self.depth -= 1;
        r?;
        self.back_edge(phis, span)?;
        if let Some(l) = latch {
            self.e.ins(l);
        }
        self.e.ins(format!("bra {head}"));
        self.e.place(exit);
        self.restore_phis(phis);
        self.part.all_dirty = true;
        self.part.issue_dirty = true;
        Ok(())
    }

    pub(super) fn dynamic_if(
        &mut self,
        cond: &Expr,
        then_body: &Block,
        else_body: Option<&Block>,
        span: Span,
    ) -> LResult<()> {
        let c = self.expr(cond)?;
        let p = self.pred_of(&c, cond.span)?;
        let mut bodies = vec![then_body];
        if let Some(e) = else_body {
            bodies.push(e);
        }
        let phis = self.make_phis(&bodies, span)?;
        let else_l = self.e.label("else");
        let end_l = self.e.label("endif");
        self.e.ins(format!("@!{p} bra {else_l}"));
        let (ad, id) = (self.part.all_dirty, self.part.issue_dirty);
        self.depth += 1;
        let r = self.block(then_body);
        self.depth -= 1;
        r?;
        self.back_edge(&phis, span)?;
        self.e.ins(format!("bra {end_l}"));
        let (ad1, id1) = (self.part.all_dirty, self.part.issue_dirty);
        self.restore_phis(&phis);
        self.e.place(&else_l);
        self.part.all_dirty = ad;
        self.part.issue_dirty = id;
        if let Some(eb) = else_body {
            self.depth += 1;
            let r = self.block(eb);
            self.depth -= 1;
            r?;
            self.back_edge(&phis, span)?;
        }
        self.e.place(&end_l);
        self.restore_phis(&phis);
        self.part.all_dirty |= ad1;
        self.part.issue_dirty |= id1;
        Ok(())
    }

    pub(super) fn warp_specialize(
        &mut self,
        default: &DefaultPartition,
        workers: &[Worker],
        span: Span,
    ) -> LResult<()> {
        if self.depth > 0 || self.ws_done || self.part.index != 0 {
            return Err(unsupported(
                "warp_specialize",
                span,
                "warp_specialize inside a loop or a dynamic `if`",
            ));
        }
        self.ws_done = true;
        let (plan, total_warps) = warp_plan(self.ck);
        if plan.len() != workers.len() + 1 {
            return Err(invalid(
                "warp_specialize",
                span,
                "worker partitions differ from the type checker's",
            ));
        }
        let warp = self.k.warp;
        // Worker warps jumped straight here: the scalars and views the default partition
        // computed before the fork reach them through shared memory (Triton's explicit
        // captures), stored by the default partition's leader before the CTA barrier.
        let captures = self.capture_outer_values();
        // Worker warps replay the cluster barriers of the code before the region on their way.
        self.place_workers_before();
        self.e.place("$ws_entry");
        self.e.comment("warp_specialize: every warp arrives, then each warpgroup sets its register budget and each warp takes its partition");
        self.e.ins("bar.sync 0");
        // Register budgets, one setmaxnreg per warpgroup at one PC (PTX: warpgroup-wide).
        let mut budgets: Vec<Option<u32>> = Vec::new();
        let regs_of = |i: usize| -> Option<u32> {
            if i == 0 {
                default
                    .regs
                    .as_ref()
                    .and_then(|r| self.consts.int(r).ok())
                    .map(|r| r as u32)
            } else {
                self.ck.workers.get(i - 1).map(|w| w.2)
            }
        };
        let groups = total_warps.div_ceil(4);
        for g in 0..groups {
            let (lo, hi) = (4 * g, 4 * g + 4);
            let mut budget: Option<u32> = None;
            let mut all = true;
            for (i, &(f, w)) in plan.iter().enumerate() {
                if f < hi && f + w > lo {
                    match regs_of(i) {
                        Some(r) => budget = Some(budget.map_or(r, |b: u32| b.max(r))),
                        None => all = false,
                    }
                }
            }
            budgets.push(if all { budget } else { None });
        }
        // Registers per thread at entry: the entry declares `.minnctapersm 1`, so ptxas may
        // give each of the CTA's threads up to 65536 / threads (at most 255).
        let entry_regs = (65536 / (total_warps * 32)).min(255);
        let labels: Vec<String> = (0..plan.len())
            .map(|i| self.e.label(&format!("partition{i}")))
            .collect();
        // Warps of no partition, and each worker once its partition is done, replay the cluster
        // barriers of the code after the region before the kernel's end.
        let end = cluster::WORKERS_AFTER.to_string();
        self.replay.in_region = true;
        // Each warpgroup with a budget takes its own path (setmaxnreg, then the partitions it
        // holds), so that no code of one budget is reachable from another's: ptxas allocates
        // registers per region of the control-flow graph.
        let reallocs: Vec<(usize, u32, String)> = budgets
            .iter()
            .enumerate()
            .filter_map(|(g, b)| b.filter(|b| *b != entry_regs).map(|b| (g, b, String::new())))
            .map(|(g, b, _)| (g, b, self.e.label(&format!("warpgroup{g}"))))
            .collect();
        let wg = self.e.reg(RegClass::B32);
        if !reallocs.is_empty() {
            self.e.ins(format!("shr.u32 {wg}, {warp}, 2"));
            for (g, _, l) in &reallocs {
                let p = self.e.reg(RegClass::Pred);
                self.e.ins(format!("setp.eq.u32 {p}, {wg}, {g}"));
                self.e.ins(format!("@{p} bra {l}"));
            }
        }
        let dispatch = |lw: &mut Self, only: Option<usize>| {
            for (i, &(f, w)) in plan.iter().enumerate() {
                if let Some(g) = only {
                    let (lo, hi) = (4 * g as u32, 4 * g as u32 + 4);
                    if !(f < hi && f + w > lo) {
                        continue;
                    }
                }
                let p = lw.e.reg(RegClass::Pred);
                let q = lw.e.reg(RegClass::Pred);
                lw.e.ins(format!("setp.ge.u32 {p}, {warp}, {f}"));
                lw.e.ins(format!("setp.lt.and.u32 {q}, {warp}, {}, {p}", f + w));
                lw.e.ins(format!("@{q} bra {}", labels[i]));
            }
            lw.e.ins(format!("bra {end}"));
        };
        dispatch(self, None);
        for (g, b, l) in &reallocs {
            self.e.place(l);
            let dir = if *b < entry_regs { "dec" } else { "inc" };
            self.e.ins(format!("setmaxnreg.{dir}.sync.aligned.u32 {b}"));
            self.setmaxnreg = true;
            dispatch(self, Some(*g));
        }

        // Workers first in the text (each ends at the kernel's end), then the default
        // partition, which falls through to the code after the region.
        let saved = self.part.clone();
        // Every partition starts from the values as the fork left them.
        let (orig_k, orig_scopes) = (self.k.clone(), self.scopes.clone());
        for (i, w) in workers.iter().enumerate() {
            let (first, warps) = plan[i + 1];
            let prev = self.e.set_origin(Some(Origin {
                op: format!("worker {}", w.name.name),
                span: w.span,
            }));
            self.e.place(&labels[i + 1]);
            self.k = orig_k.clone();
            self.scopes = orig_scopes.clone();
            self.fresh_kernel_regs(&captures)?;
            let leader = elect_leader(&mut self.e, self.k.warp, first);
            let pwarp = self.e.reg(RegClass::B32);
            self.e.ins(format!("sub.u32 {pwarp}, {}, {first}", self.k.warp));
            self.part = Part {
                index: i + 1,
                first_warp: first,
                warps,
                bar: 2 + i as u32,
                leader,
                pwarp,
                all_dirty: false,
                issue_dirty: false,
                tmem_dirty: false,
            };
            if self.part.bar > 15 {
                return Err(unsupported(
                    "warp_specialize",
                    span,
                    "more than 14 worker partitions (named barriers run out)",
                ));
            }
            self.depth += 1;
            let r = self.block(&w.body);
            self.depth -= 1;
            r?;
            self.replay.workers_tmem_dirty |= self.part.tmem_dirty;
            self.e.ins(format!("bra {end}"));
            self.e.set_origin(prev);
        }
        let prev = self.e.set_origin(Some(Origin {
            op: "default".into(),
            span: default.span,
        }));
        self.part = saved;
        self.part.synced();
        self.e.place(&labels[0]);
        self.k = orig_k;
        self.scopes = orig_scopes;
        self.fresh_kernel_regs(&[])?;
        self.part.leader = elect_leader(&mut self.e, self.k.warp, 0);
        self.part.pwarp = self.k.warp;
        self.depth += 1;
        let r = self.block(&default.body);
        self.depth -= 1;
        r?;
        self.replay.in_region = false;
        self.e.set_origin(prev);
        Ok(())
    }
}
