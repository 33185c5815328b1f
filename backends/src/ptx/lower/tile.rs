//! Register tiles: construction (`arange`, `full`), elementwise arithmetic, casts, the shape
//! functions (`expand_dims`, `broadcast`, `reshape`, `permute`, `split`, `join`) and layout
//! conversion; math functions and reductions are in `reduce`.
//!
//! A conversion between two layouts is free when every thread already holds every element it
//! needs at a register index that is the same for all threads (checked on the linear maps);
//! otherwise the partition writes the tile to its shared-memory scratch area, synchronises,
//! and reads it back in the new layout (in rounds when the tile is larger than the scratch
//! budget).

use super::*;
use crate::ptx::emit::{bf16_bits, f16_bits};
use crate::ptx::linear_layout::{broadcast_projection, project, LinearLayout};
use bwsim_isa::builtins::{MathFn, ReduceOp};
use bwsim_isa::packed_arith::{self, PackedOp};
use bwsim_isa::typeck::broadcast_shapes;

/// PTX type suffix of arithmetic on a tile element type.
pub(super) fn arith_ty(d: DType) -> Option<&'static str> {
    match d {
        DType::F32 | DType::TF32 => Some("f32"),
        DType::F16 => Some("f16"),
        DType::BF16 => Some("bf16"),
        DType::I32 => Some("s32"),
        DType::U32 => Some("u32"),
        DType::I64 => Some("s64"),
        DType::U64 => Some("u64"),
        _ => None,
    }
}

/// PTX bit-size suffix of a tile element's register.
pub(super) fn bits_ty(d: DType) -> &'static str {
    match d.bits() {
        64 => "b64",
        32 => "b32",
        16 => "b16",
        _ => "b8",
    }
}

pub(super) fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::TF32 | DType::F16 | DType::BF16)
}

impl<'c, 'k> Lowerer<'c, 'k> {
    pub fn layout_for(&self, l: &TileLayout, shape: &[u32], span: Span) -> LResult<LinearLayout> {
        LinearLayout::from_tile_layout(l, shape, self.part.warps).map_err(|m| unsupported("layout", span, m))
    }

    pub fn fresh_tile(
        &mut self,
        dtype: DType,
        ll: LinearLayout,
        parent: Option<TileLayout>,
        span: Span,
    ) -> LResult<Tile> {
        let class = dtype_class(dtype)
            .ok_or_else(|| unsupported("tile", span, format!("register tiles of {dtype}")))?;
        let regs = (0..ll.num_regs()).map(|_| self.e.reg(class)).collect();
        Ok(Tile {
            dtype,
            ll,
            regs,
            parent,
        })
    }

    pub fn copy_tile(&mut self, t: &Tile) -> Tile {
        let regs: Vec<Reg> = t.regs.iter().map(|r| self.e.reg(r.class)).collect();
        for (d, s) in regs.iter().zip(&t.regs) {
            self.mov(*d, &s.to_string());
        }
        Tile { regs, ..t.clone() }
    }

    /// This thread's part of a linear map: XOR of `lanes[i]` for each set lane bit and of
    /// `warps[i]` for each set bit of the partition-local warp index.
    pub fn thread_part(&mut self, lanes: &[u32], warps: &[u32]) -> Reg {
        let acc = self.e.reg(RegClass::B32);
        self.e.ins(format!("mov.u32 {acc}, 0"));
        let lane = self.k.lane;
        let pwarp = self.part.pwarp;
        self.xor_bits_of(acc, lane, lanes);
        self.xor_bits_of(acc, pwarp, warps);
        acc
    }

    pub(super) fn xor_bits_of(&mut self, acc: Reg, src: Reg, bases: &[u32]) {
        let mut i = 0;
        while i < bases.len() {
            let b = bases[i];
            if b == 0 {
                i += 1;
                continue;
            }
            let t = self.e.reg(RegClass::B32);
            if b.is_power_of_two() {
                let mut j = i + 1;
                while j < bases.len()
                    && (j - i) < 32
                    && bases[j] == b.wrapping_shl((j - i) as u32)
                    && bases[j] != 0
                {
                    j += 1;
                }
                let s = b.trailing_zeros();
                self.e.ins(format!("bfe.u32 {t}, {src}, {i}, {}", j - i));
                if s > 0 {
                    self.e.ins(format!("shl.b32 {t}, {t}, {s}"));
                }
                i = j;
            } else {
                self.e.ins(format!("bfe.u32 {t}, {src}, {i}, 1"));
                self.e.ins(format!("mul.lo.u32 {t}, {t}, {b}"));
                i += 1;
            }
            self.e.ins(format!("xor.b32 {acc}, {acc}, {t}"));
        }
    }

    // ----- operands -----

    /// An operand of element type `d` for a scalar value (immediate or register).
    pub fn elem_operand(&mut self, v: &Val, d: DType, span: Span) -> LResult<String> {
        match d {
            DType::F32 | DType::TF32 => self.scalar_operand(v, ScalarTy::F32, span),
            DType::I32 | DType::U32 => self.scalar_operand(v, ScalarTy::I32, span),
            DType::I64 | DType::U64 => self.scalar_operand(v, ScalarTy::I64, span),
            DType::I1 => Ok(self.pred_of(v, span)?.to_string()),
            DType::F16 | DType::BF16 => {
                let r = self.e.reg(RegClass::B16);
                match v {
                    Val::Int(_) | Val::Float(_) | Val::Bool(_) => {
                        let x = match v {
                            Val::Int(i) => *i as f64,
                            Val::Float(f) => *f,
                            Val::Bool(b) => *b as i64 as f64,
                            _ => 0.0,
                        };
                        let bits = if d == DType::F16 {
                            f16_bits(x)
                        } else {
                            bf16_bits(x)
                        };
                        self.e.ins(format!("mov.b16 {r}, 0x{bits:04X}"));
                    }
                    _ => {
                        let f = self.scalar_reg(v, ScalarTy::F32, span)?;
                        self.e.ins(format!(
                            "cvt.rn.{}.f32 {r}, {f}",
                            if d == DType::F16 { "f16" } else { "bf16" }
                        ));
                    }
                }
                Ok(r.to_string())
            }
            other => match v {
                Val::Int(i) => Ok(i.to_string()),
                _ => Err(unsupported(
                    "tile",
                    span,
                    format!("scalar operands of {other} tiles"),
                )),
            },
        }
    }

    // ----- layouts -----

    /// Registers of `src` for each register of `dst` when the conversion is thread-local.
    pub(super) fn local_map(
        src: &LinearLayout,
        dst: &LinearLayout,
        proj: &[Option<u32>],
    ) -> Option<Vec<usize>> {
        if src.lanes.len() != dst.lanes.len() || src.warps.len() != dst.warps.len() {
            return None;
        }
        for (s, d) in src
            .lanes
            .iter()
            .zip(&dst.lanes)
            .chain(src.warps.iter().zip(&dst.warps))
        {
            if project(proj, *d) != *s {
                return None;
            }
        }
        (0..dst.num_regs())
            .map(|r| src.reg_of(project(proj, dst.reg_flat(r))))
            .collect()
    }

    pub(super) fn is_local(src: &LinearLayout, dst: &LinearLayout) -> bool {
        broadcast_projection(&src.shape, &dst.shape)
            .ok()
            .and_then(|p| Self::local_map(src, dst, &p))
            .is_some()
    }

    /// The tile in layout `target` (same shape, or a shape `t` broadcasts to).
    pub fn in_layout(&mut self, t: &Tile, target: &LinearLayout, span: Span) -> LResult<Tile> {
        if t.ll == *target {
            return Ok(t.clone());
        }
        let proj = broadcast_projection(&t.ll.shape, &target.shape).map_err(|m| invalid("tile", span, m))?;
        if let Some(map) = Self::local_map(&t.ll, target, &proj) {
            return Ok(Tile {
                dtype: t.dtype,
                ll: target.clone(),
                regs: map.iter().map(|&s| t.regs[s]).collect(),
                parent: None,
            });
        }
        self.convert_via_smem(t, target, &proj, span)
    }

    /// Same-shape conversion (keeps no parent).
    pub fn convert(&mut self, t: &Tile, target: &LinearLayout, span: Span) -> LResult<Tile> {
        self.in_layout(t, target, span)
    }

    /// Scratch bytes this partition may use for one conversion round.
    pub(super) fn scratch_budget(&self) -> u32 {
        let mut used = self.reserved.next.div_ceil(128) * 128 + 512;
        for (i, &s) in self.scratch.iter().enumerate() {
            if i != self.part.index {
                used += s.div_ceil(128) * 128;
            }
        }
        SMEM_CAPACITY.saturating_sub(used)
    }

    pub(super) fn convert_via_smem(
        &mut self,
        t: &Tile,
        dst: &LinearLayout,
        proj: &[Option<u32>],
        span: Span,
    ) -> LResult<Tile> {
        let es: u32 = match t.dtype {
            DType::I1 => 1,
            d if d.bits() % 8 == 0 => d.bits() / 8,
            d => {
                return Err(unsupported(
                    "convert_layout",
                    span,
                    format!("layout conversion of {d} tiles"),
                ))
            }
        };
        let n = 1u64 << t.ll.flat_bits();
        let budget = self.scratch_budget() as u64;
        let mut chunk = n;
        while chunk * es as u64 > budget.min(64 * 1024) && chunk > 1 {
            chunk /= 2;
        }
        if chunk * (es as u64) > budget {
            return Err(invalid(
                "convert_layout",
                span,
                "no shared memory left for a layout-conversion scratch buffer",
            ));
        }
        let chunk = chunk as u32;
        let rounds = (n / chunk as u64) as u32;
        let cb = chunk.trailing_zeros();
        let pi = self.part.index;
        self.scratch[pi] = self.scratch[pi].max(chunk * es);
        self.e.comment(format!(
            "layout conversion through shared memory: {:?} {} ({} round(s))",
            t.ll.shape, t.dtype, rounds
        ));
        let sbase = self.e.reg(RegClass::B32);
        self.e
            .ins(format!("add.u32 {sbase}, {}, __SCRATCH{pi}__", self.k.smem));
        let out = self.fresh_tile(t.dtype, dst.clone(), None, span)?;
        let src_t = self.thread_part(&t.ll.lanes.clone(), &t.ll.warps.clone());
        let pl: Vec<u32> = dst.lanes.iter().map(|&b| project(proj, b)).collect();
        let pw: Vec<u32> = dst.warps.iter().map(|&b| project(proj, b)).collect();
        let dst_t = self.thread_part(&pl, &pw);
        let src_mask = t.ll.thread_mask();
        let dst_mask = pl.iter().chain(pw.iter()).fold(0, |a, &b| a | b);
        let cmask = chunk - 1;
        let ty = if t.dtype == DType::I1 {
            "b8"
        } else {
            bits_ty(t.dtype)
        };
        for k in 0..rounds {
            self.part_barrier();
            // Writes.
            let plan = self.chunk_addrs(
                src_t,
                src_mask,
                (0..t.ll.num_regs()).map(|r| t.ll.reg_flat(r)).collect(),
                k,
                cb,
                cmask,
                es,
                sbase,
            );
            for (r, (pred, addr)) in plan.into_iter().enumerate() {
                let Some(addr) = addr else { continue };
                let v = t.regs[r];
                if t.dtype == DType::I1 {
                    let h = self.e.reg(RegClass::B16);
                    self.e.ins(format!("selp.u16 {h}, 1, 0, {v}"));
                    self.e.ins_if(pred, format!("st.shared.b8 {addr}, {h}"));
                } else {
                    self.e.ins_if(pred, format!("st.shared.{ty} {addr}, {v}"));
                }
            }
            self.part_barrier();
            // Reads.
            let flats = (0..dst.num_regs())
                .map(|r| project(proj, dst.reg_flat(r)))
                .collect();
            let plan = self.chunk_addrs(dst_t, dst_mask, flats, k, cb, cmask, es, sbase);
            for (r, (pred, addr)) in plan.into_iter().enumerate() {
                let Some(addr) = addr else { continue };
                let d = out.regs[r];
                if t.dtype == DType::I1 {
                    let h = self.e.reg(RegClass::B16);
                    self.e.ins_if(pred, format!("ld.shared.u8 {h}, {addr}"));
                    // Reads skipped by the predicate leave `h` unset only in rounds that do
                    // not own the element; the setp is guarded the same way.
                    self.e.ins_if(pred, format!("setp.ne.u16 {d}, {h}, 0"));
                } else {
                    self.e.ins_if(pred, format!("ld.shared.{ty} {d}, {addr}"));
                }
            }
        }
        self.part.all_dirty = true;
        Ok(out)
    }

    /// For each register's flat index (`thread ^ flats[r]`): whether it belongs to round `k`
    /// (statically: `None` predicate / skipped; or a run-time predicate), and its address.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn chunk_addrs(
        &mut self,
        thread: Reg,
        tmask: u32,
        flats: Vec<u32>,
        k: u32,
        cb: u32,
        cmask: u32,
        es: u32,
        sbase: Reg,
    ) -> Vec<(Option<Reg>, Option<String>)> {
        let high_static = (tmask >> cb) == 0;
        let disjoint = flats.iter().all(|&f| f & tmask & cmask == 0);
        // Base address of the thread's low part, computed once.
        let tb = if disjoint {
            let a = self.e.reg(RegClass::B32);
            if cmask != u32::MAX {
                self.e.ins(format!("and.b32 {a}, {thread}, {cmask}"));
                self.e.ins(format!("mad.lo.u32 {a}, {a}, {es}, {sbase}"));
            } else {
                self.e.ins(format!("mad.lo.u32 {a}, {thread}, {es}, {sbase}"));
            }
            Some(a)
        } else {
            None
        };
        let mut out = Vec::new();
        for f in flats {
            if high_static && (f >> cb) != k {
                out.push((None, None));
                continue;
            }
            let pred = if high_static {
                None
            } else {
                let x = self.e.reg(RegClass::B32);
                let p = self.e.reg(RegClass::Pred);
                self.e.ins(format!("xor.b32 {x}, {thread}, {f}"));
                self.e.ins(format!("shr.u32 {x}, {x}, {cb}"));
                self.e.ins(format!("setp.eq.u32 {p}, {x}, {k}"));
                Some(p)
            };
            let addr = match tb {
                Some(tb) => format!("[{tb}+{}]", (f & cmask) * es),
                None => {
                    let x = self.e.reg(RegClass::B32);
                    self.e.ins(format!("xor.b32 {x}, {thread}, {f}"));
                    self.e.ins(format!("and.b32 {x}, {x}, {cmask}"));
                    self.e.ins(format!("mad.lo.u32 {x}, {x}, {es}, {sbase}"));
                    format!("[{x}]")
                }
            };
            out.push((pred, Some(addr)));
        }
        out
    }

    /// A layout for the broadcast of several tiles to `shape`, preferring one every operand
    /// reaches without moving data. Returns the layout and its parent.
    pub(super) fn choose_layout(
        &self,
        tiles: &[&Tile],
        shape: &[u32],
        span: Span,
    ) -> LResult<(LinearLayout, Option<TileLayout>)> {
        let mut cands: Vec<(LinearLayout, Option<TileLayout>)> = Vec::new();
        for t in tiles {
            if t.ll.shape == shape {
                cands.push((t.ll.clone(), t.parent.clone()));
            }
        }
        for t in tiles {
            if let Some(p) = &t.parent {
                if p.rank() == Some(shape.len()) {
                    if let Ok(l) = self.layout_for(p, shape, span) {
                        cands.push((l, Some(p.clone())));
                    }
                }
            }
        }
        for t in tiles {
            if let Ok(l) = t.ll.broadcast_to(shape) {
                cands.push((l, None));
            }
        }
        let mut best: Option<(usize, (LinearLayout, Option<TileLayout>))> = None;
        for c in cands {
            let cost = tiles.iter().filter(|t| !Self::is_local(&t.ll, &c.0)).count();
            if best.as_ref().is_none_or(|b| cost < b.0) {
                best = Some((cost, c));
            }
        }
        best.map(|b| b.1)
            .ok_or_else(|| invalid("tile", span, format!("no common layout for shape {shape:?}")))
    }

    // ----- elementwise -----

    /// One elementwise binary instruction on element type `d`.
    pub(super) fn elem_binop(
        &mut self,
        op: BinOp,
        d: DType,
        dst: Reg,
        x: &str,
        y: &str,
        span: Span,
    ) -> LResult<()> {
        if d == DType::I1 {
            match op {
                BinOp::BitAnd | BinOp::And | BinOp::Mul => self.e.ins(format!("and.pred {dst}, {x}, {y}")),
                BinOp::BitOr | BinOp::Or => self.e.ins(format!("or.pred {dst}, {x}, {y}")),
                BinOp::BitXor | BinOp::Ne => self.e.ins(format!("xor.pred {dst}, {x}, {y}")),
                BinOp::Eq => {
                    let t = self.e.reg(RegClass::Pred);
                    self.e.ins(format!("xor.pred {t}, {x}, {y}"));
                    self.e.ins(format!("not.pred {dst}, {t}"));
                }
                _ => return Err(unsupported(op.symbol(), span, "arithmetic on i1 tiles")),
            }
            return Ok(());
        }
        let a =
            arith_ty(d).ok_or_else(|| unsupported(op.symbol(), span, format!("arithmetic on {d} tiles")))?;
        let float = is_float(d);
        if op.is_comparison() {
            let c = match op {
                BinOp::Eq => "eq",
                BinOp::Ne if float => "neu",
                BinOp::Ne => "ne",
                BinOp::Lt => "lt",
                BinOp::Le => "le",
                BinOp::Gt => "gt",
                _ => "ge",
            };
            self.e.ins(format!("setp.{c}.{a} {dst}, {x}, {y}"));
            return Ok(());
        }
        let b = bits_ty(d);
        // Float add, sub and mul carry `.rn`: without a rounding modifier ptxas may contract a
        // mul and an add into one fma (one rounding), while the simulator, like the kernel's
        // IR, rounds each (PTX ISA, `add`: "treated conservatively by the code optimizer").
        let ins = match op {
            BinOp::Add if float => format!("add.rn.{a} {dst}, {x}, {y}"),
            BinOp::Sub if float => format!("sub.rn.{a} {dst}, {x}, {y}"),
            BinOp::Mul if float => format!("mul.rn.{a} {dst}, {x}, {y}"),
            BinOp::Add => format!("add.{a} {dst}, {x}, {y}"),
            BinOp::Sub => format!("sub.{a} {dst}, {x}, {y}"),
            BinOp::Mul => format!("mul.lo.{a} {dst}, {x}, {y}"),
            BinOp::Div if d == DType::F32 || d == DType::TF32 => format!("div.rn.f32 {dst}, {x}, {y}"),
            BinOp::Div if float => {
                // f16/bf16: divide in f32, round once.
                let (fx, fy, fd) = (
                    self.e.reg(RegClass::F32),
                    self.e.reg(RegClass::F32),
                    self.e.reg(RegClass::F32),
                );
                self.e.ins(format!("cvt.f32.{a} {fx}, {x}"));
                self.e.ins(format!("cvt.f32.{a} {fy}, {y}"));
                self.e.ins(format!("div.rn.f32 {fd}, {fx}, {fy}"));
                format!("cvt.rn.{a}.f32 {dst}, {fd}")
            }
            BinOp::Div => format!("div.{a} {dst}, {x}, {y}"),
            BinOp::Rem if !float => format!("rem.{a} {dst}, {x}, {y}"),
            BinOp::BitAnd if !float => format!("and.{b} {dst}, {x}, {y}"),
            BinOp::BitOr if !float => format!("or.{b} {dst}, {x}, {y}"),
            BinOp::BitXor if !float => format!("xor.{b} {dst}, {x}, {y}"),
            BinOp::Shl if !float => format!("shl.{b} {dst}, {x}, {y}"),
            BinOp::Shr if !float => format!("shr.{a} {dst}, {x}, {y}"),
            _ => {
                return Err(unsupported(
                    op.symbol(),
                    span,
                    format!("`{}` on {d} tiles", op.symbol()),
                ))
            }
        };
        self.e.ins(ins);
        Ok(())
    }

    /// [`Self::align_tiles`] for the other lowering modules.
    #[allow(clippy::type_complexity)]
    pub fn align_tiles_pub(
        &mut self,
        vals: &[&Val],
        span: Span,
    ) -> LResult<(Vec<Option<Tile>>, LinearLayout, Option<TileLayout>)> {
        self.align_tiles(vals, span)
    }

    /// Tiles (and scalars) of the operands in one common layout of the broadcast shape.
    #[allow(clippy::type_complexity)]
    pub(super) fn align_tiles(
        &mut self,
        vals: &[&Val],
        span: Span,
    ) -> LResult<(Vec<Option<Tile>>, LinearLayout, Option<TileLayout>)> {
        let tiles: Vec<&Tile> = vals
            .iter()
            .filter_map(|v| if let Val::Tile(t) = v { Some(t) } else { None })
            .collect();
        let mut shape = tiles
            .first()
            .map(|t| t.ll.shape.clone())
            .ok_or_else(|| invalid("tile", span, "no tile operand"))?;
        for t in &tiles[1..] {
            shape = broadcast_shapes(&shape, &t.ll.shape)
                .ok_or_else(|| invalid("tile", span, "tile shapes do not broadcast"))?;
        }
        let (ll, parent) = self.choose_layout(&tiles, &shape, span)?;
        let mut out = Vec::new();
        for v in vals {
            out.push(match v {
                Val::Tile(t) => Some(self.in_layout(t, &ll, span)?),
                _ => None,
            });
        }
        Ok((out, ll, parent))
    }

    #[allow(clippy::needless_range_loop)] // one instruction per register of several operands
    pub fn tile_binary(&mut self, op: BinOp, a: Val, b: Val, span: Span) -> LResult<Tile> {
        let (ts, ll, parent) = self.align_tiles(&[&a, &b], span)?;
        // Element type: the tiles' (the scalar side converts).
        let mut dtype = ts.iter().flatten().next().map(|t| t.dtype).unwrap_or(DType::F32);
        if let (Some(x), Some(y)) = (&ts[0], &ts[1]) {
            if x.dtype != y.dtype {
                if !op.is_comparison() {
                    return Err(invalid(
                        op.symbol(),
                        span,
                        format!("tiles of {} and {} need a cast", x.dtype, y.dtype),
                    ));
                }
                dtype = x.dtype;
            }
        }
        let out_dtype = if op.is_comparison() { DType::I1 } else { dtype };
        let mut ops: Vec<Vec<String>> = Vec::new();
        for (i, v) in [&a, &b].iter().enumerate() {
            match &ts[i] {
                Some(t) => {
                    let t = if t.dtype != dtype {
                        self.cast_tile(t, dtype, span)?
                    } else {
                        t.clone()
                    };
                    ops.push(t.regs.iter().map(|r| r.to_string()).collect());
                }
                None => {
                    let o = self.elem_operand(v, dtype, span)?;
                    ops.push(vec![o; ll.num_regs()]);
                }
            }
        }
        let out = self.fresh_tile(out_dtype, ll.clone(), parent, span)?;
        for r in 0..ll.num_regs() {
            let mut x = ops[0][r].clone();
            if !x.starts_with('%') {
                // A first operand must be a register for some instructions.
                let c = dtype_class(dtype).unwrap_or(RegClass::B32);
                let t = self.e.reg(c);
                self.mov(t, &x);
                x = t.to_string();
            }
            self.elem_binop(op, dtype, out.regs[r], &x, &ops[1][r], span)?;
        }
        Ok(out)
    }

    pub fn tile_unary(&mut self, op: UnOp, t: &Tile, span: Span) -> LResult<Tile> {
        let out = self.fresh_tile(t.dtype, t.ll.clone(), t.parent.clone(), span)?;
        for (d, s) in out.regs.iter().zip(&t.regs) {
            match (op, t.dtype) {
                (UnOp::Not, DType::I1) => self.e.ins(format!("not.pred {d}, {s}")),
                (UnOp::Not, x) if !is_float(x) && x.bits() >= 16 => {
                    self.e.ins(format!("not.{} {d}, {s}", bits_ty(x)))
                }
                (UnOp::Neg, x) if arith_ty(x).is_some() => {
                    let a = arith_ty(x).unwrap_or("f32");
                    self.e.ins(format!("neg.{a} {d}, {s}"))
                }
                _ => {
                    return Err(unsupported(
                        "unary",
                        span,
                        format!("operator on {} tiles", t.dtype),
                    ))
                }
            }
        }
        Ok(out)
    }

    #[allow(clippy::needless_range_loop)] // one instruction per register of several operands
    pub fn tile_minmax(&mut self, min: bool, a: Val, b: Val, span: Span) -> LResult<Tile> {
        let (ts, ll, parent) = self.align_tiles(&[&a, &b], span)?;
        let dtype = ts.iter().flatten().next().map(|t| t.dtype).unwrap_or(DType::F32);
        let ty = arith_ty(dtype).ok_or_else(|| unsupported("min/max", span, format!("{dtype} tiles")))?;
        let mut ops: Vec<Vec<String>> = Vec::new();
        for (i, v) in [&a, &b].iter().enumerate() {
            match &ts[i] {
                Some(t) => ops.push(t.regs.iter().map(|r| r.to_string()).collect()),
                None => {
                    let o = self.elem_operand(v, dtype, span)?;
                    ops.push(vec![o; ll.num_regs()]);
                }
            }
        }
        let out = self.fresh_tile(dtype, ll.clone(), parent, span)?;
        let f = if min { "min" } else { "max" };
        for r in 0..ll.num_regs() {
            self.e
                .ins(format!("{f}.{ty} {}, {}, {}", out.regs[r], ops[0][r], ops[1][r]));
        }
        Ok(out)
    }

    pub fn tile_abs(&mut self, t: &Tile, span: Span) -> LResult<Tile> {
        let ty = arith_ty(t.dtype).ok_or_else(|| unsupported("abs", span, format!("{} tiles", t.dtype)))?;
        let out = self.fresh_tile(t.dtype, t.ll.clone(), t.parent.clone(), span)?;
        for (d, s) in out.regs.iter().zip(&t.regs) {
            self.e.ins(format!("abs.{ty} {d}, {s}"));
        }
        Ok(out)
    }

    pub fn tile_where(&mut self, c: Val, a: Val, b: Val, span: Span) -> LResult<Tile> {
        let (ts, ll, parent) = self.align_tiles(&[&c, &a, &b], span)?;
        let dtype = ts[1]
            .as_ref()
            .or(ts[2].as_ref())
            .map(|t| t.dtype)
            .unwrap_or_else(|| match (&a, &b) {
                (Val::Float(_), _) | (_, Val::Float(_)) => DType::F32,
                (Val::Scalar(ScalarTy::F32, _), _) | (_, Val::Scalar(ScalarTy::F32, _)) => DType::F32,
                _ => DType::I32,
            });
        let cond: Vec<String> = match &ts[0] {
            Some(t) => {
                let t = if t.dtype != DType::I1 {
                    self.cast_tile(t, DType::I1, span)?
                } else {
                    t.clone()
                };
                t.regs.iter().map(|r| r.to_string()).collect()
            }
            None => vec![self.pred_of(&c, span)?.to_string(); ll.num_regs()],
        };
        let ops = self.elem_operands(&[&a, &b], &ts[1..], dtype, &ll, span)?;
        let out = self.fresh_tile(dtype, ll.clone(), parent, span)?;
        for r in 0..ll.num_regs() {
            let d = out.regs[r];
            if dtype == DType::I1 {
                let (t1, t2) = (self.e.reg(RegClass::Pred), self.e.reg(RegClass::Pred));
                self.e.ins(format!("and.pred {t1}, {}, {}", cond[r], ops[0][r]));
                self.e.ins(format!("and.pred {t2}, !{}, {}", cond[r], ops[1][r]));
                self.e.ins(format!("or.pred {d}, {t1}, {t2}"));
            } else {
                // 8-bit elements live in 16-bit registers, and `selp` has no `.b8` form.
                let ty = match d.class {
                    RegClass::F32 => "f32",
                    _ if dtype.bits() == 8 => "b16",
                    _ => bits_ty(dtype),
                };
                self.e.ins(format!(
                    "selp.{ty} {d}, {}, {}, {}",
                    ops[0][r], ops[1][r], cond[r]
                ));
            }
        }
        Ok(out)
    }

    /// The operands of an element-wise instruction, per register of `ll`: each value's
    /// aligned tile registers (`ts`, from `align_tiles`) or, for a scalar, its operand as an
    /// element of `dtype` repeated.
    fn elem_operands(
        &mut self,
        vals: &[&Val],
        ts: &[Option<Tile>],
        dtype: DType,
        ll: &LinearLayout,
        span: Span,
    ) -> LResult<Vec<Vec<String>>> {
        let mut ops = Vec::new();
        for (v, t) in vals.iter().zip(ts) {
            match t {
                Some(t) => ops.push(t.regs.iter().map(|r| r.to_string()).collect()),
                None => {
                    let o = self.elem_operand(v, dtype, span)?;
                    ops.push(vec![o; ll.num_regs()]);
                }
            }
        }
        Ok(ops)
    }

    #[allow(clippy::needless_range_loop)] // one instruction per register of several operands
    pub(super) fn tile_fma(&mut self, a: Val, b: Val, c: Val, span: Span) -> LResult<Tile> {
        let (ts, ll, parent) = self.align_tiles(&[&a, &b, &c], span)?;
        let dtype = ts.iter().flatten().next().map(|t| t.dtype).unwrap_or(DType::F32);
        let ty = match dtype {
            DType::F32 | DType::F16 | DType::BF16 => arith_ty(dtype).unwrap_or("f32"),
            _ => return Err(unsupported("fma", span, format!("fma on {dtype} tiles"))),
        };
        let ops = self.elem_operands(&[&a, &b, &c], &ts, dtype, &ll, span)?;
        let out = self.fresh_tile(dtype, ll.clone(), parent, span)?;
        for r in 0..ll.num_regs() {
            self.e.ins(format!(
                "fma.rn.{ty} {}, {}, {}, {}",
                out.regs[r], ops[0][r], ops[1][r], ops[2][r]
            ));
        }
        Ok(out)
    }

    /// `add4`, `sub4`, `mul4`, `fma4` (four-lane fp8 arithmetic, sm_100a only): each element
    /// goes through lane 0 of the instruction, the other lanes zero (whose result, a zero, is
    /// dropped), written with `.rn`, the rounding the instruction takes and the one ptxas
    /// assembles the unmodified form to.
    #[allow(clippy::needless_range_loop)] // one instruction per register of several operands
    pub(super) fn tile_packed(
        &mut self,
        op: PackedOp,
        vals: Vec<Val>,
        dtype: DType,
        span: Span,
    ) -> LResult<Tile> {
        let name = op.tile_name();
        if self.target() != Target::Sm100a {
            return Err(unsupported(
                name,
                span,
                format!(
                    "`{}.rn.{}` (four-lane fp8 arithmetic) exists on sm_100a only: ptxas refuses it on \
                     {} ('not supported on .target')",
                    op.ptx(),
                    packed_arith::ptx_type(dtype),
                    self.target().name()
                ),
            ));
        }
        let refs: Vec<&Val> = vals.iter().collect();
        let (ts, ll, parent) = self.align_tiles(&refs, span)?;
        let mut types = Vec::new();
        for t in &ts {
            match t {
                Some(t) if matches!(t.dtype, DType::F8E4M3 | DType::F8E5M2) => types.push(t.dtype),
                Some(t) => {
                    return Err(unsupported(
                        name,
                        span,
                        format!("operands of {}: bwsim lowers fp8 (e4m3, e5m2) operands", t.dtype),
                    ))
                }
                None => return Err(unsupported(name, span, "a scalar operand")),
            }
        }
        // The PTX types: `add`/`sub` name the result and the first operand (the second is the
        // result's), `mul` and `fma` the result and both factors (the addend is the result's).
        let mut suffix = vec![packed_arith::ptx_type(dtype)];
        let named = if matches!(op, PackedOp::Add | PackedOp::Sub) {
            1
        } else {
            2
        };
        suffix.extend(types[..named].iter().map(|&d| packed_arith::ptx_type(d)));
        for &d in &types[named..] {
            if d != dtype {
                return Err(unsupported(
                    name,
                    span,
                    format!(
                        "`{}` takes its last operand in the result's type ({dtype}), found {d}",
                        op.ptx()
                    ),
                ));
            }
        }
        self.uses_fp8x4 = true;
        let out = self.fresh_tile(dtype, ll.clone(), parent, span)?;
        for r in 0..ll.num_regs() {
            let mut words = Vec::new();
            for t in ts.iter().flatten() {
                let w = self.e.reg(RegClass::B32);
                self.e.ins(format!("cvt.u32.u16 {w}, {}", t.regs[r]));
                self.e.ins(format!("and.b32 {w}, {w}, 255"));
                words.push(w.to_string());
            }
            let d = self.e.reg(RegClass::B32);
            self.e.ins(format!(
                "{}.rn.{} {d}, {}",
                op.ptx(),
                suffix.join("."),
                words.join(", ")
            ));
            self.e.ins(format!("and.b32 {d}, {d}, 255"));
            self.e.ins(format!("cvt.u16.u32 {}, {d}", out.regs[r]));
        }
        Ok(out)
    }

    // ----- casts -----

    pub(super) fn cvt_elem(&mut self, from: DType, to: DType, d: Reg, s: Reg, span: Span) -> LResult<()> {
        use DType::*;
        let ins = match (from, to) {
            (a, b) if a == b => format!(
                "mov.{} {d}, {s}",
                if d.class == RegClass::Pred {
                    "pred"
                } else if d.class == RegClass::F32 {
                    "f32"
                } else {
                    bits_ty(a)
                }
            ),
            (F32, TF32) | (TF32, F32) => format!("mov.f32 {d}, {s}"),
            (F32, F16) => format!("cvt.rn.f16.f32 {d}, {s}"),
            (F32, BF16) => format!("cvt.rn.bf16.f32 {d}, {s}"),
            (F16, F32) => format!("cvt.f32.f16 {d}, {s}"),
            (BF16, F32) => format!("cvt.f32.bf16 {d}, {s}"),
            (F16, BF16) | (BF16, F16) => {
                let f = self.e.reg(RegClass::F32);
                self.cvt_elem(from, F32, f, s, span)?;
                return self.cvt_elem(F32, to, d, f, span);
            }
            (F32, I32) => format!("cvt.rzi.s32.f32 {d}, {s}"),
            // 8-bit integers live in 16-bit registers; cvt reads and writes their low byte.
            (F32, I8) => format!("cvt.rzi.s8.f32 {d}, {s}"),
            (F32, U8) => format!("cvt.rzi.u8.f32 {d}, {s}"),
            (I8, F32) => format!("cvt.rn.f32.s8 {d}, {s}"),
            (U8, F32) => format!("cvt.rn.f32.u8 {d}, {s}"),
            (F32, I64) => format!("cvt.rzi.s64.f32 {d}, {s}"),
            (I32, F32) => format!("cvt.rn.f32.s32 {d}, {s}"),
            (U32, F32) => format!("cvt.rn.f32.u32 {d}, {s}"),
            (I64, F32) => format!("cvt.rn.f32.s64 {d}, {s}"),
            (I32, I64) => format!("cvt.s64.s32 {d}, {s}"),
            (U32, I64) | (U32, U64) => format!("cvt.u64.u32 {d}, {s}"),
            (I64, I32) | (U64, I32) | (I64, U32) => format!("cvt.u32.u64 {d}, {s}"),
            (I32, U32) | (U32, I32) => format!("mov.b32 {d}, {s}"),
            (I1, F32) => format!("selp.f32 {d}, 0f3F800000, 0f00000000, {s}"),
            (I1, I32) | (I1, U32) => format!("selp.b32 {d}, 1, 0, {s}"),
            (I1, I64) | (I1, U64) => format!("selp.b64 {d}, 1, 0, {s}"),
            (F32, I1) => format!("setp.neu.f32 {d}, {s}, 0f00000000"),
            (I32, I1) | (U32, I1) => format!("setp.ne.s32 {d}, {s}, 0"),
            (I64, I1) | (U64, I1) => format!("setp.ne.s64 {d}, {s}, 0"),
            // A bool as a byte (Triton's store of a bool): 0 or 1 in the 16-bit register.
            (I1, I8) | (I1, U8) | (I1, I16) | (I1, U16) => format!("selp.b16 {d}, 1, 0, {s}"),
            (I16, I1) | (U16, I1) => format!("setp.ne.s16 {d}, {s}, 0"),
            (I8, I1) | (U8, I1) => {
                // Only the low byte is the value.
                let t = self.e.reg(RegClass::B16);
                self.e.ins(format!("and.b16 {t}, {s}, 255"));
                format!("setp.ne.s16 {d}, {t}, 0")
            }
            (F32, F8E4M3) | (F32, F8E5M2) => {
                let z = self.e.reg(RegClass::F32);
                self.e.ins(format!("mov.f32 {z}, 0f00000000"));
                let k = if to == F8E4M3 { "e4m3x2" } else { "e5m2x2" };
                format!("cvt.rn.satfinite.{k}.f32 {d}, {z}, {s}")
            }
            (F8E4M3, F32) | (F8E5M2, F32) => {
                let k = if from == F8E4M3 { "e4m3x2" } else { "e5m2x2" };
                let w = self.e.reg(RegClass::B32);
                let (lo, hi) = (self.e.reg(RegClass::B16), self.e.reg(RegClass::B16));
                self.e.ins(format!("cvt.rn.f16x2.{k} {w}, {s}"));
                self.e.ins(format!("mov.b32 {{{lo}, {hi}}}, {w}"));
                format!("cvt.f32.f16 {d}, {lo}")
            }
            // The rest of the integer and float table, as the simulator converts: integer to
            // float rounded to nearest once (`cvt.rn`), float to integer truncated (`cvt.rzi`),
            // integer to integer sign- or zero-extended from the source, truncated to a
            // narrower destination (`cvt` without `.sat`).
            (a, b) if cvt_int(a).is_some() && cvt_float(b).is_some() => {
                format!(
                    "cvt.rn.{}.{} {d}, {s}",
                    cvt_float(b).unwrap_or("f32"),
                    cvt_int(a).unwrap_or("s32")
                )
            }
            (a, b) if cvt_float(a).is_some() && cvt_int(b).is_some() => {
                format!(
                    "cvt.rzi.{}.{} {d}, {s}",
                    cvt_int(b).unwrap_or("s32"),
                    cvt_float(a).unwrap_or("f32")
                )
            }
            (a, b) if cvt_int(a).is_some() && cvt_int(b).is_some() => {
                format!(
                    "cvt.{}.{} {d}, {s}",
                    cvt_int(b).unwrap_or("s32"),
                    cvt_int(a).unwrap_or("s32")
                )
            }
            _ => return Err(unsupported("cast", span, format!("cast from {from} to {to}"))),
        };
        self.e.ins(ins);
        Ok(())
    }

    pub fn cast_tile(&mut self, t: &Tile, to: DType, span: Span) -> LResult<Tile> {
        if t.dtype == to {
            return Ok(t.clone());
        }
        let out = self.fresh_tile(to, t.ll.clone(), t.parent.clone(), span)?;
        for (d, s) in out.regs.iter().zip(&t.regs) {
            self.cvt_elem(t.dtype, to, *d, *s, span)?;
        }
        Ok(out)
    }

    // ----- shape functions -----

    pub fn expand_dims(&mut self, t: &Tile, axis: usize) -> Tile {
        let parent = match &t.parent {
            Some(TileLayout::Slice { dim, parent }) if *dim as usize == axis => Some((**parent).clone()),
            _ => None,
        };
        Tile {
            ll: t.ll.expand_dims(axis),
            parent,
            ..t.clone()
        }
    }

    pub fn tile_new_axes(&mut self, t: &Tile, items: &[IndexItem], span: Span) -> LResult<Tile> {
        let mut out = t.clone();
        let mut d = 0;
        for it in items {
            match it {
                IndexItem::NewAxis => {
                    out = self.expand_dims(&out, d);
                    d += 1;
                }
                IndexItem::Slice(None, None) => d += 1,
                IndexItem::Slice(lo, hi) => {
                    let extent = out.ll.shape.get(d).copied().unwrap_or(0);
                    let start = match lo {
                        Some(e) => self.const_int(e, "index")?,
                        None => 0,
                    };
                    let end = match hi {
                        Some(e) => self.const_int(e, "index")?,
                        None => extent as i64,
                    };
                    let (Ok(start), Ok(len)) = (u32::try_from(start), u32::try_from(end - start)) else {
                        return Err(invalid(
                            "index",
                            span,
                            format!("slice {start}:{end} is out of range"),
                        ));
                    };
                    let Some((ll, map)) = out.ll.slice(d, start, len) else {
                        return Err(unsupported(
                            "index",
                            span,
                            format!(
                                "slice {start}:{end} of dimension {d} is not a choice of registers in this layout (a power-of-two length, aligned, along a dimension each thread holds in registers)"
                            ),
                        ));
                    };
                    out = Tile {
                        dtype: out.dtype,
                        regs: map.iter().map(|&r| out.regs[r]).collect(),
                        ll,
                        parent: None,
                    };
                    d += 1;
                }
                _ => {
                    return Err(invalid(
                        "index",
                        span,
                        "register tiles are indexed with `:` and `None` only",
                    ))
                }
            }
        }
        Ok(out)
    }

    pub(super) fn list(&mut self, e: &Expr, what: &str) -> LResult<Vec<u32>> {
        match &e.kind {
            ExprKind::List(xs) => xs
                .iter()
                .map(|x| {
                    self.const_int(x, what)
                        .and_then(|v| u32::try_from(v).map_err(|_| invalid(what, x.span, "negative")))
                })
                .collect(),
            _ => Err(invalid(what, e.span, "expected a list of constants")),
        }
    }

    pub(super) fn tile_arg(&mut self, e: &Expr, what: &str) -> LResult<Tile> {
        match self.expr(e)? {
            Val::Tile(t) => Ok(t),
            other => Err(wrong_kind(what, e.span, "expected a register tile", &other)),
        }
    }

    /// Tile-valued built-in functions.
    pub fn tile_call(&mut self, f: &str, pos: &[&Expr], e: &Expr) -> LResult<Val> {
        let span = e.span;
        let need = |n: usize| -> LResult<()> {
            if pos.len() != n {
                Err(invalid(f, span, format!("takes {n} arguments")))
            } else {
                Ok(())
            }
        };
        match f {
            "arange" => {
                need(3)?;
                let a = self.const_int(pos[0], f)?;
                let b = self.const_int(pos[1], f)?;
                let l = self.layout_arg(pos[2], f)?;
                let n = u32::try_from(b - a).map_err(|_| invalid(f, span, "empty range"))?;
                let ll = self.layout_for(&l, &[n], span)?;
                let tp = self.thread_part(&ll.lanes.clone(), &ll.warps.clone());
                let mask = ll.thread_mask();
                let out = self.fresh_tile(DType::I32, ll.clone(), Some(l), span)?;
                for r in 0..ll.num_regs() {
                    let rf = ll.reg_flat(r);
                    let d = out.regs[r];
                    if rf & mask == 0 {
                        self.e.ins(format!("add.s32 {d}, {tp}, {}", rf as i64 + a));
                    } else {
                        self.e.ins(format!("xor.b32 {d}, {tp}, {rf}"));
                        if a != 0 {
                            self.e.ins(format!("add.s32 {d}, {d}, {a}"));
                        }
                    }
                }
                Ok(Val::Tile(out))
            }
            "full" => {
                need(4)?;
                let shape = self.list(pos[0], f)?;
                let v = self.expr(pos[1])?;
                let d = match self.expr(pos[2])? {
                    Val::DType(d) => d,
                    other => return Err(wrong_kind(f, span, "expected an element type", &other)),
                };
                let l = self.layout_arg(pos[3], f)?;
                let ll = self.layout_for(&l, &shape, span)?;
                let o = self.elem_operand(&v, d, span)?;
                let out = self.fresh_tile(d, ll, Some(l), span)?;
                for r in out.regs.clone() {
                    self.mov(r, &o);
                }
                Ok(Val::Tile(out))
            }
            "convert_layout" => {
                need(2)?;
                let t = self.tile_arg(pos[0], f)?;
                let l = self.layout_arg(pos[1], f)?;
                let ll = self.layout_for(&l, &t.ll.shape, span)?;
                let mut out = self.in_layout(&t, &ll, span)?;
                out.parent = Some(l);
                Ok(Val::Tile(out))
            }
            "expand_dims" => {
                need(2)?;
                let t = self.tile_arg(pos[0], f)?;
                let axis = self.const_int(pos[1], f)? as usize;
                Ok(Val::Tile(self.expand_dims(&t, axis)))
            }
            "broadcast" => {
                need(2)?;
                let t = self.tile_arg(pos[0], f)?;
                let shape = self.list(pos[1], f)?;
                let (ll, parent) = self.choose_layout(&[&t], &shape, span)?;
                let mut out = self.in_layout(&t, &ll, span)?;
                out.parent = parent;
                Ok(Val::Tile(out))
            }
            "reshape" | "permute" => {
                // The same registers under another layout: a new shape, or the dimensions
                // in another order.
                need(2)?;
                let t = self.tile_arg(pos[0], f)?;
                let list = self.list(pos[1], f)?;
                let ll = if f == "reshape" {
                    t.ll.reshape(&list)
                } else {
                    t.ll.permute(&list)
                };
                let ll = ll.map_err(|m| unsupported(f, span, m))?;
                Ok(Val::Tile(Tile {
                    ll,
                    parent: None,
                    ..t
                }))
            }
            "split" => {
                need(1)?;
                let t = self.tile_arg(pos[0], f)?;
                let Some((half, k)) = t.ll.split() else {
                    return Err(unsupported(f, span, "split of a tile whose last dimension is not held in one register bit of each thread (convert_layout first)"));
                };
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for (r, reg) in t.regs.iter().enumerate() {
                    if r >> k & 1 == 0 {
                        a.push(*reg);
                    } else {
                        b.push(*reg);
                    }
                }
                let mk = |regs| {
                    Val::Tile(Tile {
                        dtype: t.dtype,
                        ll: half.clone(),
                        regs,
                        parent: None,
                    })
                };
                Ok(Val::Tuple(vec![mk(a), mk(b)]))
            }
            "join" => {
                need(2)?;
                let a = self.tile_arg(pos[0], f)?;
                let b = self.tile_arg(pos[1], f)?;
                let b = self.in_layout(&b, &a.ll, span)?;
                let mut regs = a.regs.clone();
                regs.extend(b.regs);
                Ok(Val::Tile(Tile {
                    dtype: a.dtype,
                    ll: a.ll.join(),
                    regs,
                    parent: None,
                }))
            }
            _ if PackedOp::from_tile_name(f).is_some() => {
                let op = PackedOp::from_tile_name(f).unwrap_or(PackedOp::Add);
                need(op.arity() + 1)?;
                let vals = pos[..op.arity()]
                    .iter()
                    .map(|p| self.expr(p))
                    .collect::<LResult<Vec<_>>>()?;
                let dtype = match self.expr(pos[op.arity()])? {
                    Val::DType(d) => d,
                    other => return Err(wrong_kind(f, span, "expected an element type", &other)),
                };
                self.tile_packed(op, vals, dtype, span).map(Val::Tile)
            }
            "fma" => {
                need(3)?;
                let a = self.expr(pos[0])?;
                let b = self.expr(pos[1])?;
                let c = self.expr(pos[2])?;
                if !matches!(a, Val::Tile(_)) && !matches!(b, Val::Tile(_)) && !matches!(c, Val::Tile(_)) {
                    let x = self.scalar_reg(&a, ScalarTy::F32, span)?;
                    let y = self.scalar_operand(&b, ScalarTy::F32, span)?;
                    let z = self.scalar_operand(&c, ScalarTy::F32, span)?;
                    let d = self.e.reg(RegClass::F32);
                    self.e.ins(format!("fma.rn.f32 {d}, {x}, {y}, {z}"));
                    return Ok(Val::Scalar(ScalarTy::F32, d));
                }
                self.tile_fma(a, b, c, span).map(Val::Tile)
            }
            _ if ReduceOp::scan_from_name(f).is_some() => {
                need(2)?;
                let op = ReduceOp::scan_from_name(f).unwrap_or(ReduceOp::Sum);
                let t = self.tile_arg(pos[0], f)?;
                let axis = self.const_int(pos[1], f)? as usize;
                let args: &[Arg] = match &e.kind {
                    ExprKind::Call(_, args) => args,
                    _ => &[],
                };
                let reverse = bwsim_isa::builtins::scan_reverse(args).map_err(|(s, m)| invalid(f, s, m))?;
                self.tile_scan(op, &t, axis, reverse, span).map(Val::Tile)
            }
            _ if ReduceOp::from_name(f).is_some() => {
                need(2)?;
                let op = ReduceOp::from_name(f).unwrap_or(ReduceOp::Sum);
                let t = self.tile_arg(pos[0], f)?;
                let axis = self.const_int(pos[1], f)? as usize;
                self.tile_reduce(op, &t, axis, span)
            }
            _ if MathFn::from_name(f).is_some() => {
                need(1)?;
                let m = MathFn::from_name(f).unwrap_or(MathFn::Exp);
                match self.expr(pos[0])? {
                    Val::Tile(t) => self.tile_math(m, &t, span).map(Val::Tile),
                    v => {
                        let x = self.scalar_reg(&v, ScalarTy::F32, span)?;
                        let d = self.e.reg(RegClass::F32);
                        self.math_f32(m, d, &x.to_string(), span)?;
                        Ok(Val::Scalar(ScalarTy::F32, d))
                    }
                }
            }
            _ => Err(invalid(f, span, format!("unknown function `{f}`"))),
        }
    }
}

/// The `cvt` type of an integer element type (8-bit ones live in 16-bit registers).
fn cvt_int(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::I8 => "s8",
        DType::I16 => "s16",
        DType::I32 => "s32",
        DType::I64 => "s64",
        DType::U8 => "u8",
        DType::U16 => "u16",
        DType::U32 => "u32",
        DType::U64 => "u64",
        _ => return None,
    })
}

/// The `cvt` type of a float element type an integer converts to or from directly.
fn cvt_float(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        _ => return None,
    })
}
