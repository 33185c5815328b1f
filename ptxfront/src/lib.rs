//! bwsim's PTX front end: PTX as compilers emit it (ISA 8.x and 9.x, `sm_90a`/`sm_100a`), read
//! and run on the CPU, thread by thread, so that kernels written in any language that ends in
//! PTX (CUDA, CUTLASS/CuTe DSL, TVM, Triton's final output) can be run against a reference.
//!
//! - [`parse`]: the module (header directives, variables, `.entry` kernels with parameters,
//!   registers, shared declarations, labels, instructions with guards, modifiers and operands,
//!   each instruction with its PTX line and the `.loc` position in force), read from the
//!   tokens of bwsim-isa's PTX lexer ([`bwsim_isa::inline_ptx::lex`], shared with the
//!   inline-PTX parser).
//! - [`program`]: a kernel resolved for execution; arithmetic, logic, comparison, selection and
//!   conversion instructions are resolved and later executed by bwsim-isa's inline-PTX
//!   interpreter ([`bwsim_isa::inline_ptx`]), which owns their semantics; this crate adds what a
//!   whole kernel needs (special registers, memories, branches, barriers, warp collectives).
//! - [`exec`]: the executor (CTAs in turn; within a CTA, warps in turn; each thread alone until
//!   it reaches a synchronising instruction).
//!
//! Milestone 1 covers the synchronous subset. Refused with [`Error::Unsupported`] (naming the
//! instruction and its line): asynchronous instructions (`mbarrier`, `cp.async[.bulk.tensor]`,
//! `tcgen05`, `wgmma`), atomics, fences, local memory, calls, clusters.
//!
//! # What the next milestone needs
//!
//! - **Warps as agents.** The executor's unit of progress is already one warp (run each lane to
//!   its next synchronising instruction, then resolve the warp's collectives). To make a warp an
//!   agent of bwsim's machine, a warp's step becomes "run to the next synchronising or
//!   asynchronous instruction", the machine's scheduler picks which warp steps next (so that its
//!   schedule exploration and the hazard checker see PTX warps as they see `.tile` warp
//!   groups), and the memories move from [`exec`]'s byte vectors to the machine's global and
//!   shared memories (with their hazard shadows). `bar.sync` maps to the machine's named
//!   barriers; `mbarrier.*` to its mbarrier objects (arrive counts, transaction bytes, phases);
//!   `tcgen05.*`/`wgmma` and `cp.async.bulk.tensor` to its asynchronous units, issued by the
//!   elected lane.
//! - **Tensor maps from the launch.** A TMA kernel receives each `CUtensorMap` as a
//!   `.param .align 64 .b8 NAME[128]` parameter ([`exec::Arg::Bytes`] already places the bytes).
//!   The launch should carry, per such parameter, the descriptor's fields (global address as a
//!   launch buffer, element type, dims and strides, box, swizzle, interleave, OOB fill) instead
//!   of opaque bytes; `cp.async.bulk.tensor` resolves its `[tmap, {coords}]` operand to the
//!   parameter and asks bwsim-isa's `tma` module for the box's messages, as the `.tile` path
//!   does.
//! - **Reconvergence.** Independent threads between synchronising instructions suffice for
//!   functional results; the timing model will need warp-level issue (a reconvergence stack or
//!   per-thread pcs grouped by pc).

pub mod exec;
pub mod parse;
pub mod program;

use bwsim_isa::span::Span;

pub use exec::{buffer_address, run, Arg, Launch, Stats};
pub use parse::{parse, Module};
pub use program::{load, Program};

/// Everything that can go wrong, each with the span of the PTX text it is about (byte offsets
/// into the file) where it has one.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Error {
    /// Malformed PTX.
    #[error("{message}")]
    Syntax { message: String, span: Span },
    /// Well-formed PTX the front end does not run yet.
    #[error("`{opcode}` (PTX line {line}) is not supported yet by bwsim's PTX front end{}", if why.is_empty() { String::new() } else { format!(": {why}") })]
    Unsupported {
        opcode: String,
        line: u32,
        span: Span,
        why: String,
    },
    /// An instruction whose operands do not fit its form.
    #[error("{message}")]
    Invalid { message: String, span: Span },
    /// A run stopped by the kernel's behaviour (a read of an unwritten register, an access
    /// outside every buffer, a divergent collective, a deadlock).
    #[error("{message}")]
    Runtime { message: String, span: Span },
    /// A launch that does not fit the kernel.
    #[error("launch: {0}")]
    Launch(String),
}

impl Error {
    /// The span of PTX text the error is about (`Span::DUMMY` for launch errors).
    pub fn span(&self) -> Span {
        match self {
            Error::Syntax { span, .. }
            | Error::Unsupported { span, .. }
            | Error::Invalid { span, .. }
            | Error::Runtime { span, .. } => *span,
            Error::Launch(_) => Span::DUMMY,
        }
    }
}

/// Parses `src` and resolves its kernel `name`.
pub fn compile(src: &str, name: &str) -> Result<Program, Error> {
    let m = parse(src)?;
    load(src, &m, name)
}
