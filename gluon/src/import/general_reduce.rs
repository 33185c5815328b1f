//! `tt.reduce` with a general combiner: a region that is neither one fold per operand nor a
//! (value, index) extreme ([`super::combiner::identify`]), such as a (maximum, count) pair, a
//! two-word sum with carries or an online softmax's (maximum, scaled sum).
//!
//! A general combiner need not be associative or commutative to the last bit (float rounding),
//! so its result depends on the order in which elements are combined. bwsim reproduces the
//! order of the GPU's reduction, which follows the operand's layout: an index `k` along the
//! reduced axis of a blocked layout (or of a linear layout that places the axis the same way,
//! [`linear_axis_bits`]) (`sizePerThread` s, `threadsPerWarp` t, `warpsPerCTA` w
//! along that axis, all powers of two) is `k = ((rep * w + warp) * t + lane) * s + reg`, and
//!
//! 1. each thread folds the elements it holds from left to right, in register order (that is,
//!    by increasing `k`): `acc = c(c(c(e0, e1), e2), ...)`;
//! 2. the lanes combine their partial results by butterfly exchanges, highest lane bit first:
//!    at distance `d` (t/2, t/4, .., 1) the lane whose bit `d` is clear combines
//!    `c(own, partner)`, its partner's value on the right;
//! 3. the warps' partial results are combined the same way over the warp bits, highest first.
//!
//! (For a combiner that is not commutative the lanes of a butterfly end with different values;
//! bwsim keeps those of the lowest lane, which a slice-layout result holds.) The importer
//! unrolls this tree into plain tile expressions, so no new `.tile` operation is needed: the
//! operand is converted to a layout that keeps the whole axis in each thread's registers, the
//! axis is reshaped into its (rep, warp, lane, reg) index groups and permuted last, `split`
//! peels single elements or butterfly halves, and the combiner region is imported once per
//! combine step, its block arguments bound to the halves (its scalar operations read as
//! elementwise operations on them, as in `tt.map_elementwise`).

use super::*;

/// Where the index bits of the reduced axis live: `reg` low bits in a thread's registers, then
/// `lane` bits across lanes, `warp` bits across warps, then `rep` more register bits (the
/// layout repeated along the axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct AxisBits {
    pub reg: u32,
    pub lane: u32,
    pub warp: u32,
    pub rep: u32,
}

/// The index groups of an axis of `n` elements (a power of two) in a blocked layout with
/// `spt`, `tpw` and `wpc` along it: lower bits fill the registers, then the lanes, then the
/// warps; what is left repeats the layout. Lanes and warps beyond the axis hold copies and
/// combine nothing. `None` when a count is not a power of two.
pub(super) fn axis_bits(n: i64, spt: i64, tpw: i64, wpc: i64) -> Option<AxisBits> {
    let log = |x: i64| (x > 0 && x & (x - 1) == 0).then(|| x.trailing_zeros());
    let total = log(n)?;
    let reg = log(spt)?.min(total);
    let lane = log(tpw)?.min(total - reg);
    let warp = log(wpc)?.min(total - reg - lane);
    Some(AxisBits {
        reg,
        lane,
        warp,
        rep: total - reg - lane - warp,
    })
}

/// [`AxisBits`] of an axis of `n` elements (dimension `a`) in a `#ttg.linear` layout: each
/// index bit of the axis must be one register, lane or warp basis that moves along `a` alone,
/// the bits in the order registers, lanes, warps, registers (as a blocked layout places them),
/// each kind's bases in increasing order (so that register order is index order). `None`
/// for any other placement.
pub(super) fn linear_axis_bits(
    n: i64,
    a: usize,
    register: &[Vec<i64>],
    lane: &[Vec<i64>],
    warp: &[Vec<i64>],
) -> Option<AxisBits> {
    if n <= 0 || n & (n - 1) != 0 {
        return None;
    }
    let total = n.trailing_zeros();
    // (kind, index among that kind's bases) of each index bit of the axis.
    let mut at: Vec<Option<(u8, usize)>> = vec![None; total as usize];
    for (kind, bases) in [(0u8, register), (1, lane), (2, warp)] {
        for (i, b) in bases.iter().enumerate() {
            let along = b.get(a).copied().unwrap_or(0);
            let elsewhere = b.iter().enumerate().any(|(d, &x)| d != a && x != 0);
            match (along, elsewhere) {
                (0, _) => continue,
                (x, false) if x > 0 && x & (x - 1) == 0 && x < n => {
                    let k = x.trailing_zeros() as usize;
                    if at[k].is_some() {
                        return None;
                    }
                    at[k] = Some((kind, i));
                }
                _ => return None,
            }
        }
    }
    let kinds: Vec<(u8, usize)> = at.into_iter().collect::<Option<Vec<_>>>()?;
    // Runs: registers, lanes, warps, registers; within each kind, increasing basis index.
    let count = |from: usize, kind: u8| kinds[from..].iter().take_while(|(k, _)| *k == kind).count();
    let reg = count(0, 0);
    let lane = count(reg, 1);
    let warp = count(reg + lane, 2);
    let rep = count(reg + lane + warp, 0);
    if reg + lane + warp + rep != kinds.len() {
        return None;
    }
    for kind in [0u8, 1, 2] {
        let idx: Vec<usize> = kinds
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, i)| *i)
            .collect();
        if idx.windows(2).any(|w| w[0] >= w[1]) {
            return None;
        }
    }
    Some(AxisBits {
        reg: reg as u32,
        lane: lane as u32,
        warp: warp as u32,
        rep: rep as u32,
    })
}

/// The tiles of one combine step: one expression and element type per operand, all of `shape`.
#[derive(Clone)]
struct Step {
    vals: Vec<Expr>,
    shape: Vec<i64>,
}

impl<'m> Cx<'m> {
    /// `tt.reduce` of `v` along `axis` by the combiner region of `op`, unrolled into the GPU's
    /// combine order (module docs).
    pub(super) fn general_reduce(&mut self, op: &Op, v: &[(String, Span)], axis: i64, span: Span) -> R<()> {
        let Some(region) = op.regions.first() else {
            return Err(self.misuse(op, "needs a combiner region"));
        };
        let args = super::combiner::block_args(region);
        let n_ops = v.len();
        if args.len() != 2 * n_ops || op.results.len() != n_ops {
            return Err(self.misuse(
                op,
                format!(
                    "{} operands, {} results and {} combiner arguments",
                    n_ops,
                    op.results.len(),
                    args.len()
                ),
            ));
        }
        let ty0 = self.val_type(&v[0].0, v[0].1)?;
        let (Some(shape), Some(enc)) = (ty0.shape().map(<[i64]>::to_vec), ty0.encoding().cloned()) else {
            return Err(self.misuse(op, "reduces a tensor with a layout"));
        };
        let mut elems = Vec::with_capacity(n_ops);
        for (n, s) in v {
            let t = self.val_type(n, *s)?;
            if t.shape() != Some(&shape[..]) {
                return Err(self.misuse(op, "reduces operands of one shape"));
            }
            elems.push(
                t.elem()
                    .ok_or_else(|| self.misuse(op, "reduces tensors of scalars"))?,
            );
        }
        let a = usize::try_from(axis)
            .ok()
            .filter(|&a| a < shape.len())
            .ok_or_else(|| self.misuse(op, format!("axis {axis} of a rank-{} tensor", shape.len())))?;
        let layout = self.attrs.layout(&enc, span)?;
        let bits = match &layout {
            Layout::Blocked { spt, tpw, wpc, .. } => {
                let at = |v: &[i64]| v.get(a).copied().unwrap_or(1);
                axis_bits(shape[a], at(spt), at(tpw), at(wpc))
            }
            Layout::Linear { register, lane, warp } => linear_axis_bits(shape[a], a, register, lane, warp),
            _ => None,
        };
        let Some(bits) = bits else {
            return Err(self.unsupported(
                op,
                &format!(
                    "a reduction with a general combiner over a {} operand; bwsim orders the combine steps of blocked layouts, and of linear ones whose axis bits lie in registers, lanes, warps and registers again, in that order",
                    self.layout_name(&enc, span)
                ),
            ));
        };
        let xs = v
            .iter()
            .map(|(n, s)| self.expr(n, *s))
            .collect::<R<Vec<Expr>>>()?;

        // A rank-1 operand gets a leading axis of one (its result is then a scalar).
        let (mut xs, mut shape, a, scalar) = if shape.len() == 1 {
            let xs = xs
                .into_iter()
                .map(|x| call("expand_dims", vec![x, int_e(0, span)], span))
                .collect();
            (xs, vec![1, shape[0]], 1usize, true)
        } else {
            (xs, shape, a, false)
        };
        let rest: Vec<i64> = shape
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != a)
            .map(|(_, &d)| d)
            .collect();
        let (w, l, s, rep) = (
            1i64 << bits.warp,
            1i64 << bits.lane,
            1i64 << bits.reg,
            1i64 << bits.rep,
        );
        // Groups kept as dimensions (extent > 1), each with its extent.
        let groups: Vec<i64> = [w, l].into_iter().filter(|&g| g > 1).collect();
        let m = rep * s;
        // The axis regrouped as (rep, warp, lane, reg) takes three more dimensions; `.tile`
        // tiles have at most six.
        if shape.len() + 3 > 6 {
            return Err(self.unsupported(
                op,
                "a reduction with a general combiner of a tensor of rank above 3",
            ));
        }
        // 1. The whole axis in each thread's registers: every later `split` is of registers.
        let rank = shape.len();
        let dim = (0..rank).find(|&i| i != a).unwrap_or(0);
        let one_hot =
            |i: usize, x: i64| -> Vec<i64> { (0..rank).map(|j| if j == i { x } else { 1 }).collect() };
        let mut lay_spt = one_hot(a, 1);
        lay_spt[a] = shape[a];
        let order: Vec<i64> = (0..rank as i64).rev().collect();
        let in_regs = call(
            "blocked",
            vec![
                list_e(&lay_spt, span),
                list_e(&one_hot(dim, 32), span),
                list_e(&one_hot(dim, self.warps), span),
                list_e(&order, span),
            ],
            span,
        );
        // 2. The axis as (rep, warp, lane, reg) groups, permuted to the end as
        //    (warp, lane, rep * reg).
        let grouped: Vec<i64> = shape[..a]
            .iter()
            .copied()
            .chain([rep, w, l, s])
            .chain(shape[a + 1..].iter().copied())
            .collect();
        let mut perm: Vec<i64> = (0..a).chain(a + 4..rank + 3).map(|i| i as i64).collect();
        perm.extend([a + 1, a + 2, a, a + 3].map(|i| i as i64));
        let mut target = rest.clone();
        target.extend(&groups);
        if m > 1 {
            target.push(m);
        }
        for x in &mut xs {
            let conv = call("convert_layout", vec![x.clone(), in_regs.clone()], span);
            let re = call("reshape", vec![conv, list_e(&grouped, span)], span);
            let pm = call("permute", vec![re, list_e(&perm, span)], span);
            let flat = call("reshape", vec![pm, list_e(&target, span)], span);
            let n = self.let_("red_in", Rhs::Expr(flat), span);
            *x = name_e(&n, span);
        }
        shape = target;
        // 3. Each thread's elements, folded left to right.
        let mut acc = if m > 1 {
            let mut per_elem: Vec<Vec<Expr>> = Vec::new();
            for x in &xs {
                per_elem.push(self.peel(x.clone(), &shape, span));
            }
            shape.pop();
            let mut acc = Step {
                vals: per_elem.iter().map(|e| e[0].clone()).collect(),
                shape: shape.clone(),
            };
            for j in 1..m as usize {
                let rhs: Vec<Expr> = per_elem.iter().map(|e| e[j].clone()).collect();
                acc = self.combine_step(op, region, &args, &elems, &acc, rhs, span)?;
            }
            acc
        } else {
            Step {
                vals: xs,
                shape: shape.clone(),
            }
        };
        // 4. Butterflies over the lanes, then the warps, highest bit first.
        for g in groups.iter().rev() {
            let mut ext = *g;
            while ext > 1 {
                let mut halves = Vec::new();
                for x in &acc.vals {
                    halves.push(self.halve(x.clone(), &acc.shape, span));
                }
                let mut sh = acc.shape.clone();
                if let Some(last) = sh.last_mut() {
                    *last = ext / 2;
                }
                if ext == 2 {
                    sh.pop();
                }
                let lo = Step {
                    vals: halves.iter().map(|h| h.0.clone()).collect(),
                    shape: sh,
                };
                let hi: Vec<Expr> = halves.into_iter().map(|h| h.1).collect();
                acc = self.combine_step(op, region, &args, &elems, &lo, hi, span)?;
                ext /= 2;
            }
        }
        // 5. The results, in the result's layout (a scalar for a rank-1 operand).
        for (i, x) in acc.vals.into_iter().enumerate() {
            let ty = self.result_type(op, i)?;
            let r = self.result(op, i)?;
            let e = if scalar {
                call("sum", vec![x, int_e(0, span)], span)
            } else {
                let lay = self.required_layout(&ty, span)?;
                call("convert_layout", vec![x, lay], span)
            };
            let n = self.let_(&r, Rhs::Expr(e), span);
            self.bind(&r, Val::E(name_e(&n, span), ty));
        }
        Ok(())
    }

    /// The elements of `x` (shape `shape`, last dimension m) along its last dimension, in order:
    /// `split` peels the lowest index bit at a time.
    fn peel(&mut self, x: Expr, shape: &[i64], span: Span) -> Vec<Expr> {
        let m = shape.last().copied().unwrap_or(1);
        if m <= 1 {
            return vec![x];
        }
        let base = &shape[..shape.len() - 1];
        let (even, odd) = if m == 2 {
            self.split_let(x, span)
        } else {
            let mut sh = base.to_vec();
            sh.extend([m / 2, 2]);
            self.split_let(call("reshape", vec![x, list_e(&sh, span)], span), span)
        };
        let mut half = base.to_vec();
        half.push(m / 2);
        let (e, o) = (self.peel(even, &half, span), self.peel(odd, &half, span));
        e.into_iter().zip(o).flat_map(|(a, b)| [a, b]).collect()
    }

    /// The lower and upper halves of `x` along its last dimension (of extent g).
    fn halve(&mut self, x: Expr, shape: &[i64], span: Span) -> (Expr, Expr) {
        let g = shape.last().copied().unwrap_or(2);
        if g == 2 {
            return self.split_let(x, span);
        }
        let r = shape.len();
        let mut sh = shape[..r - 1].to_vec();
        sh.extend([2, g / 2]);
        let mut perm: Vec<i64> = (0..r as i64 - 1).collect();
        perm.extend([r as i64, r as i64 - 1]);
        let e = call(
            "permute",
            vec![
                call("reshape", vec![x, list_e(&sh, span)], span),
                list_e(&perm, span),
            ],
            span,
        );
        self.split_let(e, span)
    }

    /// `let (a, b) = split(x)`.
    fn split_let(&mut self, x: Expr, span: Span) -> (Expr, Expr) {
        let (a, b) = (self.fresh("red_lo"), self.fresh("red_hi"));
        self.push(
            StmtKind::Let {
                names: vec![Ident::spanned(a.clone(), span), Ident::spanned(b.clone(), span)],
                value: Rhs::Expr(call("split", vec![x], span)),
            },
            span,
        );
        (name_e(&a, span), name_e(&b, span))
    }

    /// One combine step `c(lhs, rhs)`: the region imported with its block arguments bound to
    /// the operand tiles, its results bound by `let`.
    #[allow(clippy::too_many_arguments)]
    fn combine_step(
        &mut self,
        op: &Op,
        region: &Region,
        args: &[String],
        elems: &[Elem],
        lhs: &Step,
        rhs: Vec<Expr>,
        span: Span,
    ) -> R<Step> {
        let n = elems.len();
        let tile = |e: Elem| Type::Tensor {
            shape: lhs.shape.clone(),
            elem: Box::new(Type::Scalar(e)),
            enc: None,
        };
        self.scopes.push(HashMap::new());
        for i in 0..n {
            self.bind(&args[i], Val::E(lhs.vals[i].clone(), tile(elems[i])));
            self.bind(&args[n + i], Val::E(rhs[i].clone(), tile(elems[i])));
        }
        let saved = self.elementwise.replace(tile(elems[0]));
        let mut returned = Vec::new();
        let mut failed = None;
        for inner in &region.ops {
            if inner.name == "tt.reduce.return" {
                match self.operands(inner) {
                    Ok(ops) => {
                        for (name, sp) in ops {
                            returned.push(self.get(&name, sp));
                        }
                    }
                    Err(e) => failed = Some(e),
                }
                break;
            }
            if let Err(e) = self.op(inner) {
                failed = Some(e);
                break;
            }
        }
        self.elementwise = saved;
        self.scopes.pop();
        if let Some(e) = failed {
            return Err(e);
        }
        if returned.len() != n {
            return Err(self.misuse(
                op,
                format!("the combiner returns {} values for {n} operands", returned.len()),
            ));
        }
        let mut vals = Vec::with_capacity(n);
        for v in returned {
            let e = match v? {
                Val::E(e, t) if t.is_tensor() => e,
                // A combiner result that is the same for every element (a constant): bwsim needs
                // it as a tile of the step's layout, which it does not name here.
                _ => {
                    return Err(self.unsupported(
                        op,
                        "a combiner that returns a constant; bwsim imports combiners whose results depend on their operands",
                    ))
                }
            };
            let name = self.let_("red_acc", Rhs::Expr(e), span);
            vals.push(name_e(&name, span));
        }
        Ok(Step {
            vals,
            shape: lhs.shape.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_bits_fill_registers_lanes_warps_then_repeat() {
        // The fixture's layout: 4 per thread, 8 lanes, 2 warps along 128 columns: one repeat.
        assert_eq!(
            axis_bits(128, 4, 8, 2),
            Some(AxisBits {
                reg: 2,
                lane: 3,
                warp: 1,
                rep: 1
            })
        );
        // An axis shorter than the lanes: the extra lanes hold copies.
        assert_eq!(
            axis_bits(16, 1, 32, 4),
            Some(AxisBits {
                reg: 0,
                lane: 4,
                warp: 0,
                rep: 0
            })
        );
        assert_eq!(axis_bits(96, 1, 32, 1), None);
    }

    #[test]
    fn linear_axis_bits_read_the_bases() {
        // The 32x32b TMEM message layout of a [128, 64] tile: a row's 64 columns in one
        // thread's registers, rows over lanes and warps.
        let reg: Vec<Vec<i64>> = (0..6).map(|k| vec![0, 1 << k]).collect();
        let lane: Vec<Vec<i64>> = (0..5).map(|k| vec![1 << k, 0]).collect();
        let warp = vec![vec![32, 0], vec![64, 0]];
        assert_eq!(
            linear_axis_bits(64, 1, &reg, &lane, &warp),
            Some(AxisBits {
                reg: 6,
                lane: 0,
                warp: 0,
                rep: 0
            })
        );
        assert_eq!(
            linear_axis_bits(128, 0, &reg, &lane, &warp),
            Some(AxisBits {
                reg: 0,
                lane: 5,
                warp: 2,
                rep: 0
            })
        );
        // Register bases out of index order, or a basis moving along two dimensions: refused.
        let swapped = vec![vec![0, 2], vec![0, 1]];
        assert_eq!(linear_axis_bits(4, 1, &swapped, &[], &[]), None);
        let diagonal = vec![vec![1, 1]];
        assert_eq!(linear_axis_bits(2, 1, &diagonal, &[], &[]), None);
    }
}
