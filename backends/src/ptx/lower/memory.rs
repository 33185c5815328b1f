//! Generic memory accesses: shared-memory loads and stores of register tiles (addresses through
//! the swizzle) and global loads and stores through pointer parameters.

use super::access::*;
use super::*;
use crate::ptx::linear_layout::xor_bits;
use crate::ptx::smem::view_map;
use bwsim_isa::types::Swizzle;

/// The `ld`/`st` type of view `v`'s elements; `what` (`loads`, `stores`) names the access `op`
/// refuses when there is none.
fn smem_ldst_ty(v: &SmemView, op: &str, what: &str, span: Span) -> LResult<&'static str> {
    ldst_ty(v.geom.dtype).ok_or_else(|| unsupported(op, span, format!("{what} of {} elements", v.geom.dtype)))
}

/// The `atom` type of an atomic `kind` on `dt` elements, in global memory (`global`) or shared
/// memory; `None` where the backend lowers no such atomic (shared memory: no floating-point
/// `max`/`min`, no `cas`, no `load`).
fn atom_ty(kind: &str, dt: DType, global: bool) -> Option<&'static str> {
    let int = !dt.is_float();
    Some(match (kind, dt) {
        ("add", DType::F32) => "f32",
        ("max" | "min", DType::F32) if global => "f32",
        ("add", DType::I32 | DType::U32) => "u32",
        ("add", DType::I64 | DType::U64) => "u64",
        ("max" | "min", DType::I32) => "s32",
        ("max" | "min", DType::U32) => "u32",
        ("max" | "min", DType::I64) => "s64",
        ("max" | "min", DType::U64) => "u64",
        ("and" | "or" | "xor" | "xchg", d) if d.bits() == 32 && int => "b32",
        ("and" | "or" | "xor" | "xchg", d) if d.bits() == 64 && int => "b64",
        ("xchg", DType::F32) => "b32",
        ("cas", d) if global && d.bits() == 32 && int => "b32",
        ("cas", d) if global && d.bits() == 64 && int => "b64",
        ("load", d) if global && (d.bits() == 32 || d.bits() == 64) => ldst_ty(d).unwrap_or("b32"),
        _ => return None,
    })
}

impl<'c, 'k> Lowerer<'c, 'k> {
    /// Address operands (`[reg+imm]`) of every register of a tile of layout `ll` over a view.
    pub(super) fn smem_addrs(
        &mut self,
        v: &SmemView,
        ll: &LinearLayout,
        span: Span,
        op: &str,
    ) -> LResult<Vec<String>> {
        let parts = self.smem_addr_parts(v, ll, span, op)?;
        Ok(parts.into_iter().map(|(r, off)| format!("[{r}+{off}]")).collect())
    }

    /// [`Self::smem_addrs`] in the shared memory of the cluster's CTA `rank`: each address
    /// mapped with `mapa.shared::cluster` (a `.shared::cluster` operand).
    fn peer_smem_addrs(
        &mut self,
        v: &SmemView,
        ll: &LinearLayout,
        span: Span,
        op: &str,
        rank: Reg,
    ) -> LResult<Vec<String>> {
        let parts = self.smem_addr_parts(v, ll, span, op)?;
        let mut out = Vec::with_capacity(parts.len());
        for (r, off) in parts {
            let l = self.e.reg(RegClass::B32);
            let m = self.e.reg(RegClass::B32);
            self.e.ins(format!("add.u32 {l}, {r}, {off}"));
            self.e.ins(format!("mapa.shared::cluster.u32 {m}, {l}, {rank}"));
            out.push(format!("[{m}]"));
        }
        Ok(out)
    }

    /// The address of each register of a tile of layout `ll` in view `v`: a register and a
    /// byte offset.
    fn smem_addr_parts(
        &mut self,
        v: &SmemView,
        ll: &LinearLayout,
        span: Span,
        op: &str,
    ) -> LResult<Vec<(Reg, i64)>> {
        if ll.shape != v.shape {
            return Err(invalid(
                op,
                span,
                format!("tile shape {:?} differs from the view's {:?}", ll.shape, v.shape),
            ));
        }
        let period = v.geom.layout.swizzle().period() as u64;
        if !matches!(v.geom.layout.swizzle(), Swizzle::None) && v.align < period {
            return Err(unsupported(
                op,
                span,
                format!(
                    "a swizzled view aligned to {} bytes (its pattern repeats every {period})",
                    v.align
                ),
            ));
        }
        let map = view_map(&v.geom, &v.offsets, &v.shape).map_err(|m| unsupported(op, span, m))?;
        let lin = |f: u32| xor_bits(&map.bases, f);
        let lanes: Vec<u32> = ll.lanes.iter().map(|&b| lin(b)).collect();
        let warps: Vec<u32> = ll.warps.iter().map(|&b| lin(b)).collect();
        let tmask = lanes.iter().chain(&warps).fold(0, |a, &b| a | b);
        let toff = self.thread_part(&lanes, &warps);
        let t = self.e.reg(RegClass::B32);
        self.e.ins(format!("add.u32 {t}, {}, {toff}", v.base.reg));
        let mut out = Vec::new();
        for r in 0..ll.num_regs() {
            let ro = map.origin ^ lin(ll.reg_flat(r));
            if ro & tmask == 0 {
                out.push((t, ro as i64 + v.base.off));
            } else {
                let x = self.e.reg(RegClass::B32);
                self.e.ins(format!("xor.b32 {x}, {toff}, {ro}"));
                self.e.ins(format!("add.u32 {x}, {x}, {}", v.base.reg));
                out.push((x, v.base.off));
            }
        }
        Ok(out)
    }

    /// True on the threads that hold the first copy of each element (lane and warp bits with
    /// a zero basis are zero), or `None` when no thread holds a copy.
    pub(super) fn unique_pred(&mut self, ll: &LinearLayout) -> Option<Reg> {
        let mut lane_mask = 0u32;
        for (i, &b) in ll.lanes.iter().enumerate() {
            if b == 0 {
                lane_mask |= 1 << i;
            }
        }
        let mut warp_mask = 0u32;
        for (i, &b) in ll.warps.iter().enumerate() {
            if b == 0 {
                warp_mask |= 1 << i;
            }
        }
        if lane_mask == 0 && warp_mask == 0 {
            return None;
        }
        let t = self.e.reg(RegClass::B32);
        let p = self.e.reg(RegClass::Pred);
        self.e.ins(format!("and.b32 {t}, {}, {lane_mask}", self.k.lane));
        self.e.ins(format!("setp.eq.u32 {p}, {t}, 0"));
        if warp_mask != 0 {
            let w = self.e.reg(RegClass::B32);
            let q = self.e.reg(RegClass::Pred);
            self.e
                .ins(format!("and.b32 {w}, {}, {warp_mask}", self.part.pwarp));
            self.e.ins(format!("setp.eq.and.u32 {q}, {w}, 0, {p}"));
            return Some(q);
        }
        Some(p)
    }

    /// A fresh tile of `dtype` in layout `ll` (`parent`: its tile layout), register `i` loaded
    /// by `load` (`ld.SPACE.TY`) from the address operand `addrs[i]`; shared memory is dirty
    /// after it.
    fn ld_smem_tile(
        &mut self,
        dtype: DType,
        ll: LinearLayout,
        parent: Option<TileLayout>,
        span: Span,
        load: &str,
        addrs: Vec<String>,
    ) -> LResult<Tile> {
        let out = self.fresh_tile(dtype, ll, parent, span)?;
        for (r, a) in out.regs.iter().zip(addrs) {
            self.e.ins(format!("{load} {r}, {a}"));
        }
        self.part.all_dirty = true;
        Ok(out)
    }

    /// Register `i` of `regs` (a tile of layout `ll`) stored by `store` (`st.SPACE.TY`) to the
    /// address operand `addrs[i]`, by the one thread that holds each element's first copy
    /// ([`Self::unique_pred`]); shared memory is dirty after it.
    fn st_smem_regs(&mut self, ll: &LinearLayout, store: &str, regs: &[Reg], addrs: Vec<String>) {
        let p = self.unique_pred(ll);
        for (r, a) in regs.iter().zip(addrs) {
            self.e.ins_if(p, format!("{store} {a}, {r}"));
        }
        self.part.all_dirty = true;
    }

    /// `smem.load`; `peer`: from the same view in the cluster's CTA of that rank (a register).
    pub(super) fn smem_load(
        &mut self,
        v: &SmemView,
        l: &TileLayout,
        span: Span,
        peer: Option<Reg>,
    ) -> LResult<Tile> {
        let op = "smem.load";
        let ty = smem_ldst_ty(v, op, "loads", span)?;
        let ll = self.layout_for(l, &v.shape, span)?;
        self.before_all_access();
        let (addrs, space) = match peer {
            Some(rank) => (self.peer_smem_addrs(v, &ll, span, op, rank)?, "shared::cluster"),
            None => (self.smem_addrs(v, &ll, span, op)?, "shared"),
        };
        self.ld_smem_tile(
            v.geom.dtype,
            ll,
            Some(l.clone()),
            span,
            &format!("ld.{space}.{ty}"),
            addrs,
        )
    }

    /// `smem.store`; `peer`: into the same view in the cluster's CTA of that rank (a register).
    pub(super) fn smem_store(
        &mut self,
        v: &SmemView,
        t: &Tile,
        span: Span,
        peer: Option<Reg>,
    ) -> LResult<()> {
        let op = "smem.store";
        let ty = smem_ldst_ty(v, op, "stores", span)?;
        let t = if t.dtype != v.geom.dtype {
            self.cast_tile(t, v.geom.dtype, span)?
        } else {
            t.clone()
        };
        self.before_all_access();
        let (addrs, space) = match peer {
            Some(rank) => (self.peer_smem_addrs(v, &t.ll, span, op, rank)?, "shared::cluster"),
            None => (self.smem_addrs(v, &t.ll, span, op)?, "shared"),
        };
        self.st_smem_regs(&t.ll, &format!("st.{space}.{ty}"), &t.regs, addrs);
        Ok(())
    }

    /// The shared addresses (one register each) of the elements an indexed access of view `v`
    /// reaches through the index tile `idx` (i32, the view's shape): register `r` holds element
    /// `p` of the index tile, which aims at the view at `p` with coordinate `axis` replaced by
    /// the index. The view's address map is XOR-linear in the flat index
    /// ([`view_map`]): the thread's and register's part with the axis' bits cleared, XOR the
    /// part of the index's bits (a shift where those bits are one stride doubling, else one
    /// select per bit).
    fn smem_index_addrs(
        &mut self,
        v: &SmemView,
        idx: &Tile,
        axis: usize,
        span: Span,
        op: &str,
    ) -> LResult<Vec<Reg>> {
        let rank = v.shape.len();
        if idx.ll.shape.len() != rank || (0..rank).any(|d| d != axis && idx.ll.shape[d] != v.shape[d]) {
            return Err(invalid(
                op,
                span,
                format!(
                    "indices of shape {:?} into a view of shape {:?}",
                    idx.ll.shape, v.shape
                ),
            ));
        }
        let period = v.geom.layout.swizzle().period() as u64;
        if !matches!(v.geom.layout.swizzle(), Swizzle::None) && v.align < period {
            return Err(unsupported(
                op,
                span,
                "a swizzled view aligned below its pattern's period",
            ));
        }
        let map = view_map(&v.geom, &v.offsets, &v.shape).map_err(|m| unsupported(op, span, m))?;
        let offs = crate::ptx::linear_layout::dim_offsets(&v.shape).map_err(|m| unsupported(op, span, m))?;
        let ioffs =
            crate::ptx::linear_layout::dim_offsets(&idx.ll.shape).map_err(|m| unsupported(op, span, m))?;
        let nbits = v.shape[axis].trailing_zeros();
        let shift = offs[axis];
        // Bit i of the index tile's flat index as a bit of the view's (the axis' bits none:
        // the index replaces that coordinate).
        let mut to_view: Vec<Option<u32>> = Vec::new();
        for d in (0..rank).rev() {
            for b in 0..idx.ll.shape[d].trailing_zeros() {
                debug_assert_eq!(to_view.len() as u32, ioffs[d] + b);
                to_view.push((d != axis).then_some(offs[d] + b));
            }
        }
        let lin = |f: u32| {
            let mut o = 0u32;
            for (i, t) in to_view.iter().enumerate() {
                if let Some(t) = t {
                    if f >> i & 1 == 1 {
                        o ^= map.bases[*t as usize];
                    }
                }
            }
            o
        };
        let lanes: Vec<u32> = idx.ll.lanes.iter().map(|&b| lin(b)).collect();
        let warps: Vec<u32> = idx.ll.warps.iter().map(|&b| lin(b)).collect();
        let toff = self.thread_part(&lanes, &warps);
        let abases: Vec<u32> = (0..nbits).map(|b| map.bases[(shift + b) as usize]).collect();
        let strided = abases
            .first()
            .is_some_and(|&b0| b0.is_power_of_two() && abases.iter().enumerate().all(|(b, &x)| x == b0 << b));
        let mut out = Vec::with_capacity(idx.regs.len());
        for (r, &ir) in idx.regs.iter().enumerate() {
            let io = self.e.reg(RegClass::B32);
            if strided {
                self.e
                    .ins(format!("shl.b32 {io}, {ir}, {}", abases[0].trailing_zeros()));
            } else {
                self.e.ins(format!("mov.u32 {io}, 0"));
                for (b, &x) in abases.iter().enumerate() {
                    let t = self.e.reg(RegClass::B32);
                    let p = self.e.reg(RegClass::Pred);
                    self.e.ins(format!("and.b32 {t}, {ir}, {}", 1u32 << b));
                    self.e.ins(format!("setp.ne.u32 {p}, {t}, 0"));
                    self.e.ins(format!("selp.b32 {t}, {x}, 0, {p}"));
                    self.e.ins(format!("xor.b32 {io}, {io}, {t}"));
                }
            }
            let ro = map.origin ^ lin(idx.ll.reg_flat(r));
            let a = self.e.reg(RegClass::B32);
            self.e.ins(format!("xor.b32 {a}, {toff}, {ro}"));
            self.e.ins(format!("xor.b32 {a}, {a}, {io}"));
            self.e.ins(format!("add.u32 {a}, {a}, {}", v.base.reg));
            if v.base.off != 0 {
                self.e.ins(format!("add.u32 {a}, {a}, {}", v.base.off));
            }
            out.push(a);
        }
        Ok(out)
    }

    /// The index tile of an indexed access, as i32.
    fn index_tile(&mut self, e: &Expr, op: &str, span: Span) -> LResult<Tile> {
        let t = self.tile_arg(e, op)?;
        if t.dtype == DType::I32 {
            Ok(t)
        } else {
            self.cast_tile(&t, DType::I32, span)
        }
    }

    /// `smem.gather`: one `ld.shared` per element of the index tile, into its layout.
    pub(super) fn smem_gather(
        &mut self,
        v: &SmemView,
        index: &Expr,
        axis: usize,
        span: Span,
    ) -> LResult<Tile> {
        let op = "smem.gather";
        let ty = smem_ldst_ty(v, op, "loads", span)?;
        let idx = self.index_tile(index, op, span)?;
        self.before_all_access();
        let addrs = self.smem_index_addrs(v, &idx, axis, span, op)?;
        let addrs = addrs.iter().map(|a| format!("[{a}]")).collect();
        self.ld_smem_tile(
            v.geom.dtype,
            idx.ll.clone(),
            idx.parent.clone(),
            span,
            &format!("ld.shared.{ty}"),
            addrs,
        )
    }

    /// `smem.scatter`: one `st.shared` per element, by the thread holding its first copy.
    pub(super) fn smem_scatter(
        &mut self,
        v: &SmemView,
        index: &Expr,
        value: &Expr,
        axis: usize,
        span: Span,
    ) -> LResult<()> {
        let op = "smem.scatter";
        let ty = smem_ldst_ty(v, op, "stores", span)?;
        let idx = self.index_tile(index, op, span)?;
        let t = self.tile_arg(value, op)?;
        let t = self.in_layout(&t, &idx.ll, span)?;
        self.before_all_access();
        let addrs = self.smem_index_addrs(v, &idx, axis, span, op)?;
        let addrs = addrs.iter().map(|a| format!("[{a}]")).collect();
        self.st_smem_regs(&idx.ll, &format!("st.shared.{ty}"), &t.regs, addrs);
        Ok(())
    }

    /// `smem.atomic`: one `atom.shared` per element (its old value in the result; 0 where
    /// masked off). A layout that replicates elements over threads is refused, as for
    /// `global.atomic`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn smem_atomic(
        &mut self,
        kind: &str,
        v: &SmemView,
        index: &Expr,
        value: &Expr,
        axis: usize,
        mask: Option<&Expr>,
        span: Span,
    ) -> LResult<Tile> {
        let op = "smem.atomic";
        let dt = v.geom.dtype;
        let ty = atom_ty(kind, dt, false).ok_or_else(|| {
            unsupported(
                op,
                span,
                format!("shared-memory atomic `{kind}` on {dt} elements"),
            )
        })?;
        let ins = if kind == "xchg" { "exch" } else { kind };
        let idx = self.index_tile(index, op, span)?;
        if self.unique_pred(&idx.ll).is_some() {
            return Err(unsupported(
                op,
                span,
                "an atomic over a layout that replicates elements across threads (give the indices a layout with one owner per element)",
            ));
        }
        let t = self.tile_arg(value, op)?;
        let t = self.in_layout(&t, &idx.ll, span)?;
        let m = match mask {
            Some(m) => {
                let mt = self.tile_arg(m, op)?;
                if mt.dtype != DType::I1 {
                    return Err(invalid(op, m.span, "the mask is an i1 tile"));
                }
                Some(self.in_layout(&mt, &idx.ll, span)?)
            }
            None => None,
        };
        self.before_all_access();
        let addrs = self.smem_index_addrs(v, &idx, axis, span, op)?;
        let out = self.fresh_tile(dt, idx.ll.clone(), idx.parent.clone(), span)?;
        let zero = self.elem_operand(&Val::Int(0), dt, span)?;
        for (r, a) in addrs.iter().enumerate() {
            let d = out.regs[r];
            let x = t.regs[r];
            match &m {
                Some(mt) => {
                    // An i1 tile's registers are predicates.
                    self.mov(d, &zero);
                    self.e
                        .ins(format!("@{} atom.shared.{ins}.{ty} {d}, [{a}], {x}", mt.regs[r]));
                }
                None => self.e.ins(format!("atom.shared.{ins}.{ty} {d}, [{a}], {x}")),
            }
        }
        self.part.all_dirty = true;
        Ok(out)
    }

    // ----- global memory -----

    pub(super) fn ptr_arg(&mut self, e: &Expr, op: &str) -> LResult<(DType, Reg)> {
        match self.expr(e)? {
            Val::Ptr(d, r) => Ok((d, r)),
            other => Err(wrong_kind(op, e.span, "expected a pointer parameter", &other)),
        }
    }

    /// Offsets (and more tiles) in one common layout; scalars broadcast.
    pub(super) fn global_tiles(
        &mut self,
        vals: &[Val],
        span: Span,
    ) -> LResult<(Vec<Option<Tile>>, LinearLayout)> {
        let refs: Vec<&Val> = vals.iter().collect();
        if !vals.iter().any(|v| matches!(v, Val::Tile(_))) {
            // A scalar offset: a one-element tile held by every thread.
            let ll = LinearLayout {
                shape: vec![1],
                regs: vec![],
                lanes: vec![0; 5],
                warps: vec![0; self.part.warps.trailing_zeros() as usize],
            };
            let mut out = Vec::new();
            for v in vals {
                out.push(match v {
                    Val::Tile(_) => None,
                    _ => None,
                });
            }
            return Ok((out, ll));
        }
        let (ts, ll, _) = self.align_tiles_pub(&refs, span)?;
        Ok((ts, ll))
    }

    pub(super) fn global_addr(&mut self, base: Reg, off: &str, es: u32) -> Reg {
        let a = self.e.reg(RegClass::B64);
        let o = self.reg_operand(off, RegClass::B32);
        self.e.ins(format!("mad.wide.s32 {a}, {o}, {es}, {base}"));
        a
    }

    pub(super) fn global_load(
        &mut self,
        ptr: &Expr,
        offsets: &Expr,
        mask: Option<&Expr>,
        other: Option<&Expr>,
        span: Span,
    ) -> LResult<Tile> {
        let op = "global.load";
        let (dt, base) = self.ptr_arg(ptr, op)?;
        let ty = ldst_ty(dt).ok_or_else(|| unsupported(op, span, format!("loads of {dt} elements")))?;
        let (ll, off_ops, mask_ops) = self.offsets_and_mask(offsets, mask, span)?;
        let other_op = match other {
            Some(o) => {
                let v = self.expr(o)?;
                Some(self.elem_operand(&v, dt, span)?)
            }
            None => None,
        };
        let out = self.fresh_tile(dt, ll, None, span)?;
        let es = dt.bytes();
        for r in 0..off_ops.len() {
            let a = self.global_addr(base, &off_ops[r], es);
            let d = out.regs[r];
            match &mask_ops {
                None => self.e.ins(format!("ld.global.{ty} {d}, [{a}]")),
                Some(ms) => {
                    let fill = other_op.clone().unwrap_or_else(|| "0".into());
                    let fill = if d.class == RegClass::F32 && fill == "0" {
                        "0f00000000".to_string()
                    } else {
                        fill
                    };
                    self.mov(d, &fill);
                    self.e.ins(format!("@{} ld.global.{ty} {d}, [{a}]", ms[r]));
                }
            }
        }
        Ok(out)
    }

    /// `cp.async`: each thread copies the elements its offsets' registers hold, one
    /// `cp.async.ca.shared.global` of the element's size each, into the same positions of the
    /// view (`src-size` 0 for masked elements: the hardware writes zeros). Replicated elements
    /// are copied by their first owner only. Earlier all-thread accesses of the partition (a
    /// read of the buffer being refilled) are ordered before the copies by a barrier.
    pub(super) fn cp_async(
        &mut self,
        v: &SmemView,
        ptr: &Expr,
        offsets: &Expr,
        mask: Option<&Expr>,
        span: Span,
    ) -> LResult<()> {
        let op = "cp.async";
        let (dt, base) = self.ptr_arg(ptr, op)?;
        let es = dt.bytes();
        if !matches!(es, 1 | 2 | 4 | 8) {
            return Err(unsupported(
                op,
                span,
                format!("copies of {dt} elements (cp.async copies 4, 8 or 16 bytes; bwsim issues one per element)"),
            ));
        }
        let (ll, off_ops, mask_ops) = self.offsets_and_mask(offsets, mask, span)?;
        // Earlier all-thread accesses are ordered before the copies as before an issue.
        self.before_issue();
        self.before_all_access();
        let addrs = self.smem_addrs(v, &ll, span, op)?;
        let p = self.unique_pred(&ll);
        if es < 4 {
            // cp.async has no copy narrower than 4 bytes, and whether a thread's elements are
            // adjacent in both memories is not known here: each 1- or 2-byte element is
            // loaded and stored at once instead (zero where masked off). The bytes land
            // earlier than an asynchronous copy's would, which no kernel can tell apart: it
            // may read them only after the `cp.async.wait` that retires the copy.
            let (ld, st) = if es == 2 {
                ("ld.global.b16", "st.shared.b16")
            } else {
                ("ld.global.u8", "st.shared.u8")
            };
            for r in 0..ll.num_regs() {
                let g = self.global_addr(base, &off_ops[r], es);
                let x = self.e.reg(RegClass::B16);
                self.e.ins(format!("mov.b16 {x}, 0"));
                match &mask_ops {
                    None => self.e.ins_if(p, format!("{ld} {x}, [{g}]")),
                    Some(ms) => self.e.ins(format!("@{} {ld} {x}, [{g}]", ms[r])),
                }
                self.e.ins_if(p, format!("{st} {}, {x}", addrs[r]));
            }
            return Ok(());
        }
        for r in 0..ll.num_regs() {
            let g = self.global_addr(base, &off_ops[r], es);
            let size = match &mask_ops {
                None => es.to_string(),
                Some(ms) => {
                    let sz = self.e.reg(RegClass::B32);
                    self.e.ins(format!("selp.b32 {sz}, {es}, 0, {}", ms[r]));
                    sz.to_string()
                }
            };
            self.e.ins_if(
                p,
                format!("cp.async.ca.shared.global {}, [{g}], {es}, {size}", addrs[r]),
            );
        }
        // No barrier is owed to the copies themselves: nothing may touch their bytes before
        // a `cp.async.wait`, which marks the partition for one.
        Ok(())
    }

    /// One operand of a global access, per register of the access's layout (`n` registers):
    /// the tile's registers converted to `to`, or the scalar `v` repeated (an i32 offset, a
    /// predicate for i1, an element of `to` otherwise).
    fn global_operand(
        &mut self,
        v: &Val,
        t: Option<&Tile>,
        to: DType,
        n: usize,
        span: Span,
    ) -> LResult<Vec<String>> {
        Ok(match t {
            Some(t) => {
                let t = if t.dtype != to {
                    self.cast_tile(t, to, span)?
                } else {
                    t.clone()
                };
                t.regs.iter().map(|r| r.to_string()).collect()
            }
            None => vec![
                match to {
                    DType::I32 => self.scalar_operand(v, ScalarTy::I32, span)?,
                    DType::I1 => self.pred_of(v, span)?.to_string(),
                    _ => self.elem_operand(v, to, span)?,
                };
                n
            ],
        })
    }

    /// The offsets and (optional) mask of a global load or `cp.async`, evaluated in that
    /// order, per register of their common layout (returned first).
    #[allow(clippy::type_complexity)]
    fn offsets_and_mask(
        &mut self,
        offsets: &Expr,
        mask: Option<&Expr>,
        span: Span,
    ) -> LResult<(LinearLayout, Vec<String>, Option<Vec<String>>)> {
        let mut vals = vec![self.expr(offsets)?];
        if let Some(m) = mask {
            vals.push(self.expr(m)?);
        }
        let (ts, ll) = self.global_tiles(&vals, span)?;
        let n = ll.num_regs();
        let off_ops = self.global_operand(&vals[0], ts[0].as_ref(), DType::I32, n, span)?;
        let mask_ops = match vals.get(1) {
            Some(m) => Some(self.global_operand(m, ts[1].as_ref(), DType::I1, n, span)?),
            None => None,
        };
        Ok((ll, off_ops, mask_ops))
    }

    /// The offsets, values and (when `vals` has a third entry) mask of a global store or
    /// atomic, per register of `ll` (`ts` from [`Self::global_tiles`]).
    #[allow(clippy::type_complexity)]
    fn global_operands(
        &mut self,
        vals: &[Val],
        ts: &[Option<Tile>],
        ll: &LinearLayout,
        dt: DType,
        span: Span,
    ) -> LResult<(Vec<String>, Vec<String>, Option<Vec<String>>)> {
        let n = ll.num_regs();
        let off_ops = self.global_operand(&vals[0], ts[0].as_ref(), DType::I32, n, span)?;
        let val_ops = self.global_operand(&vals[1], ts[1].as_ref(), dt, n, span)?;
        let mask_ops = match vals.get(2) {
            Some(m) => Some(self.global_operand(m, ts[2].as_ref(), DType::I1, n, span)?),
            None => None,
        };
        Ok((off_ops, val_ops, mask_ops))
    }

    /// `global.atomic`: one `atom.SEM.SCOPE.global` per element its owning thread holds (the
    /// ordering as the IR gives it, `acq_rel` and `gpu` by default); the old values
    /// land in the result's registers. A layout that replicates elements over threads is
    /// refused (only the owner would see the old value, and a second owner would apply twice).
    pub(super) fn global_atomic(
        &mut self,
        kind: &str,
        ptr: &Expr,
        a: AtomicArgs,
        span: Span,
    ) -> LResult<Tile> {
        let AtomicArgs {
            offsets,
            value,
            mask,
            compare,
            order: (sem, scope),
        } = a;
        let op = "global.atomic";
        let (dt, base) = self.ptr_arg(ptr, op)?;
        let ty = atom_ty(kind, dt, true)
            .ok_or_else(|| unsupported(op, span, format!("atomic `{kind}` on {dt} elements")))?;
        let ins = if kind == "xchg" { "exch" } else { kind };
        let mut vals = vec![self.expr(offsets)?, self.expr(value)?];
        if let Some(m) = mask {
            vals.push(self.expr(m)?);
        }
        // cas's compare value, last: aligned with the others, read as its own operand.
        let with_compare = compare.is_some();
        if let Some(c) = compare {
            vals.push(self.expr(c)?);
        }
        let (ts, ll) = self.global_tiles(&vals, span)?;
        // A layout that holds an element in several threads: its first holder applies the
        // atomic, which is all a statement whose old values nobody reads needs.
        let mut owner = self.unique_pred(&ll);
        // An atomic that changes nothing (`add` of 0: an atomic read, what a poll of a flag
        // is) may be applied by every holder: each reads the value at its own moment, as
        // separate reads of the same flag do.
        let reads_only =
            kind == "load" || kind == "add" && matches!(&value.kind, bwsim_isa::ir::ExprKind::Int(0));
        if owner.is_some() && !self.result_discarded && reads_only {
            owner = None;
        }
        if owner.is_some() && !self.result_discarded {
            return Err(unsupported(
                op,
                span,
                "an atomic over a layout that replicates elements across threads whose old values are read (give the offsets a layout with one owner per element)",
            ));
        }
        let k = vals.len() - usize::from(with_compare);
        let (off_ops, val_ops, mask_ops) = self.global_operands(&vals[..k], &ts[..k], &ll, dt, span)?;
        let cmp_ops = if with_compare {
            let n = ll.num_regs();
            Some(self.global_operand(&vals[k], ts[k].as_ref(), dt, n, span)?)
        } else {
            None
        };
        let out = self.fresh_tile(dt, ll.clone(), None, span)?;
        let class = dtype_class(dt).unwrap_or(RegClass::B32);
        let zero = self.elem_operand(&Val::Int(0), dt, span)?;
        for r in 0..off_ops.len() {
            let a = self.global_addr(base, &off_ops[r], dt.bytes());
            let v = self.reg_operand(&val_ops[r], class);
            // `atom.cas` takes the compare value before the new one.
            let v = match &cmp_ops {
                Some(cs) => format!("{}, {v}", self.reg_operand(&cs[r], class)),
                None => v.to_string(),
            };
            let d = out.regs[r];
            let pred = match (&mask_ops, owner) {
                (Some(ms), Some(o)) => {
                    let p = self.e.reg(RegClass::Pred);
                    self.e.ins(format!("and.pred {p}, {}, {o}", ms[r]));
                    Some(p.to_string())
                }
                (Some(ms), None) => Some(ms[r].to_string()),
                (None, Some(o)) => Some(o.to_string()),
                (None, None) => None,
            };
            // An atomic read is PTX's ordered load (`ld.relaxed`/`ld.acquire` with a scope).
            let ins = if kind == "load" {
                format!("ld.{sem}.{scope}.global.{ty} {d}, [{a}]")
            } else {
                format!("atom.{sem}.{scope}.global.{ins}.{ty} {d}, [{a}], {v}")
            };
            match pred {
                Some(p) => {
                    // Masked-off elements read as 0, as the simulator gives them.
                    self.mov(d, &zero);
                    self.e.ins(format!("@{p} {ins}"));
                }
                None => self.e.ins(ins),
            }
        }
        Ok(out)
    }

    pub(super) fn global_store(
        &mut self,
        ptr: &Expr,
        offsets: &Expr,
        value: &Expr,
        mask: Option<&Expr>,
        span: Span,
    ) -> LResult<()> {
        let op = "global.store";
        let (dt, base) = self.ptr_arg(ptr, op)?;
        let ty = ldst_ty(dt).ok_or_else(|| unsupported(op, span, format!("stores of {dt} elements")))?;
        let mut vals = vec![self.expr(offsets)?, self.expr(value)?];
        if let Some(m) = mask {
            vals.push(self.expr(m)?);
        }
        let (ts, ll) = self.global_tiles(&vals, span)?;
        let (off_ops, val_ops, mask_ops) = self.global_operands(&vals, &ts, &ll, dt, span)?;
        let uniq = self.unique_pred(&ll);
        for r in 0..off_ops.len() {
            let a = self.global_addr(base, &off_ops[r], dt.bytes());
            let mut p = uniq.map(|p| p.to_string());
            if let Some(ms) = &mask_ops {
                p = Some(match p {
                    None => ms[r].clone(),
                    Some(u) => {
                        let q = self.e.reg(RegClass::Pred);
                        self.e.ins(format!("and.pred {q}, {u}, {}", ms[r]));
                        q.to_string()
                    }
                });
            }
            let mut v = self.reg_operand(&val_ops[r], dtype_class(dt).unwrap_or(RegClass::B32));
            if dtype_class(dt) == Some(RegClass::Pred) {
                // A bool is stored as a byte, 0 or 1 (`st.global.u8` takes no predicate).
                let b = self.e.reg(RegClass::B16);
                self.e.ins(format!("selp.b16 {b}, 1, 0, {v}"));
                v = b.to_string();
            }
            match p {
                Some(p) => self.e.ins(format!("@{p} st.global.{ty} [{a}], {v}")),
                None => self.e.ins(format!("st.global.{ty} [{a}], {v}")),
            }
        }
        Ok(())
    }
}

/// The element operands of a `global.atomic`: offsets, value, mask and `cas`'s compare value,
/// and its ordering.
pub(super) struct AtomicArgs<'a> {
    pub offsets: &'a Expr,
    pub value: &'a Expr,
    pub mask: Option<&'a Expr>,
    pub compare: Option<&'a Expr>,
    /// The PTX `.sem` and `.scope` words.
    pub order: (String, String),
}
