//! Element types, scalar types, targets and the closed sets of layouts the IR knows.
//!
//! Every fact about an element type (bit width, name, whether the tensor core can take
//! it) lives here once; the simulator and the backends ask these functions.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Element type of a tile, a buffer or a global tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum DType {
    F32,
    F16,
    BF16,
    TF32,
    F8E4M3,
    F8E5M2,
    F4E2M1,
    UE8M0,
    UE4M3,
    I1,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

impl DType {
    /// All element types, in the order the printer and generators use.
    pub const ALL: [DType; 18] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::TF32,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::F4E2M1,
        DType::UE8M0,
        DType::UE4M3,
        DType::I1,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
    ];

    /// Storage width in bits (tf32 is stored in 32 bits; i1 in 8).
    pub fn bits(self) -> u32 {
        match self {
            DType::F32 | DType::TF32 | DType::I32 | DType::U32 => 32,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 16,
            DType::F8E4M3 | DType::F8E5M2 | DType::UE8M0 | DType::UE4M3 | DType::I8 | DType::U8 => 8,
            DType::I1 => 8,
            DType::F4E2M1 => 4,
            DType::I64 | DType::U64 => 64,
        }
    }
    /// Storage size in bytes, rounded up (fp4 counts as 1; use [`DType::bits`] for packing).
    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }
    /// The name used in `.tile` text (Gluon's short names).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::TF32 => "tf32",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
            DType::F4E2M1 => "f4e2m1",
            DType::UE8M0 => "ue8m0",
            DType::UE4M3 => "ue4m3",
            DType::I1 => "i1",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
        }
    }
    /// Parse a `.tile` element-type name.
    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| d.name() == s)
    }
    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F32
                | DType::F16
                | DType::BF16
                | DType::TF32
                | DType::F8E4M3
                | DType::F8E5M2
                | DType::F4E2M1
                | DType::UE8M0
                | DType::UE4M3
        )
    }
    pub fn is_int(self) -> bool {
        !self.is_float()
    }
    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }
    /// Scale-factor types of block-scaled MMA.
    pub fn is_scale(self) -> bool {
        matches!(self, DType::UE8M0 | DType::UE4M3)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Scalar (per-partition uniform) value types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScalarTy {
    I1,
    I32,
    I64,
    F32,
}

impl ScalarTy {
    pub fn name(self) -> &'static str {
        match self {
            ScalarTy::I1 => "i1",
            ScalarTy::I32 => "i32",
            ScalarTy::I64 => "i64",
            ScalarTy::F32 => "f32",
        }
    }
    pub fn from_name(s: &str) -> Option<ScalarTy> {
        match s {
            "i1" | "bool" => Some(ScalarTy::I1),
            "i32" => Some(ScalarTy::I32),
            "i64" => Some(ScalarTy::I64),
            "f32" => Some(ScalarTy::F32),
            _ => None,
        }
    }
    pub fn dtype(self) -> DType {
        match self {
            ScalarTy::I1 => DType::I1,
            ScalarTy::I32 => DType::I32,
            ScalarTy::I64 => DType::I64,
            ScalarTy::F32 => DType::F32,
        }
    }
}

/// The GPU a kernel is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Target {
    /// Blackwell datacenter (B200/GB200): tcgen05, TMEM, gather4/scatter4.
    Sm100a,
    /// Hopper (H100/H200): TMA, mbarrier, wgmma.
    Sm90a,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Sm100a => "sm_100a",
            Target::Sm90a => "sm_90a",
        }
    }
    pub fn from_name(s: &str) -> Option<Target> {
        match s {
            "sm_100a" => Some(Target::Sm100a),
            "sm_90a" => Some(Target::Sm90a),
            _ => None,
        }
    }
    /// The value of the built-in constant `SM` (100 or 90).
    pub fn sm(self) -> i64 {
        match self {
            Target::Sm100a => 100,
            Target::Sm90a => 90,
        }
    }
    pub fn has_tcgen05(self) -> bool {
        self == Target::Sm100a
    }
    pub fn has_wgmma(self) -> bool {
        self == Target::Sm90a
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Fill value of out-of-bounds TMA load elements (`CU_TENSOR_MAP_FLOAT_OOB_FILL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum OobFill {
    /// Zeros.
    #[default]
    Zero,
    /// `NAN_REQUEST_ZERO_FMA`: the 16-bit pattern 0x7FF7 repeated (docs/semantics.md#tma).
    Nan,
}

impl OobFill {
    pub fn name(self) -> &'static str {
        match self {
            OobFill::Zero => "zero",
            OobFill::Nan => "nan",
        }
    }
}

/// Shared-memory swizzle mode (docs/semantics.md#shared-memory-swizzle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Swizzle {
    None,
    B32,
    B64,
    B128,
}

impl Swizzle {
    pub fn from_bytes(b: i64) -> Option<Swizzle> {
        match b {
            0 => Some(Swizzle::None),
            32 => Some(Swizzle::B32),
            64 => Some(Swizzle::B64),
            128 => Some(Swizzle::B128),
            _ => None,
        }
    }
    /// Span of one swizzled row in bytes (0 when unswizzled).
    pub fn bytes(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }
    /// Period after which the XOR pattern repeats, which is also the alignment a swizzled
    /// buffer needs for its pattern to start at its first byte
    /// (docs/semantics.md#shared-memory-swizzle).
    pub fn period(self) -> u32 {
        match self {
            Swizzle::None => 16,
            Swizzle::B32 => 256,
            Swizzle::B64 => 512,
            Swizzle::B128 => 1024,
        }
    }
    /// Physical byte address of logical byte address `addr` (absolute shared address).
    /// 32B: bit 4 ^= bit 7; 64B: bits 5:4 ^= bits 8:7; 128B: bits 6:4 ^= bits 9:7.
    pub fn apply(self, addr: u32) -> u32 {
        match self {
            Swizzle::None => addr,
            Swizzle::B32 => addr ^ (((addr >> 7) & 1) << 4),
            Swizzle::B64 => addr ^ (((addr >> 7) & 3) << 4),
            Swizzle::B128 => addr ^ (((addr >> 7) & 7) << 4),
        }
    }
}

/// The 21 test vectors of docs/semantics.md#shared-memory-swizzle (H100-measured): a logical
/// address and its physical address under the 32, 64 and 128-byte swizzles. The tests of every
/// crate that places swizzled bytes check against these.
pub const SWIZZLE_VECTORS: [(u32, u32, u32, u32); 7] = [
    (0, 0, 0, 0),
    (16, 16, 16, 16),
    (128, 144, 144, 144),
    (176, 160, 160, 160),
    (256, 256, 288, 288),
    (640, 656, 656, 720),
    (896, 912, 944, 1008),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The 21 test vectors of docs/semantics.md#shared-memory-swizzle (H100-measured).
    #[test]
    fn swizzle_vectors_measured() {
        for (a, s32, s64, s128) in SWIZZLE_VECTORS {
            assert_eq!(Swizzle::B32.apply(a), s32, "32B at {a}");
            assert_eq!(Swizzle::B64.apply(a), s64, "64B at {a}");
            assert_eq!(Swizzle::B128.apply(a), s128, "128B at {a}");
        }
    }

    #[test]
    fn dtype_names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
    }
}
