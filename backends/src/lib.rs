//! placeholder
pub mod runner;
