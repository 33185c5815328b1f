//! Combiner regions of `tt.reduce`, identified by what they compute rather than by how they
//! are written: the region is interpreted on sample operands and its results compared with
//! the folds bwsim has. Gluon has no `argmax`; kernels write it as a reduction of (value,
//! index) pairs whose combiner compares and selects, in many equivalent spellings, and a
//! reduction of several operands may fold each with its own operation. Both are recognised
//! here; anything else is left to the caller to refuse.

use super::*;
use bwsim_isa::builtins::ReduceOp;

/// What a reduction's combiner computes.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Combiner {
    /// Result `i` is `fold_i(lhs_i, rhs_i)` of operand `i` alone.
    Folds(Vec<ReduceOp>),
    /// Two operands (value, index): the largest (`max`) or smallest value and its index, ties
    /// resolved to the smaller index (`first`) or the larger.
    ArgExtreme { max: bool, first: bool },
}

/// A scalar inside the interpreted region.
#[derive(Clone, Copy, Debug, PartialEq)]
enum V {
    F(f64),
    I(i64),
    B(bool),
}

/// Identifies the combiner of a reduction of `floats.len()` operands (`true`: a float operand).
pub(super) fn identify(region: &Region, ret: &str, floats: &[bool]) -> Option<Combiner> {
    let n = floats.len();
    let args = block_args(region);
    if args.len() != 2 * n || n == 0 {
        return None;
    }
    let run = |lhs: &[V], rhs: &[V]| -> Option<Vec<V>> {
        let mut env: HashMap<String, V> = HashMap::new();
        for (i, a) in args.iter().enumerate() {
            env.insert(a.clone(), if i < n { lhs[i] } else { rhs[i - n] });
        }
        interpret(region, ret, &mut env)
    };
    let samples = samples(floats);
    // Independent folds: every result is one fold of its own operand's pair.
    let mut folds = Vec::with_capacity(n);
    for i in 0..n {
        // The element folds that apply to the operand's type (bitwise ones to integers only).
        let mut cands = ReduceOp::ALL
            .into_iter()
            .filter(|op| !(op.is_arg() || (floats[i] && op.is_bitwise())));
        let found = cands.find(|&op| {
            samples.iter().all(|(l, r)| {
                run(l, r).is_some_and(|out| out.len() == n && same(out[i], fold(op, l[i], r[i])))
            })
        });
        match found {
            Some(op) => folds.push(op),
            None => {
                folds.clear();
                break;
            }
        }
    }
    if folds.len() == n {
        return Some(Combiner::Folds(folds));
    }
    // (value, index) pairs.
    if n == 2 && !floats[1] {
        for max in [true, false] {
            for first in [true, false] {
                let ok = samples.iter().all(|(l, r)| {
                    run(l, r).is_some_and(|out| {
                        let want = arg_extreme(max, first, (l[0], l[1]), (r[0], r[1]));
                        out.len() == 2 && same(out[0], want.0) && same(out[1], want.1)
                    })
                });
                if ok {
                    return Some(Combiner::ArgExtreme { max, first });
                }
            }
        }
    }
    None
}

/// The names of a region's block arguments (`^bb0(%a: f32 loc(..), %b: f32 loc(..))`).
pub(super) fn block_args(region: &Region) -> Vec<String> {
    let mut v = Vec::new();
    let mut expect_name = true;
    for t in &region.label_args {
        match &t.tok {
            Tok::Value(s) if expect_name => {
                v.push(s.clone());
                expect_name = false;
            }
            Tok::Punct(",") => expect_name = true,
            _ => {}
        }
    }
    v
}

/// Sample operand pairs: values with ties, signs and zero; indices in both orders.
fn samples(floats: &[bool]) -> Vec<(Vec<V>, Vec<V>)> {
    let fvals = [-3.5, -1.0, 0.0, 0.5, 2.0, 7.25];
    let ivals = [-5i64, -1, 0, 1, 3, 12];
    let mut out = Vec::new();
    for (a, b) in (0..6).flat_map(|a| (0..6).map(move |b| (a, b))) {
        for swap in [false, true] {
            // Operand k's value: sample (a + 2k) % 6 on the left, (b + 3k) % 6 on the right
            // (swapped: the other way round).
            let side = |left: bool| -> Vec<V> {
                floats
                    .iter()
                    .enumerate()
                    .map(|(k, &f)| {
                        let j = if left != swap {
                            (a + 2 * k) % 6
                        } else {
                            (b + 3 * k) % 6
                        };
                        if f {
                            V::F(fvals[j])
                        } else {
                            V::I(ivals[j])
                        }
                    })
                    .collect()
            };
            out.push((side(true), side(false)));
        }
    }
    // Ties of the first operand with distinct second operands (argmax's index tie-break).
    if floats.len() == 2 {
        for (x, i, j) in [(2.0, 1i64, 4i64), (-1.0, 7, 3), (0.0, 0, 9)] {
            let v = |f: bool| if f { V::F(x) } else { V::I(x as i64) };
            out.push((vec![v(floats[0]), V::I(i)], vec![v(floats[0]), V::I(j)]));
        }
    }
    out
}

fn same(a: V, b: V) -> bool {
    match (a, b) {
        (V::F(x), V::F(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

fn fold(op: ReduceOp, a: V, b: V) -> V {
    match (a, b) {
        (V::F(x), V::F(y)) => V::F(op.fold_float(x, y).unwrap_or(f64::NAN)),
        // The position combiners fold no values.
        (V::I(_), V::I(_)) if op.is_arg() => V::I(i64::MIN),
        (V::I(x), V::I(y)) => V::I(op.fold_int(x, y)),
        _ => V::B(false),
    }
}

fn lt(a: V, b: V) -> bool {
    match (a, b) {
        (V::F(x), V::F(y)) => x < y,
        (V::I(x), V::I(y)) => x < y,
        _ => false,
    }
}

fn arg_extreme(max: bool, first: bool, a: (V, V), b: (V, V)) -> (V, V) {
    let better = if max { lt(b.0, a.0) } else { lt(a.0, b.0) };
    let tie = a.0 == b.0;
    let index_first = if first { lt(a.1, b.1) } else { lt(b.1, a.1) };
    if better || (tie && index_first) {
        a
    } else {
        b
    }
}

/// A `tt.elementwise_inline_asm` of the region on sample scalars, through the PTX-subset
/// interpreter: samples become the bits of the operand types (`: f32, i64 -> i64`), results
/// are read back from theirs.
fn inline_asm(op: &Op, env: &HashMap<String, V>) -> Option<Vec<V>> {
    use bwsim_isa::DType;
    let asm = op.toks.iter().find_map(|t| match &t.tok {
        Tok::Str(s) => Some(s.clone()),
        _ => None,
    })?;
    let mut constraints = None;
    let mut pack = 1usize;
    let mut types: (Vec<DType>, Vec<DType>) = (Vec::new(), Vec::new());
    let mut after_colon = false;
    let mut after_arrow = false;
    let mut depth = 0i32;
    let mut vals: Vec<&str> = Vec::new();
    for (i, t) in op.toks.iter().enumerate() {
        let next2 = op.toks.get(i + 2).map(|t| &t.tok);
        match &t.tok {
            Tok::Punct("{") => depth += 1,
            Tok::Punct("}") => depth -= 1,
            Tok::Value(v) if depth == 0 && !after_colon => vals.push(v.as_str()),
            Tok::Ident(w) if w == "constraints" && !after_colon => {
                if let Some(Tok::Str(c)) = next2 {
                    constraints = Some(c.clone());
                }
            }
            Tok::Ident(w) if w == "packed_element" && !after_colon => {
                if let Some(Tok::Int(n)) = next2 {
                    pack = usize::try_from(*n).ok()?;
                }
            }
            Tok::Punct(":") if !after_colon && depth == 0 => after_colon = true,
            Tok::Punct("->") if after_colon => after_arrow = true,
            Tok::Ident(w) if after_colon && depth == 0 => {
                let d = Elem::from_name(w).and_then(|e| e.dtype())?;
                if after_arrow {
                    types.1.push(d);
                } else {
                    types.0.push(d);
                }
            }
            _ => {}
        }
    }
    if pack != 1 || types.0.len() != vals.len() {
        return None;
    }
    let prog = bwsim_isa::inline_ptx::compile(&asm, &constraints?, &types.0, &types.1, 1).ok()?;
    let mut bits = Vec::with_capacity(vals.len());
    for (n, d) in vals.iter().zip(&types.0) {
        bits.push(to_bits(*env.get(*n)?, *d)?);
    }
    let out = prog.run(&bits).ok()?;
    out.iter().zip(&types.1).map(|(b, d)| from_bits(*b, *d)).collect()
}

fn to_bits(v: V, d: bwsim_isa::DType) -> Option<u64> {
    use bwsim_isa::DType;
    Some(match (v, d) {
        (V::F(x), DType::F32) => (x as f32).to_bits() as u64,
        (V::F(x), DType::F16) => half::f16::from_f64(x).to_bits() as u64,
        (V::F(x), DType::BF16) => half::bf16::from_f64(x).to_bits() as u64,
        (V::I(x), _) if !d.is_float() && d.bits() > 1 => x as u64 & mask(d.bits()),
        _ => return None,
    })
}

fn from_bits(b: u64, d: bwsim_isa::DType) -> Option<V> {
    use bwsim_isa::DType;
    Some(match d {
        DType::F32 => V::F(f32::from_bits(b as u32) as f64),
        DType::F16 => V::F(half::f16::from_bits(b as u16).to_f64()),
        DType::BF16 => V::F(half::bf16::from_bits(b as u16).to_f64()),
        _ if !d.is_float() && d.bits() > 1 => {
            let s = 64 - d.bits();
            V::I(((b << s) as i64) >> s)
        }
        _ => return None,
    })
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// Identifies a combiner of `n` i64 operands that each hold two f32 lanes (Gluon's paired
/// f32 values, `mov.b64 $0, {lo, hi}`) folded lane by lane (`add.f32x2` in inline PTX):
/// the fold of each operand's lanes.
pub(super) fn identify_f32_pairs(region: &Region, ret: &str, n: usize) -> Option<Vec<ReduceOp>> {
    let args = block_args(region);
    if args.len() != 2 * n || n == 0 {
        return None;
    }
    let pair = |lo: f64, hi: f64| ((hi as f32).to_bits() as i64) << 32 | (lo as f32).to_bits() as i64;
    let lanes = |v: i64| {
        (
            f32::from_bits(v as u32) as f64,
            f32::from_bits((v >> 32) as u32) as f64,
        )
    };
    let fvals = [-3.5, -1.0, 0.0, 0.5, 2.0, 7.25];
    let mut folds = Vec::with_capacity(n);
    for i in 0..n {
        let found = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min]
            .into_iter()
            .find(|&f| {
                (0..36).all(|s| {
                    let (a, b) = (s / 6, s % 6);
                    let side = |k: usize, l: bool| {
                        let (x, y) = if l { (a + k, b + 2 * k) } else { (b + 3 * k, a + 1) };
                        pair(fvals[x % 6], fvals[(y + 1) % 6])
                    };
                    let mut env: HashMap<String, V> = HashMap::new();
                    for k in 0..n {
                        env.insert(args[k].clone(), V::I(side(k, true)));
                        env.insert(args[n + k].clone(), V::I(side(k, false)));
                    }
                    let Some(out) = interpret(region, ret, &mut env) else {
                        return false;
                    };
                    let (l, r) = (lanes(side(i, true)), lanes(side(i, false)));
                    let want = |x: f64, y: f64| match fold(f, V::F(x), V::F(y)) {
                        V::F(v) => v,
                        _ => f64::NAN,
                    };
                    out.len() == n && out[i] == V::I(pair(want(l.0, r.0), want(l.1, r.1)))
                })
            })?;
        folds.push(found);
    }
    Some(folds)
}

/// Runs the region's operations; the operands of `ret` are the results.
fn interpret(region: &Region, ret: &str, env: &mut HashMap<String, V>) -> Option<Vec<V>> {
    for op in &region.ops {
        let vals: Vec<&str> = op
            .toks
            .iter()
            .take_while(|t| !matches!(t.tok, Tok::Punct(":")))
            .filter_map(|t| match &t.tok {
                Tok::Value(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        let get = |i: usize| vals.get(i).and_then(|n| env.get(*n)).copied();
        if op.name == ret {
            return vals.iter().map(|n| env.get(*n).copied()).collect();
        }
        if op.name == "tt.elementwise_inline_asm" {
            let outs = inline_asm(op, env)?;
            if outs.len() != op.results.len() {
                return None;
            }
            for (r, v) in op.results.iter().zip(outs) {
                env.insert(r.clone(), v);
            }
            continue;
        }
        let out = match op.name.as_str() {
            "arith.constant" => match op.toks.first().map(|t| &t.tok) {
                Some(Tok::Int(v)) => {
                    let is_bool = op
                        .toks
                        .iter()
                        .any(|t| matches!(&t.tok, Tok::Ident(w) if w == "i1"));
                    if is_bool {
                        V::B(*v != 0)
                    } else {
                        V::I(*v)
                    }
                }
                Some(Tok::Float(f)) => V::F(*f),
                Some(Tok::Ident(w)) if w == "true" => V::B(true),
                Some(Tok::Ident(w)) if w == "false" => V::B(false),
                _ => return None,
            },
            "arith.select" => match get(0)? {
                V::B(c) => {
                    if c {
                        get(1)?
                    } else {
                        get(2)?
                    }
                }
                _ => return None,
            },
            "arith.cmpf" | "arith.cmpi" => {
                let pred = op.toks.iter().find_map(|t| match &t.tok {
                    Tok::Ident(w) => Some(w.as_str()),
                    _ => None,
                })?;
                let (a, b) = (get(0)?, get(1)?);
                let (less, eq, unordered) = match (a, b) {
                    (V::F(x), V::F(y)) => (x < y, x == y, x.is_nan() || y.is_nan()),
                    (V::I(x), V::I(y)) => (x < y, x == y, false),
                    (V::B(x), V::B(y)) => (!x & y, x == y, false),
                    _ => return None,
                };
                let gt = !less && !eq && !unordered;
                V::B(match pred {
                    "oeq" | "eq" => eq,
                    "one" => !eq && !unordered,
                    "ne" | "une" => !eq,
                    "ogt" | "sgt" => gt,
                    "oge" | "sge" => gt || eq,
                    "olt" | "slt" => less,
                    "ole" | "sle" => less || eq,
                    "ugt" if op.name == "arith.cmpf" => gt || unordered,
                    "uge" if op.name == "arith.cmpf" => gt || eq || unordered,
                    "ult" if op.name == "arith.cmpf" => less || unordered,
                    "ule" if op.name == "arith.cmpf" => less || eq || unordered,
                    _ => return None,
                })
            }
            name => {
                let (a, b) = (get(0)?, get(1)?);
                match (name, a, b) {
                    ("arith.andi", V::B(x), V::B(y)) => V::B(x & y),
                    ("arith.ori", V::B(x), V::B(y)) => V::B(x | y),
                    ("arith.xori", V::B(x), V::B(y)) => V::B(x ^ y),
                    ("arith.addf", ..) | ("arith.addi", ..) => fold(ReduceOp::Sum, a, b),
                    ("arith.mulf", ..) | ("arith.muli", ..) => fold(ReduceOp::Prod, a, b),
                    ("arith.maxnumf" | "arith.maximumf" | "arith.maxsi", ..) => fold(ReduceOp::Max, a, b),
                    ("arith.minnumf" | "arith.minimumf" | "arith.minsi", ..) => fold(ReduceOp::Min, a, b),
                    ("arith.andi", ..) => fold(ReduceOp::And, a, b),
                    ("arith.ori", ..) => fold(ReduceOp::Or, a, b),
                    ("arith.xori", ..) => fold(ReduceOp::Xor, a, b),
                    ("arith.subf", V::F(x), V::F(y)) => V::F(x - y),
                    ("arith.subi", V::I(x), V::I(y)) => V::I(x.wrapping_sub(y)),
                    _ => return None,
                }
            }
        };
        env.insert(op.results.first()?.clone(), out);
    }
    None
}
