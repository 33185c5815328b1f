//! Bit encoders for the tensor-core descriptors (docs/semantics.md#descriptors,
//! docs/semantics.md#wgmma): the tcgen05 shared-memory matrix descriptor, the tcgen05 instruction
//! descriptor (plain and block-scaled), and the wgmma shared-memory matrix descriptor.
//!
//! Pure functions of their fields; [`super::smem::operand_desc`] decides the fields of an
//! operand and the lowering adds the run-time start address.

use super::smem::Major;
use bwsim_isa::types::{DType, Swizzle};
use std::fmt;

/// A field that does not fit its descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescError(pub String);

impl fmt::Display for DescError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn enc14(what: &str, bytes: u64) -> Result<u64, DescError> {
    if !bytes.is_multiple_of(16) || bytes >> 4 > 0x3FFF {
        return Err(DescError(format!(
            "{what} of {bytes} bytes is not a multiple of 16 below 256 KiB"
        )));
    }
    Ok(bytes >> 4)
}

/// Which instruction a shared-memory matrix descriptor is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmemDescKind {
    /// wgmma's: start >> 4 in 13:0, LBO >> 4 in 29:16, SBO >> 4 in 45:32, base offset in
    /// 51:49, layout in 63:62 (0 none, 1 128B, 2 64B, 3 32B).
    Wgmma,
    /// tcgen05's: the fields of wgmma's and the fixed 0b001 in 48:46. Its layout field is 63:61
    /// (0 none, 2 128B, 4 64B, 6 32B): the same bits as wgmma's 63:62.
    Tcgen05,
}

/// A shared-memory matrix descriptor (64 bits) of `kind`.
pub fn smem_desc(
    kind: SmemDescKind,
    start: u64,
    lbo: u32,
    sbo: u32,
    swizzle: Swizzle,
    base_offset: u32,
) -> Result<u64, DescError> {
    let layout: u64 = match swizzle {
        Swizzle::None => 0,
        Swizzle::B128 => 1,
        Swizzle::B64 => 2,
        Swizzle::B32 => 3,
    };
    let fixed = match kind {
        SmemDescKind::Wgmma => 0,
        SmemDescKind::Tcgen05 => 1u64 << 46,
    };
    Ok(enc14("start address", start)?
        | enc14("leading byte offset", lbo as u64)? << 16
        | enc14("stride byte offset", sbo as u64)? << 32
        | fixed
        | ((base_offset & 7) as u64) << 49
        | layout << 62)
}

/// The `.kind` of a tcgen05.mma.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaKind {
    F16,
    Tf32,
    F8f6f4,
    I8,
    /// `.kind::mxf8f6f4.block_scale` (one ue8m0 factor per 32 K).
    Mxf8f6f4,
    /// `.kind::mxf4.block_scale.scale_vec::2X` (fp4 with ue8m0 factors per 32 K).
    Mxf4,
    /// `.kind::mxf4nvf4.block_scale.scale_vec::4X` (fp4 with ue4m3 factors per 16 K).
    Mxf4Nvf4,
}

impl MmaKind {
    /// The kind for operand types (and scale-factor type when block-scaled).
    pub fn select(a: DType, b: DType, scale: Option<DType>) -> Result<MmaKind, DescError> {
        let f8f6f4 = |d: DType| matches!(d, DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1);
        match scale {
            None => match (a, b) {
                (DType::F16, DType::F16) | (DType::BF16, DType::BF16) => Ok(MmaKind::F16),
                (DType::TF32 | DType::F32, DType::TF32 | DType::F32) => Ok(MmaKind::Tf32),
                (DType::F4E2M1, _) | (_, DType::F4E2M1) => {
                    Err(DescError("fp4 operands without block scaling (kind::f8f6f4 with 8-bit containers) are not supported by the PTX backend".into()))
                }
                (x, y) if f8f6f4(x) && f8f6f4(y) => Ok(MmaKind::F8f6f4),
                (DType::I8 | DType::U8, DType::I8 | DType::U8) => Ok(MmaKind::I8),
                _ => Err(DescError(format!("no tcgen05.mma kind takes {a} x {b}"))),
            },
            Some(s) => match (a, b, s) {
                (DType::F4E2M1, DType::F4E2M1, DType::UE8M0) => Ok(MmaKind::Mxf4),
                (DType::F4E2M1, DType::F4E2M1, DType::UE4M3) => Ok(MmaKind::Mxf4Nvf4),
                (x, y, DType::UE8M0) if f8f6f4(x) && f8f6f4(y) => Ok(MmaKind::Mxf8f6f4),
                _ => Err(DescError(format!("no block-scaled tcgen05.mma kind takes {a} x {b} with {s} scale factors"))),
            },
        }
    }

    /// The PTX qualifiers after `tcgen05.mma.cta_group::N`.
    pub fn qualifier(self) -> &'static str {
        match self {
            MmaKind::F16 => ".kind::f16",
            MmaKind::Tf32 => ".kind::tf32",
            MmaKind::F8f6f4 => ".kind::f8f6f4",
            MmaKind::I8 => ".kind::i8",
            MmaKind::Mxf8f6f4 => ".kind::mxf8f6f4.block_scale",
            MmaKind::Mxf4 => ".kind::mxf4.block_scale.scale_vec::2X",
            MmaKind::Mxf4Nvf4 => ".kind::mxf4nvf4.block_scale.scale_vec::4X",
        }
    }

    /// K elements of one instruction: 32 bytes of A (docs/semantics.md#mma-shapes-and-kinds).
    pub fn k_per_instr(self) -> u32 {
        match self {
            MmaKind::F16 => 16,
            MmaKind::Tf32 => 8,
            MmaKind::F8f6f4 | MmaKind::I8 | MmaKind::Mxf8f6f4 => 32,
            MmaKind::Mxf4 | MmaKind::Mxf4Nvf4 => 64,
        }
    }

    pub fn block_scaled(self) -> bool {
        matches!(self, MmaKind::Mxf8f6f4 | MmaKind::Mxf4 | MmaKind::Mxf4Nvf4)
    }
}

fn ab_format(kind: MmaKind, d: DType) -> Result<u32, DescError> {
    let bad = || {
        Err(DescError(format!(
            "{d} is not an operand type of {}",
            kind.qualifier()
        )))
    };
    match kind {
        MmaKind::F16 => match d {
            DType::F16 => Ok(0),
            DType::BF16 => Ok(1),
            _ => bad(),
        },
        MmaKind::Tf32 => match d {
            DType::TF32 | DType::F32 => Ok(2),
            _ => bad(),
        },
        MmaKind::F8f6f4 | MmaKind::Mxf8f6f4 => match d {
            DType::F8E4M3 => Ok(0),
            DType::F8E5M2 => Ok(1),
            DType::F4E2M1 => Ok(5),
            _ => bad(),
        },
        MmaKind::I8 => match d {
            DType::U8 => Ok(0),
            DType::I8 => Ok(1),
            _ => bad(),
        },
        // CUTLASS `UMMA::MXF4Format::E2M1`.
        MmaKind::Mxf4 | MmaKind::Mxf4Nvf4 => match d {
            DType::F4E2M1 => Ok(1),
            _ => bad(),
        },
    }
}

fn shape_fields(m: u32, n: u32) -> Result<u32, DescError> {
    if !(m == 64 || m == 128 || m == 256) {
        return Err(DescError(format!("M = {m} is not an instruction M")));
    }
    if !n.is_multiple_of(8) || !(8..=256).contains(&n) {
        return Err(DescError(format!("N = {n} is not a multiple of 8 in 8..=256")));
    }
    Ok((n >> 3) << 17 | (m >> 4) << 24)
}

fn major_bits(a: Major, b: Major) -> u32 {
    (if a == Major::MN { 1 } else { 0 }) << 15 | (if b == Major::MN { 1 } else { 0 }) << 16
}

/// Instruction descriptor of kind::f16 / tf32 / f8f6f4 / i8 (32 bits): D format in 5:4
/// (0 f16, 1 f32, 2 s32), A format 9:7, B format 12:10, A major 15, B major 16 (1 = MN),
/// N >> 3 in 22:17, M >> 4 in 28:24; dense, no negation, no saturation.
#[allow(clippy::too_many_arguments)] // one argument per descriptor field
pub fn tcgen05_idesc(
    kind: MmaKind,
    a: DType,
    b: DType,
    d: DType,
    a_major: Major,
    b_major: Major,
    m: u32,
    n: u32,
) -> Result<u32, DescError> {
    if kind.block_scaled() {
        return Err(DescError(
            "block-scaled kinds use tcgen05_idesc_block_scaled".into(),
        ));
    }
    let dfmt = match d {
        DType::F16 => 0,
        DType::F32 => 1,
        DType::I32 => 2,
        _ => return Err(DescError(format!("{d} is not an accumulator type"))),
    };
    Ok(dfmt << 4
        | ab_format(kind, a)? << 7
        | ab_format(kind, b)? << 10
        | major_bits(a_major, b_major)
        | shape_fields(m, n)?)
}

/// Block-scaled instruction descriptor: B scale-factor id in 5:4, formats, majors, N, M as
/// above, scale format in bit 23 (0 ue4m3, 1 ue8m0), A scale-factor id in 30:29, bit 31 the
/// mxf4 K size (0: K 64).
#[allow(clippy::too_many_arguments)]
pub fn tcgen05_idesc_block_scaled(
    kind: MmaKind,
    a: DType,
    b: DType,
    scale: DType,
    a_major: Major,
    b_major: Major,
    m: u32,
    n: u32,
    a_sf_id: u32,
    b_sf_id: u32,
) -> Result<u32, DescError> {
    if !kind.block_scaled() {
        return Err(DescError("not a block-scaled kind".into()));
    }
    let sfmt = match scale {
        DType::UE4M3 => 0,
        DType::UE8M0 => 1,
        _ => return Err(DescError(format!("{scale} is not a scale-factor type"))),
    };
    Ok((b_sf_id & 3) << 4
        | ab_format(kind, a)? << 7
        | ab_format(kind, b)? << 10
        | major_bits(a_major, b_major)
        | shape_fields(m, n)?
        | sfmt << 23
        | (a_sf_id & 3) << 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shared-memory descriptors against their fields worked out by hand.
    #[test]
    fn smem_descs() {
        let cases = [
            // start 4096, LBO 16, SBO 1024, 128B swizzle, by hand:
            //   start >> 4 = 0x100                 -> bits 13:0   = 0x0000_0000_0000_0100
            //   LBO >> 4 = 1                       -> bits 29:16  = 0x0000_0000_0001_0000
            //   SBO >> 4 = 64 = 0x40               -> bits 45:32  = 0x0000_0040_0000_0000
            //   version 0b001                      -> bit 46      = 0x0000_4000_0000_0000
            //   layout 2 (128B)                    -> bits 63:61  = 0x4000_0000_0000_0000
            //   OR                                                = 0x4000_4040_0001_0100
            (
                smem_desc(SmemDescKind::Tcgen05, 4096, 16, 1024, Swizzle::B128, 0),
                0x4000_4040_0001_0100,
            ),
            // start 0x2A0 (672), LBO 8192, SBO 512, 64B swizzle, base offset 3:
            //   672 >> 4 = 42 = 0x2A               -> 0x0000_0000_0000_002A
            //   8192 >> 4 = 512 = 0x200 << 16      -> 0x0000_0000_0200_0000
            //   512 >> 4 = 32 = 0x20 << 32         -> 0x0000_0020_0000_0000
            //   bit 46                             -> 0x0000_4000_0000_0000
            //   base offset 3 << 49                -> 0x0006_0000_0000_0000
            //   layout 4 << 61                     -> 0x8000_0000_0000_0000
            //   OR                                 =  0x8006_4020_0200_002A
            (
                smem_desc(SmemDescKind::Tcgen05, 672, 8192, 512, Swizzle::B64, 3),
                0x8006_4020_0200_002A,
            ),
            // 32B is layout 6 = 0b110 in 63:61 = 0xC000_0000_0000_0000 (plus bit 46).
            (
                smem_desc(SmemDescKind::Tcgen05, 0, 16, 256, Swizzle::B32, 0),
                0xC000_4010_0001_0000,
            ),
            // wgmma: start 4096, LBO 8192, SBO 1024, 128B:
            //   0x100 | 0x200 << 16 | 0x40 << 32 | 1 << 62 = 0x4000_0040_0200_0100 (no bit 46).
            (
                smem_desc(SmemDescKind::Wgmma, 4096, 8192, 1024, Swizzle::B128, 0),
                0x4000_0040_0200_0100,
            ),
            // 32B swizzle is 3 in 63:62.
            (
                smem_desc(SmemDescKind::Wgmma, 16, 16, 256, Swizzle::B32, 0),
                0xC000_0010_0001_0001,
            ),
        ];
        for (i, (got, want)) in cases.into_iter().enumerate() {
            assert_eq!(got, Ok(want), "case {i}");
        }
    }

    #[test]
    fn unaligned_fields_are_errors() {
        assert!(smem_desc(SmemDescKind::Tcgen05, 8, 16, 1024, Swizzle::B128, 0).is_err());
        assert!(smem_desc(SmemDescKind::Wgmma, 1 << 18, 16, 1024, Swizzle::B128, 0).is_err());
    }

    /// `tcgen05_idesc` of A x B -> D, A K-major.
    fn idesc(kind: MmaKind, [a, b, d]: [DType; 3], b_major: Major, m: u32, n: u32) -> Result<u32, DescError> {
        tcgen05_idesc(kind, a, b, d, Major::K, b_major, m, n)
    }

    /// Instruction descriptors against their fields worked out by hand.
    #[test]
    fn idescs() {
        use DType::*;
        let cases = [
            // kind::f16, f16 x f16 -> f32, A K-major, B MN-major, M 128, N 256:
            //   D f32 = 1 << 4                     = 0x0000_0010
            //   A, B f16 = 0
            //   B major MN = 1 << 16               = 0x0001_0000
            //   N >> 3 = 32 << 17                  = 0x0040_0000
            //   M >> 4 = 8 << 24                   = 0x0800_0000
            //   OR                                 = 0x0841_0010
            (
                idesc(MmaKind::F16, [F16, F16, F32], Major::MN, 128, 256),
                0x0841_0010,
            ),
            // bf16 x bf16 -> f32, both K-major, M 128, N 128:
            //   0x10 | 1 << 7 (0x80) | 1 << 10 (0x400) | 16 << 17 (0x20_0000) | 8 << 24 = 0x0820_0490
            (
                idesc(MmaKind::F16, [BF16, BF16, F32], Major::K, 128, 128),
                0x0820_0490,
            ),
            // tf32, M 64, N 8: 0x10 | 2 << 7 | 2 << 10 | 1 << 17 | 4 << 24 = 0x0402_0910
            (
                idesc(MmaKind::Tf32, [F32, F32, F32], Major::K, 64, 8),
                0x0402_0910,
            ),
            // f8f6f4 e4m3 x e5m2 -> f16: D 0, A 0, B 1 << 10 = 0x400, M 128 N 64: 8 << 17 =
            // 0x10_0000, 0x0800_0000: 0x0810_0400.
            (
                idesc(MmaKind::F8f6f4, [F8E4M3, F8E5M2, F16], Major::K, 128, 64),
                0x0810_0400,
            ),
        ];
        for (i, (got, want)) in cases.into_iter().enumerate() {
            assert_eq!(got, Ok(want), "case {i}");
        }
    }

    /// mxf8f6f4 e4m3 x e4m3, ue8m0, M 128, N 128, ids 0:
    ///   scale format ue8m0 = 1 << 23 = 0x80_0000; N: 0x20_0000; M: 0x0800_0000 -> 0x08A0_0000.
    /// With A sf id 2 and B sf id 1: + 2 << 29 (0x4000_0000) + 1 << 4 (0x10) = 0x48A0_0010.
    #[test]
    fn idesc_block_scaled() {
        use DType::*;
        let k = MmaKind::select(F8E4M3, F8E4M3, Some(UE8M0)).unwrap();
        assert_eq!(k, MmaKind::Mxf8f6f4);
        // mxf4: e2m1 = 1 in both format fields: 1 << 7 | 1 << 10 = 0x480.
        let k4 = MmaKind::select(F4E2M1, F4E2M1, Some(UE8M0)).unwrap();
        let cases = [
            (k, F8E4M3, [0, 0], 0x08A0_0000),
            (k, F8E4M3, [2, 1], 0x48A0_0010),
            (k4, F4E2M1, [0, 0], 0x08A0_0480),
        ];
        for (kind, ab, [a_sf_id, b_sf_id], want) in cases {
            let d = tcgen05_idesc_block_scaled(
                kind,
                ab,
                ab,
                UE8M0,
                Major::K,
                Major::K,
                128,
                128,
                a_sf_id,
                b_sf_id,
            );
            assert_eq!(d, Ok(want), "{kind:?} {ab} ids {a_sf_id} {b_sf_id}");
        }
    }

    #[test]
    fn bad_shapes() {
        for (m, n) in [(96, 128), (128, 260)] {
            assert!(idesc(MmaKind::F16, [DType::F16, DType::F16, DType::F32], Major::K, m, n).is_err());
        }
    }
}
