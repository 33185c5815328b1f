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
    Fmt(commands::fmt::Args),
    /// Check a kernel against the static rules before anything runs; exit 1 on error.
    ///
    /// Examples:
    ///   bwsim verify kernel.tile
    ///   bwsim verify kernel.tile --target sm_90a --const BLOCK_N=128
    ///   bwsim verify kernel.tile --json
    ///   bwsim verify --rules             # list every rule code
    Verify(commands::verify::Args),
    /// List the bundled kernels with the seed each comes from.
    List(commands::list::Args),
    /// Import the TTGIR of a Gluon kernel and print it as .tile source.
    ///
    /// Produce the TTGIR with tools/gluon_to_ttgir.py (pip install triton==3.6.0; no GPU
    /// needed). A NAME.launch file next to NAME.ttgir (or NAME.sm_100a.ttgir) supplies the
    /// launch section. Every command that takes a .tile file also takes a .ttgir file.
    ///
    /// Examples:
    ///   bwsim import add.sm_100a.ttgir                 # print the .tile source
    ///   bwsim import add.sm_100a.ttgir -o add.tile     # write it
    ///   bwsim import add.sm_100a.ttgir --json          # diagnostics as JSON on failure
    Import(commands::import::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Fmt(a) => commands::fmt::run(a),
        Command::Verify(a) => commands::verify::run(a),
        Command::List(a) => commands::list::run(a),
        Command::Import(a) => commands::import::run(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
