//! bwsim's way to real hardware: the PTX backend ([`ptx`]: lowering of a verified kernel to
//! PTX for sm_100a and sm_90a), the ptxas driver ([`ptxas`]: assembly, diagnostics mapped
//! back to `.tile` spans, SASS disassembly) and the GPU runner ([`runner`]: cudarc, one child
//! process per launch).
//!
//! This crate never imports the simulator; the differential harness that compares the two
//! lives in the `bwsim` binary.

// Lowering errors carry spans and messages; they are built only on the error path.
#![allow(clippy::result_large_err)]

pub mod ptx;
pub mod ptxas;
pub mod runner;
