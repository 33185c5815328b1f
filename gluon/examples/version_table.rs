//! Print docs/gluon.md's generated tables from `bwsim_gluon::version::FEATURES`: with no
//! argument (or `versions`) the table of what differs between the supported Triton releases,
//! with `coverage` the operation coverage table; paste each between its markers.
//! `cargo test -p bwsim-gluon --test docs` fails while a table and the docs differ.

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("coverage") => print!("{}", bwsim_gluon::version::coverage_table()),
        _ => print!("{}", bwsim_gluon::version::markdown_table()),
    }
}
