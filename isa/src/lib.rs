//! bwsim's tile IR: the language every other part of bwsim consumes.
//!
//! - [`ir`]: the IR itself (kernels, statements, operations, expressions), plain data.
//! - [`builtins`]: run-time math functions and reduction combiners.
//! - [`types`]: element types, targets, swizzle modes: each hardware fact once.
//! - [`lexer`], [`parser`], [`printer`]: the `.tile` text format (docs/tile-format.md);
//!   `print(parse(text))` is canonical and `parse(print(ir)) == ir`.
//! - [`consts`]: compile-time constants and constant evaluation.
//! - [`typeck`]: types of every value, resolved layouts and shapes.
//! - [`verify`]: the static rules of docs/semantics.md#static-rules, each with a stable code.
//! - [`placement`]: where an element of a shared- or tensor-memory buffer lives (the one
//!   placement function of the simulator and the backends).
//! - [`tma`]: how a TMA copy moves a buffer: the hardware box and the messages.
//! - [`builder`]: constructing kernels from Rust.
//! - [`launch`]: launch specs and host data; [`limits`]: resource limits of a launch.
//! - [`diag`]: diagnostics rendered like rustc; [`codes`]: the one table of their codes and levels.
//! - [`directives`]: the `// KEY: VALUE` header lines of test files and launch sidecars.
//!
//! This crate knows nothing of the simulator or the backends.

// Errors are `Diagnostic`s (spans, labels, notes): large, but only built on the error path.
#![allow(clippy::result_large_err)]

pub mod builder;
pub mod builtins;
pub mod codes;
pub mod consts;
pub mod diag;
pub mod directives;
pub mod ids;
pub mod inline_ptx;
pub mod ir;
pub mod launch;
pub mod levels;
pub mod lexer;
pub mod limits;
pub mod numeric;
pub mod packed_arith;
pub mod parser;
pub mod placement;
pub mod pool;
pub mod printer;
pub mod rules;
pub mod sarif;
pub mod span;
pub mod tma;
pub mod typeck;
pub mod types;
pub mod value_types;
pub mod verify;

pub use codes::{Code, Level, Stage};
pub use diag::{Diagnostic, Severity};
pub use ir::Kernel;
pub use span::{SourceFile, Span};
pub use types::{DType, Target};

/// Parse `.tile` source text into a kernel.
pub fn parse(file: &SourceFile) -> Result<Kernel, Vec<Diagnostic>> {
    parser::parse(&file.text)
}

/// Print a kernel in canonical `.tile` form.
pub fn print(kernel: &Kernel) -> String {
    printer::print(kernel)
}
