//! Tensor maps built on the device (`tma.make_desc`, `tma.desc_acquire`): each CTA's map of
//! every descriptor it builds, what a TMA copy through such a descriptor reads, and the
//! checker's tensormap-proxy rule (`stale-tensormap`, docs/semantics.md#tensor-maps-built-on-the-device).
//!
//! The map is data the CTA writes through the generic proxy (with a release at GPU scope) and
//! the TMA unit reads through the tensormap proxy; a copy is guaranteed the new map only after
//! the CTA's `fence.proxy.tensormap::generic.acquire` on it (PTX ISA, "Memory Consistency
//! Model", proxies, and `tensormap.cp_fenceproxy`). A copy issued without it reads the map the
//! CTA built (the simulator has no older one to give it) and is reported.

use super::*;
use crate::lower::MakeDesc;
use crate::tensormap_rules::{base_error, dim_error, stale, stride_error};

/// A CTA's tensor map of one descriptor built on the device.
#[derive(Clone, Debug)]
pub(super) struct TensorMap {
    /// The descriptor with this CTA's global tensor, base, dimensions and strides.
    pub(super) desc: Arc<DescInfo>,
    /// The `tma.make_desc` that last wrote it.
    pub(super) written: Span,
    /// Whether the CTA acquired the map in the tensormap proxy since it was written.
    pub(super) acquired: bool,
}

/// A tensor-map field that is not what `tensormap.replace` accepts: the illegal instruction
/// the copy through it raises.
fn bad_map(what: String) -> Fault {
    Fault::trap(
        CudaError::IllegalInstruction,
        format!("invalid tensor map: {what}"),
    )
}

impl<'p, 's> Machine<'p, 's> {
    /// `tma.make_desc`: CTA slot `s` writes its tensor map of descriptor `m.desc`.
    pub(super) fn make_tensormap(
        &mut self,
        s: usize,
        m: &MakeDesc,
        frame: &[Value],
        cx: &EvalCtx,
        span: Span,
    ) -> OpResult<()> {
        let ev = |e: &CExpr| eval::eval(e, frame, cx);
        let Value::Ptr(t) = ev(&m.ptr)? else {
            return Err(Fault::unsupported("the base of a tensor map is not a pointer"));
        };
        let prog = self.prog;
        let template = &prog.descs[m.desc as usize];
        let tensor = (self.global.get(t as usize))
            .ok_or_else(|| Fault::unsupported("the base of a tensor map names no global tensor"))?;
        let bits = template.dtype.bits() as i64;
        let offset = int_of(&ev(&m.offset)?, "the base's element offset")?;
        // The global address must be 16-byte aligned (PTX ISA, `tensormap.replace`
        // `.global_address`); every tensor is 256-byte aligned.
        if offset < 0 || base_error(offset.rem_euclid(128) * bits).is_some() {
            return Err(bad_map(format!(
                "base element offset {offset} of `{}` is not 16-byte aligned",
                tensor.name
            )));
        }
        let mut shape = Vec::with_capacity(m.shape.len());
        for (k, e) in m.shape.iter().enumerate() {
            let d = int_of(&ev(e)?, "a tensor map dimension")?;
            if let Some(e) = dim_error(k, d) {
                return Err(bad_map(e));
            }
            shape.push(d as u64);
        }
        let mut strides = Vec::with_capacity(m.strides.len() + 1);
        for (k, e) in m.strides.iter().enumerate() {
            let b = int_of(&ev(e)?, "a tensor map stride")?;
            if let Some(e) = stride_error(k, b, bits) {
                return Err(bad_map(e));
            }
            strides.push((b * 8 / bits) as u64);
        }
        strides.push(1);
        // bwsim's global memory is its tensors: a map reaching past its tensor's end has no
        // model (on the GPU a copy there reads or writes whatever lies after it).
        let last = (shape.iter().zip(&strides)).try_fold(offset as u64, |a, (&d, &st)| {
            a.checked_add((d - 1).checked_mul(st)?)
        });
        if last.is_none_or(|l| l >= tensor.numel()) {
            return Err(Fault::trap(
                CudaError::IllegalAddress,
                format!(
                    "the tensor map of `{}` (base element {offset}, dimensions {shape:?}) reaches past the end of tensor `{}` ({} elements)",
                    template.name,
                    tensor.name,
                    tensor.numel()
                ),
            ));
        }
        let desc = DescInfo {
            tensor: t,
            shape,
            base: offset as u64,
            strides,
            ..template.clone()
        };
        let maps = &mut self.cta(s).tensormaps;
        let i = m.desc as usize;
        if maps.len() <= i {
            maps.resize(i + 1, None);
        }
        maps[i] = Some(TensorMap {
            desc: Arc::new(desc),
            written: span,
            acquired: false,
        });
        Ok(())
    }

    /// `tma.desc_acquire`: CTA slot `s` acquires its map of descriptor `desc` (a map it has not
    /// written has nothing to acquire).
    pub(super) fn acquire_tensormap(&mut self, s: usize, desc: u32) {
        if let Some(Some(m)) = self.cta(s).tensormaps.get_mut(desc as usize) {
            m.acquired = true;
        }
    }

    /// The descriptor a TMA copy through `desc` by CTA slot `s` at `span` reads: `None` for a
    /// parameter (the program's entry), else the CTA's map, reported when not acquired.
    pub(super) fn tma_desc(&mut self, s: usize, desc: u32, span: Span) -> OpResult<Option<Arc<DescInfo>>> {
        let prog = self.prog;
        let d = &prog.descs[desc as usize];
        if !d.device {
            return Ok(None);
        }
        let Some(m) = self.cta(s).tensormaps.get(desc as usize).cloned().flatten() else {
            return Err(Fault::trap(
                CudaError::IllegalInstruction,
                format!(
                    "TMA copy through `{}` before this CTA wrote its tensor map",
                    d.name
                ),
            ));
        };
        if !m.acquired && self.opts.check {
            self.report(stale(
                &d.name,
                span,
                m.written,
                format!("add `tma.desc_acquire {}` after the `tma.make_desc` (Triton's `ttng.tensormap_fenceproxy_acquire`)", d.name),
            ));
        }
        Ok(Some(m.desc))
    }
}
