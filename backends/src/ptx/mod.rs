//! Lowering of a verified kernel ([`Checked`]) to PTX text for sm_100a or sm_90a.
//!
//! [`lower`] walks the kernel once and emits one `.entry`; [`PtxModule`] carries the text with
//! everything a runner needs to launch it (block size, dynamic shared memory, the parameter
//! ABI) and the map from PTX lines back to IR operations, which [`crate::ptxas`] uses to point
//! its diagnostics at `.tile` source.
//!
//! Submodules: [`emit`] (registers, lines), [`linear_layout`] (register-tile layouts as linear maps),
//! [`smem`] (shared-memory geometry and operand descriptors' fields), [`desc`] (descriptor bit
//! encoders); the walk itself is private (`lower`).
//!
//! # PTX version and targets
//!
//! `.version 8.8` for both targets: ptxas 13.5 assembles it for `sm_100a` and `sm_90a`, it is
//! the first version with `.kind::mxf8f6f4.block_scale`
//! (docs/semantics.md#targets-and-ptx-versions), and the project's H100 driver (580, CUDA 13.0, PTX
//! ISA up to 9.0) JITs it. A kernel with four-lane fp8 arithmetic (sm_100a only) is written
//! `.version 9.4` ([`PTX_VERSION_FP8X4`]), the first ptxas takes those forms in.
//! `.address_size 64`.
//!
//! # Launch ABI (what the GPU runner must do)
//!
//! - **Entry**: one `.visible .entry` named like the kernel ([`PtxModule::entry`]).
//! - **Block**: `blockDim = (`[`PtxModule::block_dim`]`[0], 1, 1)`, exactly (the entry declares
//!   `.maxntid` with it). Threads are `32 * warps`: warps `0 .. num_warps` run the default
//!   partition (and all code outside `warp_specialize`, whose cluster barriers every other
//!   warp executes too), then each worker partition in
//!   declaration order (a worker of 4k warps starts on a warpgroup boundary), rounded up to a
//!   multiple of 4 warps when there are workers, as Gluon does.
//! - **Grid**: as the launch spec says; the kernel reads `%ctaid`/`%nctaid` for
//!   `program_id`/`num_programs`.
//! - **Cluster**: an entry declared `.explicitcluster` ([`PtxModule::explicit_cluster`]: the
//!   kernel uses `cluster.sync` or CTA-pair `cta_group::2` operations) is launched with
//!   `cuLaunchKernelEx` and `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` = the launch section's
//!   `cluster`. CTA pairs are CTAs `2r` and `2r + 1` of a cluster along x; the even one issues
//!   the pair's MMAs and commits (`tcgen05.commit.cta_group::2 ... .multicast::cluster` with
//!   mask `0b11 << rank`), and every tcgen05 instruction of such a kernel takes
//!   `.cta_group::2` (ptxas rejects a mix).
//! - **Dynamic shared memory**: [`PtxModule::dynamic_smem_bytes`] (raise
//!   `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` to it when above 48 KiB). The kernel has
//!   no static shared memory; its one `extern .shared .align 1024` array holds the verifier's
//!   plan at the plan's offsets, then backend-private slots (TMEM addresses, values captured
//!   for `warp_specialize` workers) and layout-conversion scratch.
//! - **Parameters**, in [`PtxModule::params`] order (see [`ParamAbi`]): for each IR parameter in
//!   declaration order, `i32` → `.param .u32`, `i64` → `.param .u64`, `f32` → `.param .f32`,
//!   `ptr(T)` → `.param .u64` (a global address), `tensor_desc` → a `CUtensorMap` passed by
//!   value as `.param .align 64 .b8 NAME[128]` followed immediately by one `.param .u32` per
//!   dimension with the global extent of that dimension (IR order, outermost first), which is
//!   what `desc.shape[i]` reads. PTX parameter names are the IR names prefixed with `p_`.
//! - **Tensor maps**: encode with `cuTensorMapEncodeTiled`, dimensions innermost first (reverse
//!   of the IR order), element strides [`ParamAbi::TensorMap::elem_strides`], interleave none, L2 promotion free, the swizzle of
//!   [`ParamAbi::TensorMap::swizzle_bytes`], OOB fill NaN (`NAN_REQUEST_ZERO_FMA`) when `oob`
//!   is `nan` else none, and box = [`ParamAbi::TensorMap::box_dims`] (IR order): the descriptor's
//!   block clipped to 256 elements per dimension and to the swizzle span along the inner one
//!   ([`bwsim_isa::tma::hw_box`]); a copy issues one message per box of its shared buffer, as
//!   Triton does (docs/hardware/tma-messages.md).
//! - **TMEM**: kernels using tensor memory allocate it themselves (`tcgen05.alloc`) and free it
//!   before exiting. The backend lays out the kernel-level buffers itself (scale-factor
//!   buffers in the hardware's shape, docs/hardware/tmem-scales.md).
//! - **Registers**: a kernel with `warp_specialize` register budgets declares `.minnctapersm 1`
//!   (one CTA per SM, so every thread may start with up to 65536 / threads registers).

mod lower;

pub mod desc;
pub mod emit;
pub mod linear_layout;
pub mod smem;

pub use emit::Origin;

use bwsim_isa::typeck::Checked;
use bwsim_isa::types::{DType, Target};
use bwsim_isa::{Code, Span};
use serde::Serialize;

/// The PTX ISA version written in every module.
pub const PTX_VERSION: &str = "8.8";

/// The PTX ISA version of a module with four-lane fp8 arithmetic (`add.rn.e4m3x4.e4m3x4`, ...):
/// ptxas 13.5 takes those forms from `.version 9.4` only (docs/semantics.md#targets-and-ptx-versions).
pub const PTX_VERSION_FP8X4: &str = "9.4";

/// One PTX kernel parameter and what the runner passes in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ParamAbi {
    /// An IR scalar parameter: `ty` is `u32` (IR `i32`, the value's bits), `u64` (`i64`) or
    /// `f32`.
    Scalar {
        ir_name: String,
        ptx_name: String,
        ty: &'static str,
    },
    /// An IR `ptr(dtype)`: a 64-bit global address (`.param .u64`).
    Pointer {
        ir_name: String,
        ptx_name: String,
        dtype: DType,
    },
    /// An IR `tensor_desc`: a 128-byte `CUtensorMap` by value.
    TensorMap {
        ir_name: String,
        ptx_name: String,
        dtype: DType,
        /// The descriptor's block (IR order, outermost first).
        block: Vec<u32>,
        /// The box to encode (IR order): `block` with its inner extent clamped to the swizzle
        /// span.
        box_dims: Vec<u32>,
        /// 0, 32, 64 or 128.
        swizzle_bytes: u32,
        /// `elementStrides` (IR order): the descriptor's `elem_strides`, 1 where none is given.
        elem_strides: Vec<u32>,
        /// `"zero"` or `"nan"`.
        oob: &'static str,
    },
    /// The global extent of dimension `dim` (IR order) of the tensor bound to `ir_name`
    /// (`.param .u32`).
    DescShape {
        ir_name: String,
        ptx_name: String,
        dim: usize,
    },
}

impl ParamAbi {
    /// The PTX parameter name.
    pub fn ptx_name(&self) -> &str {
        match self {
            ParamAbi::Scalar { ptx_name, .. }
            | ParamAbi::Pointer { ptx_name, .. }
            | ParamAbi::TensorMap { ptx_name, .. }
            | ParamAbi::DescShape { ptx_name, .. } => ptx_name,
        }
    }
}

/// A lowered kernel.
#[derive(Clone, Debug, Serialize)]
pub struct PtxModule {
    /// The PTX text.
    pub text: String,
    /// The `.entry` name.
    pub entry: String,
    pub target: Target,
    /// Threads per CTA: `(block_dim[0], 1, 1)`.
    pub block_dim: [u32; 3],
    /// The entry is declared `.explicitcluster` (it uses `cluster.sync` or CTA-pair
    /// `cta_group::2` operations): launch it with a cluster dimension, the launch section's
    /// `cluster` (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`).
    pub explicit_cluster: bool,
    /// Dynamic shared memory to launch with, in bytes.
    pub dynamic_smem_bytes: u32,
    /// The kernel parameters in PTX order.
    pub params: Vec<ParamAbi>,
    /// For each line of `text` (index = line number - 1), the IR operation that produced it.
    pub line_origins: Vec<Option<Origin>>,
}

impl PtxModule {
    /// The IR operation behind a 1-based PTX line number, as ptxas reports it.
    pub fn origin_of_line(&self, line: usize) -> Option<&Origin> {
        line.checked_sub(1)
            .and_then(|i| self.line_origins.get(i))
            .and_then(|o| o.as_ref())
    }
}

/// Why a kernel could not be lowered.
#[derive(Clone, Debug, thiserror::Error, PartialEq)]
pub enum LowerError {
    /// An operation (or form of one) the backend does not lower yet.
    #[error("`{op}` is not supported by the PTX backend yet: {reason}")]
    Unsupported { op: String, span: Span, reason: String },
    /// The kernel breaks a rule the verifier should have caught, or needs more of a resource
    /// than the target has once the backend's own needs are added.
    #[error("cannot lower `{op}`: {reason}")]
    Invalid { op: String, span: Span, reason: String },
}

impl LowerError {
    pub fn span(&self) -> Span {
        match self {
            LowerError::Unsupported { span, .. } | LowerError::Invalid { span, .. } => *span,
        }
    }

    /// The error as a diagnostic on the operation's span (`ptx-unsupported` or
    /// `ptx-invalid`).
    pub fn to_diagnostic(&self) -> bwsim_isa::Diagnostic {
        match self {
            LowerError::Unsupported { op, span, .. } => bwsim_isa::Diagnostic::error(
                Code::PtxUnsupported,
                self.to_string(),
                *span,
                format!("`{op}` here"),
            )
            .with_help("the simulator runs this kernel; the PTX backend cannot lower it yet"),
            LowerError::Invalid { op, span, .. } => bwsim_isa::Diagnostic::error(
                Code::PtxInvalid,
                self.to_string(),
                *span,
                format!("`{op}` here"),
            ),
        }
    }
}

/// Lower a verified kernel (from [`bwsim_isa::verify::verify`]) to PTX for `checked.target`.
pub fn lower(checked: &Checked) -> Result<PtxModule, LowerError> {
    lower::lower(checked)
}
