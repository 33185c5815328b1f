//! `bwsim`: the command line. This file only parses arguments and dispatches to
//! [`commands`]; everything else lives in the library crates.

mod commands;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Simulate, check and lower NVIDIA Blackwell (sm_100a) and Hopper (sm_90a) tile kernels.
///
/// A kernel is a `.tile` file (see docs/tile-format.md) or the name of a bundled kernel
/// (`bwsim list`). Start with:
///
///   bwsim list                                  # bundled kernels
///   bwsim run elementwise_add_ws                # simulate one and check it against its CPU reference
///   bwsim verify my_kernel.tile                 # static rules, rustc-style diagnostics
///   bwsim fmt my_kernel.tile                    # canonical form
#[derive(Parser)]
#[command(name = "bwsim", version, about, long_about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a kernel in canonical .tile form (comments kept).
    ///
    /// Examples:
    ///   bwsim fmt kernel.tile            # print the canonical form
    ///   bwsim fmt --write kernel.tile    # rewrite the file in place
    ///   bwsim fmt --check kernel.tile    # exit 1 if the file is not canonical
    ///   bwsim fmt --json kernel.tile     # the IR as JSON
    #[command(verbatim_doc_comment)]
    Fmt(commands::fmt::Args),
    /// Check a kernel against the static rules before anything runs; exit 1 on error.
    ///
    /// Examples:
    ///   bwsim verify kernel.tile
    ///   bwsim verify kernel.tile --target sm_90a --const BLOCK_N=128
    ///   bwsim verify kernel.tile --json
    ///   bwsim verify --rules             # list every rule code
    #[command(verbatim_doc_comment)]
    Verify(commands::verify::Args),
    /// List the bundled kernels with the seed each comes from.
    List(commands::list::Args),
    /// Simulate a kernel on its launch spec's inputs and check the outputs against the CPU
    /// reference; exit 1 on FAIL, trap or deadlock.
    ///
    /// Examples:
    ///   bwsim run elementwise_add_ws                     # default configuration: PASS/FAIL
    ///   bwsim run async_gather --const DTYPE=f32 --const Y_OFFSET=-16
    ///   bwsim run async_gather --const Y_OFFSET=2        # the tutorial's illegal instruction
    ///   bwsim run kernel.tile --seed 7 --trace run.txt --chrome run.json
    ///   bwsim run matmul_pipelined --target sm_90a --json
    #[command(verbatim_doc_comment)]
    Run(commands::run::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Fmt(a) => commands::fmt::run(a),
        Command::Verify(a) => commands::verify::run(a),
        Command::List(a) => commands::list::run(a),
        Command::Run(a) => commands::run::run(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
