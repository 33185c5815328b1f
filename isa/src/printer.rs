//! (in progress)
use crate::ir::Kernel;
pub fn print(_k: &Kernel) -> String {
    String::new()
}
