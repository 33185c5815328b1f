//! Resolving the global-memory forms: `atom` / `red` ([`crate::atomic`]), the memory-ordering
//! fences, the TMA reductions (`cp.reduce.async.bulk.tensor`) and the row gathers and scatters
//! of `cp.async.bulk.tensor.2d.tile::gather4` / `tile::scatter4`.

use super::{space_of, AgentOp, Cx, Op, Val};
use crate::atomic::{defined, Atom, AtomOp, AtomType, Order};
use crate::parse::{Addr, Instr, Operand, Space};
use crate::Error;
use bwsim_isa::value_types::TmaReduceOp;

/// The `.sem` and `.scope` qualifiers of atomics and fences: ordering only (no value changes).
const ORDERING: [&str; 9] = [
    "relaxed", "acquire", "release", "acq_rel", "sc", "cta", "cluster", "gpu", "sys",
];

/// Whether `opcode.m` is a memory-ordering fence: `fence.{sc,acq_rel,acquire,release}[.scope]`
/// or `membar.{cta,gl,sys}` (not the proxy fences, nor `fence.mbarrier_init`).
pub(super) fn ordering_fence(opcode: &str, m: &[&str]) -> bool {
    match opcode {
        "membar" => matches!(m, ["cta" | "gl" | "sys"]),
        _ => {
            matches!(m.first(), Some(&("sc" | "acq_rel" | "acquire" | "release")))
                && m[1..]
                    .iter()
                    .all(|x| matches!(*x, "cta" | "cluster" | "gpu" | "sys"))
        }
    }
}

/// Whether `cp.m` is a bulk tensor form of this module: a reduction or a gather4/scatter4.
pub(super) fn bulk_tensor_form(m: &[&str]) -> bool {
    m.starts_with(&["reduce", "async", "bulk", "tensor"])
        || (m.starts_with(&["async", "bulk", "tensor"])
            && m.iter().any(|x| matches!(*x, "tile::gather4" | "tile::scatter4")))
}

/// The address and the coordinates of a `[tensor map, {coordinates}]` operand.
fn tensor(x: Option<&Operand>) -> Option<(&Addr, &Vec<Operand>)> {
    match x {
        Some(Operand::Tensor(a, c)) => Some((a, c)),
        _ => None,
    }
}

impl Cx<'_> {
    /// `atom{.sem}{.scope}{.space}.op.type d, [a], b{, c}` and `red{.sem}{.scope}{.space}.op.type
    /// [a], b`.
    pub(super) fn atom(&self, i: &Instr, m: &[&str]) -> Result<Op, Error> {
        let red = i.opcode == "red";
        let mut op = None;
        let mut ty = None;
        let mut space = None;
        for x in m {
            if let Some(s) = space_of(x) {
                space = Some(s);
            } else if let Some(t) = AtomType::of(x) {
                ty = Some(t);
            } else if *x == "exch" {
                op = Some(AtomOp::Exch);
            } else if *x == "cas" {
                op = Some(AtomOp::Cas);
            } else if let Some(r) = TmaReduceOp::from_name(x) {
                op = Some(AtomOp::Reduce(r));
            } else if !ORDERING.contains(x) && *x != "noftz" {
                return Err(self.unsupported(i, &format!("the `.{x}` form of atomics")));
            }
        }
        if matches!(space, Some(Space::Local | Space::Const | Space::Param)) {
            return Err(self.invalid(i, "atomics reach global and shared memory only"));
        }
        let Some(op) = op else {
            return Err(self.invalid(i, "an atomic needs its operation"));
        };
        let Some(ty) = ty else {
            return Err(self.unsupported(i, &format!("atomics of `.{}`", m.last().unwrap_or(&""))));
        };
        if !defined(op, ty) || (red && op == AtomOp::Cas) {
            return Err(self.invalid(i, "the PTX ISA does not define this operation on this type"));
        }
        let o = &i.operands;
        let (d, rest) = if red {
            (None, &o[..])
        } else {
            let d = match o.first() {
                Some(Operand::Sink) => None,
                Some(x) => Some(self.reg(i, x)?),
                None => return Err(self.invalid(i, "`atom` takes a destination")),
            };
            (d, o.get(1..).unwrap_or(&[]))
        };
        let want = if op == AtomOp::Cas { 3 } else { 2 };
        let (Some(Operand::Addr(a)), true) = (rest.first(), rest.len() == want) else {
            return Err(self.invalid(i, format!("expected an address and {} value(s)", want - 1)));
        };
        Ok(Op::Atom(Atom {
            op,
            ty,
            space,
            d,
            at: super::MemRef {
                base: self.base(i, a, space)?,
                offset: a.offset,
            },
            b: self.val(i, &rest[1])?,
            c: rest.get(2).map(|c| self.val(i, c)).transpose()?,
            order: Order {
                strong: true,
                ..Order::of(m)
            },
        }))
    }

    /// `cp.reduce.async.bulk.tensor.Nd.global.shared::cta.OP.bulk_group [tmap, {coords}],
    /// [src]`, `cp.async.bulk.tensor.2d.tile::gather4.shared::cta.global.mbarrier::complete_tx::bytes
    /// [dst], [tmap, {col, row0, .., row3}], [bar]` and `cp.async.bulk.tensor.2d.tile::scatter4
    /// .global.shared::cta.bulk_group [tmap, {col, row0, .., row3}], [src]`.
    pub(super) fn bulk_tensor(&self, i: &Instr, m: &[&str]) -> Result<Op, Error> {
        if m.iter()
            .any(|x| matches!(*x, "multicast::cluster" | "cta_group::2") || x.starts_with("im2col"))
        {
            return Err(self.unsupported(i, "multicast, im2col and CTA-pair forms"));
        }
        let o = &i.operands;
        let coords =
            |cs: &Vec<Operand>| -> Result<Vec<Val>, Error> { cs.iter().map(|c| self.val(i, c)).collect() };
        let rows4 = |cs: &Vec<Operand>| -> Result<Vec<Val>, Error> {
            if cs.len() != 5 {
                return Err(self.invalid(i, "gather4 and scatter4 take a column and four rows"));
            }
            coords(cs)
        };
        if m.first() == Some(&"reduce") {
            let op = m.iter().find_map(|x| TmaReduceOp::from_name(x));
            let (Some(op), true) = (op, m.contains(&"bulk_group")) else {
                return Err(self.unsupported(i, "reductions other than `.bulk_group` ones"));
            };
            let (Some((tm, cs)), Some(Operand::Addr(src))) = (tensor(o.first()), o.get(1)) else {
                return Err(self.invalid(i, "expected [tensor map, {coordinates}], [src]"));
            };
            return Ok(Op::Agent(AgentOp::TmaStore {
                tmap: self.memref(i, tm)?,
                coords: coords(cs)?,
                src: self.memref(i, src)?,
                scatter4: false,
                reduce: Some(op),
            }));
        }
        if !m.contains(&"2d") {
            return Err(self.invalid(i, "gather4 and scatter4 are `.2d` forms"));
        }
        if m.contains(&"tile::gather4") {
            let (Some(Operand::Addr(dst)), Some((tm, cs)), Some(Operand::Addr(bar))) =
                (o.first(), tensor(o.get(1)), o.get(2))
            else {
                return Err(self.invalid(i, "expected [dst], [tensor map, {col, rows}], [mbarrier]"));
            };
            Ok(Op::Agent(AgentOp::TmaLoad {
                dst: self.memref(i, dst)?,
                tmap: self.memref(i, tm)?,
                coords: rows4(cs)?,
                bar: self.memref(i, bar)?,
                gather4: true,
                multicast: None,
                pair: false,
            }))
        } else if m.contains(&"bulk_group") {
            let (Some((tm, cs)), Some(Operand::Addr(src))) = (tensor(o.first()), o.get(1)) else {
                return Err(self.invalid(i, "expected [tensor map, {col, rows}], [src]"));
            };
            Ok(Op::Agent(AgentOp::TmaStore {
                tmap: self.memref(i, tm)?,
                coords: rows4(cs)?,
                src: self.memref(i, src)?,
                scatter4: true,
                reduce: None,
            }))
        } else {
            Err(self.unsupported(i, "scatter4 completing other than on a bulk group"))
        }
    }
}
