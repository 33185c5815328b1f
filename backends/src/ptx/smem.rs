//! Shared-memory geometry: where each element of a buffer lives, and the matrix-descriptor
//! fields (start, LBO, SBO) of an MMA operand.
//!
//! Conventions, shared with the simulator and the TMA copies the backend emits:
//! - A buffer `[..., R, C]` is a row-major array of matrices `[R, C]`; a transposed NVMMA
//!   buffer (`transposed=true`, an MN-major operand) stores each matrix as `[C, R]`.
//! - NVMMA (swizzle span S > 0): each physical row occupies S bytes when it is narrower than
//!   S (the rest is padding); a row wider than S is stored as S-wide column blocks, block `j`
//!   holding bytes `j*S .. (j+1)*S` of every row, one block after another (what span-wide TMA
//!   messages write). The XOR swizzle of docs/semantics.md#shared-memory-swizzle is applied to
//!   the absolute address; buffers are aligned to the swizzle period, so it is a function of the
//!   offset.
//! - `plain` and `nvmma(0)`: row-major. `swizzled(vec, per_phase, max_phase)`: Triton's
//!   `SwizzledSharedLayout` (`vec`-element chunks of a row XORed with the row's phase).
//!
//! Where an element lives is [`bwsim_isa::placement`]'s, the simulator's placement; this
//! module refuses what the backend cannot address and builds the maps below from it. With
//! power-of-two extents every one of these layouts is a linear map (over GF(2)) from the bits
//! of an element's flat index to the bits of its byte offset; [`view_map`] computes that map
//! and checks it, and the lowering then addresses any register of any thread with one XOR.

use super::linear_layout::LayoutError;
use bwsim_isa::placement;
use bwsim_isa::typeck::SmemLayout;
use bwsim_isa::types::{DType, Swizzle};

/// The region a view's base address points at: the logical shape of the (sub)buffer there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geom {
    pub dtype: DType,
    /// Logical shape of the region (e.g. `[R, C]` for `bufs[i]` of a `[N, R, C]` buffer).
    pub full: Vec<u32>,
    pub layout: SmemLayout,
}

/// The byte-offset map of a view: offset(flat) = `origin ^ xor(bases[k] for set bits k)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmemMap {
    pub origin: u32,
    /// One basis per bit of the view's row-major flat index, low bit first.
    pub bases: Vec<u32>,
}

impl SmemMap {
    pub fn offset(&self, flat: u32) -> u32 {
        self.origin ^ super::linear_layout::xor_bits(&self.bases, flat)
    }
}

fn transposed(l: &SmemLayout) -> bool {
    matches!(l, SmemLayout::Nvmma { transposed: true, .. })
}

impl Geom {
    /// Logical (rows, cols) of one matrix.
    pub fn rc(&self) -> (u32, u32) {
        let n = self.full.len();
        if n >= 2 {
            (self.full[n - 2], self.full[n - 1])
        } else {
            (1, self.full.first().copied().unwrap_or(1))
        }
    }

    /// Physical (rows, contiguous cols) of one matrix.
    pub fn phys_rc(&self) -> (u32, u32) {
        let (r, c) = self.rc();
        if transposed(&self.layout) {
            (c, r)
        } else {
            (r, c)
        }
    }

    /// Bytes of one physical row before padding to the swizzle span (may be fractional for
    /// fp4: rounded up); an `fp4_padded` row holds 8 bytes of padding after every 8 of data.
    pub fn row_bytes(&self) -> u64 {
        let (_, pc) = self.phys_rc();
        let data = (pc as u64 * self.dtype.bits() as u64).div_ceil(8);
        if self.layout.fp4_padded() {
            2 * data
        } else {
            data
        }
    }

    /// Bytes of the whole region ([`placement::buffer_bytes`]).
    pub fn total_bytes(&self) -> u64 {
        placement::buffer_bytes(self.dtype, &self.full, placement::Layout::from(&self.layout))
    }

    /// Byte offset of a logical element of the region (full-rank index), swizzle included.
    pub fn byte_offset(&self, idx: &[u32]) -> Result<u64, LayoutError> {
        self.offset(idx, true)
    }

    /// Byte offset of a logical element before the swizzle: the address TMA copies and MMA
    /// descriptors are given (the hardware swizzles by absolute address,
    /// docs/semantics.md#shared-memory-swizzle).
    pub fn logical_offset(&self, idx: &[u32]) -> Result<u64, LayoutError> {
        self.offset(idx, false)
    }

    /// The layout in placement form, refusing what the backend cannot address: wide NVMMA rows
    /// that are not a whole number of spans, a zero `swizzled` parameter, a linear layout
    /// without an inverse.
    fn placement(&self) -> Result<placement::Layout, LayoutError> {
        match &self.layout {
            SmemLayout::Nvmma { swizzle, .. } if *swizzle != Swizzle::None => {
                let (span, row) = (swizzle.bytes() as u64, self.row_bytes());
                if row > span && !row.is_multiple_of(span) {
                    return Err(format!(
                        "rows of {row} bytes are not a multiple of the {span}-byte swizzle span"
                    )
                    .into());
                }
            }
            SmemLayout::Swizzled {
                vec,
                per_phase,
                max_phase,
            } if *vec == 0 || *per_phase == 0 || *max_phase == 0 => {
                return Err("swizzled layout with a zero parameter".into());
            }
            SmemLayout::Linear { bases } => {
                bwsim_isa::typeck::LinearSmem::new(bases)?;
            }
            _ => {}
        }
        Ok(placement::Layout::from(&self.layout))
    }

    /// [`placement::offset_bits`] in whole bytes; the region is aligned to the swizzle
    /// period, so the swizzle (when `swizzled`) is a function of the offset.
    fn offset(&self, idx: &[u32], swizzled: bool) -> Result<u64, LayoutError> {
        if idx.len() != self.full.len() {
            return Err("index rank differs from the buffer's".into());
        }
        let layout = self.placement()?;
        let off_bits = placement::offset_bits(self.dtype, &self.full, layout, idx);
        if !off_bits.is_multiple_of(8) {
            return Err(format!(
                "element {idx:?} of a {} buffer does not start on a byte",
                self.dtype
            )
            .into());
        }
        let off = off_bits / 8;
        match layout {
            placement::Layout::Nvmma { swizzle, .. } if swizzled => {
                let u = u32::try_from(off).map_err(|_| LayoutError::OffsetOverflow)?;
                Ok(swizzle.apply(u) as u64)
            }
            _ => Ok(off),
        }
    }
}

/// Row-major multi-index of a flat index.
pub fn unflatten(shape: &[u32], mut flat: u64) -> Vec<u32> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let e = shape[d].max(1) as u64;
        idx[d] = (flat % e) as u32;
        flat /= e;
    }
    idx
}

/// The linear byte-offset map of the view `offsets .. offsets + vshape` of `g`, checked
/// (exhaustively up to 2^14 elements, on a deterministic sample beyond).
pub fn view_map(g: &Geom, offsets: &[u32], vshape: &[u32]) -> Result<SmemMap, LayoutError> {
    if offsets.len() != g.full.len() || vshape.len() != g.full.len() {
        return Err("view rank differs from the buffer's".into());
    }
    super::linear_layout::dim_offsets(vshape)?;
    let nbits: u32 = vshape.iter().map(|&d| d.trailing_zeros()).sum();
    let at = |flat: u64| -> Result<u32, LayoutError> {
        let v = unflatten(vshape, flat);
        let idx: Vec<u32> = v.iter().zip(offsets).map(|(a, b)| a + b).collect();
        let o = g.byte_offset(&idx)?;
        u32::try_from(o).map_err(|_| LayoutError::OffsetOverflow)
    };
    let origin = at(0)?;
    let mut bases = Vec::with_capacity(nbits as usize);
    for k in 0..nbits {
        bases.push(at(1u64 << k)? ^ origin);
    }
    let map = SmemMap { origin, bases };
    let total = 1u64 << nbits;
    let check = |f: u64| -> Result<(), LayoutError> {
        if at(f)? != map.offset(f as u32) {
            return Err("this view's addressing is not linear (an unaligned slice or a non-power-of-two layout parameter)".into());
        }
        Ok(())
    };
    if total <= 1 << 14 {
        for f in 0..total {
            check(f)?;
        }
    } else {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..4096 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            check((x >> 17) % total)?;
        }
    }
    Ok(map)
}

/// Which dimension of an MMA operand is contiguous in shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Major {
    /// K contiguous (`K-major`).
    K,
    /// M or N contiguous (`MN-major`, transposed).
    MN,
}

/// The matrix-descriptor fields of one MMA instruction's operand (docs/semantics.md#descriptors,
/// docs/semantics.md#wgmma).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperandDesc {
    /// Byte offset of the operand's first core matrix from the region's base (unswizzled: the
    /// hardware applies the swizzle by absolute address, as TMA does).
    pub start: u64,
    /// Leading-dimension byte offset.
    pub lbo: u32,
    /// Stride-dimension byte offset.
    pub sbo: u32,
    pub swizzle: Swizzle,
    pub major: Major,
}

/// Descriptor fields for the operand tile starting at logical element `(mn0, k0)` of the
/// matrix `g` (a 2-D region), where the operand's rows are `mn` (A: `[M, K]`, `k_is_col`
/// true) or its rows are `k` (B: `[K, N]`, `k_is_col` false).
///
/// - K-major swizzled: rows (M or N) are one span each, 8 rows form one atom, SBO = 8 * span
///   between 8-row groups; LBO is unused while one instruction's K (32 bytes) fits the span
///   and set to 16 bytes; a K step adds its byte offset to the start.
/// - MN-major swizzled (CUTLASS's canonical `((T,S/T,m),(8,k)):((1,T,LBO),(S,SBO))`): the
///   contiguous MN extent comes in span-wide column blocks LBO bytes apart, SBO = 8 * span
///   between 8-row groups along K.
pub fn operand_desc(g: &Geom, mn0: u32, k0: u32, k_is_col: bool) -> Result<OperandDesc, LayoutError> {
    if g.full.len() != 2 {
        return Err(format!("MMA operands are 2-D views, found a region of shape {:?}", g.full).into());
    }
    let SmemLayout::Nvmma {
        swizzle,
        transposed,
        fp4_padded,
    } = g.layout
    else {
        return Err(format!(
            "MMA operands need an NVMMA shared layout, found {}",
            g.layout.describe()
        )
        .into());
    };
    let span = swizzle.bytes() as u64;
    if span == 0 {
        return Err("MMA operands without swizzle (nvmma(0)) are not supported by the PTX backend".into());
    }
    // Logical (row, col) of the operand's first element, and whether K is the contiguous dim.
    let (lr, lc) = if k_is_col { (mn0, k0) } else { (k0, mn0) };
    let (pr, pc) = if transposed { (lc, lr) } else { (lr, lc) };
    let k_contig = k_is_col != transposed;
    let (ppr, _) = g.phys_rc();
    // A padded fp4 operand takes a byte per value at the 16-byte granularity descriptors see.
    let bits = if fp4_padded { 8 } else { g.dtype.bits() as u64 };
    let row = g.row_bytes();
    if row > span && !row.is_multiple_of(span) {
        return Err(format!("rows of {row} bytes are not a multiple of the {span}-byte swizzle span").into());
    }
    let byte_in_row = pc as u64 * bits / 8;
    let start = g.logical_offset(&[lr, lc])?;
    if pr % 8 != 0 {
        return Err(
            format!("the operand starts at row {pr} of its swizzle atom (needs a multiple of 8)").into(),
        );
    }
    let block_stride =
        u32::try_from(ppr as u64 * span).map_err(|_| LayoutError::from("operand too large"))?;
    if k_contig {
        Ok(OperandDesc {
            start,
            lbo: 16,
            sbo: 8 * span as u32,
            swizzle,
            major: Major::K,
        })
    } else {
        if !byte_in_row.is_multiple_of(span) {
            return Err("an MN-major operand must start at a swizzle-span boundary along M/N".into());
        }
        Ok(OperandDesc {
            start,
            lbo: block_stride,
            sbo: 8 * span as u32,
            swizzle,
            major: Major::MN,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nv(s: Swizzle) -> SmemLayout {
        SmemLayout::Nvmma {
            swizzle: s,
            transposed: false,
            fp4_padded: false,
        }
    }

    /// A `dtype` region of shape `full` in an (untransposed) NVMMA layout of swizzle `s`.
    fn nv_geom(dtype: DType, full: &[u32], s: Swizzle) -> Geom {
        Geom {
            dtype,
            full: full.to_vec(),
            layout: nv(s),
        }
    }

    /// The swizzle vectors of docs/semantics.md#shared-memory-swizzle: an f32 [8, 32] tile with
    /// 128-byte rows has its 16-byte chunk at unswizzled address a (row a / 128) physically at the
    /// table's address.
    #[test]
    fn swizzle_vectors() {
        let g = nv_geom(DType::F32, &[8, 32], Swizzle::B128);
        for (a, want) in [
            (0u64, 0u64),
            (16, 16),
            (128, 144),
            (176, 160),
            (256, 288),
            (640, 720),
            (896, 1008),
        ] {
            let r = (a / 128) as u32;
            let c = ((a % 128) / 4) as u32;
            assert_eq!(g.byte_offset(&[r, c]).unwrap(), want, "a = {a}");
        }
    }

    #[test]
    fn column_blocks_for_wide_rows() {
        // f16 [64, 256] with 128B swizzle: 4 column blocks of 64 rows x 128 bytes.
        let g = nv_geom(DType::F16, &[64, 256], Swizzle::B128);
        assert_eq!(g.byte_offset(&[0, 64]).unwrap(), 64 * 128);
        assert_eq!(g.byte_offset(&[1, 64]).unwrap(), 64 * 128 + (128 ^ 16));
        assert_eq!(g.total_bytes(), 32768);
    }

    #[test]
    fn view_map_is_linear() {
        let g = nv_geom(DType::F32, &[2, 32, 64], Swizzle::B128);
        let m = view_map(&g, &[1, 0, 0], &[1, 32, 64]).unwrap();
        assert_eq!(m.origin, 8192);
        let e = view_map(&g, &[0, 3, 0], &[1, 5, 64]);
        assert!(e.is_err());
    }

    #[test]
    fn operand_descriptors() {
        // A: f16 [128, 64] 128B K-major: SBO 1024, K step 16 = 32 bytes.
        let a = nv_geom(DType::F16, &[128, 64], Swizzle::B128);
        let d = operand_desc(&a, 0, 16, true).unwrap();
        assert_eq!((d.start, d.lbo, d.sbo, d.major), (32, 16, 1024, Major::K));
        // B: f16 [64, 256] MN-major: column blocks 64 rows * 128 bytes apart; K step 16 rows.
        let b = nv_geom(DType::F16, &[64, 256], Swizzle::B128);
        let d = operand_desc(&b, 0, 16, false).unwrap();
        assert_eq!(
            (d.start, d.lbo, d.sbo, d.major),
            (16 * 128, 8192, 1024, Major::MN)
        );
        // B transposed: stored [N, K], K-major.
        let bt = Geom {
            dtype: DType::F16,
            full: vec![64, 128],
            layout: SmemLayout::Nvmma {
                swizzle: Swizzle::B128,
                transposed: true,
                fp4_padded: false,
            },
        };
        let d = operand_desc(&bt, 0, 16, false).unwrap();
        assert_eq!((d.start, d.sbo, d.major), (32, 1024, Major::K));
    }

    /// More operand geometries, worked out by hand from docs/semantics.md (swizzle, descriptors,
    /// wgmma):
    /// - bf16 [128, 32], 64B swizzle, K-major: one 64-byte span per row, 8-row atoms of 512
    ///   bytes (SBO 512); the K step of 16 elements is +32 bytes; rows 64.. start at 64 * 64.
    /// - f32 [128, 16], 32B swizzle (rows of 64 bytes, two 32-byte column blocks of 128 rows
    ///   = 4096 bytes each): columns 8..15 start at 4096, SBO 8 * 32 = 256.
    /// - f16 [64, 128] B operand, 64B swizzle, MN-major: rows of 256 bytes in four column
    ///   blocks of 64 rows x 64 bytes (LBO 4096 between them), SBO 8 * 64 = 512 between 8-row
    ///   K groups, K step 16 = +16 * 64 bytes.
    #[test]
    fn operand_descriptors_by_hand() {
        let a = nv_geom(DType::BF16, &[128, 32], Swizzle::B64);
        let d = operand_desc(&a, 0, 16, true).unwrap();
        assert_eq!(
            (d.start, d.sbo, d.major, d.swizzle),
            (32, 512, Major::K, Swizzle::B64)
        );
        assert_eq!(operand_desc(&a, 64, 0, true).unwrap().start, 64 * 64);
        let c = nv_geom(DType::F32, &[128, 16], Swizzle::B32);
        let d = operand_desc(&c, 0, 8, true).unwrap();
        assert_eq!((d.start, d.sbo), (4096, 256));
        let b = nv_geom(DType::F16, &[64, 128], Swizzle::B64);
        let d = operand_desc(&b, 0, 16, false).unwrap();
        assert_eq!((d.start, d.lbo, d.sbo, d.major), (1024, 4096, 512, Major::MN));
        assert_eq!(
            operand_desc(&b, 32, 0, false).unwrap().start,
            4096,
            "N 32.. is the second column block"
        );
        // An operand may not start inside an 8-row atom.
        assert!(operand_desc(&a, 4, 0, true).is_err());
    }

    /// The unswizzled offset (what TMA and descriptors take) against the swizzled one (what
    /// generic loads use) for row 1 of a 128B-swizzled f16 [8, 64] tile: 128 and 128 ^ 16.
    #[test]
    fn logical_versus_physical_offsets() {
        let g = nv_geom(DType::F16, &[8, 64], Swizzle::B128);
        assert_eq!(g.logical_offset(&[1, 0]).unwrap(), 128);
        assert_eq!(g.byte_offset(&[1, 0]).unwrap(), 144);
        // fp4: byte-aligned elements have offsets, odd ones do not.
        let f = nv_geom(DType::F4E2M1, &[8, 64], Swizzle::B32);
        assert_eq!(f.logical_offset(&[1, 2]).unwrap(), 33);
        assert!(f.logical_offset(&[1, 1]).is_err());
    }

    /// The GF(2) map the lowering addresses with agrees with the placement function the
    /// simulator uses, on every element, for every kind of layout: NVMMA 32/64/128-byte
    /// swizzles (narrow, exact and wide rows, stacked matrices), transposed, `swizzled`,
    /// `linear`, plain.
    #[test]
    fn view_map_agrees_with_placement() {
        let nvt = |s: Swizzle| SmemLayout::Nvmma {
            swizzle: s,
            transposed: true,
            fp4_padded: false,
        };
        let cases: Vec<(DType, Vec<u32>, SmemLayout)> = vec![
            (DType::F16, vec![64, 16], nv(Swizzle::B32)),
            (DType::F16, vec![32, 32], nv(Swizzle::B64)),
            (DType::F16, vec![2, 64, 64], nv(Swizzle::B128)),
            (DType::F32, vec![8, 128], nv(Swizzle::B128)),
            (DType::I8, vec![16, 64], nv(Swizzle::B64)),
            (DType::F16, vec![64, 128], nvt(Swizzle::B128)),
            (DType::BF16, vec![32, 64], nvt(Swizzle::B64)),
            (DType::F16, vec![32, 64], nvt(Swizzle::B32)),
            (
                DType::F16,
                vec![16, 64],
                SmemLayout::Swizzled {
                    vec: 8,
                    per_phase: 1,
                    max_phase: 8,
                },
            ),
            (
                DType::I8,
                vec![32, 64],
                SmemLayout::Swizzled {
                    vec: 16,
                    per_phase: 2,
                    max_phase: 4,
                },
            ),
            // Column-major, with one column bit XORed into another.
            (
                DType::I8,
                vec![16, 16],
                SmemLayout::Linear {
                    bases: [[1, 0], [2, 0], [4, 0], [8, 0], [0, 1], [0, 3], [0, 4], [0, 8]]
                        .iter()
                        .map(|b| b.to_vec())
                        .collect(),
                },
            ),
            (DType::F32, vec![4, 8, 16], SmemLayout::Plain),
        ];
        for (dtype, full, layout) in cases {
            let placed = placement::Layout::from(&layout);
            let g = Geom {
                dtype,
                full: full.clone(),
                layout,
            };
            let zero = vec![0; full.len()];
            let map = view_map(&g, &zero, &full).expect("a linear map");
            let n: u64 = full.iter().map(|&d| d as u64).product();
            for flat in 0..n {
                let idx = unflatten(&full, flat);
                let want = placement::smem_element(0, dtype, &full, placed, &idx).expect("fits");
                assert_eq!(
                    (map.offset(flat as u32), 0),
                    want,
                    "{dtype} {full:?} {:?} element {idx:?}",
                    g.layout
                );
            }
        }
    }
}
