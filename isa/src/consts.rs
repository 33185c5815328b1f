//! Compile-time constants: binding `const` declarations (with `--const` overrides) and
//! evaluating constant expressions (shapes, block sizes, static loop bounds, static `if`).
//!
//! All arithmetic is checked: an overflow is a diagnostic, never a wrap or a panic.

use crate::diag::{Code, Diagnostic};
use crate::ir::{Arg, BinOp, ConstKind, Expr, ExprKind, Kernel, UnOp};
use crate::types::{DType, Target};
use std::collections::HashMap;
use std::fmt;

/// The functions a constant expression may call: a call of one of these on constant arguments
/// is constant.
pub const CONST_CALLS: &[&str] = &["min", "max", "cdiv", "select", "abs", "bitwidth", "log2"];

/// Whether the call `f(args)` is constant, given which argument expressions are: `f` is one of
/// [`CONST_CALLS`] and every argument is positional and constant.
pub fn is_const_call(f: &str, args: &[Arg], arg_is_const: impl Fn(&Expr) -> bool) -> bool {
    CONST_CALLS.contains(&f) && args.iter().all(|a| a.key.is_none() && arg_is_const(&a.value))
}

/// The value of a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConstValue {
    Int(i64),
    Bool(bool),
    DType(DType),
}

impl fmt::Display for ConstValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstValue::Int(v) => write!(f, "{v}"),
            ConstValue::Bool(b) => write!(f, "{b}"),
            ConstValue::DType(d) => write!(f, "{d}"),
        }
    }
}

/// Constants in scope: the kernel's `const`s, the built-in `SM`, and static loop variables.
#[derive(Clone, Debug)]
pub struct ConstEnv {
    values: HashMap<String, ConstValue>,
    pub target: Target,
}

/// A `--const NAME=VALUE` override as given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    pub name: String,
    pub value: String,
}

/// `--const` text that is not `NAME=VALUE`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected NAME=VALUE, found `{0}`")]
pub struct BadOverride(pub String);

impl Override {
    /// Parse `NAME=VALUE`.
    pub fn parse(s: &str) -> Result<Override, BadOverride> {
        match s.split_once('=') {
            Some((n, v)) if !n.trim().is_empty() && !v.trim().is_empty() => Ok(Override {
                name: n.trim().to_string(),
                value: v.trim().to_string(),
            }),
            _ => Err(BadOverride(s.to_string())),
        }
    }
}

/// Why a binary operator cannot be applied to two constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConstOpError {
    #[error("integer overflow in constant expression")]
    Overflow,
    #[error("division by zero")]
    DivisionByZero,
    #[error("remainder by zero")]
    RemainderByZero,
    /// `what`: `booleans`, `element types`, `these constants`.
    #[error("`{}` does not apply to {what}", .op.symbol())]
    NotApplicable { op: BinOp, what: &'static str },
}

fn err(e: &Expr, msg: impl Into<String>, label: impl Into<String>) -> Diagnostic {
    Diagnostic::error(Code::ConstEval, msg, e.span, label)
}

impl ConstEnv {
    /// An environment with only the built-ins.
    pub fn empty(target: Target) -> ConstEnv {
        let mut values = HashMap::new();
        values.insert("SM".to_string(), ConstValue::Int(target.sm()));
        ConstEnv { values, target }
    }

    /// Bind the kernel's constants in order, applying overrides. Unknown override names and
    /// values of the wrong kind are errors.
    pub fn new(kernel: &Kernel, target: Target, overrides: &[Override]) -> Result<ConstEnv, Vec<Diagnostic>> {
        let mut env = ConstEnv::empty(target);
        let mut diags = Vec::new();
        for o in overrides {
            if !kernel.consts.iter().any(|c| c.name.name == o.name) {
                let names: Vec<&str> = kernel.consts.iter().map(|c| c.name.name.as_str()).collect();
                diags.push(
                    Diagnostic::error(
                        Code::UnknownConst,
                        format!(
                            "`--const {}` names no constant of kernel `{}`",
                            o.name, kernel.name.name
                        ),
                        kernel.name.span,
                        "this kernel",
                    )
                    .with_help(if names.is_empty() {
                        "this kernel declares no constants".to_string()
                    } else {
                        format!("its constants are: {}", names.join(", "))
                    }),
                );
            }
        }
        for c in &kernel.consts {
            let value = if let Some(o) = overrides.iter().rev().find(|o| o.name == c.name.name) {
                match parse_override(c.kind, &o.value) {
                    Some(v) => Ok(v),
                    None => Err(Diagnostic::error(
                        Code::BadConst,
                        format!(
                            "`--const {}={}` is not a valid {}",
                            o.name,
                            o.value,
                            c.kind.name()
                        ),
                        c.span,
                        format!("`{}` is declared `{}` here", c.name.name, c.kind.name()),
                    )),
                }
            } else {
                env.eval(&c.value)
            };
            match value {
                Ok(v) => {
                    let ok = matches!(
                        (c.kind, v),
                        (ConstKind::Int, ConstValue::Int(_))
                            | (ConstKind::Bool, ConstValue::Bool(_))
                            | (ConstKind::DType, ConstValue::DType(_))
                    );
                    if !ok {
                        diags.push(Diagnostic::error(
                            Code::EType,
                            format!(
                                "constant `{}` is declared `{}` but its value is `{v}`",
                                c.name.name,
                                c.kind.name()
                            ),
                            c.value.span,
                            "value of the wrong kind",
                        ));
                    }
                    env.values.insert(c.name.name.clone(), v);
                }
                Err(d) => diags.push(d),
            }
        }
        if diags.is_empty() {
            Ok(env)
        } else {
            Err(diags)
        }
    }

    /// Bind (or rebind) a name, e.g. a `static_for` variable.
    pub fn bind(&mut self, name: &str, v: ConstValue) {
        self.values.insert(name.to_string(), v);
    }
    pub fn unbind(&mut self, name: &str) {
        self.values.remove(name);
    }
    pub fn get(&self, name: &str) -> Option<ConstValue> {
        self.values.get(name).copied()
    }
    /// Whether every name in `e` is a constant (so it can be evaluated now).
    pub fn is_const(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Bool(_) | ExprKind::Float(_) => true,
            ExprKind::Name(n) => self.values.contains_key(n) || DType::from_name(n).is_some(),
            ExprKind::Unary(_, a) => self.is_const(a),
            ExprKind::Binary(_, a, b) => self.is_const(a) && self.is_const(b),
            ExprKind::Call(f, args) => is_const_call(f, args, |a| self.is_const(a)),
            _ => false,
        }
    }

    /// Evaluate a constant expression.
    pub fn eval(&self, e: &Expr) -> Result<ConstValue, Diagnostic> {
        use ConstValue::*;
        match &e.kind {
            ExprKind::Int(v) => Ok(Int(*v)),
            ExprKind::Bool(b) => Ok(Bool(*b)),
            ExprKind::Name(n) => {
                if let Some(v) = self.values.get(n) {
                    Ok(*v)
                } else if let Some(d) = crate::types::DType::from_name(n) {
                    Ok(DType(d))
                } else {
                    Err(err(
                        e,
                        format!("`{n}` is not a compile-time constant"),
                        "not a constant",
                    )
                    .with_help("only `const` names, `SM`, static_for variables and literals can appear here"))
                }
            }
            ExprKind::Unary(op, a) => match (op, self.eval(a)?) {
                (UnOp::Neg, Int(v)) => v.checked_neg().map(Int).ok_or_else(|| overflow(e)),
                (UnOp::Not, Bool(b)) => Ok(Bool(!b)),
                (UnOp::Not, Int(v)) => Ok(Int(!v)),
                _ => Err(err(e, "operator does not apply to this constant", "bad operand")),
            },
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                binop(*op, x, y).map_err(|m| err(e, m.to_string(), "in this constant expression"))
            }
            ExprKind::Call(f, args) => {
                let vals: Result<Vec<ConstValue>, Diagnostic> =
                    args.iter().map(|a| self.eval(&a.value)).collect();
                let vals = vals?;
                let ints = || -> Option<Vec<i64>> {
                    vals.iter()
                        .map(|v| if let Int(i) = v { Some(*i) } else { None })
                        .collect()
                };
                match (f.as_str(), vals.as_slice()) {
                    ("select", [Bool(c), x, y]) => Ok(if *c { *x } else { *y }),
                    ("bitwidth", [DType(d)]) => Ok(Int(d.bits() as i64)),
                    _ => {
                        let Some(iv) = ints() else {
                            return Err(err(e, format!("`{f}` needs integer constants"), "here"));
                        };
                        match (f.as_str(), iv.as_slice()) {
                            ("min", [x, y]) => Ok(Int(*x.min(y))),
                            ("max", [x, y]) => Ok(Int(*x.max(y))),
                            ("abs", [x]) => x.checked_abs().map(Int).ok_or_else(|| overflow(e)),
                            ("cdiv", [_, 0]) => Err(err(e, "division by zero in `cdiv`", "here")),
                            // (x + y - 1) / y, computed wide: only a quotient outside i64 overflows.
                            ("cdiv", [x, y]) => i64::try_from((*x as i128 + *y as i128 - 1) / *y as i128)
                                .map(Int)
                                .map_err(|_| overflow(e)),
                            ("log2", [x]) if *x > 0 => Ok(Int(63 - x.leading_zeros() as i64)),
                            _ => Err(err(
                                e,
                                format!("`{f}` is not a constant function with these arguments"),
                                "here",
                            )),
                        }
                    }
                }
            }
            _ => Err(err(e, "expected a compile-time constant", "not a constant")),
        }
    }

    /// Evaluate to an integer.
    pub fn int(&self, e: &Expr) -> Result<i64, Diagnostic> {
        match self.eval(e)? {
            ConstValue::Int(v) => Ok(v),
            other => Err(err(
                e,
                format!("expected an integer constant, found `{other}`"),
                "not an integer",
            )),
        }
    }
    /// Evaluate to a non-negative integer that fits in u32.
    pub fn dim(&self, e: &Expr) -> Result<u32, Diagnostic> {
        let v = self.int(e)?;
        u32::try_from(v).map_err(|_| {
            err(
                e,
                format!("expected a size in 0..2^32, found {v}"),
                "out of range",
            )
        })
    }
    /// Evaluate to a boolean.
    pub fn bool(&self, e: &Expr) -> Result<bool, Diagnostic> {
        match self.eval(e)? {
            ConstValue::Bool(b) => Ok(b),
            ConstValue::Int(v) => Ok(v != 0),
            other => Err(err(
                e,
                format!("expected a boolean constant, found `{other}`"),
                "not a boolean",
            )),
        }
    }
    /// Evaluate to an element type.
    pub fn dtype(&self, e: &Expr) -> Result<DType, Diagnostic> {
        match self.eval(e)? {
            ConstValue::DType(d) => Ok(d),
            other => Err(err(
                e,
                format!("expected an element type, found `{other}`"),
                "not a dtype",
            )),
        }
    }
}

fn overflow(e: &Expr) -> Diagnostic {
    err(e, "integer overflow in constant expression", "overflows i64")
}

fn parse_override(kind: ConstKind, s: &str) -> Option<ConstValue> {
    match kind {
        ConstKind::Int => {
            let s2 = s.replace('_', "");
            let v = if let Some(h) = s2.strip_prefix("0x") {
                i64::from_str_radix(h, 16).ok()
            } else {
                s2.parse().ok()
            };
            v.map(ConstValue::Int)
        }
        ConstKind::Bool => match s {
            "true" | "1" => Some(ConstValue::Bool(true)),
            "false" | "0" => Some(ConstValue::Bool(false)),
            _ => None,
        },
        ConstKind::DType => DType::from_name(s).map(ConstValue::DType),
    }
}

/// Apply a binary operator to two constants (integer division truncates toward zero).
pub fn binop(op: BinOp, x: ConstValue, y: ConstValue) -> Result<ConstValue, ConstOpError> {
    use ConstValue::*;
    let not_for = |what| ConstOpError::NotApplicable { op, what };
    match (x, y) {
        (Int(a), Int(b)) => {
            let ov = || ConstOpError::Overflow;
            Ok(match op {
                BinOp::Add => Int(a.checked_add(b).ok_or_else(ov)?),
                BinOp::Sub => Int(a.checked_sub(b).ok_or_else(ov)?),
                BinOp::Mul => Int(a.checked_mul(b).ok_or_else(ov)?),
                BinOp::Div if b == 0 => return Err(ConstOpError::DivisionByZero),
                BinOp::Rem if b == 0 => return Err(ConstOpError::RemainderByZero),
                BinOp::Div => Int(a.checked_div(b).ok_or_else(ov)?),
                BinOp::Rem => Int(a.checked_rem(b).ok_or_else(ov)?),
                BinOp::BitAnd => Int(a & b),
                BinOp::BitOr => Int(a | b),
                BinOp::BitXor => Int(a ^ b),
                BinOp::Shl => Int(u32::try_from(b)
                    .ok()
                    .and_then(|s| a.checked_shl(s))
                    .ok_or_else(ov)?),
                BinOp::Shr => Int(u32::try_from(b)
                    .ok()
                    .and_then(|s| a.checked_shr(s))
                    .ok_or_else(ov)?),
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                    Bool(op.compare(a, b) == Some(true))
                }
                BinOp::And => Bool(a != 0 && b != 0),
                BinOp::Or => Bool(a != 0 || b != 0),
            })
        }
        (Bool(a), Bool(b)) => Ok(Bool(match op {
            BinOp::And | BinOp::BitAnd => a && b,
            BinOp::Or | BinOp::BitOr => a || b,
            BinOp::BitXor | BinOp::Ne => a != b,
            BinOp::Eq => a == b,
            _ => return Err(not_for("booleans")),
        })),
        (Bool(a), Int(_)) => binop(op, Int(a as i64), y),
        (Int(_), Bool(b)) => binop(op, x, Int(b as i64)),
        (DType(a), DType(b)) => match op {
            BinOp::Eq => Ok(Bool(a == b)),
            BinOp::Ne => Ok(Bool(a != b)),
            _ => Err(not_for("element types")),
        },
        _ => Err(not_for("these constants")),
    }
}
