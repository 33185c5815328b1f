//! `bwsim`: the command line. This file only parses arguments and dispatches to
//! [`commands`]; everything else lives in the library crates. How the process meets its
//! surroundings (closed pipes, full disks, signals) is [`output`] and [`interrupt`].

#[macro_use]
mod output;
mod commands;
mod interrupt;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Simulate, check and lower NVIDIA Blackwell (sm_100a) and Hopper (sm_90a) tile kernels.
///
/// A kernel is a `.tile` file (see docs/tile-format.md), the TTGIR of a Gluon kernel
/// (`.ttgir`, see `bwsim import --help`) or the name of a bundled kernel (`bwsim list`).
/// Start with:
///
///   bwsim list                                  # bundled kernels
///   bwsim run elementwise_add_ws                # simulate one and check it against its CPU reference
///   bwsim check elementwise_add_ws              # hazards (races, fences, barriers) over 200 schedules
///   bwsim verify my_kernel.tile                 # static rules, rustc-style diagnostics
///   bwsim time matmul_pipelined --chip h100     # predicted time, TFLOP/s, utilisation
///   bwsim ptx matmul_pipelined --target sm_90a  # the same kernel as PTX
#[derive(Parser)]
#[command(
    name = "bwsim",
    version,
    about,
    long_about,
    verbatim_doc_comment,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The Triton release (3.6.0 to 3.9.0) that compiled a `.ttgir` input, for a file that does
    /// not say: one without the `// triton-version: X.Y.Z` first line that
    /// tools/gluon_to_ttgir.py writes, and without Triton's cache metadata (`NAME.json`) next to
    /// it. Without any of these, bwsim reads the file as the earliest release whose syntax it
    /// matches.
    #[arg(long, global = true, value_name = "X.Y.Z", value_parser = triton_release)]
    triton_version: Option<String>,
}

/// `--triton-version`: a supported Triton release, refused with the supported list otherwise.
fn triton_release(s: &str) -> Result<String, String> {
    bwsim_gluon::Version::parse(s)
        .map(|_| s.trim().to_string())
        .map_err(|e| e.to_string())
}

#[derive(Subcommand)]
enum Command {
    /// List the bundled kernels with the seed each comes from.
    List(commands::list::Args),
    /// Simulate a kernel on its launch spec's inputs and check the outputs against the CPU
    /// reference; exit 1 on FAIL, trap, deadlock or an error diagnostic (warnings alone exit 0).
    ///
    /// The run is checked as `bwsim check` checks one schedule; `--deny`, `--warn` and
    /// `--allow` set the levels of its diagnostics (see `bwsim check --help`).
    ///
    /// Examples:
    ///   bwsim run elementwise_add_ws                     # default configuration: PASS/FAIL
    ///   bwsim run async_gather --const DTYPE=f32 --const Y_OFFSET=-16
    ///   bwsim run async_gather --const Y_OFFSET=2        # the tutorial's illegal instruction
    ///   bwsim run kernel.tile --seed 7 --trace run.txt --chrome run.json
    ///   bwsim run matmul_pipelined --target sm_90a --json
    ///   bwsim run kernel.tile --deny warnings --format sarif > run.sarif
    ///   bwsim run softmax.sm_90a.ptx --launch softmax.launch --save-outputs out/
    ///                                                    # Triton's PTX on the PTX front end
    #[command(verbatim_doc_comment)]
    Run(commands::run::Args),
    /// Run a kernel under many schedules with the hazard checker; exit 1 on any error.
    ///
    /// Reports races, missing proxy fences, reads before completion, writes while in flight,
    /// phase aliasing, deadlocks (with the wait-for graph), tx mismatches, over-arrivals,
    /// uninitialised reads, TMEM leaks, barrier misuse and illegal instructions, each distinct
    /// diagnostic once with the first schedule seed that shows it.
    ///
    /// Levels work as in rustc and clippy: every code has a default level (`bwsim verify
    /// --rules`: `deny` is an error, `warn` a warning). Errors exit 1; warnings are printed
    /// and exit 0. `uninit-read` is a warning: it says whether the undefined bytes reach a
    /// global store, an address, a branch condition or an MMA operand (tracked through every
    /// value computed from them, as Valgrind's memcheck does).
    ///
    ///   --deny uninit-read       make a lint an error (-D)
    ///   --deny warnings          make every warning an error (CI)
    ///   --warn race              report a lint without failing (-W)
    ///   --allow uninit-read      silence a lint (-A)
    ///   --format sarif           SARIF 2.1.0 on stdout, for code scanning
    ///
    /// Examples:
    ///   bwsim check kernel.tile                     # 200 schedules on every core
    ///   bwsim check elementwise_add_ws --schedules 1000 --jobs 2
    ///   bwsim check kernel.tile --seed 17           # replay one schedule exactly
    ///   bwsim check kernel.tile --seed 17 --trace   # ... and print its event trace
    ///   bwsim check kernel.tile --json              # findings as JSON
    ///   bwsim check kernel.tile --deny uninit-read  # an uninitialised read fails the check
    ///   bwsim check kernel.tile -D warnings --format sarif > check.sarif
    #[command(verbatim_doc_comment)]
    Check(commands::check::Args),
    /// Check a kernel against the static rules before anything runs; exit 1 on error.
    ///
    /// Examples:
    ///   bwsim verify kernel.tile
    ///   bwsim verify kernel.tile --target sm_90a --const BLOCK_N=128
    ///   bwsim verify kernel.tile --json
    ///   bwsim verify --rules             # list every rule code
    #[command(verbatim_doc_comment)]
    Verify(commands::verify::Args),
    /// Print a kernel in canonical .tile form (comments kept).
    ///
    /// Examples:
    ///   bwsim fmt kernel.tile            # print the canonical form
    ///   bwsim fmt --write kernel.tile    # rewrite the file in place
    ///   bwsim fmt --check kernel.tile    # exit 1 if the file is not canonical
    ///   bwsim fmt --json kernel.tile     # the IR as JSON
    #[command(verbatim_doc_comment)]
    Fmt(commands::fmt::Args),
    /// Predict a kernel's time on a chip: cycles, TFLOP/s or TB/s, unit utilisation, the
    /// critical resource, and optionally a Perfetto trace.
    ///
    /// Examples:
    ///   bwsim time matmul_warp_specialized --chip gb200 --const M=8192 --const N=8192 --const K=16384 --timing-only
    ///   bwsim time matmul_pipelined --chip h100 --const NUM_BUFFERS=4 --json
    ///   bwsim time elementwise_add_ws --chip b200 --chrome trace.json --trace-sm 0
    #[command(verbatim_doc_comment)]
    Time(commands::time::Args),
    /// Lower a kernel to PTX (sm_100a or sm_90a); assemble it with ptxas, show its SASS.
    ///
    /// ptxas, cuobjdump and nvdisasm are found through BWSIM_PTXAS / BWSIM_CUDA_BIN, PATH, or
    /// .tools/py/nvidia/cu13/bin (where `bash scripts/test` installs them from PyPI).
    ///
    /// Examples:
    ///   bwsim ptx matmul_pipelined --target sm_90a              # PTX on standard output
    ///   bwsim ptx kernel.tile -o kernel.ptx --cubin kernel.cubin
    ///   bwsim ptx async_gather --sass | grep GATHER4             # assembled, disassembled
    ///   bwsim ptx tcgen05_copy --const N=128 --json              # PTX plus the launch ABI
    #[command(verbatim_doc_comment)]
    Ptx(commands::ptx::Args),
    /// Run kernels on the local GPU and diff every output against the simulator.
    ///
    /// Each launch runs in a child process with a watchdog: an illegal instruction is reported
    /// as `trap: ...`, a kernel that never finishes as `hang: ...`, and the next case runs.
    /// Inputs are random (seeded, never zeros) and identical for both sides; data movement is
    /// compared bit for bit, MMA results within a stated tolerance, planted faults by the CUDA
    /// error they raise. Without a GPU every case is prepared up to the launch and reported as
    /// skipped (exit status 77).
    ///
    /// Examples:
    ///   bwsim gpu elementwise_add_tma --seed 3        # one kernel on the local GPU
    ///   bwsim gpu matmul_pipelined --const NUM_BUFFERS=4
    ///   bwsim gpu --all                               # every case for this GPU, as a table
    ///   bwsim gpu --all --dry-run                     # lower, assemble, prepare; run nothing
    ///   bwsim gpu --list                              # the differential cases
    ///   bwsim gpu softmax.sm_90a.ptx --launch softmax.launch
    ///                                                 # a PTX file against the PTX front end
    ///   bwsim gpu --all --filter ptx/ --json          # the PTX fixtures
    ///   bwsim gpu kernels/bench/wgmma_rate.tile --target sm_90a --time 20 --no-check --json
    ///                                                 # 20 timed launches, no simulator
    #[command(verbatim_doc_comment)]
    Gpu(commands::gpu::Args),
    /// Child process of `bwsim gpu` (one launch in an isolated process).
    #[command(name = "__gpu-child", hide = true)]
    GpuChild { dir: std::path::PathBuf },
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
    #[command(verbatim_doc_comment)]
    Import(commands::import::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    commands::set_import_options(bwsim_gluon::ImportOptions {
        triton_version: cli.triton_version.clone(),
    });
    if matches!(
        cli.command,
        Command::Check(_) | Command::Run(_) | Command::Time(_)
    ) {
        interrupt::install();
    }
    let r = match cli.command {
        Command::Fmt(a) => commands::fmt::run(a),
        Command::Verify(a) => commands::verify::run(a),
        Command::List(a) => commands::list::run(a),
        Command::Ptx(a) => commands::ptx::run(a),
        Command::Gpu(a) => commands::gpu::run(a),
        Command::GpuChild { dir } => {
            let code = bwsim_backends::runner::child_main(&dir);
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
        Command::Time(a) => commands::time::run(a),
        Command::Import(a) => commands::import::run(a),
        Command::Check(a) => commands::check::run(a),
        Command::Run(a) => commands::run::run(a),
    };
    let code = match r {
        Ok(code) => code,
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(2)
        }
    };
    if let Err(reason) = output::finish() {
        errln!("error: cannot write to standard output: {reason}");
        return ExitCode::from(2);
    }
    // A signal that came after the last point that looks for one: the work is done and
    // reported, but the status still says it was interrupted.
    match interrupt::requested() {
        Some((_, status)) => ExitCode::from(status),
        None => code,
    }
}
