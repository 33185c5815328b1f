//! The verifier: the static rules (docs/semantics.md#static-rules) that Gluon, ptxas or the
//! hardware enforce, checked before anything runs.
//!
//! [`verify`] binds constants, runs the type checker ([`crate::typeck`]) and then the rules
//! below. Each rule has a stable code (listed in [`rules`], from [`crate::codes`]); every diagnostic carries the span
//! of the offending operation and a help line. Op-level rules are plain functions called by the
//! type checker where it has the operand types in hand.

use crate::codes::{Code, Stage};
use crate::consts::{ConstEnv, Override};
use crate::diag::Diagnostic;
use crate::ir::*;
use crate::typeck::{self, Checked, Ty};
use crate::types::*;

/// The codes of the parser and the verifier (`syntax` and the static rules), generated from
/// the one table ([`crate::codes`]); `bwsim verify --rules` lists every code of every stage.
pub fn rules() -> impl Iterator<Item = Code> {
    Code::ALL
        .iter()
        .copied()
        .filter(|c| c.emitted_by(Stage::Syntax) || c.emitted_by(Stage::Verify))
}

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
pub const CONTINUES: &[Code] = &[Code::TmaDtype, Code::TmaBufferBox];

/// Whether `d` is an error that stops the analysis (not one of [`CONTINUES`]).
pub fn stops(d: &Diagnostic) -> bool {
    d.is_error() && !CONTINUES.contains(&d.code)
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
