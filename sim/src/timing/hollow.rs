//! Evaluation without tile payloads: scalars, views and barriers are evaluated exactly (by
//! [`crate::eval`]), register tiles only by element type and shape ("hollow" tiles with no
//! bits). This is what lets the timing model run 8192 x 8192 problems: a 128 x 256
//! accumulator costs a few bytes, not 128 KiB, per operation.
//!
//! A value computed *from* tile data (a reduction to a scalar, a branch on a tile) cannot be
//! known here and is reported as unsupported by the timing model.

use crate::eval::{self, broadcast_shapes, EvalCtx};
use crate::lower::{Builtin, CExpr, IItem};
use crate::trap::{Fault, OpResult};
use crate::value::{Tile, Value};
use bwsim_isa::ir::{BinOp, UnOp};
use bwsim_isa::Code;
use bwsim_isa::DType;
use std::sync::Arc;

/// A tile with a type and a shape but no elements.
pub fn hollow(dtype: DType, shape: Vec<u32>) -> Value {
    Value::Tile(Arc::new(Tile {
        dtype,
        shape,
        bits: Vec::new(),
    }))
}

fn unsupported(what: &str) -> Fault {
    Fault::unsupported(format!(
        "{what} depends on tile data, which the timing model does not compute"
    ))
}

/// Whether evaluating `e` involves a register tile (a tile-valued slot or a tile constructor).
pub fn touches_tile(e: &CExpr, frame: &[Value]) -> bool {
    match e {
        CExpr::Const(_) | CExpr::ProgramId(_) | CExpr::NumPrograms(_) => false,
        CExpr::Slot(s) => matches!(
            frame.get(*s as usize),
            Some(Value::Tile(_)) | Some(Value::Tuple(_))
        ),
        CExpr::Arange { .. }
        | CExpr::Full { .. }
        | CExpr::Broadcast(..)
        | CExpr::ExpandDims(..)
        | CExpr::Reshape(..)
        | CExpr::Permute(..)
        | CExpr::Split(_)
        | CExpr::Join(..)
        | CExpr::Reduce(..)
        | CExpr::Scan(..) => true,
        CExpr::Unary(_, a) | CExpr::Cast(a, _) | CExpr::ShapeOf(a, _) => touches_tile(a, frame),
        CExpr::Binary(_, a, b) => touches_tile(a, frame) || touches_tile(b, frame),
        CExpr::Call(_, args) | CExpr::InlineAsm(_, args) => args.iter().any(|a| touches_tile(a, frame)),
        CExpr::Index(b, items) => {
            touches_tile(b, frame)
                || items.iter().any(|i| match i {
                    IItem::Expr(x) => touches_tile(x, frame),
                    _ => false,
                })
        }
    }
}

/// Number of elementwise operations in `e` that cost ALU time on tiles (shape manipulation is
/// free: it renames registers).
pub fn alu_ops(e: &CExpr) -> u32 {
    match e {
        CExpr::Const(_)
        | CExpr::Slot(_)
        | CExpr::ProgramId(_)
        | CExpr::NumPrograms(_)
        | CExpr::ShapeOf(..) => 0,
        CExpr::Arange { .. } | CExpr::Full { .. } => 1,
        CExpr::Unary(_, a) | CExpr::Cast(a, _) | CExpr::Reduce(_, a, _) | CExpr::Scan(_, a, _, _) => {
            1 + alu_ops(a)
        }
        CExpr::Binary(_, a, b) => 1 + alu_ops(a) + alu_ops(b),
        // A special-function-unit op (ex2, lg2, rsqrt, sin, ...) issues at 16 results per clock
        // per SM, an eighth of the FP32 pipe's 128 (the CUDA programming guide's throughput
        // table, compute capabilities 9.0 and 10.0): eight ALU slots.
        CExpr::Call(Builtin::Math(m), args) if m.is_sfu() => 8 + args.iter().map(alu_ops).sum::<u32>(),
        CExpr::Call(_, args) => 1 + args.iter().map(alu_ops).sum::<u32>(),
        CExpr::Broadcast(a, _)
        | CExpr::ExpandDims(a, _)
        | CExpr::Reshape(a, _)
        | CExpr::Permute(a, _)
        | CExpr::Split(a)
        | CExpr::Index(a, _) => alu_ops(a),
        CExpr::Join(a, b) => alu_ops(a) + alu_ops(b),
        // One issue per instruction per pack group, spread over the results' elements (the
        // engine charges this per element of every result).
        CExpr::InlineAsm(p, args) => {
            let per = (p.pack * p.results.len()).max(1) as u32;
            (p.instructions() as u32).div_ceil(per).max(1) + args.iter().map(alu_ops).sum::<u32>()
        }
    }
}

/// Whether a tile expression's (hollow) value is fixed by the types and shapes of its operands
/// alone, so that the engine may keep the value of its first evaluation at that instruction
/// (a slot keeps the type checker's type and shape, the same at every execution): no
/// indexing (whose position may be a run-time scalar), no inline PTX. The caller also
/// checks that the value is a tile or a tuple of tiles (a scalar computed from a shape and a
/// run-time scalar is not fixed).
pub fn shape_only(e: &CExpr) -> bool {
    match e {
        CExpr::Index(..) | CExpr::InlineAsm(..) => false,
        _ => {
            let mut only = true;
            crate::taint::for_each_operand(e, &mut |x| only = only && shape_only(x));
            only
        }
    }
}

/// Whether `v` is a register tile or a tuple of them (the values [`shape_only`] expressions
/// may be cached as).
pub fn is_tiles(v: &Value) -> bool {
    match v {
        Value::Tile(_) => true,
        Value::Tuple(parts) => parts.iter().all(is_tiles),
        _ => false,
    }
}

/// Number of scalar operations in `e` (its cost as a dependent chain).
pub fn scalar_ops(e: &CExpr) -> u32 {
    match e {
        CExpr::Const(_) | CExpr::Slot(_) | CExpr::ProgramId(_) | CExpr::NumPrograms(_) => 0,
        CExpr::Unary(_, a) | CExpr::Cast(a, _) | CExpr::ShapeOf(a, _) => 1 + scalar_ops(a),
        CExpr::Binary(_, a, b) => 1 + scalar_ops(a) + scalar_ops(b),
        CExpr::InlineAsm(p, args) => p.instructions() as u32 + args.iter().map(scalar_ops).sum::<u32>(),
        CExpr::Call(f, args) => {
            // cdiv is a divide and an add; the rest are one instruction.
            let own = if *f == Builtin::Cdiv { 2 } else { 1 };
            own + args.iter().map(scalar_ops).sum::<u32>()
        }
        CExpr::Index(b, items) => {
            1 + scalar_ops(b)
                + items
                    .iter()
                    .map(|i| match i {
                        IItem::Expr(x) => scalar_ops(x),
                        _ => 0,
                    })
                    .sum::<u32>()
        }
        _ => 1,
    }
}

/// The result of [`quick`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Quick {
    Int(i64),
    Bool(bool),
    /// One mbarrier of an array.
    Mbar(u32),
}

impl Quick {
    pub fn value(self) -> Value {
        match self {
            Quick::Int(i) => Value::Int(i),
            Quick::Bool(b) => Value::Bool(b),
            Quick::Mbar(addr) => Value::Mbar { addr, count: None },
        }
    }
}

/// The hot path of the timing engine: integer and comparison expressions over integer slots
/// and constants, and `bars[i]`, evaluated without building [`Value`]s, with the arithmetic of
/// [`crate::eval::int_op`]. `None` when `e` is anything else (or would fail): the caller then
/// uses [`eval`], which gives the same result or the error.
pub fn quick(e: &CExpr, frame: &[Value], cx: &EvalCtx) -> Option<Quick> {
    match e {
        CExpr::Const(Value::Int(i)) => Some(Quick::Int(*i)),
        CExpr::Const(Value::Bool(b)) => Some(Quick::Bool(*b)),
        CExpr::Slot(s) => match frame.get(*s as usize)? {
            Value::Int(i) => Some(Quick::Int(*i)),
            Value::Bool(b) => Some(Quick::Bool(*b)),
            _ => None,
        },
        CExpr::ProgramId(a) => Some(Quick::Int(cx.pid[*a as usize % 3] as i64)),
        CExpr::NumPrograms(a) => Some(Quick::Int(cx.grid[*a as usize % 3] as i64)),
        CExpr::Binary(op, a, b) => {
            let (Quick::Int(x), Quick::Int(y)) = (quick(a, frame, cx)?, quick(b, frame, cx)?) else {
                return None;
            };
            match eval::int_op(*op, x, y).ok()? {
                Ok(v) => Some(Quick::Int(v)),
                Err(t) => Some(Quick::Bool(t)),
            }
        }
        CExpr::Index(base, items) => {
            let (CExpr::Slot(s), [IItem::Expr(i)]) = (&**base, items.as_slice()) else {
                return None;
            };
            let Value::Mbar { addr, count: Some(n) } = frame.get(*s as usize)? else {
                return None;
            };
            match quick(i, frame, cx)? {
                Quick::Int(i) if i >= 0 && i < *n as i64 => Some(Quick::Mbar(addr + 8 * i as u32)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Evaluate `e`: exactly when no tile is involved, by shape otherwise.
pub fn eval(e: &CExpr, frame: &[Value], cx: &EvalCtx) -> OpResult<Value> {
    if let Some(q) = quick(e, frame, cx) {
        return Ok(q.value());
    }
    if !touches_tile(e, frame) {
        return eval::eval(e, frame, cx);
    }
    shape_eval(e, frame, cx)
}

fn tile_of(v: &Value) -> Option<(DType, &[u32])> {
    match v {
        Value::Tile(t) => Some((t.dtype, &t.shape)),
        _ => None,
    }
}

fn scalar_dtype(v: &Value) -> DType {
    match v {
        Value::F32(_) => DType::F32,
        Value::Bool(_) => DType::I1,
        _ => DType::I32,
    }
}

/// The element type of an elementwise result: the first tile operand's, floats winning over
/// integers when a scalar float meets an integer tile.
fn result_dtype(vals: &[&Value]) -> DType {
    let mut dt = None;
    for v in vals {
        if let Some((d, _)) = tile_of(v) {
            dt.get_or_insert(d);
        }
    }
    let d = dt.unwrap_or(DType::I32);
    if !d.is_float() && vals.iter().any(|v| matches!(v, Value::F32(_))) {
        DType::F32
    } else {
        d
    }
}

fn result_shape(vals: &[&Value]) -> OpResult<Vec<u32>> {
    let mut shape: Vec<u32> = Vec::new();
    for v in vals {
        if let Some((_, s)) = tile_of(v) {
            shape = broadcast_shapes(&shape, s).ok_or_else(|| {
                Fault::error(
                    Code::SimError,
                    format!("shapes {shape:?} and {s:?} do not broadcast"),
                )
            })?;
        }
    }
    Ok(shape)
}

fn need_tile(v: Value) -> OpResult<(DType, Vec<u32>)> {
    match v {
        Value::Tile(t) => Ok((t.dtype, t.shape.clone())),
        other => Err(Fault::error(
            Code::SimError,
            format!("expected a tile, found {}", other.kind()),
        )),
    }
}

fn shape_eval(e: &CExpr, frame: &[Value], cx: &EvalCtx) -> OpResult<Value> {
    let ev = |x: &CExpr| eval(x, frame, cx);
    match e {
        CExpr::Const(_) | CExpr::Slot(_) | CExpr::ProgramId(_) | CExpr::NumPrograms(_) => {
            eval::eval(e, frame, cx)
        }
        CExpr::Arange { start, end } => Ok(hollow(DType::I32, vec![(end - start).max(0) as u32])),
        CExpr::Full { shape, dtype, .. } => Ok(hollow(*dtype, shape.clone())),
        CExpr::Cast(x, dt) => match ev(x)? {
            Value::Tile(t) => Ok(hollow(*dt, t.shape.clone())),
            v => eval::cast(&v, *dt),
        },
        CExpr::Unary(op, a) => {
            let v = ev(a)?;
            let (dt, shape) = need_tile(v)?;
            Ok(hollow(if *op == UnOp::Not { DType::I1 } else { dt }, shape))
        }
        CExpr::Binary(op, a, b) => {
            let (x, y) = (ev(a)?, ev(b)?);
            if tile_of(&x).is_none() && tile_of(&y).is_none() {
                return eval::binary(*op, &x, &y);
            }
            let shape = result_shape(&[&x, &y])?;
            let dt = match op {
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => DType::I1,
                _ => result_dtype(&[&x, &y]),
            };
            Ok(hollow(dt, shape))
        }
        CExpr::Call(f, args) => {
            let vals = args.iter().map(ev).collect::<OpResult<Vec<_>>>()?;
            let refs: Vec<&Value> = vals.iter().collect();
            let shape = result_shape(&refs)?;
            let dt = match f {
                // select(c, a, b): the type of the chosen values.
                Builtin::Select => result_dtype(&refs[1.min(refs.len())..]),
                Builtin::Packed(_, d) => *d,
                _ => result_dtype(&refs),
            };
            Ok(hollow(dt, shape))
        }
        CExpr::Broadcast(x, shape) => {
            let v = ev(x)?;
            let dt = tile_of(&v).map(|(d, _)| d).unwrap_or_else(|| scalar_dtype(&v));
            Ok(hollow(dt, shape.clone()))
        }
        CExpr::ExpandDims(x, axis) => {
            let (dt, mut shape) = need_tile(ev(x)?)?;
            if *axis as usize > shape.len() {
                return Err(Fault::error(Code::SimError, "expand_dims axis out of range"));
            }
            shape.insert(*axis as usize, 1);
            Ok(hollow(dt, shape))
        }
        CExpr::Reshape(x, shape) => {
            let (dt, old) = need_tile(ev(x)?)?;
            let n: u64 = shape.iter().map(|&v| v as u64).product();
            let m: u64 = old.iter().map(|&v| v as u64).product();
            if n != m {
                return Err(Fault::error(
                    Code::SimError,
                    format!("reshape of {old:?} to {shape:?} changes the element count"),
                ));
            }
            Ok(hollow(dt, shape.clone()))
        }
        CExpr::Permute(x, order) => {
            let (dt, shape) = need_tile(ev(x)?)?;
            if order.len() != shape.len() {
                return Err(Fault::error(
                    Code::SimError,
                    "permute order does not match the rank",
                ));
            }
            let mut out = Vec::with_capacity(shape.len());
            for &o in order {
                out.push(
                    *shape
                        .get(o as usize)
                        .ok_or_else(|| Fault::error(Code::SimError, "permute axis out of range"))?,
                );
            }
            Ok(hollow(dt, out))
        }
        CExpr::Split(x) => {
            let (dt, mut shape) = need_tile(ev(x)?)?;
            if shape.last() != Some(&2) {
                return Err(Fault::error(Code::SimError, "split needs a last dimension of 2"));
            }
            shape.pop();
            let h = hollow(dt, shape);
            Ok(Value::Tuple(Arc::from(vec![h.clone(), h])))
        }
        CExpr::Join(a, b) => {
            let (dt, mut shape) = need_tile(ev(a)?)?;
            let (_, sb) = need_tile(ev(b)?)?;
            if sb != shape {
                return Err(Fault::error(
                    Code::SimError,
                    "join needs two tiles of the same shape",
                ));
            }
            shape.push(2);
            Ok(hollow(dt, shape))
        }
        CExpr::Scan(_, x, _, _) => {
            let (dt, shape) = need_tile(ev(x)?)?;
            Ok(hollow(dt, shape))
        }
        CExpr::Reduce(op, x, axis) => {
            let (dt, mut shape) = need_tile(ev(x)?)?;
            if *axis as usize >= shape.len() {
                return Err(Fault::error(Code::SimError, "reduction axis out of range"));
            }
            shape.remove(*axis as usize);
            if shape.is_empty() {
                return Err(unsupported("a reduction to a scalar"));
            }
            Ok(hollow(if op.is_arg() { DType::I32 } else { dt }, shape))
        }
        CExpr::Index(b, items) => {
            let base = ev(b)?;
            match &base {
                Value::Tile(t) => {
                    let mut shape = Vec::new();
                    let mut src = t.shape.iter();
                    for it in items {
                        match it {
                            IItem::NewAxis => shape.push(1),
                            IItem::Slice(None, None) => {
                                shape.push(*src.next().ok_or_else(|| {
                                    Fault::error(Code::SimError, "too many `:` for this tile")
                                })?)
                            }
                            _ => return Err(unsupported("an element of a register tile")),
                        }
                    }
                    shape.extend(src);
                    Ok(hollow(t.dtype, shape))
                }
                Value::Tuple(_) => Err(unsupported("indexing a tuple of tiles")),
                _ => Err(unsupported("an index computed from a tile")),
            }
        }
        CExpr::InlineAsm(p, args) => {
            let mut shape = None;
            for a in args {
                if let Value::Tile(t) = ev(a)? {
                    shape.get_or_insert(t.shape.clone());
                }
            }
            let Some(shape) = shape else {
                return eval::eval(e, frame, cx);
            };
            let rs: Vec<Value> = p.results.iter().map(|d| hollow(*d, shape.clone())).collect();
            Ok(if rs.len() == 1 {
                rs.into_iter().next().unwrap_or_default()
            } else {
                Value::Tuple(Arc::from(rs))
            })
        }
        CExpr::ShapeOf(x, i) => {
            let (_, shape) = need_tile(ev(x)?)?;
            shape
                .get(*i as usize)
                .map(|&v| Value::Int(v as i64))
                .ok_or_else(|| Fault::error(Code::SimError, format!("`.shape[{i}]` out of range")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn cx() -> EvalCtx {
        EvalCtx {
            pid: [0; 3],
            grid: [1; 3],
        }
    }

    fn shape(v: &Value) -> (DType, Vec<u32>) {
        match v {
            Value::Tile(t) => {
                assert!(t.bits.is_empty(), "hollow tiles carry no elements");
                (t.dtype, t.shape.clone())
            }
            other => panic!("expected a tile, got {}", other.kind()),
        }
    }

    #[test]
    fn scalars_are_exact_tiles_are_shapes() {
        let frame = vec![Value::Int(5), hollow(DType::F32, vec![128, 256])];
        let s = |i| Box::new(CExpr::Slot(i));
        // 5 * 3 + 1 evaluates exactly.
        let e = CExpr::Binary(
            BinOp::Add,
            Box::new(CExpr::Binary(
                BinOp::Mul,
                s(0),
                Box::new(CExpr::Const(Value::Int(3))),
            )),
            Box::new(CExpr::Const(Value::Int(1))),
        );
        assert!(matches!(eval(&e, &frame, &cx()), Ok(Value::Int(16))));
        // acc + 1.0 on a 128x256 tile is a 128x256 f32 shape.
        let e = CExpr::Binary(BinOp::Add, s(1), Box::new(CExpr::Const(Value::F32(1.0))));
        assert_eq!(
            shape(&eval(&e, &frame, &cx()).expect("add")),
            (DType::F32, vec![128, 256])
        );
        // The seed's split: reshape [128, 2, 128], permute [0, 2, 1], split -> two [128, 128].
        let e = CExpr::Split(Box::new(CExpr::Permute(
            Box::new(CExpr::Reshape(s(1), vec![128, 2, 128])),
            vec![0, 2, 1],
        )));
        match eval(&e, &frame, &cx()).expect("split") {
            Value::Tuple(parts) => {
                assert_eq!(parts.len(), 2);
                assert_eq!(shape(&parts[0]), (DType::F32, vec![128, 128]));
            }
            other => panic!("expected a tuple, got {}", other.kind()),
        }
        // cast to f16 keeps the shape; a comparison gives i1.
        let e = CExpr::Cast(s(1), DType::F16);
        assert_eq!(
            shape(&eval(&e, &frame, &cx()).expect("cast")),
            (DType::F16, vec![128, 256])
        );
        let e = CExpr::Binary(BinOp::Lt, s(1), Box::new(CExpr::Const(Value::F32(0.0))));
        assert_eq!(shape(&eval(&e, &frame, &cx()).expect("lt")).0, DType::I1);
        // A sum to a scalar cannot be known.
        let e = CExpr::Reduce(
            bwsim_isa::builtins::ReduceOp::Sum,
            Box::new(CExpr::Arange { start: 0, end: 8 }),
            0,
        );
        assert!(eval(&e, &frame, &cx()).is_err());
    }

    #[test]
    fn quick_agrees_with_eval() {
        let frame = vec![
            Value::Int(7),
            Value::Mbar {
                addr: 64,
                count: Some(4),
            },
            Value::Bool(true),
        ];
        let s = |i| Box::new(CExpr::Slot(i));
        let c = |v| Box::new(CExpr::Const(Value::Int(v)));
        let exprs = [
            CExpr::Binary(BinOp::Rem, s(0), c(4)),
            CExpr::Binary(
                BinOp::BitAnd,
                Box::new(CExpr::Binary(BinOp::Div, s(0), c(2))),
                c(1),
            ),
            CExpr::Binary(BinOp::Eq, s(0), c(7)),
            CExpr::Binary(BinOp::Sub, c(-3), s(0)),
            CExpr::Index(s(1), vec![IItem::Expr(CExpr::Binary(BinOp::Rem, s(0), c(4)))]),
            CExpr::ProgramId(0),
        ];
        for e in &exprs {
            let q = quick(e, &frame, &cx()).expect("quick handles it").value();
            let v = eval::eval(e, &frame, &cx()).expect("eval handles it");
            assert_eq!(format!("{q:?}"), format!("{v:?}"), "{e:?}");
        }
        // What quick leaves to eval: division by zero (eval reports it), an index out of
        // range, a boolean operand.
        for e in [
            CExpr::Binary(BinOp::Div, s(0), c(0)),
            CExpr::Index(s(1), vec![IItem::Expr(CExpr::Const(Value::Int(4)))]),
            CExpr::Binary(BinOp::And, s(2), s(2)),
        ] {
            assert!(quick(&e, &frame, &cx()).is_none(), "{e:?}");
        }
        assert!(eval::eval(&CExpr::Binary(BinOp::Div, s(0), c(0)), &frame, &cx()).is_err());
    }

    #[test]
    fn op_counts() {
        let s = |i| Box::new(CExpr::Slot(i));
        // (a + b) * c: two ALU ops; a reshape adds none.
        let e = CExpr::Reshape(
            Box::new(CExpr::Binary(
                BinOp::Mul,
                Box::new(CExpr::Binary(BinOp::Add, s(0), s(1))),
                s(2),
            )),
            vec![4],
        );
        assert_eq!(alu_ops(&e), 2);
        // cdiv(x, 64) + 1: cdiv counts 2, the add 1.
        let e = CExpr::Binary(
            BinOp::Add,
            Box::new(CExpr::Call(
                Builtin::Cdiv,
                vec![CExpr::Slot(0), CExpr::Const(Value::Int(64))],
            )),
            Box::new(CExpr::Const(Value::Int(1))),
        );
        assert_eq!(scalar_ops(&e), 3);
    }
}
