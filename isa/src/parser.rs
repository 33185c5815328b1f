//! (in progress)
use crate::{ir::Kernel, Diagnostic};
pub fn parse(_src: &str) -> Result<Kernel, Vec<Diagnostic>> {
    Err(vec![])
}
