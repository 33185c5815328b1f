//! The seed kernels as `.tile` sources, with what `bwsim list` says of each.
//!
//! Each kernel lives in `kernels/tiles/NAME.tile`, parametrised by compile-time constants
//! exactly as its tutorial parametrises it, with a `launch { }` section for its default
//! configuration. CPU references (plain Rust, independent of the simulator) live in
//! [`reference`].

pub mod reference;

/// A bundled kernel.
#[derive(Clone, Copy, Debug)]
pub struct KernelEntry {
    pub name: &'static str,
    pub description: &'static str,
    /// The seed document it comes from.
    pub seed: &'static str,
    /// Targets it supports, as text.
    pub targets: &'static str,
    pub source: &'static str,
}

macro_rules! kernels {
    ($( $name:literal, $targets:literal, $seed:literal, $desc:literal; )*) => {
        static KERNELS: &[KernelEntry] = &[
            $( KernelEntry { name: $name, description: $desc, seed: $seed, targets: $targets,
                source: include_str!(concat!("../tiles/", $name, ".tile")) }, )*
        ];
    };
}

kernels! {}

/// Every bundled kernel.
pub fn all() -> &'static [KernelEntry] {
    KERNELS
}

/// A bundled kernel by name.
pub fn find(name: &str) -> Option<&'static KernelEntry> {
    KERNELS.iter().find(|k| k.name == name)
}
