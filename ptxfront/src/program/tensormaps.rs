//! Resolving tensor maps built on the device (PTX ISA, "Tensor Map": `tensormap.replace`,
//! `tensormap.cp_fenceproxy`, and the tensormap-proxy forms of `fence.proxy`) into the
//! [`TmapOp`]s the machine runs ([`crate::machine`]'s `tensormaps`).
//!
//! Triton builds such a map (Gluon's `tma.make_tensor_descriptor`) as a 128-byte object in
//! shared memory whose fields `tensormap.replace` sets, copies it to a global scratch slot with
//! `tensormap.cp_fenceproxy` (a release at GPU scope in the generic-to-tensormap direction),
//! then acquires the slot in the tensormap proxy (`fence.proxy.tensormap::generic.acquire`)
//! before its bulk tensor copies name it.

use super::{AgentOp, Cx, MemRef, Op, Val};
use crate::parse::{Instr, Operand};
use crate::Error;

/// A field of a tiled tensor map that `tensormap.replace.tile` sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmapField {
    GlobalAddress,
    /// The rank, written as rank - 1.
    Rank,
    BoxDim,
    GlobalDim,
    /// The byte stride of dimension `ord + 1`.
    GlobalStride,
    ElementStride,
    Elemtype,
    SwizzleMode,
    /// The interleave code (0: none, 1: 16 bytes, 2: 32 bytes).
    InterleaveLayout,
    /// The out-of-bounds fill code (0: zeros, 1: NaN for floating point).
    FillMode,
}

/// A device-built tensor map instruction, run per warp by the machine.
#[derive(Clone, Debug, PartialEq)]
pub enum TmapOp {
    /// `tensormap.replace.tile.FIELD.SPACE.b1024.bN [map], {ord,} value` (`shared`: the map is
    /// in the CTA's shared memory, else in global memory).
    Replace {
        map: MemRef,
        shared: bool,
        field: TmapField,
        ord: Option<Val>,
        value: Val,
    },
    /// `tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned
    /// [dst], [src], size`: the map at shared `src` copied to global `dst`, released to the
    /// tensormap proxy.
    Copy { dst: MemRef, src: MemRef, size: Val },
    /// `fence.proxy.tensormap::generic.acquire.SCOPE [map], size`: the CTA acquires the map at
    /// `map` in the tensormap proxy.
    Acquire { map: MemRef },
    /// `fence.proxy.tensormap::generic.release.SCOPE`: orders the thread's earlier generic
    /// writes before its later tensormap-proxy uses (the copy above carries its own release).
    Release,
}

/// Whether `opcode` with modifiers `m` is a device tensor-map instruction.
pub(super) fn is_tensormap(opcode: &str, m: &[&str]) -> bool {
    match opcode {
        "tensormap" => matches!(m.first(), Some(&"replace" | &"cp_fenceproxy")),
        "fence" => m.first() == Some(&"proxy") && m.get(1) == Some(&"tensormap::generic"),
        _ => false,
    }
}

impl Cx<'_> {
    /// A device tensor-map instruction (see [`is_tensormap`]) as [`TmapOp`].
    pub(super) fn tensormap(&self, i: &Instr, m: &[&str]) -> Result<Op, Error> {
        let o = &i.operands;
        let addr = |k: usize| match o.get(k) {
            Some(Operand::Addr(a)) => self.memref(i, a),
            _ => Err(self.invalid(i, format!("expected an address as operand {}", k + 1))),
        };
        let val = |k: usize| match o.get(k) {
            Some(x) => self.val(i, x),
            None => Err(self.invalid(i, format!("expected operand {}", k + 1))),
        };
        let op = match (i.opcode.as_str(), m.first().copied()) {
            ("tensormap", Some("replace")) => {
                if m.get(1) != Some(&"tile") {
                    return Err(self.unsupported(i, "modes other than `.tile`"));
                }
                let field = match m.get(2).copied() {
                    Some("global_address") => TmapField::GlobalAddress,
                    Some("rank") => TmapField::Rank,
                    Some("box_dim") => TmapField::BoxDim,
                    Some("global_dim") => TmapField::GlobalDim,
                    Some("global_stride") => TmapField::GlobalStride,
                    Some("element_stride") => TmapField::ElementStride,
                    Some("elemtype") => TmapField::Elemtype,
                    Some("swizzle_mode") => TmapField::SwizzleMode,
                    Some("interleave_layout") => TmapField::InterleaveLayout,
                    Some("fill_mode") => TmapField::FillMode,
                    _ => return Err(self.unsupported(i, "the swizzle-atomicity field of a tensor map")),
                };
                let ordered = matches!(
                    field,
                    TmapField::BoxDim
                        | TmapField::GlobalDim
                        | TmapField::GlobalStride
                        | TmapField::ElementStride
                );
                let (ord, value) = if ordered {
                    (Some(val(1)?), val(2)?)
                } else {
                    (None, val(1)?)
                };
                TmapOp::Replace {
                    map: addr(0)?,
                    shared: m.contains(&"shared::cta"),
                    field,
                    ord,
                    value,
                }
            }
            ("tensormap", Some("cp_fenceproxy")) => {
                if !(m.contains(&"global") && m.contains(&"shared::cta") && m.contains(&"release")) {
                    return Err(self.unsupported(i, "forms other than shared::cta to global with release"));
                }
                TmapOp::Copy {
                    dst: addr(0)?,
                    src: addr(1)?,
                    size: val(2)?,
                }
            }
            (_, _) if m.contains(&"acquire") => TmapOp::Acquire { map: addr(0)? },
            (_, _) if m.contains(&"release") => TmapOp::Release,
            _ => return Err(self.unsupported(i, "")),
        };
        Ok(Op::Agent(AgentOp::Tensormap(op)))
    }
}
