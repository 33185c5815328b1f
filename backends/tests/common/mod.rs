//! Helpers shared by the backend's integration tests: lowering a bundled kernel for a target
//! and configuration, and walking a kernel's PTX as one warp executes it (`ptx_walk`).

#![allow(dead_code)]

pub mod ptx_walk;

use bwsim_backends::ptx::{self, PtxModule};
use bwsim_isa::consts::Override;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::Target;

/// Lower bundled kernel `name` for `target` with `consts` overrides; a readable error when
/// any stage fails.
pub fn lower(name: &str, target: Target, consts: &[&str]) -> Result<PtxModule, String> {
    let entry = bwsim_kernels::find(name).ok_or_else(|| format!("no bundled kernel `{name}`"))?;
    let kernel = bwsim_isa::parser::parse(entry.source).map_err(|d| format!("{name}: parse error {d:?}"))?;
    let overrides = consts
        .iter()
        .map(|c| Override::parse(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{name}: bad override: {e}"))?;
    let (checked, diags) = verify(
        &kernel,
        &VerifyOptions {
            target: Some(target),
            overrides,
        },
    );
    let checked = checked.ok_or_else(|| {
        format!(
            "{name} {target} {consts:?}: verifier rejected it: {}",
            diags
                .iter()
                .map(|d| format!("[{}] {}", d.code, d.message))
                .collect::<Vec<_>>()
                .join("; ")
        )
    })?;
    ptx::lower(&checked).map_err(|e| format!("{name} {target} {consts:?}: {e}"))
}

/// Lower the `.tile` source `src` for `target` with no overrides; panics when it does not parse
/// or verify (the tests' sources are expected to), the lowering's own error otherwise.
pub fn lower_source(src: &str, target: Target) -> Result<PtxModule, ptx::LowerError> {
    let k = bwsim_isa::parser::parse(src).unwrap_or_else(|d| panic!("parses: {d:?}"));
    let (checked, diags) = verify(
        &k,
        &VerifyOptions {
            target: Some(target),
            overrides: vec![],
        },
    );
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    ptx::lower(&checked)
}

/// The targets a bundled kernel lists.
pub fn targets(name: &str) -> Vec<Target> {
    bwsim_kernels::find(name)
        .and_then(|k| bwsim_isa::parser::parse(k.source).ok())
        .map(|k| k.targets)
        .unwrap_or_default()
}
