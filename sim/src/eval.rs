//! Expression evaluation: scalars, elementwise tile math with numpy broadcasting, casts,
//! shape manipulation (expand_dims, broadcast, reshape, permute, split, join), reductions and
//! views (`bufs[i]`, `tm[0:128, 256:384]`, `bars[i]`).
//!
//! Numerics: float arithmetic is computed exactly (or in f64) and rounded once to the result
//! type with round-to-nearest-even, which is bit-exact with hardware `add/sub/mul/div.rn` for
//! f32, f16 and bf16 (f64 carries more than 2p+2 bits). `fma` on f32 uses a fused f32 FMA.
//! Integer arithmetic wraps at the element width. Casts go through `bwsim_isa::numeric`.
//!
//! This module knows values and the lowered expression tree; it never touches memories.

use crate::lower::{Builtin, CExpr, IItem};
use crate::trap::{Fault, OpResult};
use crate::value::*;
use bwsim_isa::builtins::ReduceOp;
use bwsim_isa::ir::{BinOp, UnOp};
use bwsim_isa::numeric;
use bwsim_isa::types::DType;
use bwsim_isa::Code;
use std::sync::Arc;

/// What an expression may read besides the frame.
#[derive(Clone, Copy, Debug)]
pub struct EvalCtx {
    pub pid: [u32; 3],
    pub grid: [u32; 3],
}

fn err(msg: impl Into<String>) -> Fault {
    Fault::error(Code::SimError, msg)
}

/// Evaluate an expression in a frame.
pub fn eval(e: &CExpr, frame: &[Value], cx: &EvalCtx) -> OpResult<Value> {
    match e {
        CExpr::Const(v) => Ok(v.clone()),
        CExpr::Slot(s) => match frame.get(*s as usize) {
            Some(Value::Unset) | None => Err(err("use of a value that was never set")),
            Some(v) => Ok(v.clone()),
        },
        CExpr::ProgramId(a) => Ok(Value::Int(cx.pid[*a as usize % 3] as i64)),
        CExpr::NumPrograms(a) => Ok(Value::Int(cx.grid[*a as usize % 3] as i64)),
        CExpr::Unary(op, a) => unary(*op, &eval(a, frame, cx)?),
        CExpr::Binary(op, a, b) => {
            // Short-circuit scalar logic.
            if matches!(op, BinOp::And | BinOp::Or) {
                let x = eval(a, frame, cx)?;
                if let Some(xb) = scalar_bool(&x) {
                    if (*op == BinOp::And && !xb) || (*op == BinOp::Or && xb) {
                        return Ok(Value::Bool(xb));
                    }
                    let y = eval(b, frame, cx)?;
                    if let Some(yb) = scalar_bool(&y) {
                        return Ok(Value::Bool(yb));
                    }
                    return binary(*op, &x, &y);
                }
                let y = eval(b, frame, cx)?;
                return binary(*op, &x, &y);
            }
            binary(*op, &eval(a, frame, cx)?, &eval(b, frame, cx)?)
        }
        CExpr::Call(f, args) => {
            let mut vals = Vec::with_capacity(args.len());
            for a in args {
                vals.push(eval(a, frame, cx)?);
            }
            builtin(*f, &vals)
        }
        CExpr::Arange { start, end } => {
            let bits = (*start..*end)
                .map(|v| i64_to_bits(DType::I32, v))
                .collect::<Vec<_>>();
            Ok(tile(DType::I32, vec![bits.len() as u32], bits))
        }
        CExpr::Full { shape, value, dtype } => {
            let v = eval(value, frame, cx)?;
            let b = scalar_bits(*dtype, &v)?;
            let n: u64 = shape.iter().map(|&x| x as u64).product();
            Ok(tile(*dtype, shape.clone(), vec![b; n as usize]))
        }
        CExpr::Cast(x, dt) => cast(&eval(x, frame, cx)?, *dt),
        CExpr::ExpandDims(x, axis) => {
            let t = as_tile(&eval(x, frame, cx)?)?;
            let mut shape = t.shape.clone();
            if *axis as usize > shape.len() {
                return Err(err("expand_dims axis out of range"));
            }
            shape.insert(*axis as usize, 1);
            Ok(tile(t.dtype, shape, t.bits.clone()))
        }
        CExpr::Broadcast(x, shape) => {
            let v = eval(x, frame, cx)?;
            match &v {
                Value::Tile(t) => Ok(Value::Tile(Arc::new(broadcast_to(t, shape)?))),
                other => {
                    let dt = match other {
                        Value::F32(_) => DType::F32,
                        Value::Bool(_) => DType::I1,
                        _ => DType::I32,
                    };
                    let b = scalar_bits(dt, other)?;
                    let n: u64 = shape.iter().map(|&x| x as u64).product();
                    Ok(tile(dt, shape.clone(), vec![b; n as usize]))
                }
            }
        }
        CExpr::Reshape(x, shape) => {
            let t = as_tile(&eval(x, frame, cx)?)?;
            let n: u64 = shape.iter().map(|&x| x as u64).product();
            if n != t.numel() as u64 {
                return Err(err(format!(
                    "reshape of {:?} to {shape:?} changes the element count",
                    t.shape
                )));
            }
            Ok(tile(t.dtype, shape.clone(), t.bits.clone()))
        }
        CExpr::Permute(x, order) => Ok(Value::Tile(Arc::new(permute(
            &*as_tile(&eval(x, frame, cx)?)?,
            order,
        )?))),
        CExpr::Split(x) => {
            let t = as_tile(&eval(x, frame, cx)?)?;
            if t.shape.last() != Some(&2) {
                return Err(err("split needs a last dimension of 2"));
            }
            let mut shape = t.shape.clone();
            shape.pop();
            let a: Vec<u64> = t.bits.iter().step_by(2).copied().collect();
            let b: Vec<u64> = t.bits.iter().skip(1).step_by(2).copied().collect();
            let ta = tile(t.dtype, shape.clone(), a);
            let tb = tile(t.dtype, shape, b);
            Ok(Value::Tuple(Arc::from(vec![ta, tb])))
        }
        CExpr::Join(a, b) => {
            let ta = as_tile(&eval(a, frame, cx)?)?;
            let tb = as_tile(&eval(b, frame, cx)?)?;
            if ta.shape != tb.shape || ta.dtype != tb.dtype {
                return Err(err("join needs two tiles of the same shape and type"));
            }
            let mut bits = Vec::with_capacity(ta.numel() * 2);
            for i in 0..ta.numel() {
                bits.push(ta.bits[i]);
                bits.push(tb.bits[i]);
            }
            let mut shape = ta.shape.clone();
            shape.push(2);
            Ok(tile(ta.dtype, shape, bits))
        }
        CExpr::Reduce(op, x, axis) => reduce(*op, &*as_tile(&eval(x, frame, cx)?)?, *axis as usize),
        CExpr::Scan(op, x, axis, rev) => scan(*op, &*as_tile(&eval(x, frame, cx)?)?, *axis as usize, *rev),
        CExpr::Index(base, items) => {
            let b = eval(base, frame, cx)?;
            index(&b, items, frame, cx)
        }
        CExpr::ShapeOf(x, i) => {
            let v = eval(x, frame, cx)?;
            let s = match &v {
                Value::Tile(t) => t.shape.get(*i as usize).copied(),
                Value::Smem(s) => s.shape.as_slice().get(*i as usize).copied(),
                Value::Tmem(t) => t.shape.as_slice().get(*i as usize).copied(),
                _ => None,
            };
            s.map(|x| Value::Int(x as i64))
                .ok_or_else(|| err(format!("`.shape[{i}]` of {}", v.kind())))
        }
        CExpr::InlineAsm(prog, args) => {
            let mut vals = Vec::with_capacity(args.len());
            for a in args {
                vals.push(eval(a, frame, cx)?);
            }
            inline_asm(prog, &vals)
        }
    }
}

/// An `inline_asm` snippet on every group of `pack` elements (row-major groups: the type
/// checker admits only snippets whose elements do not depend on each other, so the grouping
/// does not matter; a last partial group repeats its last element). Scalar arguments are
/// broadcast; all-scalar arguments give scalars.
pub fn inline_asm(prog: &bwsim_isa::inline_ptx::Program, vals: &[Value]) -> OpResult<Value> {
    let fail = |e: bwsim_isa::inline_ptx::RunError| {
        // A four-lane fp8 lane whose result is not stated is the same finding as `add4`'s.
        let code = match e {
            bwsim_isa::inline_ptx::RunError::Unspecified { .. } => Code::UnspecifiedResult,
            _ => Code::InlineAsm,
        };
        Fault::error(code, format!("inline PTX: {e}"))
    };
    let shape = vals.iter().find_map(|v| match v {
        Value::Tile(t) => Some(t.shape.clone()),
        _ => None,
    });
    let pack = prog.pack;
    let Some(shape) = shape else {
        let mut bits = Vec::with_capacity(vals.len());
        for (v, d) in vals.iter().zip(&prog.args) {
            bits.push(scalar_bits(*d, v)?);
        }
        let out = prog.run(&bits).map_err(fail)?;
        let one = |d: DType, b: u64| match d {
            DType::F32 => Value::F32(f32::from_bits(b as u32)),
            _ => Value::Int(bits_to_i64(d, b)),
        };
        let rs: Vec<Value> = prog.results.iter().zip(&out).map(|(d, b)| one(*d, *b)).collect();
        return Ok(if rs.len() == 1 {
            rs.into_iter().next().unwrap_or_default()
        } else {
            Value::Tuple(Arc::from(rs))
        });
    };
    let n: usize = shape.iter().map(|&x| x as usize).product();
    let mut srcs: Vec<Vec<u64>> = Vec::with_capacity(vals.len());
    for (v, d) in vals.iter().zip(&prog.args) {
        match v {
            Value::Tile(t) if t.numel() == n => srcs.push(t.bits.clone()),
            Value::Tile(t) => {
                return Err(err(format!(
                    "inline_asm arguments of shapes {:?} and {shape:?}",
                    t.shape
                )))
            }
            s => srcs.push(vec![scalar_bits(*d, s)?; n]),
        }
    }
    let mut outs: Vec<Vec<u64>> = vec![vec![0; n]; prog.results.len()];
    let mut buf = vec![0u64; vals.len() * pack];
    for g in (0..n).step_by(pack) {
        for (a, src) in srcs.iter().enumerate() {
            for e in 0..pack {
                buf[a * pack + e] = src[(g + e).min(n - 1)];
            }
        }
        let out = prog.run(&buf).map_err(fail)?;
        for (r, o) in outs.iter_mut().enumerate() {
            for e in 0..pack.min(n - g) {
                o[g + e] = out[r * pack + e];
            }
        }
    }
    let rs: Vec<Value> = prog
        .results
        .iter()
        .zip(outs)
        .map(|(d, b)| tile(*d, shape.clone(), b))
        .collect();
    Ok(if rs.len() == 1 {
        rs.into_iter().next().unwrap_or_default()
    } else {
        Value::Tuple(Arc::from(rs))
    })
}

fn tile(dtype: DType, shape: Vec<u32>, bits: Vec<u64>) -> Value {
    Value::Tile(Arc::new(Tile { dtype, shape, bits }))
}

/// The value of `clc.query`: whether the response cancelled a launch, then that launch's
/// first program id (x, y, z). The functional machine decodes the response from shared memory,
/// the timing engine reads its record of it; both return this tuple.
pub fn clc_query_value(canceled: bool, id: [u32; 3]) -> Value {
    Value::Tuple(Arc::from(vec![
        Value::Bool(canceled),
        Value::Int(id[0] as i64),
        Value::Int(id[1] as i64),
        Value::Int(id[2] as i64),
    ]))
}

/// The value as a tile (error otherwise).
pub fn as_tile(v: &Value) -> OpResult<Arc<Tile>> {
    match v {
        Value::Tile(t) => Ok(t.clone()),
        other => Err(err(format!("expected a tile, found {}", other.kind()))),
    }
}

fn scalar_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}

/// Bits of a scalar converted to `dtype`.
pub fn scalar_bits(dtype: DType, v: &Value) -> OpResult<u64> {
    Ok(match v {
        Value::Int(i) => {
            if dtype.is_float() {
                round_to(dtype, *i as f64)
            } else {
                i64_to_bits(dtype, *i)
            }
        }
        Value::Bool(b) => {
            if dtype.is_float() {
                round_to(dtype, *b as i64 as f64)
            } else {
                i64_to_bits(dtype, *b as i64)
            }
        }
        Value::F32(f) => round_to(dtype, *f as f64),
        other => return Err(err(format!("expected a scalar, found {}", other.kind()))),
    })
}

fn unary(op: UnOp, v: &Value) -> OpResult<Value> {
    match (op, v) {
        (UnOp::Neg, Value::Int(i)) => Ok(Value::Int(i.wrapping_neg())),
        (UnOp::Neg, Value::F32(f)) => Ok(Value::F32(-f)),
        (UnOp::Neg, Value::Bool(b)) => Ok(Value::Int(-(*b as i64))),
        (UnOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
        (UnOp::Not, Value::Int(i)) => Ok(Value::Int(!i)),
        (_, Value::Tile(t)) => {
            let bits = (0..t.numel())
                .map(|i| match op {
                    UnOp::Neg if t.dtype.is_float() => round_to(t.dtype, -t.f(i)),
                    UnOp::Neg => i64_to_bits(t.dtype, t.i(i).wrapping_neg()),
                    UnOp::Not if t.dtype == DType::I1 => (t.bits[i] & 1) ^ 1,
                    UnOp::Not => i64_to_bits(t.dtype, !t.i(i)),
                })
                .collect();
            Ok(tile(t.dtype, t.shape.clone(), bits))
        }
        (_, other) => Err(err(format!("operator does not apply to {}", other.kind()))),
    }
}

/// An operand of an elementwise operation.
enum Opnd<'a> {
    T(&'a Tile),
    S(&'a Value),
}

impl Opnd<'_> {
    fn is_float(&self) -> bool {
        match self {
            Opnd::T(t) => t.dtype.is_float(),
            Opnd::S(v) => matches!(v, Value::F32(_)),
        }
    }
    fn shape(&self) -> &[u32] {
        match self {
            Opnd::T(t) => &t.shape,
            Opnd::S(_) => &[],
        }
    }
    fn f(&self, i: usize) -> f64 {
        match self {
            Opnd::T(t) => t.f(i),
            Opnd::S(Value::F32(f)) => *f as f64,
            Opnd::S(v) => v.as_int().unwrap_or(0) as f64,
        }
    }
    fn i(&self, i: usize) -> i64 {
        match self {
            Opnd::T(t) => t.i(i),
            Opnd::S(v) => v.as_int().unwrap_or(0),
        }
    }
}

/// Numpy broadcast of shapes: the checker's rule, the one definition.
pub use bwsim_isa::typeck::broadcast_shapes;

/// For each output linear index, the linear index into an operand of `shape` broadcast to `out`.
pub struct BIndex {
    strides: Vec<u64>,
    out: Vec<u32>,
    identity: bool,
    scalar: bool,
}

impl BIndex {
    pub fn new(shape: &[u32], out: &[u32]) -> BIndex {
        let n = out.len();
        let own = strides(shape);
        let mut s = vec![0u64; n];
        for k in 0..shape.len() {
            let o = k + n - shape.len();
            if shape[k] != 1 {
                s[o] = own[k];
            }
        }
        let numel: u64 = shape.iter().map(|&x| x as u64).product();
        BIndex {
            strides: s,
            out: out.to_vec(),
            identity: shape == out,
            scalar: numel == 1,
        }
    }
    #[inline]
    pub fn at(&self, mut lin: u64) -> usize {
        if self.identity {
            return lin as usize;
        }
        if self.scalar {
            return 0;
        }
        let mut r = 0u64;
        for k in (0..self.out.len()).rev() {
            let d = self.out[k].max(1) as u64;
            r += (lin % d) * self.strides[k];
            lin /= d;
        }
        r as usize
    }
}

fn float_op(op: BinOp, x: f64, y: f64) -> OpResult<Result<f64, bool>> {
    Ok(match op {
        BinOp::Add => Ok(x + y),
        BinOp::Sub => Ok(x - y),
        BinOp::Mul => Ok(x * y),
        BinOp::Div => Ok(x / y),
        BinOp::Rem => Ok(x % y),
        _ => match truth(op, x, y, 0.0) {
            Some(t) => Err(t),
            None => return Err(err(format!("`{}` does not apply to floats", op.symbol()))),
        },
    })
}

/// A comparison or logical operator on two numbers (`zero` is false), `None` for the others.
#[inline]
fn truth<T: PartialOrd>(op: BinOp, x: T, y: T, zero: T) -> Option<bool> {
    match op {
        BinOp::And => Some(x != zero && y != zero),
        BinOp::Or => Some(x != zero || y != zero),
        _ => op.compare(x, y),
    }
}

/// A binary operator on two integers: `Ok(value)`, or `Err(truth)` for comparisons and logic.
pub fn int_op(op: BinOp, x: i64, y: i64) -> OpResult<Result<i64, bool>> {
    Ok(match op {
        BinOp::Add => Ok(x.wrapping_add(y)),
        BinOp::Sub => Ok(x.wrapping_sub(y)),
        BinOp::Mul => Ok(x.wrapping_mul(y)),
        BinOp::Div | BinOp::Rem if y == 0 => return Err(err("integer division by zero")),
        BinOp::Div => Ok(x.wrapping_div(y)),
        BinOp::Rem => Ok(x.wrapping_rem(y)),
        BinOp::BitAnd => Ok(x & y),
        BinOp::BitOr => Ok(x | y),
        BinOp::BitXor => Ok(x ^ y),
        BinOp::Shl => Ok(if (0..64).contains(&y) {
            x.wrapping_shl(y as u32)
        } else {
            0
        }),
        BinOp::Shr => Ok(if (0..64).contains(&y) {
            x >> y
        } else if x < 0 {
            -1
        } else {
            0
        }),
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::And | BinOp::Or => {
            Err(truth(op, x, y, 0).unwrap_or(false))
        }
    })
}

/// A binary operator on two values (scalars or tiles, with broadcasting).
pub fn binary(op: BinOp, a: &Value, b: &Value) -> OpResult<Value> {
    let cmp = op.is_comparison() || matches!(op, BinOp::And | BinOp::Or);
    match (a, b) {
        (Value::Tile(_), _) | (_, Value::Tile(_)) => {}
        (Value::F32(_), Value::Int(_) | Value::F32(_) | Value::Bool(_))
        | (Value::Int(_) | Value::Bool(_), Value::F32(_)) => {
            let x = a.as_int().map(|_| ()).and(match a {
                Value::F32(f) => Some(*f),
                v => v.as_int().map(|i| i as f32),
            });
            let y = match b {
                Value::F32(f) => Some(*f),
                v => v.as_int().map(|i| i as f32),
            };
            let (Some(x), Some(y)) = (x, y) else {
                return Err(err("bad scalar operands"));
            };
            // f32 arithmetic in f32 (f64 then one rounding is identical for + - * /).
            return Ok(match float_op(op, x as f64, y as f64)? {
                Ok(r) => Value::F32(r as f32),
                Err(c) => Value::Bool(c),
            });
        }
        (Value::Bool(x), Value::Bool(y))
            if !matches!(
                op,
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem | BinOp::Shl | BinOp::Shr
            ) =>
        {
            return Ok(Value::Bool(match op {
                BinOp::And | BinOp::BitAnd => *x && *y,
                BinOp::Or | BinOp::BitOr => *x || *y,
                BinOp::BitXor => x != y,
                // false < true
                _ => op.compare(x, y).ok_or_else(|| err("bad boolean operator"))?,
            }));
        }
        (Value::Int(_) | Value::Bool(_), Value::Int(_) | Value::Bool(_)) => {
            let (x, y) = (a.as_int().unwrap_or(0), b.as_int().unwrap_or(0));
            return Ok(match int_op(op, x, y)? {
                Ok(r) => Value::Int(r),
                Err(c) => Value::Bool(c),
            });
        }
        _ => {
            return Err(err(format!(
                "`{}` does not apply to {} and {}",
                op.symbol(),
                a.kind(),
                b.kind()
            )))
        }
    }
    if let (Value::Tile(ta), Value::Tile(tb)) = (a, b) {
        if ta.dtype == DType::F32
            && tb.dtype == DType::F32
            && ta.shape == tb.shape
            && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul)
        {
            return Ok(f32_tiles(op, ta, tb));
        }
    }
    let (x, y) = (opnd(a)?, opnd(b)?);
    let dtype = match (&x, &y) {
        (Opnd::T(t), _) => t.dtype,
        (_, Opnd::T(t)) => t.dtype,
        _ => DType::I32,
    };
    let out_dtype = if cmp { DType::I1 } else { dtype };
    elementwise2(&x, &y, out_dtype, |i, j| {
        if x.is_float() || y.is_float() {
            Ok(match float_op(op, x.f(i), y.f(j))? {
                Ok(r) => round_to(out_dtype, r),
                Err(c) => c as u64,
            })
        } else {
            Ok(match int_op(op, x.i(i), y.i(j))? {
                Ok(r) => i64_to_bits(out_dtype, r),
                Err(c) => c as u64,
            })
        }
    })
}

/// `+`, `-` or `*` of two f32 tiles of one shape, element by element in f32: the same bits as
/// the general path's f64 operation rounded once to f32 (for these operations f64 is wide
/// enough that the double rounding is exact), which a NaN result takes to keep its payload
/// rule in one place.
fn f32_tiles(op: BinOp, a: &Tile, b: &Tile) -> Value {
    let bits = a
        .bits
        .iter()
        .zip(&b.bits)
        .map(|(&x, &y)| {
            let (x, y) = (f32::from_bits(x as u32), f32::from_bits(y as u32));
            let r = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                _ => x * y,
            };
            if r.is_nan() {
                let (x, y) = (x as f64, y as f64);
                let r = match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    _ => x * y,
                };
                round_to(DType::F32, r)
            } else {
                r.to_bits() as u64
            }
        })
        .collect();
    tile(DType::F32, a.shape.clone(), bits)
}

fn opnd(v: &Value) -> OpResult<Opnd<'_>> {
    match v {
        Value::Tile(t) => Ok(Opnd::T(t)),
        Value::Int(_) | Value::F32(_) | Value::Bool(_) => Ok(Opnd::S(v)),
        other => Err(err(format!("{} in tile arithmetic", other.kind()))),
    }
}

fn elementwise2(
    x: &Opnd,
    y: &Opnd,
    dtype: DType,
    mut f: impl FnMut(usize, usize) -> OpResult<u64>,
) -> OpResult<Value> {
    let shape = broadcast_shapes(x.shape(), y.shape()).ok_or_else(|| err("tile shapes do not broadcast"))?;
    let (bx, by) = (BIndex::new(x.shape(), &shape), BIndex::new(y.shape(), &shape));
    let n: u64 = shape.iter().map(|&d| d as u64).product();
    let mut bits = Vec::with_capacity(n as usize);
    for lin in 0..n {
        bits.push(f(bx.at(lin), by.at(lin))?);
    }
    Ok(tile(dtype, shape, bits))
}

fn builtin(f: Builtin, v: &[Value]) -> OpResult<Value> {
    match f {
        Builtin::Min | Builtin::Max => {
            let lt = binary(BinOp::Lt, &v[0], &v[1])?;
            let pick_first = if f == Builtin::Min {
                lt
            } else {
                unary(UnOp::Not, &lt)?
            };
            select(&pick_first, &v[0], &v[1])
        }
        Builtin::Cdiv => {
            let one = Value::Int(1);
            let s = binary(BinOp::Sub, &binary(BinOp::Add, &v[0], &v[1])?, &one)?;
            binary(BinOp::Div, &s, &v[1])
        }
        Builtin::Select => select(&v[0], &v[1], &v[2]),
        Builtin::Abs => match &v[0] {
            Value::Int(i) => Ok(Value::Int(i.wrapping_abs())),
            Value::F32(x) => Ok(Value::F32(x.abs())),
            Value::Tile(t) => {
                let bits = (0..t.numel())
                    .map(|i| {
                        if t.dtype.is_float() {
                            round_to(t.dtype, t.f(i).abs())
                        } else {
                            i64_to_bits(t.dtype, t.i(i).wrapping_abs())
                        }
                    })
                    .collect();
                Ok(tile(t.dtype, t.shape.clone(), bits))
            }
            other => Err(err(format!("abs of {}", other.kind()))),
        },
        Builtin::Math(m) => match &v[0] {
            Value::F32(x) => Ok(Value::F32(m.eval(*x as f64) as f32)),
            Value::Tile(t) if t.dtype.is_float() => {
                let bits = (0..t.numel())
                    .map(|i| round_to(t.dtype, m.eval(t.f(i))))
                    .collect();
                Ok(tile(t.dtype, t.shape.clone(), bits))
            }
            other => Err(err(format!("`{}` of {}", m.name(), other.kind()))),
        },
        Builtin::Packed(op, dtype) => packed(op, dtype, v),
        Builtin::Fma => {
            if let (Value::F32(a), Value::F32(b), Value::F32(c)) = (&v[0], &v[1], &v[2]) {
                return Ok(Value::F32(a.mul_add(*b, *c)));
            }
            let (a, b, c) = (opnd(&v[0])?, opnd(&v[1])?, opnd(&v[2])?);
            let dtype = [&a, &b, &c]
                .iter()
                .find_map(|o| if let Opnd::T(t) = o { Some(t.dtype) } else { None })
                .unwrap_or(DType::F32);
            let ab =
                broadcast_shapes(a.shape(), b.shape()).ok_or_else(|| err("fma shapes do not broadcast"))?;
            let shape = broadcast_shapes(&ab, c.shape()).ok_or_else(|| err("fma shapes do not broadcast"))?;
            let (ia, ib, ic) = (
                BIndex::new(a.shape(), &shape),
                BIndex::new(b.shape(), &shape),
                BIndex::new(c.shape(), &shape),
            );
            let n: u64 = shape.iter().map(|&d| d as u64).product();
            let mut bits = Vec::with_capacity(n as usize);
            for lin in 0..n {
                let (x, y, z) = (a.f(ia.at(lin)), b.f(ib.at(lin)), c.f(ic.at(lin)));
                bits.push(if dtype == DType::F32 {
                    (x as f32).mul_add(y as f32, z as f32).to_bits() as u64
                } else if dtype.is_float() {
                    round_to(dtype, x.mul_add(y, z))
                } else {
                    i64_to_bits(
                        dtype,
                        a.i(ia.at(lin))
                            .wrapping_mul(b.i(ib.at(lin)))
                            .wrapping_add(c.i(ic.at(lin))),
                    )
                });
            }
            Ok(tile(dtype, shape, bits))
        }
    }
}

/// `add4`, `sub4`, `mul4`, `fma4`: each element one lane of sm_100a's four-lane fp8
/// arithmetic ([`bwsim_isa::packed_arith::lane`]), the operands broadcast as `+`'s are; a lane
/// whose result no public source states stops the run with `unspecified-result`, naming the
/// element and its operands.
fn packed(op: bwsim_isa::packed_arith::PackedOp, dtype: DType, v: &[Value]) -> OpResult<Value> {
    let ts = v.iter().map(as_tile).collect::<OpResult<Vec<_>>>()?;
    let mut shape: Vec<u32> = Vec::new();
    for t in &ts {
        shape = broadcast_shapes(&shape, &t.shape)
            .ok_or_else(|| err(format!("`{}` operands do not broadcast", op.tile_name())))?;
    }
    let idx: Vec<BIndex> = ts.iter().map(|t| BIndex::new(&t.shape, &shape)).collect();
    let n: u64 = shape.iter().map(|&d| d as u64).product();
    let mut bits = Vec::with_capacity(n as usize);
    let mut lane = Vec::with_capacity(ts.len());
    for lin in 0..n {
        lane.clear();
        lane.extend(ts.iter().zip(&idx).map(|(t, ix)| t.f(ix.at(lin))));
        match bwsim_isa::packed_arith::lane(op, dtype, &lane) {
            Ok(b) => bits.push(b),
            Err(u) => {
                return Err(Fault::error(
                    Code::UnspecifiedResult,
                    format!(
                        "`{}` to {dtype}, element {}: {u} (PTX `{}.{}`, sm_100a)",
                        op.tile_name(),
                        element_index(&shape, lin),
                        op.ptx(),
                        bwsim_isa::packed_arith::ptx_type(dtype),
                    ),
                ))
            }
        }
    }
    Ok(tile(dtype, shape, bits))
}

/// The multi-index `[i, j, ...]` of row-major position `lin` in `shape`.
fn element_index(shape: &[u32], mut lin: u64) -> String {
    let mut ix = vec![0u64; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        ix[k] = lin % d.max(1) as u64;
        lin /= d.max(1) as u64;
    }
    format!("{ix:?}")
}

/// `select(c, a, b)` / `where(c, a, b)`.
pub fn select(c: &Value, a: &Value, b: &Value) -> OpResult<Value> {
    if let Some(cb) = c.as_bool() {
        if !matches!(c, Value::Tile(_)) {
            return Ok(if cb { a.clone() } else { b.clone() });
        }
    }
    let ct = as_tile(c)?;
    let (x, y) = (opnd(a)?, opnd(b)?);
    let dtype = match (&x, &y) {
        (Opnd::T(t), _) => t.dtype,
        (_, Opnd::T(t)) => t.dtype,
        (Opnd::S(Value::F32(_)), _) | (_, Opnd::S(Value::F32(_))) => DType::F32,
        _ => DType::I32,
    };
    let ab = broadcast_shapes(x.shape(), y.shape()).ok_or_else(|| err("where operands do not broadcast"))?;
    let shape = broadcast_shapes(&ct.shape, &ab).ok_or_else(|| err("where condition does not broadcast"))?;
    let (ic, ia, ib) = (
        BIndex::new(&ct.shape, &shape),
        BIndex::new(x.shape(), &shape),
        BIndex::new(y.shape(), &shape),
    );
    let n: u64 = shape.iter().map(|&d| d as u64).product();
    let pick = |o: &Opnd, i: usize| -> OpResult<u64> {
        match o {
            Opnd::T(t) if t.dtype == dtype => Ok(t.bits[i]),
            Opnd::T(t) => Ok(if dtype.is_float() {
                round_to(dtype, t.f(i))
            } else {
                i64_to_bits(dtype, t.i(i))
            }),
            Opnd::S(v) => scalar_bits(dtype, v),
        }
    };
    let mut bits = Vec::with_capacity(n as usize);
    for lin in 0..n {
        let take_a = ct.i(ic.at(lin)) != 0;
        bits.push(if take_a {
            pick(&x, ia.at(lin))?
        } else {
            pick(&y, ib.at(lin))?
        });
    }
    Ok(tile(dtype, shape, bits))
}

/// Convert one element's bits between types (RNE for floats, truncation to integers).
pub fn convert_bits(from: DType, to: DType, bits: u64) -> u64 {
    if from == to {
        return bits;
    }
    if to == DType::I1 {
        return if from.is_float() {
            (bits_to_f64(from, bits) != 0.0) as u64
        } else {
            (bits_to_i64(from, bits) != 0) as u64
        };
    }
    match (from.is_float(), to.is_float()) {
        (true, true) => numeric::encode(to, bits_to_f64(from, bits)),
        (true, false) => {
            let v = bits_to_f64(from, bits);
            i64_to_bits(to, if v.is_nan() { 0 } else { v.trunc() as i64 })
        }
        (false, true) => numeric::encode(to, bits_to_i64(from, bits) as f64),
        (false, false) => i64_to_bits(to, bits_to_i64(from, bits)),
    }
}

/// `cast(x, dtype)`.
pub fn cast(v: &Value, dt: DType) -> OpResult<Value> {
    match v {
        Value::Tile(t) => {
            let bits = t.bits.iter().map(|&b| convert_bits(t.dtype, dt, b)).collect();
            Ok(tile(dt, t.shape.clone(), bits))
        }
        Value::Int(_) | Value::Bool(_) | Value::F32(_) => Ok(match dt {
            DType::F32 => Value::F32(match v {
                Value::F32(f) => *f,
                o => o.as_int().unwrap_or(0) as f32,
            }),
            DType::I1 => Value::Bool(v.as_bool().unwrap_or(false)),
            d if d.is_int() => Value::Int(bits_to_i64(d, scalar_bits(d, v)?)),
            _ => return Err(err(format!("scalars cannot be {dt}"))),
        }),
        other => Err(err(format!("cannot cast {}", other.kind()))),
    }
}

/// Broadcast a tile to `shape`.
pub fn broadcast_to(t: &Tile, shape: &[u32]) -> OpResult<Tile> {
    if broadcast_shapes(&t.shape, shape).as_deref() != Some(shape) {
        return Err(err(format!("cannot broadcast {:?} to {shape:?}", t.shape)));
    }
    let bi = BIndex::new(&t.shape, shape);
    let n: u64 = shape.iter().map(|&d| d as u64).product();
    let bits = (0..n).map(|lin| t.bits[bi.at(lin)]).collect();
    Ok(Tile {
        dtype: t.dtype,
        shape: shape.to_vec(),
        bits,
    })
}

fn permute(t: &Tile, order: &[u32]) -> OpResult<Tile> {
    let r = t.shape.len();
    if order.len() != r || (0..r as u32).any(|i| !order.contains(&i)) {
        return Err(err("permute order must be a permutation of the dimensions"));
    }
    let out_shape: Vec<u32> = order.iter().map(|&i| t.shape[i as usize]).collect();
    let in_strides = strides(&t.shape);
    let mut idx = vec![0u32; r];
    let n = t.numel() as u64;
    let mut bits = Vec::with_capacity(n as usize);
    for lin in 0..n {
        unravel(lin, &out_shape, &mut idx);
        let mut src = 0u64;
        for k in 0..r {
            src += idx[k] as u64 * in_strides[order[k] as usize];
        }
        bits.push(t.bits[src as usize]);
    }
    Ok(Tile {
        dtype: t.dtype,
        shape: out_shape,
        bits,
    })
}

/// The inclusive scan of `op` along `axis`: element i is the fold of 0..=i (of i.. to the end
/// when `reverse`), each prefix computed exactly (in f64 for floats) and rounded once to the
/// element type.
fn scan(op: ReduceOp, t: &Tile, axis: usize, reverse: bool) -> OpResult<Value> {
    if axis >= t.shape.len() {
        return Err(err("scan axis out of range"));
    }
    let outer: usize = t.shape[..axis].iter().map(|&x| x as usize).product();
    let len = t.shape[axis] as usize;
    let inner: usize = t.shape[axis + 1..].iter().map(|&x| x as usize).product();
    let mut bits = vec![0u64; t.numel()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| {
                let k = if reverse { len - 1 - k } else { k };
                (o * len + k) * inner + i
            };
            if t.dtype.is_float() {
                let mut acc = 0f64;
                for k in 0..len {
                    let x = t.f(at(k));
                    acc = if k == 0 {
                        x
                    } else {
                        op.fold_float(acc, x)
                            .ok_or_else(|| err(format!("a {} scan", op.name())))?
                    };
                    bits[at(k)] = round_to(t.dtype, acc);
                }
            } else {
                let mut acc = 0i64;
                for k in 0..len {
                    let x = t.i(at(k));
                    acc = if k == 0 { x } else { op.fold_int(acc, x) };
                    bits[at(k)] = i64_to_bits(t.dtype, acc);
                }
            }
        }
    }
    Ok(tile(t.dtype, t.shape.clone(), bits))
}

/// `op` along `axis` of `t`. Float sums and products accumulate in f64 and round once to the
/// element type; max and min follow IEEE maxNum/minNum (a NaN loses to a number), as
/// `arith.maxnumf` does; argmax/argmin give the first position of the extreme value.
fn reduce(op: ReduceOp, t: &Tile, axis: usize) -> OpResult<Value> {
    if axis >= t.shape.len() {
        return Err(err(format!("{} axis out of range", op.name())));
    }
    let outer: usize = t.shape[..axis].iter().map(|&x| x as usize).product();
    let len = t.shape[axis] as usize;
    let inner: usize = t.shape[axis + 1..].iter().map(|&x| x as usize).product();
    if len == 0 {
        return Err(err(format!("{} of an empty axis", op.name())));
    }
    let mut out_shape = t.shape.clone();
    out_shape.remove(axis);
    let out_dtype = if op.is_arg() { DType::I32 } else { t.dtype };
    let float = t.dtype.is_float();
    let mut bits = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * len + k) * inner + i;
            let b = match op {
                ReduceOp::Argmax | ReduceOp::Argmin => {
                    let better = |a: f64, b: f64| {
                        if op == ReduceOp::Argmax {
                            a > b || (b.is_nan() && !a.is_nan())
                        } else {
                            a < b || (b.is_nan() && !a.is_nan())
                        }
                    };
                    let mut best = 0usize;
                    for k in 1..len {
                        let (x, y) = if float {
                            (t.f(at(k)), t.f(at(best)))
                        } else {
                            (t.i(at(k)) as f64, t.i(at(best)) as f64)
                        };
                        if better(x, y) {
                            best = k;
                        }
                    }
                    i64_to_bits(DType::I32, best as i64)
                }
                _ if float => {
                    let mut s = t.f(at(0));
                    for k in 1..len {
                        let x = t.f(at(k));
                        s = op
                            .fold_float(s, x)
                            .ok_or_else(|| err(format!("{} of a float tile", op.name())))?;
                    }
                    round_to(t.dtype, s)
                }
                _ => {
                    let mut s = t.i(at(0));
                    for k in 1..len {
                        let x = t.i(at(k));
                        s = op.fold_int(s, x);
                    }
                    i64_to_bits(t.dtype, s)
                }
            };
            bits.push(b);
        }
    }
    if out_shape.is_empty() {
        let b = bits.first().copied().unwrap_or(0);
        return Ok(if out_dtype.is_float() {
            Value::F32(bits_to_f64(out_dtype, b) as f32)
        } else {
            Value::Int(bits_to_i64(out_dtype, b))
        });
    }
    Ok(tile(out_dtype, out_shape, bits))
}

fn index(b: &Value, items: &[IItem], frame: &[Value], cx: &EvalCtx) -> OpResult<Value> {
    // A shared-memory or TMEM view indexed by `items`: the same view with its origin, dropped
    // dimensions and shape narrowed.
    macro_rules! indexed_view {
        ($variant:ident, $view:ident, $v:expr) => {{
            let (origin, dropped, shape) = view_items($v.origin, $v.dropped, $v.shape, items, frame, cx)?;
            Ok(Value::$variant($view {
                origin,
                dropped,
                shape,
                ..*$v
            }))
        }};
    }
    match b {
        Value::Mbar { addr, count: Some(n) } => {
            let [IItem::Expr(e)] = items else {
                return Err(err("index a barrier array with one integer"));
            };
            let i = eval(e, frame, cx)?
                .as_int()
                .ok_or_else(|| err("barrier index must be an integer"))?;
            if i < 0 || i >= *n as i64 {
                return Err(Fault::error(
                    Code::ViewBounds,
                    format!("barrier index {i} out of range 0..{n}"),
                ));
            }
            Ok(Value::Mbar {
                addr: addr + 8 * i as u32,
                count: None,
            })
        }
        Value::Smem(v) => indexed_view!(Smem, SmemView, v),
        Value::Tmem(v) => indexed_view!(Tmem, TmemView, v),
        Value::Tile(t) => slice_tile(t, items),
        other => Err(err(format!("{} cannot be indexed", other.kind()))),
    }
}

/// `x[...]` on a register tile: `None` adds an axis, `:` keeps one, `a:b` (constant) keeps a
/// range of one.
fn slice_tile(t: &Tile, items: &[IItem]) -> OpResult<Value> {
    // (source dim or None for a new axis, lo, hi) per output dim.
    let mut plan: Vec<(Option<usize>, u32, u32)> = Vec::new();
    let mut k = 0usize;
    for it in items {
        match it {
            IItem::NewAxis => plan.push((None, 0, 1)),
            IItem::Slice(lo, hi) => {
                let dim = *t.shape.get(k).ok_or_else(|| err("too many `:` for this tile"))?;
                let lo = lo.unwrap_or(0);
                let hi = hi.unwrap_or(dim as i64);
                if lo < 0 || hi > dim as i64 || lo >= hi {
                    return Err(err(format!("slice {lo}:{hi} out of range 0..{dim}")));
                }
                plan.push((Some(k), lo as u32, hi as u32));
                k += 1;
            }
            IItem::Expr(_) => {
                return Err(err(
                    "register tiles can only be indexed with `:`, `a:b` and `None`",
                ))
            }
        }
    }
    for (j, &d) in t.shape.iter().enumerate().skip(k) {
        plan.push((Some(j), 0, d));
    }
    let shape: Vec<u32> = plan.iter().map(|&(_, lo, hi)| hi - lo).collect();
    if plan
        .iter()
        .all(|&(src, lo, hi)| src.is_none() || (lo == 0 && hi == t.shape[src.unwrap_or(0)]))
    {
        return Ok(tile(t.dtype, shape, t.bits.clone()));
    }
    // Row-major strides of the source.
    let mut strides = vec![1u64; t.shape.len()];
    for j in (0..t.shape.len().saturating_sub(1)).rev() {
        strides[j] = strides[j + 1] * t.shape[j + 1] as u64;
    }
    let n: u64 = shape.iter().map(|&d| d as u64).product();
    let mut bits = Vec::with_capacity(n as usize);
    let mut idx = vec![0u32; shape.len()];
    for lin in 0..n {
        unravel(lin, &shape, &mut idx);
        let mut off = 0u64;
        for (o, &(src, lo, _)) in plan.iter().enumerate() {
            if let Some(j) = src {
                off += (lo + idx[o]) as u64 * strides[j];
            }
        }
        bits.push(t.bits[off as usize]);
    }
    Ok(tile(t.dtype, shape, bits))
}

fn view_items(
    mut origin: Dims,
    dropped: u8,
    vshape: Dims,
    items: &[IItem],
    frame: &[Value],
    cx: &EvalCtx,
) -> OpResult<(Dims, u8, Dims)> {
    let shape = vshape.as_slice();
    if items.len() > shape.len() {
        return Err(err(format!(
            "{} indices for a view of rank {}",
            items.len(),
            shape.len()
        )));
    }
    let mut new_shape: Vec<u32> = Vec::with_capacity(shape.len());
    let mut ndrop = 0u8;
    for (k, it) in items.iter().enumerate() {
        let dim = shape[k] as i64;
        let o = dropped as usize + k;
        match it {
            IItem::Expr(e) => {
                let i = eval(e, frame, cx)?
                    .as_int()
                    .ok_or_else(|| err("view index must be an integer"))?;
                if i < 0 || i >= dim {
                    return Err(Fault::error(
                        Code::ViewBounds,
                        format!("index {i} out of range 0..{dim}"),
                    ));
                }
                if let Some(x) = origin.as_mut_slice().get_mut(o) {
                    *x += i as u32;
                }
                ndrop += 1;
            }
            IItem::Slice(lo, hi) => {
                let lo = lo.unwrap_or(0);
                let hi = hi.unwrap_or(dim);
                if lo < 0 || hi > dim || lo >= hi {
                    return Err(Fault::error(
                        Code::ViewBounds,
                        format!("slice {lo}:{hi} out of range 0..{dim}"),
                    ));
                }
                if let Some(x) = origin.as_mut_slice().get_mut(o) {
                    *x += lo as u32;
                }
                new_shape.push((hi - lo) as u32);
            }
            IItem::NewAxis => return Err(err("`None` is for register tiles")),
        }
    }
    new_shape.extend_from_slice(&shape[items.len()..]);
    if new_shape.is_empty() {
        new_shape.push(1);
    }
    let shape = Dims::from_slice(&new_shape).ok_or_else(|| err("view rank too large"))?;
    Ok((origin, dropped + ndrop, shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any f32 bits, often a special one (NaNs with payloads, infinities, signed zeros,
    /// subnormals, the extremes of the normal range).
    fn f32_bits() -> impl proptest::strategy::Strategy<Value = u32> {
        use proptest::prelude::*;
        prop_oneof![
            3 => proptest::num::u32::ANY,
            1 => proptest::sample::select(vec![
                0x7fc0_0000u32, 0xffc0_0001, 0x7f80_0001, 0x7f80_0000, 0xff80_0000, 0, 0x8000_0000,
                1, 0x8000_0001, 0x007f_ffff, 0x0080_0000, 0x7f7f_ffff, 0xff7f_ffff, 0x3f80_0000,
            ]),
        ]
    }

    proptest::proptest! {
        /// The f32 tile fast path gives the general path's bits (the f64 operation rounded once
        /// to f32) for any operand bits: NaNs, infinities, subnormals and signed zeros included.
        #[test]
        fn f32_tile_arithmetic_matches_the_general_path(
            pairs in proptest::collection::vec((f32_bits(), f32_bits()), 1..64),
            which in 0usize..3,
        ) {
            let op = [BinOp::Add, BinOp::Sub, BinOp::Mul][which];
            let n = pairs.len() as u32;
            let a = Tile { dtype: DType::F32, shape: vec![n], bits: pairs.iter().map(|p| p.0 as u64).collect() };
            let b = Tile { dtype: DType::F32, shape: vec![n], bits: pairs.iter().map(|p| p.1 as u64).collect() };
            let Value::Tile(fast) = f32_tiles(op, &a, &b) else { panic!("a tile") };
            for (i, &(x, y)) in pairs.iter().enumerate() {
                let (x, y) = (f32::from_bits(x) as f64, f32::from_bits(y) as f64);
                let want = match float_op(op, x, y) {
                    Ok(Ok(r)) => round_to(DType::F32, r),
                    _ => panic!("arithmetic"),
                };
                proptest::prop_assert_eq!(fast.bits[i], want, "element {}", i);
            }
        }
    }

    fn ftile(shape: Vec<u32>, v: &[f32]) -> Value {
        tile(DType::F32, shape, v.iter().map(|x| x.to_bits() as u64).collect())
    }

    #[test]
    fn broadcasting_add() {
        let a = ftile(vec![2, 1], &[1.0, 2.0]);
        let b = ftile(vec![3], &[10.0, 20.0, 30.0]);
        let Value::Tile(t) = binary(BinOp::Add, &a, &b).expect("adds") else {
            panic!("tile")
        };
        assert_eq!(t.shape, vec![2, 3]);
        let got: Vec<f64> = (0..6).map(|i| t.f(i)).collect();
        assert_eq!(got, vec![11.0, 21.0, 31.0, 12.0, 22.0, 32.0]);
    }

    #[test]
    fn f32_add_is_bit_exact() {
        let x = 0.1f32;
        let y = 0.2f32;
        let Value::Tile(t) = binary(BinOp::Add, &ftile(vec![1], &[x]), &ftile(vec![1], &[y])).expect("adds")
        else {
            panic!()
        };
        assert_eq!(t.bits[0] as u32, (x + y).to_bits());
    }

    #[test]
    fn int_scalars_truncate_toward_zero() {
        let q = binary(BinOp::Div, &Value::Int(-7), &Value::Int(2)).expect("div");
        assert!(matches!(q, Value::Int(-3)));
        let r = binary(
            BinOp::BitAnd,
            &binary(BinOp::Sub, &Value::Int(0), &Value::Int(1)).expect("sub"),
            &Value::Int(1),
        )
        .expect("and");
        assert!(matches!(r, Value::Int(1)));
    }

    #[test]
    fn permute_split_join() {
        let t = tile(DType::I32, vec![2, 2], vec![0, 1, 2, 3]);
        let Value::Tile(p) = CExpr::Permute(Box::new(CExpr::Const(t.clone())), vec![1, 0])
            .pipe(|e| {
                eval(
                    &e,
                    &[],
                    &EvalCtx {
                        pid: [0; 3],
                        grid: [1; 3],
                    },
                )
            })
            .expect("permute")
        else {
            panic!()
        };
        assert_eq!(p.bits, vec![0, 2, 1, 3]);
        let s = eval(
            &CExpr::Split(Box::new(CExpr::Const(t))),
            &[],
            &EvalCtx {
                pid: [0; 3],
                grid: [1; 3],
            },
        )
        .expect("split");
        let Value::Tuple(parts) = s else { panic!() };
        let Value::Tile(a) = &parts[0] else { panic!() };
        assert_eq!(a.bits, vec![0, 2]);
    }

    trait Pipe: Sized {
        fn pipe<R>(self, f: impl FnOnce(Self) -> R) -> R {
            f(self)
        }
    }
    impl Pipe for CExpr {}

    #[test]
    fn cast_rounds_to_nearest_even() {
        let t = ftile(vec![1], &[1.0 + 2f32.powi(-11)]);
        let Value::Tile(h) = cast(&t, DType::F16).expect("cast") else {
            panic!()
        };
        assert_eq!(h.bits[0], 0x3c00);
        let Value::Tile(i) = cast(&ftile(vec![1], &[-2.7]), DType::I32).expect("cast") else {
            panic!()
        };
        assert_eq!(i.i(0), -2);
    }
}
