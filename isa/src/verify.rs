//! The verifier: the static rules of DESIGN.md section 3 that Gluon, ptxas or the hardware
//! enforce, checked before anything runs.
//!
//! [`verify`] binds constants, runs the type checker ([`crate::typeck`]) and then the rules
//! below. Each rule has a stable code (listed in [`RULES`]); every diagnostic carries the span
//! of the offending operation and a help line. Op-level rules are plain functions called by the
//! type checker where it has the operand types in hand.

use crate::consts::{ConstEnv, Override};
use crate::diag::Diagnostic;
use crate::ir::*;
use crate::typeck::{self, Checked, Ty};
use crate::types::*;

/// Every verifier rule code with a one-line description (`bwsim verify --rules` prints it).
pub const RULES: &[(&str, &str)] = &[
    ("syntax", "the text does not parse"),
    ("unknown-op", "an operation name that does not exist"),
    ("op-operands", "an operation with the wrong operands"),
    ("const-eval", "a constant expression that cannot be evaluated"),
    ("unknown-const", "`--const` names no constant of the kernel"),
    ("bad-const", "`--const` value of the wrong kind"),
    ("undefined-name", "use of a name that is not in scope"),
    (
        "duplicate-name",
        "`let` of a name already defined in the same block",
    ),
    ("E-type", "operand of the wrong type or shape"),
    ("arch-target", "kernel compiled for a target it does not list"),
    ("arch-tcgen05", "tcgen05 / tensor memory used on sm_90a"),
    ("arch-gather", "gather4/scatter4 used on sm_90a"),
    ("arch-wgmma", "wgmma used on sm_100a"),
    (
        "arch-clc",
        "cluster launch control (clc.try_cancel, clc.query) used on sm_90a",
    ),
    ("num-warps", "num_warps out of range"),
    (
        "ws-regs",
        "warp_specialize register budget not a multiple of 8 in [24, 256]",
    ),
    (
        "ws-warps",
        "worker warp count out of range, or too many warps in all",
    ),
    (
        "ws-tile-capture",
        "worker partition reads a register tile of another partition",
    ),
    ("ws-nested", "more than one warp_specialize region"),
    ("static-assert", "a static_assert is false"),
    ("static-for", "static_for with non-constant or huge bounds"),
    ("mbar-count", "mbarrier expected count outside 1..2^20"),
    (
        "mbar-type",
        "mbarrier operation on something that is not a barrier",
    ),
    (
        "tma-rank",
        "descriptor rank outside 1..5, or wrong coordinate count",
    ),
    ("tma-box", "TMA box dimension outside 1..256"),
    ("tma-elem-strides", "TMA element stride outside 1..8"),
    (
        "tma-box-inner",
        "TMA box inner dimension not a multiple of 16 bytes",
    ),
    (
        "tma-swizzle",
        "TMA box inner dimension inconsistent with the swizzle span",
    ),
    (
        "tma-smem",
        "TMA shared buffer that cannot be copied through the descriptor",
    ),
    (
        "tma-dtype",
        "TMA descriptor element type differs from the shared buffer's (reported; the run goes on)",
    ),
    (
        "tma-buffer-box",
        "TMA copy whose pieces of the buffer are not the descriptor's box (reported; the run goes on)",
    ),
    (
        "gather-desc",
        "gather/scatter descriptor block is not [1, BLOCK_Y]",
    ),
    (
        "gather-rows",
        "gather/scatter with fewer than 8 rows or not a multiple of 4",
    ),
    ("gather-cols", "gather/scatter BLOCK_Y below (32 / bitwidth) * 8"),
    (
        "gather-offset-layout",
        "row offsets not in chunks of 4 registers broadcast across lanes",
    ),
    ("nvmma-inner", "NVMMA buffer narrower than its swizzle span"),
    ("smem-capacity", "more shared memory than a CTA has"),
    ("tmem-capacity", "more than 512 TMEM columns"),
    (
        "tmem-alloc-cols",
        "manual TMEM allocation not a power of two in 32..512",
    ),
    (
        "tmem-layout",
        "TMEM block M not 64 or 128, or scale factors that are not 8-bit",
    ),
    ("tmem-dealloc", "tmem.dealloc of a scoped allocation"),
    (
        "tmem-lanes",
        "tmem.load/store by a partition that cannot reach every lane",
    ),
    (
        "tcgen05-cp-layout",
        "tcgen05.cp source/destination layouts with no copy atom",
    ),
    ("mma-shape", "tcgen05.mma M/N/K outside the instruction shapes"),
    ("mma-dtype", "tcgen05.mma operand types outside the kinds"),
    ("mma-major", "MN-major operand of a type that must be K-major"),
    (
        "mma-scale",
        "block-scaled MMA scale factors of the wrong type or layout",
    ),
    (
        "wgmma-shape",
        "wgmma shape, type or warp count outside the instruction",
    ),
    ("view-bounds", "constant index or slice outside the buffer"),
    ("tile-size", "register tile with more than 2^20 elements"),
    ("smem-reinterpret", "reinterpret larger than the viewed bytes"),
    ("smem-layout", "unknown shared layout or swizzle width"),
    ("launch", "launch section inconsistent with the parameters"),
];

/// What to verify against.
#[derive(Clone, Debug, Default)]
pub struct VerifyOptions {
    /// Target; the kernel's first target when `None`.
    pub target: Option<Target>,
    pub overrides: Vec<Override>,
}

/// Verifier errors whose hardware behaviour is defined: the kernel still runs on a GPU and
/// does something definite (a TMA copy moves the descriptor's element type and box whatever
/// the buffer holds). [`verify_to_run`] reports them and lets the simulation go on, doing
/// what the hardware does, so that one pass shows them with every hazard; every other error
/// stops (nothing definite to simulate).
pub const CONTINUES: &[&str] = &["tma-dtype", "tma-buffer-box"];

/// Whether `d` is an error that stops the analysis (not one of [`CONTINUES`]).
pub fn stops(d: &Diagnostic) -> bool {
    d.is_error() && !CONTINUES.contains(&d.code.as_str())
}

/// Verify a kernel. Returns the checked kernel when there is no error, and every diagnostic
/// (warnings included) either way.
pub fn verify<'k>(k: &'k Kernel, opts: &VerifyOptions) -> (Option<Checked<'k>>, Vec<Diagnostic>) {
    let (checked, diags) = verify_to_run(k, opts);
    if diags.iter().any(|d| d.is_error()) {
        (None, diags)
    } else {
        (checked, diags)
    }
}

/// [`verify`] for simulating: the checked kernel unless an error [`stops`]; the errors of
/// [`CONTINUES`] are among the diagnostics, for the caller to report with the run's.
pub fn verify_to_run<'k>(k: &'k Kernel, opts: &VerifyOptions) -> (Option<Checked<'k>>, Vec<Diagnostic>) {
    let target = opts
        .target
        .or_else(|| k.targets.first().copied())
        .unwrap_or(Target::Sm100a);
    let consts = match ConstEnv::new(k, target, &opts.overrides) {
        Ok(c) => c,
        Err(d) => return (None, d),
    };
    let (checked, mut diags) = typeck::check(k, consts);
    for p in &checked.params {
        if let Ty::Desc(d) = &p.ty {
            diags.extend(check_desc(d, p.span));
        }
    }
    k.walk_stmts(&mut |s| {
        if let StmtKind::Let {
            value: Rhs::Op(op), ..
        }
        | StmtKind::Assign {
            value: Rhs::Op(op), ..
        } = &s.kind
        {
            if let OpKind::SmemAlloc { .. } = op.kind {
                if let Some(a) = checked.alloc_of(op) {
                    if let typeck::AllocKind::Smem { dtype, shape, layout } = &a.kind {
                        diags.extend(check_nvmma_inner(*dtype, shape, layout, op.span));
                    }
                }
            }
        }
    });
    if let Some(l) = &k.launch {
        diags.extend(crate::launch::check(&checked, l));
    }
    let mut seen = std::collections::HashSet::new();
    diags.retain(|d| seen.insert(d.clone()));
    if diags.iter().any(stops) {
        (None, diags)
    } else {
        (Some(checked), diags)
    }
}

pub use crate::rules::*;
