//! The code tables of README.md and docs/codes.md, generated from the one table of codes
//! (`bwsim_isa::codes`). Prints the files that are out of date; `--write` rewrites them.
//!
//! `cargo run -p bwsim-isa --example code_tables -- --write` (from the repository root).

use bwsim_isa::codes::doc_tables;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let write = std::env::args().any(|a| a == "--write");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut stale = 0;
    for t in doc_tables() {
        let path = root.join(t.path);
        let text = match std::fs::read_to_string(&path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("cannot read {}: {e}", t.path);
                return ExitCode::from(2);
            }
        };
        let Some(new) = t.splice(&text) else {
            eprintln!(
                "{} has no `<!-- codes:{} -->` ... `<!-- /codes:{} -->` markers",
                t.path, t.marker, t.marker
            );
            return ExitCode::from(2);
        };
        if new == text {
            continue;
        }
        stale += 1;
        if write {
            if let Err(e) = std::fs::write(&path, new) {
                eprintln!("cannot write {}: {e}", t.path);
                return ExitCode::from(2);
            }
            println!("wrote the `{}` table of {}", t.marker, t.path);
        } else {
            println!("the `{}` table of {} is out of date", t.marker, t.path);
        }
    }
    if stale > 0 && !write {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
