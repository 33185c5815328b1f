//! `ttg.inline_asm` (Triton 3.9's `gl.inline_asm`): one block of PTX per thread, over all of
//! the thread's registers of each tensor operand, where `tt.elementwise_inline_asm` runs one
//! snippet per element (or per `pack` elements). The constraints list the result registers
//! (result by result, each in register order), then each argument's registers: a tensor's
//! registers of the thread in register order, a scalar's one register.
//!
//! bwsim imports the block as the `inline_asm` operation with `pack` = the registers a thread
//! holds, on the operands regrouped so that each group of `pack` consecutive elements is one
//! thread's registers in register order (an index `k` of a blocked layout is `((rep * w +
//! warp) * t + lane) * s + reg`, register `rep * s + reg`: [`super::general_reduce`]), its
//! operand references renumbered to that form (a scalar's register becomes the first element
//! of its broadcast group), and the results put back in index order. So the simulator runs
//! the block once per thread on exactly the registers the GPU gives it. Rank-1 operands of the
//! results' layout, a blocked one (or linear placing the index bits as it does) whose lanes
//! and warps all hold distinct elements, are imported; other layouts are refused naming them.

use super::*;

impl<'m> Cx<'m> {
    pub(super) fn thread_asm(&mut self, op: &Op, span: Span) -> R<()> {
        // Its packing is the registers a thread holds, not an attribute.
        let inline_asm::AsmText {
            asm,
            constraints,
            pure,
            ..
        } = self.asm_text(op)?;
        let args = self.operands(op)?;
        let mut res_tys = Vec::with_capacity(op.results.len());
        for r in 0..op.results.len() {
            res_tys.push(self.result_type(op, r)?);
        }
        let Some(first) = res_tys.first().cloned() else {
            return Err(self.misuse(op, "has no tensor result"));
        };
        let (n, enc) = match (first.shape(), first.encoding()) {
            (Some([n]), Some(enc)) => (*n, enc.clone()),
            _ => {
                return Err(self.unsupported(
                    op,
                    "per-thread inline assembly on tensors of rank other than 1: bwsim regroups rank-1 tensors by thread",
                ))
            }
        };
        let same = |t: &Type| t.shape() == Some(&[n][..]) && t.encoding() == Some(&enc);
        if !res_tys.iter().all(same) {
            return Err(self.unsupported(
                op,
                "per-thread inline assembly whose results differ in shape or layout",
            ));
        }
        let mut tensor_arg = Vec::with_capacity(args.len());
        let mut arg_dtypes = Vec::with_capacity(args.len());
        for (a, s) in &args {
            let t = self.val_type(a, *s)?;
            if t.is_tensor() && !same(&t) {
                return Err(self.unsupported(
                    op,
                    "per-thread inline assembly on a tensor of another shape or layout than its results",
                ));
            }
            tensor_arg.push(t.is_tensor());
            arg_dtypes.push(
                t.elem()
                    .and_then(|e| e.dtype())
                    .ok_or_else(|| self.unsupported(op, "inline PTX on operands that are not numbers"))?,
            );
        }
        let mut res_dtypes = Vec::with_capacity(res_tys.len());
        for t in &res_tys {
            res_dtypes.push(
                t.elem()
                    .and_then(|e| e.dtype())
                    .ok_or_else(|| self.unsupported(op, "inline PTX with results that are not numbers"))?,
            );
        }
        let threads = 32 * self.warps;
        let Some(bits) = self.cat_bits(&first, n, threads, span)? else {
            return Err(self.unsupported(
                op,
                &format!(
                    "per-thread inline assembly on a {} tensor; bwsim regroups blocked layouts (and linear ones that place the index bits as they do) whose lanes and warps all hold distinct elements",
                    self.layout_name(&enc, span)
                ),
            ));
        };
        let (w, t) = (1i64 << bits.warp, 1i64 << bits.lane);
        let regs = (n / (w * t)) as usize;
        // The constraints and operand numbers of the elementwise form with `pack = regs`.
        let cons: Vec<&str> = constraints.split(',').map(str::trim).collect();
        let n_out = res_tys.len() * regs;
        let n_in: usize = tensor_arg.iter().map(|&t| if t { regs } else { 1 }).sum();
        if cons.len() != n_out + n_in {
            return Err(self.misuse(
                op,
                format!(
                    "{} constraints for {} result and {} argument registers a thread",
                    cons.len(),
                    n_out,
                    n_in
                ),
            ));
        }
        // Per thread operand number -> (first number of its group, whether it is a scalar's).
        let mut map: Vec<(usize, bool)> = (0..n_out).map(|i| (i, false)).collect();
        let mut new_cons: Vec<String> = cons[..n_out].iter().map(|c| c.to_string()).collect();
        let mut old = n_out;
        for (j, &is_tensor) in tensor_arg.iter().enumerate() {
            let count = if is_tensor { regs } else { 1 };
            let base = n_out + j * regs;
            map.extend((0..count).map(|e| (base + e, !is_tensor)));
            new_cons.extend((0..regs).map(|e| cons[old + e.min(count - 1)].to_string()));
            old += count;
        }
        let asm = renumber(&asm, &map, n_out, regs);
        let constraints = new_cons.join(",");
        if let Err(e) = bwsim_isa::inline_ptx::compile(&asm, &constraints, &arg_dtypes, &res_dtypes, regs) {
            return Err(self.unsupported(op, &format!("inline PTX: {}", e.message)));
        }
        // Each tensor operand thread by thread: [rep, w, t, s] -> [w, t, rep, s], flattened.
        let groups = [1i64 << bits.rep, w, t, 1i64 << bits.reg];
        let mut arg_exprs = Vec::with_capacity(args.len());
        for ((a, s), &is_tensor) in args.iter().zip(&tensor_arg) {
            arg_exprs.push(if is_tensor {
                let x = self.expr(a, *s)?;
                let re = call("reshape", vec![x, list_e(&groups, span)], span);
                let pm = call("permute", vec![re, list_e(&[1, 2, 0, 3], span)], span);
                call("reshape", vec![pm, list_e(&[n], span)], span)
            } else {
                self.math_operand(a, *s)?
            });
        }
        let kind = inline_asm::inline_asm_kind(&asm, &constraints, arg_exprs, &res_dtypes, regs, pure, span);
        let names: Vec<String> = (0..res_tys.len()).map(|_| self.fresh("thread_asm")).collect();
        self.push(
            StmtKind::Let {
                names: names.iter().map(|n| Ident::spanned(n.clone(), span)).collect(),
                value: Rhs::Op(IrOp::new(kind, span)),
            },
            span,
        );
        // The results back in index order, in their layout.
        let lay = self.required_layout(&first, span)?;
        let threads_first = [w, t, 1i64 << bits.rep, 1i64 << bits.reg];
        for (r, (name, ty)) in names.iter().zip(res_tys).enumerate() {
            let re = call(
                "reshape",
                vec![name_e(name, span), list_e(&threads_first, span)],
                span,
            );
            let pm = call("permute", vec![re, list_e(&[2, 0, 1, 3], span)], span);
            let flat = call("reshape", vec![pm, list_e(&[n], span)], span);
            let e = call("convert_layout", vec![flat, lay.clone()], span);
            let res = self.result(op, r)?;
            let v = self.let_(&res, Rhs::Expr(e), span);
            self.bind(&res, Val::E(name_e(&v, span), ty));
        }
        Ok(())
    }
}

/// `asm` with each operand reference `$i` replaced by its number in the elementwise form
/// (`map[i]`: the first number of its group, and whether it is a scalar's). A scalar's group
/// holds `regs` copies of it; a reference in a statement (up to `;`) that writes result
/// registers of one position `e` among a thread's registers reads copy `e`, so that each
/// result element is computed from its own group position, as the elementwise form requires;
/// elsewhere copy 0. References beyond the map, and `$` not followed by a digit, stay.
fn renumber(asm: &str, map: &[(usize, bool)], n_out: usize, regs: usize) -> String {
    let refs = |stmt: &str| -> Vec<usize> {
        let b = stmt.as_bytes();
        let mut v = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'$' {
                let j = (i + 1..b.len())
                    .find(|&j| !b[j].is_ascii_digit())
                    .unwrap_or(b.len());
                if let Ok(n) = stmt[i + 1..j].parse::<usize>() {
                    v.push(n);
                }
                i = j;
            } else {
                i += 1;
            }
        }
        v
    };
    let mut out = String::with_capacity(asm.len());
    for stmt in asm.split_inclusive(';') {
        let positions: Vec<usize> = refs(stmt)
            .into_iter()
            .filter(|&n| n < n_out)
            .map(|n| n % regs.max(1))
            .collect();
        let copy = match positions.first() {
            Some(&e) if positions.iter().all(|&p| p == e) => e,
            _ => 0,
        };
        let mut chars = stmt.chars().peekable();
        while let Some(c) = chars.next() {
            out.push(c);
            if c != '$' {
                continue;
            }
            let mut digits = String::new();
            while let Some(&d) = chars.peek() {
                if !d.is_ascii_digit() {
                    break;
                }
                digits.push(d);
                chars.next();
            }
            match digits.parse::<usize>().ok().and_then(|i| map.get(i)) {
                Some(&(m, true)) => out.push_str(&(m + copy).to_string()),
                Some(&(m, false)) => out.push_str(&m.to_string()),
                None => out.push_str(&digits),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::renumber;

    #[test]
    fn renumber_moves_operand_references() {
        // Four result registers, a scalar (per thread: $4), then a tensor's four registers
        // ($5..$8). With pack 4 the scalar's group is $4..$7 and the tensor's $8..$11; the
        // statement writing result register 3 reads the scalar's copy 3.
        let map = [
            (0, false),
            (1, false),
            (2, false),
            (3, false),
            (4, true),
            (8, false),
            (9, false),
            (10, false),
            (11, false),
        ];
        assert_eq!(
            renumber(
                "fma.rn.f32 $0, $5, $4, $5;\nfma.rn.f32 $3, $8, $4, $8;",
                &map,
                4,
                4
            ),
            "fma.rn.f32 $0, $8, $4, $8;\nfma.rn.f32 $3, $11, $7, $11;"
        );
        // Several digits are one reference; a reference beyond the map and a bare `$` stay.
        let zeros = [(0, false); 13];
        assert_eq!(
            renumber("mov.b32 $1, $12; // $", &zeros, 1, 1),
            "mov.b32 $0, $0; // $"
        );
        assert_eq!(
            renumber("mov.b32 $1, $20;", &[(0, false), (7, false)], 2, 1),
            "mov.b32 $7, $20;"
        );
    }
}
