//! Launch specs: how `bwsim run` and `bwsim gpu` launch a kernel, and the host data it starts
//! from.
//!
//! [`resolve`] turns a kernel's `launch { }` section into a [`LaunchPlan`] (grid, cluster,
//! global tensors with their initialisers, arguments, outputs); [`materialize`] draws the
//! tensors' contents for a seed, after checking them against the memory limit (nothing is
//! allocated for a launch that asks for more). The simulator and the GPU runner both start from
//! `materialize(plan, seed)`, so they see bit-identical inputs.

use crate::consts::ConstEnv;
use crate::diag::{Code, Diagnostic};
use crate::ir::*;
use crate::limits::{self, Limit, Limits};
use crate::numeric;
use crate::span::Span;
use crate::typeck::{Checked, Ty};
use crate::types::DType;

/// Why a launch's cluster shape cannot run: a cluster holds 1, 2, 4, 8 or 16 CTAs (8 is the
/// portable maximum, 16 a non-portable size of sm_90 and sm_100; PTX ISA, "Cluster of
/// Cooperative Thread Arrays"; CUDA programming guide, "Thread Block Clusters") and each of its
/// dimensions divides the grid's.
fn cluster_error(plan: &LaunchPlan) -> Option<String> {
    let n: u64 = plan.cluster.iter().map(|&c| c as u64).product();
    if ![1, 2, 4, 8, 16].contains(&n) {
        return Some(format!(
            "cluster {:?} holds {n} CTAs; a cluster holds 1, 2, 4, 8 or 16 (16 is non-portable)",
            plan.cluster
        ));
    }
    if (0..3).any(|i| !plan.grid[i].is_multiple_of(plan.cluster[i].max(1))) {
        return Some(format!(
            "cluster {:?} does not divide grid {:?}",
            plan.cluster, plan.grid
        ));
    }
    None
}

/// How a tensor's contents are drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum Init {
    Zeros,
    /// Standard normal samples (then rounded to the element type).
    Randn,
    Uniform(f64, f64),
    /// Integers uniform in `lo..hi`.
    Randint(i64, i64),
    /// `0, 1, 2, ...` in row-major order.
    Iota,
    Fill(f64),
    /// `torch.linspace(lo, hi, n)` truncated to integers for integer types.
    Linspace(f64, f64),
    /// A random permutation of `0..n`.
    Perm,
    Shuffled(Box<Init>),
}

/// A global tensor of the launch.
#[derive(Clone, Debug)]
pub struct TensorSpec {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub init: Init,
    pub span: Span,
}

impl TensorSpec {
    /// Elements (saturating at `u64::MAX`).
    pub fn numel(&self) -> u64 {
        self.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d))
    }
    /// Bytes of storage (fp4 packs two per byte; saturating at `u64::MAX`).
    pub fn bytes(&self) -> u64 {
        self.numel().saturating_mul(self.dtype.bits() as u64).div_ceil(8)
    }
}

/// The argument passed for one kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// Index into [`LaunchPlan::tensors`] (for `ptr` and `tensor_desc` parameters).
    Tensor(usize),
    Int(i64),
    Float(f64),
}

/// A resolved launch.
#[derive(Clone, Debug)]
pub struct LaunchPlan {
    pub grid: [u32; 3],
    pub cluster: [u32; 3],
    pub tensors: Vec<TensorSpec>,
    /// One entry per kernel parameter, in parameter order.
    pub args: Vec<(String, ArgValue)>,
    /// Tensors reported after the run.
    pub outputs: Vec<usize>,
    /// Resource limits: the launch section's `limit` lines; callers layer command-line limits
    /// over them (`plan.limits = cli.or(plan.limits)`) before [`materialize`].
    pub limits: Limits,
}

impl LaunchPlan {
    pub fn tensor(&self, name: &str) -> Option<usize> {
        self.tensors.iter().position(|t| t.name == name)
    }
    /// Bytes of all global tensors (saturating at `u64::MAX`).
    pub fn total_bytes(&self) -> u64 {
        self.tensors.iter().fold(0u64, |a, t| a.saturating_add(t.bytes()))
    }
    /// CTAs in the grid (saturating: a resolved grid is at most [`MAX_GRID`], whose product
    /// fits, but plans can be built by hand).
    pub fn num_ctas(&self) -> u64 {
        self.grid.iter().fold(1u64, |a, &g| a.saturating_mul(g as u64))
    }
}

/// A host buffer: raw little-endian element bits, row-major.
#[derive(Debug, PartialEq)]
pub struct HostTensor {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

impl Clone for HostTensor {
    fn clone(&self) -> HostTensor {
        HostTensor {
            name: self.name.clone(),
            dtype: self.dtype,
            shape: self.shape.clone(),
            data: self.data.clone(),
        }
    }

    /// Into this tensor's buffers (no fresh pages when they are large enough; an
    /// exploration copies the launch's tensors this way for every schedule).
    fn clone_from(&mut self, src: &HostTensor) {
        self.name.clone_from(&src.name);
        self.dtype = src.dtype;
        self.shape.clone_from(&src.shape);
        self.data.clone_from(&src.data);
    }
}

impl HostTensor {
    /// A zero-filled tensor. Allocates its bytes: callers check sizes against the memory limit
    /// first ([`materialize`] does).
    pub fn zeros(name: &str, dtype: DType, shape: Vec<u64>) -> HostTensor {
        let n = shape.iter().fold(1u64, |a, &d| a.saturating_mul(d));
        let bytes = usize::try_from(n.saturating_mul(dtype.bits() as u64).div_ceil(8)).unwrap_or(usize::MAX);
        HostTensor {
            name: name.to_string(),
            dtype,
            shape,
            data: vec![0; bytes],
        }
    }
    pub fn numel(&self) -> u64 {
        self.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d))
    }
    /// Bits of element `i` (row-major linear index).
    pub fn get_bits(&self, i: u64) -> u64 {
        let bits = self.dtype.bits() as u64;
        if bits == 4 {
            let b = self.data[(i / 2) as usize];
            return if i.is_multiple_of(2) {
                (b & 0xf) as u64
            } else {
                (b >> 4) as u64
            };
        }
        let w = (bits / 8) as usize;
        let o = i as usize * w;
        // Fixed widths read as one word (the loop below is the general case).
        match w {
            4 => {
                return u32::from_le_bytes([
                    self.data[o],
                    self.data[o + 1],
                    self.data[o + 2],
                    self.data[o + 3],
                ]) as u64
            }
            2 => return u16::from_le_bytes([self.data[o], self.data[o + 1]]) as u64,
            _ => {}
        }
        let mut v = 0u64;
        for k in 0..w {
            v |= (self.data[o + k] as u64) << (8 * k);
        }
        v
    }
    pub fn set_bits(&mut self, i: u64, v: u64) {
        let bits = self.dtype.bits() as u64;
        if bits == 4 {
            let b = &mut self.data[(i / 2) as usize];
            if i.is_multiple_of(2) {
                *b = (*b & 0xf0) | (v as u8 & 0xf);
            } else {
                *b = (*b & 0x0f) | ((v as u8 & 0xf) << 4);
            }
            return;
        }
        let w = (bits / 8) as usize;
        let o = i as usize * w;
        match w {
            4 => self.data[o..o + 4].copy_from_slice(&(v as u32).to_le_bytes()),
            2 => self.data[o..o + 2].copy_from_slice(&(v as u16).to_le_bytes()),
            _ => {
                for k in 0..w {
                    self.data[o + k] = (v >> (8 * k)) as u8;
                }
            }
        }
    }
    pub fn get(&self, i: u64) -> f64 {
        numeric::decode(self.dtype, self.get_bits(i))
    }
    pub fn set(&mut self, i: u64, v: f64) {
        self.set_bits(i, numeric::encode(self.dtype, v))
    }
}

fn launch_err(span: Span, msg: impl Into<String>, label: impl Into<String>) -> Diagnostic {
    Diagnostic::error(Code::Launch, msg, span, label)
}

/// Static checks of a launch section (run by the verifier).
pub fn check(checked: &Checked, l: &Launch) -> Vec<Diagnostic> {
    match resolve(checked, l) {
        Ok(_) => Vec::new(),
        Err(d) => d,
    }
}

/// The largest grid a launch may ask for, per dimension: `2^31 - 1` CTAs in x, 65535 in y and
/// z (the range of PTX's `%nctaid`; docs/hardware/launch-limits.md).
pub const MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];

/// Whether no entry of a grid exceeds [`MAX_GRID`] (entries below 1 are reported apart).
fn grid_fits(v: &[i64]) -> bool {
    v.iter().zip(MAX_GRID).all(|(&x, m)| x <= m as i64)
}

/// `limit NAME = VALUE` → the limit and its value in the limit's unit (steps, milliseconds,
/// bytes, events). `memory` may use the units `KiB`, `MiB`, `GiB`, `TiB`, `KB`, ... as names
/// (`4 * GiB`); `wall_time` is in seconds and may be a float.
fn limit_of(env: &ConstEnv, name: &Ident, value: &Expr) -> Result<(Limit, u64), Diagnostic> {
    let Some(l) = Limit::from_key(&name.name) else {
        return Err(launch_err(name.span, format!("unknown limit `{}`", name.name), "here").with_help(
            "limits: `limit steps = N`, `limit wall_time = SECONDS`, `limit memory = N * GiB`, `limit trace_events = N`",
        ));
    };
    let negative = |v: &dyn std::fmt::Display| {
        launch_err(
            value.span,
            format!("limit `{l}` must be a non-negative number, found {v}"),
            "here",
        )
    };
    let v = match l {
        Limit::WallTime => {
            let secs = match &value.kind {
                ExprKind::Float(x) => *x,
                _ => env.int(value)? as f64,
            };
            let ms = (secs * 1000.0).ceil();
            if !(0.0..1.8e19).contains(&ms) {
                return Err(negative(&secs));
            }
            ms as u64
        }
        Limit::Memory => {
            let mut env = env.clone();
            for (u, m) in limits::BYTE_UNITS {
                env.bind(u, crate::consts::ConstValue::Int(*m as i64));
            }
            let v = env.int(value)?;
            u64::try_from(v).map_err(|_| negative(&v))?
        }
        Limit::Steps | Limit::TraceEvents => {
            let v = env.int(value)?;
            u64::try_from(v).map_err(|_| negative(&v))?
        }
    };
    Ok((l, v))
}

fn const_list(env: &ConstEnv, e: &Expr) -> Result<Vec<i64>, Diagnostic> {
    match &e.kind {
        ExprKind::List(items) => items.iter().map(|i| env.int(i)).collect(),
        _ => Ok(vec![env.int(e)?]),
    }
}

/// A float literal, negated or not (`1.5`, `-1.5`).
fn float_literal(e: &Expr) -> Option<f64> {
    match &e.kind {
        ExprKind::Float(x) => Some(*x),
        ExprKind::Unary(UnOp::Neg, inner) => match inner.kind {
            ExprKind::Float(x) => Some(-x),
            _ => None,
        },
        _ => None,
    }
}

fn init_of(env: &ConstEnv, e: &Expr) -> Result<Init, Diagnostic> {
    let ExprKind::Call(f, args) = &e.kind else {
        return Err(launch_err(e.span, "expected an initialiser like `randn()`", "here")
            .with_help("initialisers: zeros(), randn(), uniform(lo, hi), randint(lo, hi), iota(), fill(v), linspace(lo, hi), perm(), shuffled(INIT)"));
    };
    let num = |i: usize| -> Result<f64, Diagnostic> {
        let a = args
            .get(i)
            .ok_or_else(|| launch_err(e.span, format!("`{f}` needs {} arguments", i + 1), "here"))?;
        match float_literal(&a.value) {
            Some(x) => Ok(x),
            None => env.int(&a.value).map(|v| v as f64),
        }
    };
    Ok(match f.as_str() {
        "zeros" => Init::Zeros,
        "randn" => Init::Randn,
        "iota" => Init::Iota,
        "perm" => Init::Perm,
        "uniform" => Init::Uniform(num(0)?, num(1)?),
        "randint" => Init::Randint(num(0)? as i64, num(1)? as i64),
        "fill" => Init::Fill(num(0)?),
        "linspace" => Init::Linspace(num(0)?, num(1)?),
        "shuffled" => {
            let inner = args.first().ok_or_else(|| launch_err(e.span, "shuffled(INIT) needs an initialiser", "here"))?;
            Init::Shuffled(Box::new(init_of(env, &inner.value)?))
        }
        other => {
            return Err(launch_err(e.span, format!("unknown initialiser `{other}`"), "here")
                .with_help("initialisers: zeros(), randn(), uniform(lo, hi), randint(lo, hi), iota(), fill(v), linspace(lo, hi), perm(), shuffled(INIT)"))
        }
    })
}

/// Resolve a launch section against a checked kernel.
pub fn resolve(checked: &Checked, l: &Launch) -> Result<LaunchPlan, Vec<Diagnostic>> {
    resolve_for(&checked.consts, &checked.params, l)
}

/// [`resolve`] for a kernel given by its constants and parameters alone (a PTX kernel's
/// source-level parameters, which no `.tile` text declares).
pub fn resolve_for(
    env: &ConstEnv,
    params: &[crate::typeck::ParamInfo],
    l: &Launch,
) -> Result<LaunchPlan, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut plan = LaunchPlan {
        grid: [1, 1, 1],
        cluster: [1, 1, 1],
        tensors: Vec::new(),
        args: Vec::new(),
        outputs: Vec::new(),
        limits: Limits::default(),
    };
    let mut sets: Vec<(&Ident, &Expr)> = Vec::new();
    let mut have_grid = false;
    for item in &l.items {
        match &item.kind {
            LaunchItemKind::Tensor { name, ty, init } => {
                let r = (|| -> Result<TensorSpec, Diagnostic> {
                    let ExprKind::Index(base, dims) = &ty.kind else {
                        return Err(launch_err(ty.span, "tensor type is `DTYPE[dims]`", "here"));
                    };
                    let dtype = env.dtype(base)?;
                    let mut shape = Vec::new();
                    for d in dims {
                        let IndexItem::Expr(d) = d else {
                            return Err(launch_err(ty.span, "tensor dims are constants", "here"));
                        };
                        let v = env.int(d)?;
                        if v <= 0 {
                            return Err(launch_err(
                                d.span,
                                format!("tensor dimension must be positive, found {v}"),
                                "here",
                            ));
                        }
                        shape.push(v as u64);
                    }
                    if shape.iter().try_fold(1u64, |a, &b| a.checked_mul(b)).is_none() {
                        return Err(launch_err(ty.span, "tensor size overflows", "here"));
                    }
                    Ok(TensorSpec {
                        name: name.name.clone(),
                        dtype,
                        shape,
                        init: init_of(env, init)?,
                        span: item.span,
                    })
                })();
                match r {
                    Ok(t) => {
                        if plan.tensor(&t.name).is_some() {
                            diags.push(launch_err(
                                name.span,
                                format!("tensor `{}` defined twice", t.name),
                                "here",
                            ));
                        }
                        plan.tensors.push(t)
                    }
                    Err(d) => diags.push(d),
                }
            }
            LaunchItemKind::Limit { name, value } => match limit_of(env, name, value) {
                Ok((l, v)) => {
                    if l == Limit::Memory && plan.limits.memory.is_some()
                        || l == Limit::Steps && plan.limits.steps.is_some()
                        || l == Limit::WallTime && plan.limits.wall_time.is_some()
                        || l == Limit::TraceEvents && plan.limits.trace_events.is_some()
                    {
                        diags.push(launch_err(name.span, format!("limit `{l}` set twice"), "here"));
                    }
                    plan.limits.set(l, v);
                }
                Err(d) => diags.push(d),
            },
            LaunchItemKind::Set { name, value } => match name.name.as_str() {
                "grid" | "cluster" => match const_list(env, value) {
                    Ok(v) if name.name == "grid" && (1..=3).contains(&v.len()) && !grid_fits(&v) => diags
                        .push(
                            launch_err(
                                value.span,
                                format!("grid {v:?} exceeds the hardware's grid limits"),
                                "too large for a launch",
                            )
                            .with_note(format!(
                                "a grid is at most [{}, {}, {}] CTAs (docs/hardware/launch-limits.md)",
                                MAX_GRID[0], MAX_GRID[1], MAX_GRID[2]
                            ))
                            .with_help(
                                "use a persistent kernel that loops over tiles, or fold dimensions into x",
                            ),
                        ),
                    Ok(v)
                        if (1..=3).contains(&v.len())
                            && v.iter().all(|&x| (1..=i32::MAX as i64).contains(&x)) =>
                    {
                        let mut g = [1u32; 3];
                        for (i, x) in v.iter().enumerate() {
                            g[i] = *x as u32;
                        }
                        if name.name == "grid" {
                            plan.grid = g;
                            have_grid = true;
                        } else {
                            plan.cluster = g;
                        }
                    }
                    Ok(_) => diags.push(launch_err(
                        value.span,
                        format!("`{}` takes 1 to 3 positive sizes", name.name),
                        "here",
                    )),
                    Err(d) => diags.push(d),
                },
                _ => sets.push((name, value)),
            },
        }
    }
    if !have_grid {
        diags.push(launch_err(l.span, "launch section has no `grid = [...]`", "here"));
    }
    if let Some(d) = cluster_error(&plan) {
        let span = l
            .items
            .iter()
            .find_map(|it| match &it.kind {
                LaunchItemKind::Set { name, value } if name.name == "cluster" => Some(value.span),
                _ => None,
            })
            .unwrap_or(l.span);
        diags.push(launch_err(span, d, "this cluster shape"));
    }
    for p in params {
        let Some((_, value)) = sets.iter().find(|(n, _)| n.name == p.name) else {
            diags.push(
                launch_err(
                    l.span,
                    format!("parameter `{}` gets no argument", p.name),
                    "missing argument",
                )
                .with_label(p.span, "parameter declared here")
                .with_help(format!("add `{} = ...` to the launch section", p.name)),
            );
            continue;
        };
        let arg = match (&p.ty, &value.kind) {
            (Ty::Ptr(_) | Ty::Desc(_), ExprKind::Name(t)) => match plan.tensor(t) {
                Some(i) => {
                    let dt = plan.tensors[i].dtype;
                    let want = match &p.ty {
                        Ty::Ptr(d) => *d,
                        Ty::Desc(d) => d.dtype,
                        _ => dt,
                    };
                    if dt != want {
                        diags.push(launch_err(
                            value.span,
                            format!("`{}` expects {want} data but tensor `{t}` is {dt}", p.name),
                            "element type mismatch",
                        ));
                    }
                    if let Ty::Desc(d) = &p.ty {
                        if plan.tensors[i].shape.len() != d.block.len() {
                            diags.push(launch_err(
                                value.span,
                                format!(
                                    "descriptor of rank {} over a tensor of rank {}",
                                    d.block.len(),
                                    plan.tensors[i].shape.len()
                                ),
                                "rank mismatch",
                            ));
                        }
                    }
                    ArgValue::Tensor(i)
                }
                None => {
                    diags.push(launch_err(
                        value.span,
                        format!("no tensor named `{t}`"),
                        "unknown tensor",
                    ));
                    continue;
                }
            },
            (Ty::Scalar(s), _) => {
                if *s == crate::types::ScalarTy::F32 {
                    match float_literal(value) {
                        Some(x) => ArgValue::Float(x),
                        None => match env.int(value) {
                            Ok(v) => ArgValue::Float(v as f64),
                            Err(d) => {
                                diags.push(d);
                                continue;
                            }
                        },
                    }
                } else {
                    match env.int(value) {
                        Ok(v) => ArgValue::Int(v),
                        Err(d) => {
                            diags.push(d);
                            continue;
                        }
                    }
                }
            }
            _ => {
                diags.push(launch_err(
                    value.span,
                    format!("`{}` needs a tensor name", p.name),
                    "here",
                ));
                continue;
            }
        };
        plan.args.push((p.name.clone(), arg));
    }
    for (n, v) in &sets {
        if n.name == "outputs" {
            let ExprKind::List(items) = &v.kind else {
                diags.push(launch_err(v.span, "outputs = [tensor, ...]", "here"));
                continue;
            };
            for it in items {
                match it.as_name().and_then(|t| plan.tensor(t)) {
                    Some(i) => plan.outputs.push(i),
                    None => diags.push(launch_err(
                        it.span,
                        "outputs lists tensor names",
                        "unknown tensor",
                    )),
                }
            }
        } else if !params.iter().any(|p| p.name == n.name) {
            diags.push(
                launch_err(
                    n.span,
                    format!("`{}` is not a parameter of the kernel", n.name),
                    "unknown name",
                )
                .with_help("launch lines set grid, cluster, outputs, or a parameter"),
            );
        }
    }
    if diags.is_empty() {
        Ok(plan)
    } else {
        Err(diags)
    }
}

/// A small deterministic generator (splitmix64) so inputs do not depend on any crate's
/// stream stability.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(1e-300);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    /// Uniform integer in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

fn fill(t: &mut HostTensor, init: &Init, rng: &mut Rng) {
    let n = t.numel();
    match init {
        Init::Zeros => {}
        Init::Randn => (0..n).for_each(|i| {
            let v = rng.normal();
            t.set(i, v)
        }),
        Init::Uniform(lo, hi) => (0..n).for_each(|i| {
            let v = lo + (hi - lo) * rng.unit();
            t.set(i, v)
        }),
        Init::Randint(lo, hi) => (0..n).for_each(|i| {
            let v = *lo + rng.below(hi.saturating_sub(*lo).max(1) as u64) as i64;
            t.set(i, v as f64)
        }),
        Init::Iota => (0..n).for_each(|i| t.set(i, i as f64)),
        Init::Fill(v) => (0..n).for_each(|i| t.set(i, *v)),
        Init::Linspace(lo, hi) => (0..n).for_each(|i| {
            let v = if n <= 1 {
                *lo
            } else {
                lo + (hi - lo) * i as f64 / (n - 1) as f64
            };
            t.set(i, if t.dtype.is_int() { v.trunc() } else { v })
        }),
        Init::Perm => {
            (0..n).for_each(|i| t.set(i, i as f64));
            shuffle(t, rng);
        }
        Init::Shuffled(inner) => {
            fill(t, inner, rng);
            shuffle(t, rng);
        }
    }
}

fn shuffle(t: &mut HostTensor, rng: &mut Rng) {
    let n = t.numel();
    for i in (1..n).rev() {
        let j = rng.below(i + 1);
        let (a, b) = (t.get_bits(i), t.get_bits(j));
        t.set_bits(i, b);
        t.set_bits(j, a);
    }
}

/// Refuse a plan whose global tensors exceed its memory limit (`plan.limits`, else
/// [`Limits::DEFAULT_MEMORY`]), with a `memory-limit` diagnostic on the largest tensor.
pub fn check_memory(plan: &LaunchPlan) -> Result<(), Diagnostic> {
    let limit = plan.limits.memory_or_default();
    let total = plan.total_bytes();
    if total <= limit {
        return Ok(());
    }
    let Some(big) = plan.tensors.iter().max_by_key(|t| t.bytes()) else {
        return Ok(());
    };
    let mut d = Diagnostic::error(
        Limit::Memory.code(),
        format!(
            "the launch's global tensors need {} ({total} bytes), more than the memory limit of {} ({limit} bytes)",
            limits::format_bytes_ceil(total),
            limits::format_bytes_ceil(limit)
        ),
        big.span,
        format!("the largest, {} bytes", big.bytes()),
    )
    .with_note("nothing was allocated");
    for t in plan.tensors.iter().filter(|t| !std::ptr::eq(*t, big)) {
        d = d.with_label(t.span, format!("{} bytes", t.bytes()));
    }
    Err(d.with_help(Limit::Memory.raise_help(Some(total))))
}

/// Draw every tensor of the plan, after [`check_memory`] (nothing is allocated when it
/// refuses). Tensor `k` uses its own stream derived from `seed` and `k`, so adding a tensor
/// does not change the others.
pub fn materialize(plan: &LaunchPlan, seed: u64) -> Result<Vec<HostTensor>, Diagnostic> {
    check_memory(plan)?;
    let make = |k: usize, spec: &TensorSpec| {
        let mut t = HostTensor::zeros(&spec.name, spec.dtype, spec.shape.clone());
        let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(k as u64));
        fill(&mut t, &spec.init, &mut rng);
        t
    };
    // Each tensor draws from its own stream, so large ones are filled on threads of their
    // own with the same values.
    let elements = plan.tensors.iter().fold(0u64, |a, t| a.saturating_add(t.numel()));
    if elements < PARALLEL_FILL_ELEMENTS || plan.tensors.len() < 2 {
        return Ok(plan
            .tensors
            .iter()
            .enumerate()
            .map(|(k, spec)| make(k, spec))
            .collect());
    }
    Ok(std::thread::scope(|scope| {
        let parts: Vec<_> = plan
            .tensors
            .iter()
            .enumerate()
            .map(|(k, spec)| scope.spawn(move || make(k, spec)))
            .collect();
        parts
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    }))
}

/// Below this many elements in all, a launch's tensors are filled on the calling thread.
const PARALLEL_FILL_ELEMENTS: u64 = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, dtype: DType, shape: Vec<u64>, init: Init) -> TensorSpec {
        TensorSpec {
            name: name.into(),
            dtype,
            shape,
            init,
            span: Span::DUMMY,
        }
    }

    /// A cluster holds 1, 2, 4, 8 or 16 CTAs and divides the grid.
    #[test]
    fn cluster_shapes_are_checked() {
        let plan = |grid: [u32; 3], cluster: [u32; 3]| LaunchPlan {
            grid,
            cluster,
            tensors: Vec::new(),
            args: Vec::new(),
            outputs: Vec::new(),
            limits: Limits::default(),
        };
        assert_eq!(cluster_error(&plan([8, 1, 1], [1, 1, 1])), None);
        for c in [2, 4, 8] {
            assert_eq!(cluster_error(&plan([16, 1, 1], [c, 1, 1])), None);
        }
        assert_eq!(cluster_error(&plan([16, 2, 1], [8, 2, 1])), None);
        let e = cluster_error(&plan([6, 1, 1], [4, 1, 1])).expect("4 does not divide 6");
        assert!(e.contains("does not divide"), "{e}");
        let e = cluster_error(&plan([6, 1, 1], [3, 1, 1])).expect("3 CTAs");
        assert!(e.contains("1, 2, 4, 8 or 16"), "{e}");
        assert!(cluster_error(&plan([64, 1, 1], [32, 1, 1])).is_some());
    }

    /// `clone_from` into a tensor of another name, type and size leaves the source's copy.
    #[test]
    fn clone_from_gives_the_source() {
        let mut src = HostTensor::zeros("a", DType::F16, vec![3, 5]);
        src.data.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        for mut dst in [
            HostTensor::zeros("bigger", DType::F32, vec![64]),
            HostTensor::zeros("b", DType::I8, vec![2]),
        ] {
            dst.clone_from(&src);
            assert_eq!(dst, src);
        }
    }

    /// Large launches fill their tensors on threads: every value is the one the tensor's own
    /// stream gives when filled alone, in order.
    #[test]
    fn threaded_fill_draws_each_tensors_own_stream() {
        let plan = LaunchPlan {
            grid: [1, 1, 1],
            cluster: [1, 1, 1],
            tensors: vec![
                spec("a", DType::F16, vec![1024, 600], Init::Randn),
                spec("b", DType::F32, vec![600, 1024], Init::Uniform(-1.0, 2.0)),
                spec("i", DType::I32, vec![4096], Init::Perm),
                spec("c", DType::F32, vec![16], Init::Zeros),
            ],
            args: Vec::new(),
            outputs: Vec::new(),
            limits: Limits::default(),
        };
        assert!(plan.tensors.iter().map(|t| t.numel()).sum::<u64>() >= PARALLEL_FILL_ELEMENTS);
        let seed = 7;
        let got = materialize(&plan, seed).expect("fits");
        for (k, (t, spec)) in got.iter().zip(&plan.tensors).enumerate() {
            let mut want = HostTensor::zeros(&spec.name, spec.dtype, spec.shape.clone());
            let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(k as u64));
            fill(&mut want, &spec.init, &mut rng);
            assert_eq!(t.name, spec.name);
            assert!(
                (0..t.numel()).all(|i| t.get_bits(i) == want.get_bits(i)),
                "{}",
                spec.name
            );
        }
        // A permutation really is one (the stream was used, not left at zeros).
        let mut perm: Vec<u64> = (0..4096).map(|i| got[2].get_bits(i)).collect();
        assert_ne!(perm, (0..4096).collect::<Vec<u64>>());
        perm.sort_unstable();
        assert_eq!(perm, (0..4096).collect::<Vec<u64>>());
    }
}
