//! Print docs/gluon.md's table of what differs between the supported Triton releases
//! (`bwsim_gluon::version::FEATURES`), to paste between its `version-table` markers.
//! `cargo test -p bwsim-gluon --test docs` fails while the two differ.

fn main() {
    print!("{}", bwsim_gluon::version::markdown_table());
}
