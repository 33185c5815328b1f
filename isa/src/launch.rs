//! Launch specs: how `bwsim run` and `bwsim gpu` launch a kernel, and the host data it starts
//! from.
//!
//! [`resolve`] turns a kernel's `launch { }` section into a [`LaunchPlan`] (grid, cluster,
//! global tensors with their initialisers, arguments, outputs); [`materialize`] draws the
//! tensors' contents for a seed. The simulator and the GPU runner both start from
//! `materialize(plan, seed)`, so they see bit-identical inputs.

use crate::consts::ConstEnv;
use crate::diag::Diagnostic;
use crate::ir::*;
use crate::numeric;
use crate::span::Span;
use crate::typeck::{Checked, Ty};
use crate::types::DType;

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
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }
    /// Bytes of storage (fp4 packs two per byte).
    pub fn bytes(&self) -> u64 {
        (self.numel() * self.dtype.bits() as u64).div_ceil(8)
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
}

impl LaunchPlan {
    pub fn tensor(&self, name: &str) -> Option<usize> {
        self.tensors.iter().position(|t| t.name == name)
    }
    /// Bytes of all global tensors.
    pub fn total_bytes(&self) -> u64 {
        self.tensors.iter().map(|t| t.bytes()).sum()
    }
    pub fn num_ctas(&self) -> u64 {
        self.grid.iter().map(|&g| g as u64).product()
    }
}

/// A host buffer: raw little-endian element bits, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

impl HostTensor {
    pub fn zeros(name: &str, dtype: DType, shape: Vec<u64>) -> HostTensor {
        let n: u64 = shape.iter().product();
        let bytes = (n * dtype.bits() as u64).div_ceil(8) as usize;
        HostTensor {
            name: name.to_string(),
            dtype,
            shape,
            data: vec![0; bytes],
        }
    }
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
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
        for k in 0..w {
            self.data[o + k] = (v >> (8 * k)) as u8;
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
    Diagnostic::error("launch", msg, span, label)
}

/// Static checks of a launch section (run by the verifier).
pub fn check(checked: &Checked, l: &Launch) -> Vec<Diagnostic> {
    match resolve(checked, l) {
        Ok(_) => Vec::new(),
        Err(d) => d,
    }
}

fn const_list(env: &ConstEnv, e: &Expr) -> Result<Vec<i64>, Diagnostic> {
    match &e.kind {
        ExprKind::List(items) => items.iter().map(|i| env.int(i)).collect(),
        _ => Ok(vec![env.int(e)?]),
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
        match &a.value.kind {
            ExprKind::Float(x) => Ok(*x),
            ExprKind::Unary(UnOp::Neg, inner) if matches!(inner.kind, ExprKind::Float(_)) => match inner.kind
            {
                ExprKind::Float(x) => Ok(-x),
                _ => unreachable!("guarded by the match arm"),
            },
            _ => env.int(&a.value).map(|v| v as f64),
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
    let env = &checked.consts;
    let mut diags = Vec::new();
    let mut plan = LaunchPlan {
        grid: [1, 1, 1],
        cluster: [1, 1, 1],
        tensors: Vec::new(),
        args: Vec::new(),
        outputs: Vec::new(),
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
            LaunchItemKind::Set { name, value } => match name.name.as_str() {
                "grid" | "cluster" => match const_list(env, value) {
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
    for p in &checked.params {
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
                    match &value.kind {
                        ExprKind::Float(x) => ArgValue::Float(*x),
                        _ => match env.int(value) {
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
        } else if checked.param(&n.name).is_none() {
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

/// Draw every tensor of the plan. Tensor `k` uses its own stream derived from `seed` and `k`,
/// so adding a tensor does not change the others.
pub fn materialize(plan: &LaunchPlan, seed: u64) -> Vec<HostTensor> {
    plan.tensors
        .iter()
        .enumerate()
        .map(|(k, spec)| {
            let mut t = HostTensor::zeros(&spec.name, spec.dtype, spec.shape.clone());
            let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(k as u64));
            fill(&mut t, &spec.init, &mut rng);
            t
        })
        .collect()
}
