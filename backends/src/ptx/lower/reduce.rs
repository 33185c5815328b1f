//! Math functions and reductions of register tiles: the SFU forms Triton emits, folds over
//! a thread's registers, butterfly shuffles across lanes, the shared-memory gather of a
//! dimension spread over warps, argmax/argmin.

use super::tile::{arith_ty, bits_ty, is_float};
use super::*;
use crate::ptx::emit::Reg;
use crate::ptx::linear_layout::LinearLayout;
use bwsim_isa::builtins::{MathFn, ReduceOp};

/// ln(2) as an f32 bit pattern, the factor from `lg2` to the natural logarithm.
const LN_2: &str = "0f3F317218";

impl<'c, 'k> Lowerer<'c, 'k> {
    /// One f32 math function: `d = m(x)`. The special-function-unit forms are PTX's
    /// approximations (`ex2.approx`, `lg2.approx`, `rsqrt.approx`, `sin/cos.approx`, the ones
    /// Triton emits); `sqrt` is the correctly rounded `sqrt.rn`; `exp` and `log` go through
    /// base 2 with the f32 constants log2(e) and ln(2), as Triton lowers them; `exp10` and
    /// `log10` the same way with log2(10) and log10(2). `tanh` is `tanh.approx.f32`.
    /// `log1p` is `lg2.approx(u) * ln(2) * (x / (u - 1))` with `u = 1 + x` (the rounding
    /// error of `u` cancels in the quotient), `x` itself where `u` rounds to 1 and where `x`
    /// is +inf. `expm1` is `(u - 1) * x / ln(u)` with `u = e^x` the same way; `tan` is
    /// `sin.approx / cos.approx`; `atan` has no instruction: [`Lowerer::atan_f32`].
    pub fn math_f32(&mut self, m: MathFn, d: Reg, x: &str, span: Span) -> LResult<()> {
        // f32 bit patterns of log2(e), log2(10) and log10(2) (ln(2): [`LN_2`]).
        const LOG2_E: &str = "0f3FB8AA3B";
        const LOG2_10: &str = "0f40549A78";
        const LOG10_2: &str = "0f3E9A209B";
        match m {
            MathFn::Exp2 => self.e.ins(format!("ex2.approx.f32 {d}, {x}")),
            MathFn::Exp => {
                let t = self.e.reg(RegClass::F32);
                self.e.ins(format!("mul.f32 {t}, {x}, {LOG2_E}"));
                self.e.ins(format!("ex2.approx.f32 {d}, {t}"));
            }
            MathFn::Log2 => self.e.ins(format!("lg2.approx.f32 {d}, {x}")),
            MathFn::Log => {
                let t = self.e.reg(RegClass::F32);
                self.e.ins(format!("lg2.approx.f32 {t}, {x}"));
                self.e.ins(format!("mul.f32 {d}, {t}, {LN_2}"));
            }
            MathFn::Sqrt => self.e.ins(format!("sqrt.rn.f32 {d}, {x}")),
            MathFn::Rsqrt => self.e.ins(format!("rsqrt.approx.f32 {d}, {x}")),
            MathFn::Sin => self.e.ins(format!("sin.approx.f32 {d}, {x}")),
            MathFn::Cos => self.e.ins(format!("cos.approx.f32 {d}, {x}")),
            MathFn::Floor => self.e.ins(format!("cvt.rmi.f32.f32 {d}, {x}")),
            MathFn::Ceil => self.e.ins(format!("cvt.rpi.f32.f32 {d}, {x}")),
            MathFn::Tanh => self.e.ins(format!("tanh.approx.f32 {d}, {x}")),
            MathFn::Exp10 => {
                let t = self.e.reg(RegClass::F32);
                self.e.ins(format!("mul.f32 {t}, {x}, {LOG2_10}"));
                self.e.ins(format!("ex2.approx.f32 {d}, {t}"));
            }
            MathFn::Log10 => {
                let t = self.e.reg(RegClass::F32);
                self.e.ins(format!("lg2.approx.f32 {t}, {x}"));
                self.e.ins(format!("mul.f32 {d}, {t}, {LOG10_2}"));
            }
            MathFn::Log1p => {
                let [u, um1, t, q] = self.e.regs(RegClass::F32);
                let [small, inf] = self.e.regs(RegClass::Pred);
                self.e.ins(format!("add.rn.f32 {u}, {x}, 0f3F800000"));
                self.e.ins(format!("sub.rn.f32 {um1}, {u}, 0f3F800000"));
                self.ln_f32_in(t, &u.to_string());
                self.e.ins(format!("div.rn.f32 {q}, {x}, {um1}"));
                self.e.ins(format!("mul.f32 {t}, {t}, {q}"));
                self.e.ins(format!("setp.eq.f32 {small}, {um1}, 0f00000000"));
                self.e.ins(format!("setp.eq.f32 {inf}, {x}, 0f7F800000"));
                self.e.ins(format!("or.pred {small}, {small}, {inf}"));
                self.e.ins(format!("selp.f32 {d}, {x}, {t}, {small}"));
            }
            MathFn::Expm1 => {
                // u = e^x; (u - 1) * x / ln(u), where the rounding error of u cancels; x where
                // u rounds to 1, -1 where u - 1 is -1 and u itself where it is infinite.
                let [t, u, um1, l, q] = self.e.regs(RegClass::F32);
                let p = self.e.reg(RegClass::Pred);
                self.e.ins(format!("mul.f32 {t}, {x}, {LOG2_E}"));
                self.e.ins(format!("ex2.approx.f32 {u}, {t}"));
                self.e.ins(format!("sub.rn.f32 {um1}, {u}, 0f3F800000"));
                self.ln_f32_in(l, &u.to_string());
                self.e.ins(format!("div.rn.f32 {q}, {x}, {l}"));
                self.e.ins(format!("mul.f32 {d}, {um1}, {q}"));
                let fixes = [
                    (um1, "0f00000000", x.to_string()),
                    (um1, "0fBF800000", um1.to_string()),
                    (u, "0f7F800000", u.to_string()),
                ];
                for (test, k, value) in fixes {
                    self.e.ins(format!("setp.eq.f32 {p}, {test}, {k}"));
                    self.e.ins(format!("selp.f32 {d}, {value}, {d}, {p}"));
                }
            }
            MathFn::Tan => {
                let s = self.e.reg(RegClass::F32);
                let c = self.e.reg(RegClass::F32);
                self.e.ins(format!("sin.approx.f32 {s}, {x}"));
                self.e.ins(format!("cos.approx.f32 {c}, {x}"));
                self.e.ins(format!("div.rn.f32 {d}, {s}, {c}"));
            }
            MathFn::Atan => self.atan_f32(d, x),
            MathFn::Erf => {
                return Err(unsupported(
                    "erf",
                    span,
                    "erf has no PTX instruction (Triton calls libdevice's __nv_erff); bwsim simulates it but does not lower it",
                ))
            }
        }
        Ok(())
    }

    /// `d = ln(x)` as `lg2.approx(x) * ln(2)`, computed in `d` itself (`log1p` and `expm1`).
    fn ln_f32_in(&mut self, d: Reg, x: &str) {
        self.e.ins(format!("lg2.approx.f32 {d}, {x}"));
        self.e.ins(format!("mul.f32 {d}, {d}, {LN_2}"));
    }

    /// `d = atan(x)` in f32 arithmetic, within 2 ulp of the correctly rounded result (PTX has
    /// no arctangent instruction; Triton calls libdevice's `__nv_atanf`). Up to tan(pi/8) in
    /// magnitude `t = x`; above it the magnitude `a` is reduced, to `t = (a - 1) / (a + 1)`
    /// with the offset pi/4 up to tan(3pi/8) and to `t = -1/a` with pi/2 beyond, and the
    /// result negated for a negative `x`. Then `atan(t) = t + t z P(z)` with `z = t^2` and `P`
    /// a degree-4 polynomial fitted to `(atan(t) - t) / (t z)` on [0, tan(pi/8)] (relative
    /// error below 1e-9), the offset added as a high and a low f32 part (none for a small `x`);
    /// +-0 is returned as it is. Every operation names its rounding, so that ptxas does not
    /// contract a multiply and an add. NaN stays NaN, +-inf gives +-pi/2.
    fn atan_f32(&mut self, d: Reg, x: &str) {
        // tan(pi/8), tan(3pi/8), pi/4 and pi/2 as f32 high parts and their f32 remainders.
        const TAN_PI_8: &str = "0f3ED413CD";
        const TAN_3PI_8: &str = "0f401A827A";
        const PI_4_HI: &str = "0f3F490FDB";
        const PI_4_LO: &str = "0fB2BBBD2E";
        const PI_2_HI: &str = "0f3FC90FDB";
        const PI_2_LO: &str = "0fB33BBD2E";
        // P's coefficients, constant term first.
        const P: [&str; 5] = [
            "0fBEAAAAA5",
            "0f3E4CC8CB",
            "0fBE11DA92",
            "0f3DD8F61A",
            "0fBD78F6CC",
        ];
        let [a, num, den, tm, tb, t, hi, lo, z, p, q] = std::array::from_fn(|_| self.e.reg(RegClass::F32));
        let [mid, big, flip, zero] = std::array::from_fn(|_| self.e.reg(RegClass::Pred));
        self.e.ins(format!("abs.f32 {a}, {x}"));
        self.e.ins(format!("setp.gt.f32 {mid}, {a}, {TAN_PI_8}"));
        self.e.ins(format!("setp.gt.f32 {big}, {a}, {TAN_3PI_8}"));
        self.e.ins(format!("sub.rn.f32 {num}, {a}, 0f3F800000"));
        self.e.ins(format!("add.rn.f32 {den}, {a}, 0f3F800000"));
        self.e.ins(format!("div.rn.f32 {tm}, {num}, {den}"));
        self.e.ins(format!("div.rn.f32 {tb}, 0fBF800000, {a}"));
        self.e.ins(format!("selp.f32 {t}, {tm}, {x}, {mid}"));
        self.e.ins(format!("selp.f32 {t}, {tb}, {t}, {big}"));
        self.e.ins(format!("selp.f32 {hi}, {PI_4_HI}, 0f00000000, {mid}"));
        self.e.ins(format!("selp.f32 {hi}, {PI_2_HI}, {hi}, {big}"));
        self.e.ins(format!("selp.f32 {lo}, {PI_4_LO}, 0f00000000, {mid}"));
        self.e.ins(format!("selp.f32 {lo}, {PI_2_LO}, {lo}, {big}"));
        self.e.ins(format!("mul.rn.f32 {z}, {t}, {t}"));
        self.e.ins(format!("mov.f32 {p}, {}", P[4]));
        for c in P[..4].iter().rev() {
            self.e.ins(format!("fma.rn.f32 {p}, {p}, {z}, {c}"));
        }
        self.e.ins(format!("mul.rn.f32 {q}, {z}, {p}"));
        self.e.ins(format!("fma.rn.f32 {q}, {t}, {q}, {lo}"));
        self.e.ins(format!("add.rn.f32 {q}, {q}, {t}"));
        self.e.ins(format!("add.rn.f32 {q}, {hi}, {q}"));
        self.e.ins(format!("setp.lt.f32 {flip}, {x}, 0f00000000"));
        self.e.ins(format!("and.pred {flip}, {flip}, {mid}"));
        self.e.ins(format!("neg.f32 {p}, {q}"));
        self.e.ins(format!("selp.f32 {q}, {p}, {q}, {flip}"));
        self.e.ins(format!("setp.eq.f32 {zero}, {x}, 0f00000000"));
        self.e.ins(format!("selp.f32 {d}, {x}, {q}, {zero}"));
    }

    /// `m(x)` on every element; f16 and bf16 tiles compute in f32 and round back.
    pub fn tile_math(&mut self, m: MathFn, t: &Tile, span: Span) -> LResult<Tile> {
        if !is_float(t.dtype) {
            return Err(invalid(m.name(), span, format!("{} tiles", t.dtype)));
        }
        let x = self.cast_tile(t, DType::F32, span)?;
        let out = self.fresh_tile(DType::F32, x.ll.clone(), x.parent.clone(), span)?;
        for (d, s) in out.regs.iter().zip(&x.regs) {
            self.math_f32(m, *d, &s.to_string(), span)?;
        }
        self.cast_tile(&out, t.dtype, span)
    }

    /// `acc = acc OP x` for one register of a reduction.
    pub(super) fn combine(
        &mut self,
        op: ReduceOp,
        dtype: DType,
        acc: Reg,
        x: &str,
        span: Span,
    ) -> LResult<()> {
        if dtype == DType::I1 {
            let f = match op {
                ReduceOp::And | ReduceOp::Min | ReduceOp::Prod => "and",
                ReduceOp::Or | ReduceOp::Max => "or",
                ReduceOp::Xor | ReduceOp::Sum => "xor",
                ReduceOp::Argmax | ReduceOp::Argmin => {
                    return Err(unsupported(op.name(), span, "argmax/argmin of i1 tiles"))
                }
            };
            self.e.ins(format!("{f}.pred {acc}, {acc}, {x}"));
            return Ok(());
        }
        let ty = arith_ty(dtype).ok_or_else(|| unsupported(op.name(), span, format!("{dtype} tiles")))?;
        let ins = match op {
            ReduceOp::Sum if is_float(dtype) => format!("add.rn.{ty}"),
            ReduceOp::Sum => format!("add.{ty}"),
            ReduceOp::Prod if is_float(dtype) => format!("mul.rn.{ty}"),
            ReduceOp::Prod => format!("mul.lo.{ty}"),
            ReduceOp::Max => format!("max.{ty}"),
            ReduceOp::Min => format!("min.{ty}"),
            ReduceOp::And => format!("and.{}", bits_ty(dtype)),
            ReduceOp::Or => format!("or.{}", bits_ty(dtype)),
            ReduceOp::Xor => format!("xor.{}", bits_ty(dtype)),
            ReduceOp::Argmax | ReduceOp::Argmin => {
                return Err(unsupported(
                    op.name(),
                    span,
                    "argmax/argmin are simulated but not lowered to PTX yet",
                ))
            }
        };
        self.e.ins(format!("{ins} {acc}, {acc}, {x}"));
        Ok(())
    }

    /// `argmax`/`argmin` of `axis` (the layout checks done by [`Self::tile_reduce`]): each
    /// thread folds its registers in increasing position, keeping the first extreme (a number
    /// beats a NaN), adds its lane's position along the axis, then the lanes exchange
    /// (value, position) pairs with butterfly shuffles, ties going to the smaller position.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tile_arg_reduce(
        &mut self,
        op: ReduceOp,
        t: &Tile,
        ll: &LinearLayout,
        inside: &[usize],
        outside: &[usize],
        lane_bits: &[usize],
        pos: &dyn Fn(u32) -> u32,
        span: Span,
    ) -> LResult<Val> {
        let float = is_float(t.dtype);
        let ty =
            arith_ty(t.dtype).ok_or_else(|| unsupported(op.name(), span, format!("{} tiles", t.dtype)))?;
        let cmp = if op == ReduceOp::Argmax { "gt" } else { "lt" };
        // This lane's position along the axis.
        let lane_pos = self.e.reg(RegClass::B32);
        self.e.ins(format!("mov.u32 {lane_pos}, 0"));
        for &j in lane_bits {
            let b = self.e.reg(RegClass::B32);
            self.e.ins(format!("bfe.u32 {b}, {}, {j}, 1", self.k.lane));
            self.e.ins(format!(
                "mad.lo.u32 {lane_pos}, {b}, {}, {lane_pos}",
                pos(t.ll.lanes[j])
            ));
        }
        let out = self.fresh_tile(DType::I32, ll.clone(), None, span)?;
        // `take = x better than acc`, with ties and NaNs as documented.
        let better = |me: &mut Self, x: &str, acc: &str, xi: Option<(&str, &str)>| -> Reg {
            let p = me.e.reg(RegClass::Pred);
            me.e.ins(format!("setp.{cmp}.{ty} {p}, {x}, {acc}"));
            if float {
                let (q, r) = (me.e.reg(RegClass::Pred), me.e.reg(RegClass::Pred));
                me.e.ins(format!("setp.nan.{ty} {q}, {acc}, {acc}"));
                me.e.ins(format!("setp.num.{ty} {r}, {x}, {x}"));
                me.e.ins(format!("and.pred {q}, {q}, {r}"));
                me.e.ins(format!("or.pred {p}, {p}, {q}"));
            }
            if let Some((xi, ai)) = xi {
                let (q, r) = (me.e.reg(RegClass::Pred), me.e.reg(RegClass::Pred));
                me.e.ins(format!("setp.eq.{ty} {q}, {x}, {acc}"));
                me.e.ins(format!("setp.lt.u32 {r}, {xi}, {ai}"));
                me.e.ins(format!("and.pred {q}, {q}, {r}"));
                me.e.ins(format!("or.pred {p}, {p}, {q}"));
            }
            p
        };
        let vclass = t.regs.first().map(|r| r.class).unwrap_or(RegClass::F32);
        for (o, idx) in out.regs.iter().enumerate() {
            // The thread's elements along the axis, in increasing position.
            let mut elems = axis_elems(&t.ll, inside, outside, o, pos);
            elems.sort();
            let acc = self.e.reg(vclass);
            let (p0, r0) = elems[0];
            self.mov(acc, &t.regs[r0].to_string());
            self.e.ins(format!("mov.u32 {idx}, {p0}"));
            for &(p, r) in &elems[1..] {
                let x = t.regs[r].to_string();
                let take = better(self, &x, &acc.to_string(), None);
                self.e
                    .ins(format!("selp.{} {acc}, {x}, {acc}, {take}", bits_ty(t.dtype)));
                self.e.ins(format!("selp.u32 {idx}, {p}, {idx}, {take}"));
            }
            self.e.ins(format!("add.u32 {idx}, {idx}, {lane_pos}"));
            for &j in lane_bits {
                let (ov, oi) = (self.e.reg(vclass), self.e.reg(RegClass::B32));
                self.e.ins(format!(
                    "shfl.sync.bfly.b32 {ov}, {acc}, {}, 0x1f, 0xffffffff",
                    1u32 << j
                ));
                self.e.ins(format!(
                    "shfl.sync.bfly.b32 {oi}, {idx}, {}, 0x1f, 0xffffffff",
                    1u32 << j
                ));
                let take = better(
                    self,
                    &ov.to_string(),
                    &acc.to_string(),
                    Some((&oi.to_string(), &idx.to_string())),
                );
                self.e
                    .ins(format!("selp.{} {acc}, {ov}, {acc}, {take}", bits_ty(t.dtype)));
                self.e.ins(format!("selp.u32 {idx}, {oi}, {idx}, {take}"));
            }
        }
        if ll.shape.is_empty() {
            return Ok(Val::Scalar(ScalarTy::I32, out.regs[0]));
        }
        Ok(Val::Tile(out))
    }

    /// A reduction of `axis`: first over the registers of each thread, then across the lanes
    /// of a warp with butterfly shuffles (`shfl.sync.bfly`, one per lane bit along the axis;
    /// every lane ends with the result, so the output layout replicates it over those lanes).
    /// A reduced dimension spread over warps is first gathered into each warp's registers
    /// through shared memory.
    pub(super) fn tile_reduce(&mut self, op: ReduceOp, t: &Tile, axis: usize, span: Span) -> LResult<Val> {
        let what = op.name();
        let (off, nb, amask) = axis_bits(t, axis, what, span)?;
        if t.ll.warps.iter().any(|&b| b & amask != 0) {
            // Across warps: move the warp bits along the axis into registers through the
            // partition's shared-memory scratch (every warp then holds the whole axis, the
            // conversion `convert_layout` performs), then reduce as within one warp.
            if t.ll.warps.iter().any(|&b| b & amask != 0 && b & !amask != 0) {
                return Err(unsupported(
                    what,
                    span,
                    "a reduction over warps mixing dimensions",
                ));
            }
            let mut ll = t.ll.clone();
            for j in 0..ll.warps.len() {
                if ll.warps[j] & amask != 0 {
                    ll.regs.push(ll.warps[j]);
                    ll.warps[j] = 0;
                }
            }
            let gathered = self.in_layout(t, &ll, span)?;
            return self.tile_reduce(op, &gathered, axis, span);
        }
        let lane_bits: Vec<usize> = (0..t.ll.lanes.len())
            .filter(|&j| t.ll.lanes[j] & amask != 0)
            .collect();
        if lane_bits.iter().any(|&j| t.ll.lanes[j] & !amask != 0) {
            return Err(unsupported(
                what,
                span,
                "a reduction over lanes mixing dimensions",
            ));
        }
        if !lane_bits.is_empty() && !matches!(t.dtype.bits(), 32) {
            return Err(unsupported(
                what,
                span,
                format!(
                    "a reduction across lanes of {} tiles (cast to a 32-bit type first)",
                    t.dtype
                ),
            ));
        }
        let (inside, outside): (Vec<usize>, Vec<usize>) =
            (0..t.ll.regs.len()).partition(|&i| t.ll.regs[i] & amask != 0);
        if inside.iter().any(|&i| t.ll.regs[i] & !amask != 0) {
            return Err(unsupported(
                what,
                span,
                "a reduction over registers mixing dimensions",
            ));
        }
        let squeeze = |v: u32| -> u32 { (v & ((1 << off) - 1)) | ((v >> (off + nb)) << off) };
        let mut shape = t.ll.shape.clone();
        shape.remove(axis);
        let ll = LinearLayout {
            shape: shape.clone(),
            regs: outside.iter().map(|&i| squeeze(t.ll.regs[i])).collect(),
            lanes: t.ll.lanes.iter().map(|&b| squeeze(b)).collect(),
            warps: t.ll.warps.iter().map(|&b| squeeze(b)).collect(),
        };
        if op.is_arg() {
            let pos = |basis: u32| (basis & amask) >> off;
            return self.tile_arg_reduce(op, t, &ll, &inside, &outside, &lane_bits, &pos, span);
        }
        let out = self.fresh_tile(t.dtype, ll.clone(), None, span)?;
        for (o, reg) in out.regs.iter().enumerate() {
            let mut first = true;
            for (_, idx) in axis_elems(&t.ll, &inside, &outside, o, &|_| 0) {
                let src = t.regs[idx];
                if first {
                    self.mov(*reg, &src.to_string());
                    first = false;
                } else {
                    self.combine(op, t.dtype, *reg, &src.to_string(), span)?;
                }
            }
            for &j in &lane_bits {
                let tmp = self.e.reg(reg.class);
                if t.dtype.bits() == 64 {
                    // shfl moves 32 bits: a 64-bit value crosses lanes as its two halves.
                    let (lo, hi) = (self.e.reg(RegClass::B32), self.e.reg(RegClass::B32));
                    self.e.ins(format!("mov.b64 {{{lo}, {hi}}}, {reg}"));
                    for h in [lo, hi] {
                        self.e.ins(format!(
                            "shfl.sync.bfly.b32 {h}, {h}, {}, 0x1f, 0xffffffff",
                            1u32 << j
                        ));
                    }
                    self.e.ins(format!("mov.b64 {tmp}, {{{lo}, {hi}}}"));
                } else {
                    self.e.ins(format!(
                        "shfl.sync.bfly.b32 {tmp}, {reg}, {}, 0x1f, 0xffffffff",
                        1u32 << j
                    ));
                }
                self.combine(op, t.dtype, *reg, &tmp.to_string(), span)?;
            }
        }
        if shape.is_empty() {
            let st = if is_float(t.dtype) {
                ScalarTy::F32
            } else if t.dtype.bits() == 64 {
                ScalarTy::I64
            } else {
                ScalarTy::I32
            };
            return Ok(Val::Scalar(st, out.regs[0]));
        }
        Ok(Val::Tile(out))
    }

    /// An inclusive scan of `axis`, the layout kept: each thread scans its registers in
    /// increasing position; when the axis spans lanes (the lowest lane bits, in position order,
    /// as blocked layouts place it), the threads' totals are scanned with `shfl.sync.up`
    /// (Hillis-Steele) and each thread folds the total of the lanes before it into its
    /// registers. A scanned dimension spread over warps, or over lanes in another order, is
    /// refused. `reverse` scans from the end: registers in decreasing position, the lanes'
    /// totals with `shfl.sync.down`, and each thread folds in the lanes after it.
    pub(super) fn tile_scan(
        &mut self,
        op: ReduceOp,
        t: &Tile,
        axis: usize,
        reverse: bool,
        span: Span,
    ) -> LResult<Tile> {
        let what = "scan";
        let (off, _, amask) = axis_bits(t, axis, what, span)?;
        let pos = |b: u32| (b & amask) >> off;
        if t.ll.warps.iter().any(|&b| b & amask != 0) {
            return Err(unsupported(
                what,
                span,
                "a scan across warps (lay the scanned dimension out over registers and lanes)",
            ));
        }
        let (inside, outside): (Vec<usize>, Vec<usize>) =
            (0..t.ll.regs.len()).partition(|&i| t.ll.regs[i] & amask != 0);
        if inside.iter().any(|&i| t.ll.regs[i] & !amask != 0) {
            return Err(unsupported(what, span, "a scan over registers mixing dimensions"));
        }
        // Lanes along the axis: they must be lane bits 0..m, each doubling the position.
        let chunk = 1u32 << inside.len();
        let lane_bits: Vec<usize> = (0..t.ll.lanes.len())
            .filter(|&j| t.ll.lanes[j] & amask != 0)
            .collect();
        for (k, &j) in lane_bits.iter().enumerate() {
            if j != k || t.ll.lanes[j] & !amask != 0 || pos(t.ll.lanes[j]) != chunk << k {
                return Err(unsupported(
                    what,
                    span,
                    "a scan over lanes that are not the lowest lane bits in position order",
                ));
            }
        }
        if !lane_bits.is_empty() && t.dtype.bits() != 32 {
            return Err(unsupported(
                what,
                span,
                format!("a scan across lanes of {} tiles", t.dtype),
            ));
        }
        let out = self.fresh_tile(t.dtype, t.ll.clone(), t.parent.clone(), span)?;
        let m = lane_bits.len() as u32;
        let q = self.e.reg(RegClass::B32);
        if m > 0 {
            self.e
                .ins(format!("and.b32 {q}, {}, {}", self.k.lane, (1u32 << m) - 1));
        }
        for o in 0..(1usize << outside.len()) {
            let mut elems = axis_elems(&t.ll, &inside, &outside, o, &pos);
            elems.sort();
            if reverse {
                elems.reverse();
            }
            // In-thread inclusive scan.
            let mut prev: Option<Reg> = None;
            for &(_, r) in &elems {
                let d = out.regs[r];
                self.mov(d, &t.regs[r].to_string());
                if let Some(p) = prev {
                    self.combine(op, t.dtype, d, &p.to_string(), span)?;
                }
                prev = Some(d);
            }
            let Some(total) = prev else { continue };
            if m == 0 {
                continue;
            }
            // Inclusive scan of the threads' totals over the axis lanes.
            let s = self.e.reg(total.class);
            self.mov(s, &total.to_string());
            let group = 1u32 << m;
            for k in 0..m {
                let d = 1u32 << k;
                let tmp = self.e.reg(total.class);
                let p = self.e.reg(RegClass::Pred);
                if reverse {
                    // Lanes q + d within the group hold the later positions.
                    self.e
                        .ins(format!("shfl.sync.down.b32 {tmp}, {s}, {d}, 31, 0xffffffff"));
                    self.e.ins(format!("setp.lt.u32 {p}, {q}, {}", group - d));
                } else {
                    self.e
                        .ins(format!("shfl.sync.up.b32 {tmp}, {s}, {d}, 0, 0xffffffff"));
                    self.e.ins(format!("setp.ge.u32 {p}, {q}, {d}"));
                }
                let c = self.e.reg(total.class);
                self.mov(c, &s.to_string());
                self.combine(op, t.dtype, c, &tmp.to_string(), span)?;
                self.e
                    .ins(format!("selp.{} {s}, {c}, {s}, {p}", bits_ty(t.dtype)));
            }
            // The lanes before this one (after it, reversed): their inclusive scan, one lane
            // over.
            let before = self.e.reg(total.class);
            let p = self.e.reg(RegClass::Pred);
            if reverse {
                self.e
                    .ins(format!("shfl.sync.down.b32 {before}, {s}, 1, 31, 0xffffffff"));
                self.e.ins(format!("setp.lt.u32 {p}, {q}, {}", group - 1));
            } else {
                self.e
                    .ins(format!("shfl.sync.up.b32 {before}, {s}, 1, 0, 0xffffffff"));
                self.e.ins(format!("setp.ge.u32 {p}, {q}, 1"));
            }
            for &(_, r) in &elems {
                let d = out.regs[r];
                let c = self.e.reg(total.class);
                self.mov(c, &d.to_string());
                self.combine(op, t.dtype, c, &before.to_string(), span)?;
                self.e
                    .ins(format!("selp.{} {d}, {c}, {d}, {p}", bits_ty(t.dtype)));
            }
        }
        Ok(out)
    }
}

/// The elements one thread holds along a reduced or scanned axis, for output register `o`:
/// `(position along the axis, register index)` for every subset of the `inside` register bits
/// (bits along the axis), on top of the `outside` bits that `o` selects, in subset order.
fn axis_elems(
    ll: &LinearLayout,
    inside: &[usize],
    outside: &[usize],
    o: usize,
    pos: &dyn Fn(u32) -> u32,
) -> Vec<(u32, usize)> {
    let base: usize = outside
        .iter()
        .enumerate()
        .filter(|&(j, _)| o >> j & 1 == 1)
        .map(|(_, &i)| 1usize << i)
        .sum();
    (0..(1usize << inside.len()))
        .map(|s| {
            let (mut p, mut r) = (0u32, base);
            for (j, &i) in inside.iter().enumerate() {
                if s >> j & 1 == 1 {
                    p += pos(ll.regs[i]);
                    r += 1usize << i;
                }
            }
            (p, r)
        })
        .collect()
}

/// Where `axis` of `t` sits in its flat index: the axis's lowest bit, its number of bits, and
/// the mask of those bits.
fn axis_bits(t: &Tile, axis: usize, what: &str, span: Span) -> LResult<(u32, u32, u32)> {
    let offs = crate::ptx::linear_layout::dim_offsets(&t.ll.shape).map_err(|m| unsupported(what, span, m))?;
    let nb =
        t.ll.shape
            .get(axis)
            .ok_or_else(|| invalid(what, span, "axis out of range"))?
            .trailing_zeros();
    Ok((offs[axis], nb, ((1u32 << nb) - 1) << offs[axis]))
}
