//! Tensor maps built on the device: the fields `tensormap.replace` writes into a map in
//! shared (or global) memory, the copy `tensormap.cp_fenceproxy` makes of it into global
//! memory (released to the tensormap proxy), the CTA's `fence.proxy.tensormap::generic.acquire`
//! of it, and the bulk tensor copies that name it by its global address.
//!
//! A map is an opaque 128-byte object (its encoding is the driver's); the machine keeps each
//! map's fields beside the memory, by address: the maps being built in each CTA's shared
//! memory, and the maps copied to global memory with the instruction that wrote them and the
//! CTAs that acquired them since. A field a `tensormap.replace` has not set since the map's
//! first one keeps its last value (the generic bytes under a map are not decoded; Triton sets
//! every field of each map it builds). The fields are checked as `tensormap.replace` states
//! them (`bwsim_sim::tensormap_rules`, the rules the tile machine applies to Triton's
//! `tma.make_desc`) when a copy first goes through the map, and a copy through a map its CTA
//! has not acquired since it was written is a `stale-tensormap` finding
//! (docs/semantics.md#tensor-maps-built-on-the-device), the copy reading the map as written.
//! The maps live as long as the machine, which runs one cluster: a CTA reading a map another
//! cluster built is an error.

use super::{Finding, Machine};
use crate::exec::{BUFFER_STRIDE, GLOBAL_BASE};
use crate::program::{MemRef, TmapField, TmapOp};
use crate::tensormap::TensorMap;
use crate::Error;
use bwsim_isa::types::{DType, Swizzle};
use bwsim_isa::{Code, Span};
use bwsim_sim::tensormap_rules;
use std::collections::HashMap;

/// The fields of a tiled map, as `tensormap.replace` writes them (innermost dimension first).
#[derive(Clone, Debug, Default)]
struct Fields {
    address: u64,
    /// The rank minus one.
    rank: u64,
    box_dim: [u64; 5],
    global_dim: [u64; 5],
    /// `global_stride[k]`: the byte stride of dimension `k + 1`.
    global_stride: [u64; 5],
    element_stride: [u64; 5],
    elemtype: u64,
    swizzle: u64,
    interleave: u64,
    fill: u64,
}

/// A map in global memory.
#[derive(Clone, Debug)]
struct Published {
    fields: Fields,
    /// The instruction that last wrote it.
    written: usize,
    /// The cluster ranks of the CTAs that acquired it since.
    acquired: Vec<usize>,
    /// Its index in [`DeviceMaps::built`], once a copy went through it.
    built: Option<usize>,
}

/// The machine's device-built maps.
#[derive(Debug, Default)]
pub(super) struct DeviceMaps {
    /// Maps in shared memory, by cluster rank and shared address.
    staged: HashMap<(usize, u32), Fields>,
    /// Maps in global memory, by address.
    global: HashMap<u64, Published>,
    /// The maps copies went through, each with the byte offset of its first element in its
    /// launch buffer; a copy names map `i` as argument index `launch args + i`.
    built: Vec<(TensorMap, u64)>,
}

/// The element type and bytes of a `.elemtype` code (PTX ISA, `tensormap.replace`).
fn elemtype(code: u64) -> Option<(DType, u32)> {
    Some(match code {
        0 => (DType::U8, 1),
        1 => (DType::U16, 2),
        2 => (DType::U32, 4),
        3 => (DType::I32, 4),
        4 => (DType::U64, 8),
        5 => (DType::I64, 8),
        6 => (DType::F16, 2),
        7 | 8 => (DType::F32, 4),
        10 => (DType::BF16, 2),
        11 | 12 => (DType::TF32, 4),
        _ => return None,
    })
}

impl Fields {
    fn set(&mut self, field: TmapField, ord: usize, v: u64) -> Result<(), String> {
        if ord >= 5 {
            return Err(format!("dimension {ord} of a tensor map (at most 5)"));
        }
        match field {
            TmapField::GlobalAddress => self.address = v,
            TmapField::Rank => self.rank = v,
            TmapField::BoxDim => self.box_dim[ord] = v,
            TmapField::GlobalDim => self.global_dim[ord] = v,
            TmapField::GlobalStride => self.global_stride[ord] = v,
            TmapField::ElementStride => self.element_stride[ord] = v,
            TmapField::Elemtype => self.elemtype = v,
            TmapField::SwizzleMode => self.swizzle = v,
            TmapField::InterleaveLayout => self.interleave = v,
            TmapField::FillMode => self.fill = v,
        }
        Ok(())
    }

    /// The map these fields describe over `bufs` launch buffers, with its base byte offset.
    fn tensor_map(&self, bufs: usize) -> Result<(TensorMap, u64), String> {
        let rank = self.rank as usize + 1;
        if rank > 5 {
            return Err(format!("rank {rank} (at most 5)"));
        }
        let (dtype, elem_bytes) = elemtype(self.elemtype)
            .ok_or_else(|| format!("element type code {} is not one bwsim models", self.elemtype))?;
        let swizzle = match self.swizzle {
            0 => Swizzle::None,
            1 => Swizzle::B32,
            2 => Swizzle::B64,
            3 => Swizzle::B128,
            s => return Err(format!("swizzle mode {s} is not one bwsim models")),
        };
        // Copies model a map without interleave whose out-of-bounds elements read as zeros
        // (`cuTensorMapEncodeTiled`'s defaults, what Triton writes).
        if self.interleave != 0 {
            return Err(format!(
                "interleave code {}: bwsim models none (0)",
                self.interleave
            ));
        }
        if self.fill != 0 {
            return Err(format!("fill mode {}: bwsim models zero fill (0)", self.fill));
        }
        if self.element_stride[..rank].iter().any(|&s| s != 1) {
            return Err(format!(
                "element strides {:?}: bwsim models strides of 1",
                &self.element_stride[..rank]
            ));
        }
        let off = self.address.wrapping_sub(GLOBAL_BASE);
        let (k, base) = ((off / BUFFER_STRIDE) as usize, off % BUFFER_STRIDE);
        if self.address < GLOBAL_BASE || k >= bufs {
            return Err(format!(
                "the global address {:#x} is in no launch buffer",
                self.address
            ));
        }
        let bits = elem_bytes as i64 * 8;
        let mut errors = vec![tensormap_rules::base_error(base as i64 * 8)];
        for (d, &n) in self.global_dim[..rank].iter().enumerate() {
            errors.push(tensormap_rules::dim_error(d, n as i64));
        }
        for (d, &s) in self.global_stride[..rank - 1].iter().enumerate() {
            errors.push(tensormap_rules::stride_error(d, s as i64, bits));
        }
        if let Some(e) = errors.into_iter().flatten().next() {
            return Err(e);
        }
        let map = TensorMap {
            buffer: k,
            elem_bytes,
            dtype,
            dims: self.global_dim[..rank].to_vec(),
            strides: self.global_stride[..rank - 1].to_vec(),
            box_dims: self.box_dim[..rank].iter().map(|&b| b as u32).collect(),
            swizzle,
        };
        map.validate()?;
        Ok((map, base))
    }
}

impl Machine<'_, '_> {
    /// The global (generic) address `m` names for thread `t`.
    fn map_addr(&self, t: usize, m: &MemRef, pc: usize) -> Result<u64, Error> {
        Ok(self
            .cta
            .base_addr(&self.th[t], &m.base, pc)?
            .wrapping_add(m.offset as u64))
    }

    /// Runs device tensor-map instruction `op` at `pc` for the lanes `group`.
    pub(super) fn tensormap_op(&mut self, pc: usize, op: &TmapOp, group: &[usize]) -> Result<(), Error> {
        for &t in group {
            match op {
                TmapOp::Replace {
                    map,
                    shared,
                    field,
                    ord,
                    value,
                } => {
                    let ord = ord.map(|o| self.value(t, o, pc)).transpose()?.unwrap_or(0) as usize;
                    let v = self.value(t, *value, pc)?;
                    let fields = if *shared {
                        let a = self.shared_addr(t, map, pc)?;
                        self.dmaps.staged.entry((self.rank, a)).or_default()
                    } else {
                        let a = self.map_addr(t, map, pc)?;
                        let p = self.dmaps.global.entry(a).or_insert_with(|| Published {
                            fields: Fields::default(),
                            written: pc,
                            acquired: Vec::new(),
                            built: None,
                        });
                        p.written = pc;
                        p.acquired.clear();
                        p.built = None;
                        &mut p.fields
                    };
                    fields.set(*field, ord, v).map_err(|e| self.rt(pc, e))?;
                }
                TmapOp::Copy { dst, src, size } => {
                    let n = self.value(t, *size, pc)?;
                    if n != 128 {
                        return Err(self.rt(pc, format!("a tensor map copy of {n} bytes (a map is 128)")));
                    }
                    let s = self.shared_addr(t, src, pc)?;
                    let d = self.map_addr(t, dst, pc)?;
                    let Some(fields) = self.dmaps.staged.get(&(self.rank, s)).cloned() else {
                        return Err(self.rt(
                            pc,
                            format!(
                                "copies shared byte {s} as a tensor map, which no `tensormap.replace` wrote"
                            ),
                        ));
                    };
                    self.dmaps.global.insert(
                        d,
                        Published {
                            fields,
                            written: pc,
                            acquired: Vec::new(),
                            built: None,
                        },
                    );
                }
                TmapOp::Acquire { map } => {
                    let a = self.map_addr(t, map, pc)?;
                    let rank = self.rank;
                    if let Some(p) = self.dmaps.global.get_mut(&a) {
                        if !p.acquired.contains(&rank) {
                            p.acquired.push(rank);
                        }
                    }
                }
                TmapOp::Release => {}
            }
        }
        Ok(())
    }

    /// Before a bulk tensor copy of thread `t` at `pc` through the map at `tmap`: when that is
    /// a map built on the device, its fields checked into a [`TensorMap`] (once), and a
    /// `stale-tensormap` finding if this CTA has not acquired it since it was written.
    pub(super) fn device_map(&mut self, t: usize, tmap: &MemRef, pc: usize) -> Result<(), Error> {
        let a = self.map_addr(t, tmap, pc)?;
        let (rank, nbufs) = (self.rank, self.cta.bufs.len());
        let Some(p) = self.dmaps.global.get(&a) else {
            return Ok(());
        };
        let (written, acquired, built) = (p.written, p.acquired.contains(&rank), p.built);
        if built.is_none() {
            let m = p.fields.tensor_map(nbufs).map_err(|e| {
                self.rt(
                    pc,
                    format!(
                        "invalid tensor map (written at {}): {e}",
                        self.cta.p.place(written)
                    ),
                )
            })?;
            self.dmaps.built.push(m);
            let i = self.dmaps.built.len() - 1;
            if let Some(p) = self.dmaps.global.get_mut(&a) {
                p.built = Some(i);
            }
        }
        let reported = self
            .findings
            .iter()
            .any(|f| f.code == Code::StaleTensormap && f.pc == pc && f.with == [written]);
        if !acquired && self.hb.is_some() && !reported {
            let span = |pc: usize| self.cta.p.ins.get(pc).map_or(Span::DUMMY, |i| i.span);
            let d = tensormap_rules::stale(
                &format!("the tensor map at {a:#x}"),
                span(pc),
                span(written),
                "add `fence.proxy.tensormap::generic.acquire.gpu [map], 128` after the \
                 `tensormap.cp_fenceproxy` that writes the map (Triton's \
                 `ttng.tensormap_fenceproxy_acquire`)"
                    .into(),
            );
            self.findings.push(Finding {
                code: Code::StaleTensormap,
                pc,
                with: vec![written],
                diagnostic: d,
            });
        }
        Ok(())
    }

    /// The argument index a copy names the device-built map at address `a` by, once a copy went
    /// through it ([`Machine::device_map`]).
    pub(super) fn device_map_index(&self, a: u64) -> Option<usize> {
        let i = self.dmaps.global.get(&a)?.built?;
        Some(self.cta.l.args.len() + i)
    }

    /// The device-built map of argument index `k` (past the launch's arguments), with its
    /// base byte offset in its buffer.
    pub(super) fn device_map_of(&self, k: usize) -> Option<&(TensorMap, u64)> {
        self.dmaps.built.get(k.checked_sub(self.cta.l.args.len())?)
    }
}
