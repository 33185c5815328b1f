//! `tt.cat`: two rank-1 tensors of one type concatenated into one twice as long (Triton's
//! `cat(a, b, can_reorder=True)`, Gluon's `GluonSemantic.cat`, which takes the result's
//! layout). The operation leaves the element order to the compiler; Triton's lowering
//! concatenates each thread's registers: a thread's registers of the result are its
//! registers of the first operand, then those of the second, each in register order, and
//! the result's layout says which element each result register is. bwsim imports that order
//! exactly, as tile expressions (no `.tile` operation of its own): each operand regrouped
//! per thread as `[warp, lane, registers]` (an index `k` of a blocked layout is
//! `((rep * w + warp) * t + lane) * s + reg`, register `rep * s + reg`: module docs of
//! [`super::general_reduce`]), the two register lists joined per thread, and the result's
//! `(rep, warp, lane, reg)` groups put back in index order.
//!
//! Operands or results that some lanes or warps hold copies of (a tensor smaller than its
//! layout), and layouts that do not place the index bits as a blocked layout does, are
//! refused naming the layout.

use super::general_reduce::{axis_bits, linear_axis_bits, AxisBits};
use super::*;

impl<'m> Cx<'m> {
    pub(super) fn cat(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 2)?;
        let a_ty = self.val_type(&v[0].0, v[0].1)?;
        let b_ty = self.val_type(&v[1].0, v[1].1)?;
        let ty = self.result_type(op, 0)?;
        let n = match (a_ty.shape(), b_ty.shape(), ty.shape()) {
            (Some([n]), Some([m]), Some([r])) if n == m && n.checked_mul(2) == Some(*r) => *n,
            _ => {
                return Err(self.misuse(
                    op,
                    "concatenates two rank-1 tensors of one shape into one twice as long",
                ))
            }
        };
        let threads = 32 * self.warps;
        let a = self.cat_bits(&a_ty, n, threads, span)?;
        let b = self.cat_bits(&b_ty, n, threads, span)?;
        let o = self.cat_bits(&ty, 2 * n, threads, span)?;
        let (Some(a), Some(b), Some(o)) = (a, b, o) else {
            let name = |cx: &Self, t: &Type| {
                t.encoding()
                    .map_or("no layout".to_string(), |e| cx.layout_name(e, span))
            };
            return Err(self.unsupported(
                op,
                &format!(
                    "`tt.cat` of {} operands into a {} result; bwsim orders the concatenation of blocked layouts (and linear ones that place the index bits as they do) whose lanes and warps all hold distinct elements",
                    name(self, &a_ty),
                    name(self, &ty)
                ),
            ));
        };
        if a != b {
            return Err(self.misuse(op, "concatenates two operands of one layout"));
        }
        let (w, t) = (1i64 << a.warp, 1i64 << a.lane);
        let regs = n / (w * t);
        // Each operand as [warp, lane, registers], register order within a thread.
        let mut per_thread = Vec::new();
        for (name, s) in &v[..2] {
            let x = self.expr(name, *s)?;
            let groups = [1i64 << a.rep, w, t, 1i64 << a.reg];
            let re = call("reshape", vec![x, list_e(&groups, span)], span);
            let pm = call("permute", vec![re, list_e(&[1, 2, 0, 3], span)], span);
            per_thread.push(call("reshape", vec![pm, list_e(&[w, t, regs], span)], span));
        }
        // The first operand's registers, then the second's: [warp, lane, 2, regs].
        let joined = call("join", per_thread, span);
        let pm = call("permute", vec![joined, list_e(&[0, 1, 3, 2], span)], span);
        // The result's registers read as its (rep, reg) groups, then back in index order.
        let groups = [w, t, 1i64 << o.rep, 1i64 << o.reg];
        let re = call("reshape", vec![pm, list_e(&groups, span)], span);
        let ordered = call("permute", vec![re, list_e(&[2, 0, 1, 3], span)], span);
        let flat = call("reshape", vec![ordered, list_e(&[2 * n], span)], span);
        let lay = self.required_layout(&ty, span)?;
        let e = call("convert_layout", vec![flat, lay], span);
        let r = self.result(op, 0)?;
        let name = self.let_(&r, Rhs::Expr(e), span);
        self.bind(&r, Val::E(name_e(&name, span), ty));
        Ok(())
    }

    /// Where the index bits of a rank-1 tensor of `n` elements of type `t` live, when its
    /// layout places them as a blocked layout does and all `threads` threads hold distinct
    /// elements.
    pub(super) fn cat_bits(&mut self, t: &Type, n: i64, threads: i64, span: Span) -> R<Option<AxisBits>> {
        let Some(enc) = t.encoding().cloned() else {
            return Ok(None);
        };
        let bits = match self.attrs.layout(&enc, span)? {
            Layout::Blocked { spt, tpw, wpc, .. } if spt.len() == 1 => axis_bits(n, spt[0], tpw[0], wpc[0]),
            Layout::Linear { register, lane, warp } => linear_axis_bits(n, 0, &register, &lane, &warp),
            _ => None,
        };
        Ok(bits.filter(|b| 1i64 << (b.lane + b.warp) == threads))
    }
}
