//! Undefined values at their sinks: where an operation uses a value that carries undefined
//! bytes ([`crate::taint`]) as a global store's value, an address or index, a predicate or
//! mask, or a register MMA operand (the `uninit-read` check's report of where the bytes go).

use super::*;
use crate::taint;

impl<'p, 's> Machine<'p, 's> {
    /// Where operation `op` of partition `a` uses undefined values ([`crate::taint`]): the
    /// value a global store writes, an address or index, a predicate or mask, a register MMA
    /// operand. Each use is recorded against the origin of its undefined bytes.
    pub(super) fn undef_sinks(&mut self, s: usize, a: usize, op: &LOp) {
        let undef = &self.cta(s).agents[a].undef;
        if undef.is_empty() {
            return;
        }
        let mut uses: Vec<(Sink, &CExpr)> = Vec::new();
        let mut views: Vec<&CExpr> = Vec::new();
        match op {
            LOp::Op(K::DeviceAssert { cond, .. }) => uses.push((Sink::Branch, &**cond)),
            LOp::Op(K::GlobalStore {
                offsets, value, mask, ..
            }) => {
                uses.extend([(Sink::GlobalStore, &**value), (Sink::Address, &**offsets)]);
                uses.extend(mask.as_deref().map(|m| (Sink::Branch, m)));
            }
            LOp::GlobalAtomic(at) => {
                // An atomic read does not read its value operand.
                if at.op != AtomicOp::Load {
                    uses.push((Sink::GlobalStore, &at.value));
                }
                uses.push((Sink::Address, &at.offsets));
                uses.extend(at.compare.iter().map(|c| (Sink::GlobalStore, c)));
                uses.extend(at.mask.iter().map(|m| (Sink::Branch, m)));
            }
            LOp::MakeDesc(m) => {
                let values = m.shape.iter().chain(&m.strides).chain([&m.offset]);
                uses.extend(values.map(|e| (Sink::Address, e)));
            }
            LOp::Op(K::GlobalLoad { offsets, mask, .. }) => {
                uses.push((Sink::Address, offsets));
                uses.extend(mask.as_deref().map(|m| (Sink::Branch, m)));
            }
            LOp::Op(K::CpAsync {
                dst, offsets, mask, ..
            }) => {
                uses.push((Sink::Address, offsets));
                uses.extend(mask.as_deref().map(|m| (Sink::Branch, m)));
                views.push(dst);
            }
            LOp::TmaLoad {
                coords, smem, pred, ..
            }
            | LOp::TmaStore {
                coords, smem, pred, ..
            } => {
                uses.extend(coords.iter().map(|c| (Sink::Address, c)));
                uses.extend(pred.iter().map(|p| (Sink::Branch, p)));
                views.push(smem);
            }
            LOp::Mma {
                a: x,
                b,
                acc,
                use_acc,
                pred,
                ..
            } => {
                uses.extend(use_acc.iter().chain(pred.iter()).map(|p| (Sink::Branch, p)));
                views.extend([x, b, acc]);
            }
            LOp::Op(K::Wgmma {
                a: x,
                b,
                acc,
                use_acc,
                ..
            }) => {
                uses.push((Sink::MmaOperand, x));
                uses.extend(use_acc.as_deref().map(|p| (Sink::Branch, p)));
                views.extend([&**b, &**acc]);
            }
            LOp::Op(
                K::MbarArrive { pred, .. }
                | K::MbarExpect { pred, .. }
                | K::MbarExpectTx { pred, .. }
                | K::MbarCompleteTx { pred, .. },
            ) => uses.extend(pred.as_deref().map(|p| (Sink::Branch, p))),
            LOp::Commit { pred, .. } => uses.extend(pred.iter().map(|p| (Sink::Branch, p))),
            LOp::Op(K::SmemLoad { src, .. }) | LOp::Op(K::TmemLoad { src, .. }) => views.push(src),
            LOp::Op(K::SmemStore { dst, .. }) | LOp::Op(K::TmemStore { dst, .. }) => views.push(dst),
            LOp::Op(K::SmemGather { src: buf, index, .. })
            | LOp::Op(K::SmemScatter { dst: buf, index, .. }) => {
                views.push(buf);
                uses.push((Sink::Address, index));
            }
            LOp::Op(K::SmemAtomic { dst, index, mask, .. }) => {
                views.push(dst);
                uses.push((Sink::Address, index));
                uses.extend(mask.as_deref().map(|m| (Sink::Branch, m)));
            }
            // No operand of these is a sink (a view's index reaches one through the operation
            // that accesses the view).
            lop_views!()
            | lop_group_waits!()
            | LOp::ClcTryCancel { .. }
            | LOp::CpAsyncArrive { .. }
            | LOp::DescAcquire { .. }
            | LOp::Op(
                mbar_quiet!()
                | fences!()
                | cluster_barrier!()
                | K::TmemDealloc { .. }
                | K::Tcgen05Cp { .. }
                | K::CpAsyncCommit {}
                | K::ClcQuery { .. }
                | K::BarSync {}
                | lowered_apart!(),
            ) => {}
        }
        let mut found: Vec<(u32, Sink)> = uses
            .into_iter()
            .filter_map(|(sink, e)| taint::origin(e, undef).map(|o| (o, sink)))
            .collect();
        // An undefined index into a view (a stage index read from shared memory) is an address.
        found.extend(
            views
                .into_iter()
                .filter_map(|e| taint::index_origin(e, undef).map(|o| (o, Sink::Address))),
        );
        let pc = self.cur_pc;
        for (o, sink) in found {
            self.reached.add(o, sink, pc);
        }
    }
}
