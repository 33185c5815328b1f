//! A PTX kernel's launch in the terms of its source language: the Python parameters a Triton
//! kernel was compiled with (the `// param:` header lines the fixture generator writes, one
//! per non-constexpr parameter, in order), and how each expands into the PTX kernel's
//! parameters, as Triton's launcher passes them:
//!
//! - `desc DTYPE elem_size=B swizzle=S box=B0,B1,...`: a tensor descriptor, passed as the
//!   tensor map (128 bytes), then its shape (one 32-bit integer per dimension) and its strides
//!   (one 64-bit integer per dimension, in elements), outermost first (Triton's
//!   `make_tensordesc_arg`); the box and swizzle are those Triton's compiler chose
//!   (`tensordesc_meta`), the box outermost first;
//! - `*DTYPE`: a pointer (a launch buffer's address);
//! - `i32`, `i64`, `fp32`: a scalar.
//!
//! PTX parameters left over after the Python ones (Triton's global and profile scratch
//! pointers) get null. A `// shared: BYTES` line gives the dynamic shared memory the launcher
//! passes (Triton's `metadata.shared`).
//!
//! [`prepare`] is the whole prelude of a PTX file's launch, shared by `bwsim check`, `bwsim
//! run` and `bwsim gpu`: the module parsed, its first kernel resolved, its `// param:` lines
//! typed as kernel parameters so that a launch section in the TTGIR sidecars' format
//! (`launch { grid, tensors, PARAM = VALUE }`, by the Python parameter names) resolves against
//! them ([`bwsim_isa::launch::resolve_for`]), and the PTX arguments bound to the plan's
//! tensors (tensor `k` is launch buffer `k`).

use crate::exec::{Arg, Launch};
use crate::program::Program;
use crate::tensormap::TensorMap;
use crate::Error;
use bwsim_isa::consts::ConstEnv;
use bwsim_isa::launch::{ArgValue, LaunchPlan};
use bwsim_isa::typeck::{ParamInfo, Ty};
use bwsim_isa::types::{ScalarTy, Swizzle};
use bwsim_isa::{Diagnostic, Span, Target};

/// What one Python parameter is.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// A tensor descriptor: element bytes, swizzle, box (outermost first).
    Desc {
        elem_bytes: u32,
        swizzle: Swizzle,
        box_dims: Vec<u32>,
    },
    Pointer,
    /// A scalar of this Triton type (`i32`, `i64`, `fp32`, ...).
    Scalar(String),
}

/// One Python parameter of the kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub kind: Kind,
    /// The element type (of a descriptor or a pointer) or the scalar's type, as Triton names
    /// it (`fp32`, `i32`, ...).
    pub dtype: String,
}

/// bwsim's element type for a Triton type name.
pub fn dtype(triton: &str) -> Option<bwsim_isa::DType> {
    use bwsim_isa::DType as D;
    Some(match triton {
        "fp32" => D::F32,
        "fp16" => D::F16,
        "bf16" => D::BF16,
        "fp8e4nv" => D::F8E4M3,
        "fp8e5" => D::F8E5M2,
        "i1" => D::I1,
        "i8" => D::I8,
        "i16" => D::I16,
        "i32" => D::I32,
        "i64" => D::I64,
        "u8" => D::U8,
        "u16" => D::U16,
        "u32" => D::U32,
        "u64" => D::U64,
        _ => return None,
    })
}

/// The element type a launch section gives a tensor of `d`: Triton's unsigned integer
/// element types (`u8`, from a `uint8` tensor) are the signless integers of its TTGIR
/// (`i8`), which the sidecars written for that TTGIR declare; the bits are the same.
fn signless(d: bwsim_isa::DType) -> bwsim_isa::DType {
    use bwsim_isa::DType as D;
    match d {
        D::U8 => D::I8,
        D::U16 => D::I16,
        D::U32 => D::I32,
        D::U64 => D::I64,
        d => d,
    }
}

/// The dynamic shared memory of the `// shared:` line (0 without one).
pub fn shared(src: &str) -> Result<u64, Error> {
    for line in src.lines() {
        if let Some(v) = line.trim().strip_prefix("// shared:") {
            return v
                .trim()
                .parse()
                .map_err(|_| Error::Launch(format!("`{}`: not a byte count", line.trim())));
        }
    }
    Ok(0)
}

/// Threads per CTA: the kernel's `.reqntid`.
pub fn threads(p: &Program) -> Result<[u32; 3], Error> {
    let r = p.reqntid.as_ref().ok_or_else(|| {
        Error::Launch(format!(
            "`{}` has no `.reqntid`: the launch cannot tell its CTA shape",
            p.name
        ))
    })?;
    let mut b = [1u32; 3];
    for (i, x) in r.iter().take(3).enumerate() {
        b[i] = *x;
    }
    Ok(b)
}

/// A value for one Python parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A contiguous row-major tensor in launch buffer `buffer`, its shape outermost first (for
    /// a pointer parameter only the buffer counts).
    Tensor {
        buffer: usize,
        shape: Vec<u64>,
    },
    Int(i64),
    F32(f32),
}

/// The `// param:` lines of a PTX file.
pub fn params(src: &str) -> Result<Vec<Param>, Error> {
    let mut out = Vec::new();
    for line in src.lines() {
        let Some(rest) = line.trim().strip_prefix("// param:") else {
            continue;
        };
        let bad = |why: &str| Error::Launch(format!("`{}`: {why}", line.trim()));
        let mut w = rest.split_whitespace();
        let name = w.next().ok_or_else(|| bad("no parameter name"))?.to_string();
        let ty = w.next().ok_or_else(|| bad("no type"))?;
        let mut dt = ty.trim_start_matches('*').to_string();
        let kind = if ty == "desc" {
            dt = w.next().ok_or_else(|| bad("no element type"))?.to_string();
            let (mut eb, mut sw, mut bx) = (None, None, None);
            for kv in w {
                let (k, v) = kv.split_once('=').ok_or_else(|| bad("expected KEY=VALUE"))?;
                match k {
                    "elem_size" => eb = v.parse::<u32>().ok(),
                    "swizzle" => sw = v.parse::<i64>().ok().and_then(Swizzle::from_bytes),
                    "box" => {
                        bx = v
                            .split(',')
                            .map(|x| x.parse::<u32>().ok())
                            .collect::<Option<Vec<u32>>>()
                    }
                    _ => return Err(bad(&format!("unknown key `{k}`"))),
                }
            }
            Kind::Desc {
                elem_bytes: eb.ok_or_else(|| bad("no valid elem_size"))?,
                swizzle: sw.ok_or_else(|| bad("no valid swizzle (0, 32, 64 or 128)"))?,
                box_dims: bx.ok_or_else(|| bad("no valid box"))?,
            }
        } else if ty.starts_with('*') {
            Kind::Pointer
        } else {
            Kind::Scalar(ty.to_string())
        };
        out.push(Param {
            name,
            kind,
            dtype: dt,
        });
    }
    Ok(out)
}

/// The PTX kernel's arguments for `values` (one per Python parameter, by name).
pub fn args(p: &Program, params: &[Param], values: &[(&str, Value)]) -> Result<Vec<Arg>, Error> {
    let mut out = Vec::new();
    for prm in params {
        let v = values
            .iter()
            .find(|(n, _)| *n == prm.name)
            .map(|(_, v)| v)
            .ok_or_else(|| Error::Launch(format!("no value for parameter `{}`", prm.name)))?;
        match (&prm.kind, v) {
            (
                Kind::Desc {
                    elem_bytes,
                    swizzle,
                    box_dims,
                },
                Value::Tensor { buffer, shape },
            ) => {
                if shape.len() != box_dims.len() {
                    return Err(Error::Launch(format!(
                        "`{}` has {} dimensions, its descriptor's box {}",
                        prm.name,
                        shape.len(),
                        box_dims.len()
                    )));
                }
                let dims: Vec<u64> = shape.iter().rev().copied().collect();
                let mut strides = Vec::new();
                let mut s = *elem_bytes as u64;
                for d in &dims[..dims.len() - 1] {
                    s *= d;
                    strides.push(s);
                }
                // An element type Triton names that bwsim does not: the unsigned integer of
                // its width (only a reduction reads the type).
                let dtype = dtype(&prm.dtype).unwrap_or(match elem_bytes {
                    1 => bwsim_isa::DType::U8,
                    2 => bwsim_isa::DType::U16,
                    4 => bwsim_isa::DType::U32,
                    _ => bwsim_isa::DType::U64,
                });
                out.push(Arg::TensorMap(TensorMap {
                    buffer: *buffer,
                    elem_bytes: *elem_bytes,
                    dtype,
                    dims,
                    strides,
                    box_dims: box_dims.iter().rev().copied().collect(),
                    swizzle: *swizzle,
                }));
                out.extend(shape.iter().map(|&d| Arg::U32(d as u32)));
                let mut el = 1u64;
                let mut st: Vec<u64> = shape
                    .iter()
                    .rev()
                    .map(|&d| {
                        let x = el;
                        el *= d;
                        x
                    })
                    .collect();
                st.reverse();
                out.extend(st.into_iter().map(Arg::U64));
            }
            (Kind::Pointer, Value::Tensor { buffer, .. }) => out.push(Arg::Buffer(*buffer)),
            (Kind::Scalar(t), Value::Int(x)) if t.ends_with("64") => out.push(Arg::U64(*x as u64)),
            // A pointer passed as an integer (`x.data_ptr()`): the tensor's address.
            (Kind::Scalar(t), Value::Tensor { buffer, .. }) if t.ends_with("64") => {
                out.push(Arg::U64(crate::exec::buffer_address(*buffer)))
            }
            (Kind::Scalar(_), Value::Int(x)) => out.push(Arg::U32(*x as u32)),
            (Kind::Scalar(_), Value::F32(x)) => out.push(Arg::F32(*x)),
            _ => {
                return Err(Error::Launch(format!(
                    "the value of `{}` does not fit its type",
                    prm.name
                )))
            }
        }
    }
    if out.len() > p.params.len() {
        return Err(Error::Launch(format!(
            "the Python parameters expand into {} PTX parameters; `{}` has {}",
            out.len(),
            p.name,
            p.params.len()
        )));
    }
    for prm in &p.params[out.len()..] {
        out.push(if prm.bytes == 8 { Arg::U64(0) } else { Arg::U32(0) });
    }
    Ok(out)
}

/// A PTX kernel ready to launch: what [`prepare`] makes of a PTX file and a launch section.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The kernel's name (the module's first `.entry`).
    pub name: String,
    /// The module's `.target`, when bwsim knows it (`sm_90a`, `sm_100a`).
    pub target: Option<Target>,
    pub program: Program,
    /// The launch section resolved: grid, tensors (launch buffer `k` is tensor `k`),
    /// arguments by Python parameter name, outputs.
    pub plan: LaunchPlan,
    /// The PTX launch: grid, CTA shape (`.reqntid`), PTX arguments, dynamic shared memory.
    pub launch: Launch,
}

/// Why [`prepare`] failed: the PTX (with its span) or the launch section (diagnostics with
/// spans into the section's text).
#[derive(Clone, Debug)]
pub enum PrepareError {
    Ptx(Error),
    Section(Vec<Diagnostic>),
}

impl From<Error> for PrepareError {
    fn from(e: Error) -> PrepareError {
        PrepareError::Ptx(e)
    }
}

/// The `// param:` lines as typed kernel parameters, for the launch resolution: a descriptor
/// or a pointer is a pointer to its element type, a scalar its type.
pub fn param_infos(params: &[Param]) -> Result<Vec<ParamInfo>, Error> {
    params
        .iter()
        .map(|p| {
            let ty = match (&p.kind, dtype(&p.dtype)) {
                (Kind::Desc { .. } | Kind::Pointer, Some(d)) => Ty::Ptr(signless(d)),
                (Kind::Scalar(_), _) => Ty::Scalar(match p.dtype.as_str() {
                    "i64" | "u64" => ScalarTy::I64,
                    "fp32" => ScalarTy::F32,
                    "i1" => ScalarTy::I1,
                    _ => ScalarTy::I32,
                }),
                _ => {
                    return Err(Error::Launch(format!(
                        "parameter `{}` has the element type `{}`, which bwsim does not read",
                        p.name, p.dtype
                    )))
                }
            };
            Ok(ParamInfo {
                name: p.name.clone(),
                ty,
                span: Span::DUMMY,
            })
        })
        .collect()
}

/// Retypes the 64-bit integer parameters that `section` binds to a tensor (`y_addr = y`: a
/// pointer passed as an integer, `y.data_ptr()`, which the kernel casts back) as pointers to
/// the tensor's element type, so that the launch resolution binds the tensor's address to
/// them, as the TTGIR importer reads such a parameter (a pointer whose value is its address).
fn address_params(env: &ConstEnv, infos: &mut [ParamInfo], section: &bwsim_isa::ir::Launch) {
    use bwsim_isa::ir::{ExprKind, LaunchItemKind};
    let tensor_dtype = |name: &str| {
        section.items.iter().find_map(|it| match &it.kind {
            LaunchItemKind::Tensor { name: n, ty, .. } if n.name == name => match &ty.kind {
                ExprKind::Index(base, _) => env.dtype(base).ok(),
                _ => None,
            },
            _ => None,
        })
    };
    for it in &section.items {
        let LaunchItemKind::Set { name, value } = &it.kind else {
            continue;
        };
        let ExprKind::Name(t) = &value.kind else {
            continue;
        };
        let info = infos.iter_mut().find(|i| i.name == name.name);
        if let (Some(info), Some(d)) = (info, tensor_dtype(t)) {
            if info.ty == Ty::Scalar(ScalarTy::I64) {
                info.ty = Ty::Ptr(d);
            }
        }
    }
}

/// The Python parameters' values of a resolved plan (a tensor is launch buffer `k`).
pub fn values(plan: &LaunchPlan) -> Vec<(&str, Value)> {
    plan.args
        .iter()
        .map(|(n, v)| {
            let v = match v {
                ArgValue::Tensor(i) => Value::Tensor {
                    buffer: *i,
                    shape: plan.tensors[*i].shape.clone(),
                },
                ArgValue::Int(x) => Value::Int(*x),
                ArgValue::Float(x) => Value::F32(*x as f32),
            };
            (n.as_str(), v)
        })
        .collect()
}

/// Parses the PTX file `text`, resolves its first kernel and the launch `section` against its
/// `// param:` lines, and binds the PTX arguments.
pub fn prepare(text: &str, section: &bwsim_isa::ir::Launch) -> Result<Prepared, PrepareError> {
    let module = crate::parse(text)?;
    let name = module
        .kernels
        .first()
        .map(|k| k.name.clone())
        .ok_or_else(|| Error::Launch("the PTX has no `.entry` kernel".into()))?;
    let target = module.target.iter().find_map(|t| Target::from_name(t));
    let program = crate::load(text, &module, &name)?;
    let params = params(text)?;
    let mut infos = param_infos(&params)?;
    let env = ConstEnv::empty(target.unwrap_or(Target::Sm100a));
    address_params(&env, &mut infos, section);
    let plan = bwsim_isa::launch::resolve_for(&env, &infos, section).map_err(PrepareError::Section)?;
    let args = args(&program, &params, &values(&plan))?;
    let mut launch = Launch::new(plan.grid, threads(&program)?, args);
    // The sidecar's cluster, else the one the kernel requires (a launch of a kernel with
    // `.reqnctapercluster` has that cluster shape).
    launch.cluster = match &program.cluster {
        Some(c) if plan.cluster == [1, 1, 1] => [0, 1, 2].map(|i| c.get(i).copied().unwrap_or(1)),
        _ => plan.cluster,
    };
    launch.dynamic_shared = shared(text)?;
    Ok(Prepared {
        name,
        target,
        program,
        plan,
        launch,
    })
}
