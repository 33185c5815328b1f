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
//! - [`calls`]: the call ABI (calls of the module's `.func` bodies inlined at load, their
//!   `.param` variables and the `.local` ones in each thread's frame), `__assertfail` as a
//!   device assertion.
//! - [`atomic`]: `atom` and `red` on global and shared memory, and their arithmetic (the
//!   simulator's reduction arithmetic); the memory-ordering fences change no value.
//! - [`exec`]: the executor of the synchronous subset (CTAs in turn; within a CTA, warps in
//!   turn; each thread alone until it reaches a synchronising instruction).
//! - [`machine`]: kernels with asynchronous instructions (`mbarrier.*`, `fence.proxy.async`,
//!   `fence.mbarrier_init`, `cp.async.bulk.tensor` and its bulk groups, non-bulk `cp.async`
//!   with its groups and mbarrier arrivals, `wgmma.*`, `tcgen05.*`): each
//!   warp an agent of bwsim's hazard checker (`bwsim_sim::check::hazards`), scheduled by the
//!   simulator's schedulers, with tensor memory and a tensor pipe per CTA whose MMAs decode
//!   their matrix and instruction descriptors and compute with the simulator's MMA arithmetic
//!   (`bwsim_sim::mma`); what `bwsim check FILE.ptx` runs. The CTAs of a cluster run together
//!   (distributed shared memory, cluster barriers, remote arrivals, multicast copies and
//!   commits, cluster launch control, CTA pairs: `cta_group::2` allocations, MMAs of M = 256,
//!   commits and copies onto the pair's barriers).
//! - `undef`: registers LLVM leaves undefined, carried bit by bit through the arithmetic and
//!   reported where an undefined bit reaches memory, an address or a branch.
//! - [`tensormap`]: tensor maps as the launch gives them, and the boxes a bulk tensor copy
//!   moves.
//! - [`launch`]: a Triton kernel's Python parameters (the `// param:` header lines of the PTX
//!   fixtures) expanded into its PTX parameters.
//!
//! Refused with [`Error::Unsupported`] (naming the instruction and its line): sparse and
//! mixed-type `wgmma`, `tcgen05` forms beyond `cta_group::1` MMAs of M = 64 and 128 with f32
//! accumulators (A in shared or tensor memory; block-scaled ones of M = 128) and `cta_group::2`
//! MMAs of M = 256 from shared memory, the `128x256b`, `128x128b` and `32x128b.warpx4` copies
//! (`cta_group::1`) and the unpacked tensor-memory loads and stores (`tcgen05.shift`,
//! sparsity, packing, mixed operand types),
//! vector and `.f64` atomics, calls of functions the module declares without defining them
//! (other than `__assertfail` and `vprintf`, [`calls`]). [`exec::run`] stops with an error
//! at an instruction only the machine runs.
//!
//! # What comes next
//!
//! - **Global memory in the checker.** The machine checks the global accesses of different
//!   CTAs (`machine::global`), not yet those of one CTA, nor the bulk tensor stores' global
//!   writes; the CTAs run in turn, so a CTA that spins on a flag a later CTA sets never ends:
//!   interleaving the CTAs, as the tile machine does, comes next.
//! - **The rest of `tcgen05`.** f16 accumulators, the other CTA-pair shapes and copies.
//! - **Reconvergence.** Independent threads between synchronising instructions suffice for
//!   functional results; the timing model will need warp-level issue (a reconvergence stack or
//!   per-thread pcs grouped by pc).

pub mod atomic;
pub mod calls;
pub mod exec;
pub mod launch;
pub mod machine;
pub mod parse;
pub mod program;
pub mod tensormap;
mod undef;

use bwsim_isa::span::Span;

pub use exec::{buffer_address, run, Arg, Launch, Stats};
pub use parse::{parse, Module};
pub use program::{load, Program};
pub use tensormap::TensorMap;

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
    /// outside shared memory, a divergent collective).
    #[error("{message}")]
    Runtime { message: String, span: Span },
    /// A run stopped at an instruction whose result no public source states for its operands
    /// (a four-lane fp8 lane past the largest finite value, or of a NaN): `unspecified-result`.
    /// `pc` is the instruction's index in the program.
    #[error("{message}")]
    Unspecified { message: String, span: Span, pc: usize },
    /// A launch that does not fit the kernel.
    #[error("launch: {0}")]
    Launch(String),
    /// A run that cannot go on: no warp can step and nothing is in flight. The finding is the
    /// `deadlock`, with its labels on the PTX text; a waited-on barrier whose transaction count
    /// can never reach zero is a `tx-mismatch` finding made just before it
    /// ([`machine::run_to_stop`] keeps the findings made before a stop).
    #[error("{}", .0.diagnostic.message)]
    Stuck(Box<machine::Finding>),
    /// A run stopped by a fault the GPU reports with a CUDA error, as the finding at the
    /// faulting instruction: a failed device assertion (`__assertfail`, `device-assert`), a
    /// global access outside every buffer (`illegal-address`).
    #[error("{}", .0.diagnostic.message)]
    Trap(Box<machine::Finding>),
}

impl Error {
    /// The span of PTX text the error is about (`Span::DUMMY` for launch errors).
    pub fn span(&self) -> Span {
        match self {
            Error::Syntax { span, .. }
            | Error::Unsupported { span, .. }
            | Error::Invalid { span, .. }
            | Error::Runtime { span, .. }
            | Error::Unspecified { span, .. } => *span,
            Error::Stuck(f) | Error::Trap(f) => f.diagnostic.primary.span,
            Error::Launch(_) => Span::DUMMY,
        }
    }
}

/// Parses `src` and resolves its kernel `name`.
pub fn compile(src: &str, name: &str) -> Result<Program, Error> {
    let m = parse(src)?;
    load(src, &m, name)
}
