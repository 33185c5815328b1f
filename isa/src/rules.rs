//! The rules of single operations that go beyond their types (docs/semantics.md#static-rules):
//! tensor-map limits of descriptors, NVMMA inner dimensions, gather offsets, `tcgen05.cp`, TMEM
//! access by warp quarters, `tcgen05.mma` and `wgmma` shapes, types and layouts. The type checker
//! calls them as it meets each operation; `verify` adds the kernel-wide ones.

use crate::diag::{Code, Diagnostic};
use crate::ir::*;
use crate::types::*;
use crate::value_types::*;

/// Tensor-map rules for a descriptor (docs/semantics.md#tensor-map-limits, cuTensorMapEncodeTiled).
pub fn check_desc(d: &DescTy, span: crate::Span) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if d.block.is_empty() || d.block.len() > 5 {
        out.push(Diagnostic::error(
            Code::TmaRank,
            format!("tensor descriptors have rank 1..5, this one {}", d.block.len()),
            span,
            "here",
        ));
        return out;
    }
    if let Some((i, &st)) = d
        .elem_strides
        .iter()
        .enumerate()
        .find(|(_, &st)| !(1..=8).contains(&st))
    {
        out.push(
            Diagnostic::error(
                Code::TmaElemStrides,
                format!("element stride {st} in dimension {i}; TMA element strides are 1..=8"),
                span,
                "here",
            )
            .with_note("cuTensorMapEncodeTiled: 0 < elementStrides[i] <= 8"),
        );
    }
    let inner_bytes = d.block.last().copied().unwrap_or(0) as u64 * d.dtype.bits() as u64 / 8;
    let span_b = d.layout.swizzle().bytes();
    // The hardware box is the block clipped to 256 elements per dimension and, under a
    // swizzle, to the span along the inner one; a copy issues as many boxes as the block
    // holds (crate::tma, docs/hardware/tma-messages.md), so a clipped dimension must be a
    // whole number of boxes.
    let hw = crate::tma::hw_box(&d.block, d.dtype, span_b);
    let strided = d.elem_strides.iter().any(|&s| s > 1);
    let r = d.block.len();
    for (i, (&b, &h)) in d.block.iter().zip(&hw).enumerate() {
        let inner = i + 1 == r;
        let splits = b > h;
        // (An inner dimension that is not a whole number of swizzle spans is `tma-swizzle`.)
        let bad = h == 0 || (splits && strided) || (splits && !b.is_multiple_of(h) && !(inner && span_b > 0));
        if bad {
            out.push(
                Diagnostic::error(
                    Code::TmaBox,
                    format!(
                        "box dimension {i} is {b}; TMA boxes are 1..=256 elements per dimension, and a larger block must be a whole number of 256-element boxes{}",
                        if strided { " (a strided descriptor is copied as one box)" } else { "" }
                    ),
                    span,
                    "box too large",
                )
                .with_note("cuTensorMapEncodeTiled: 0 < boxDim[i] <= 256; Triton copies a larger block in boxes of 256")
                .with_help("make the block dimension at most 256, or a multiple of 256"),
            );
        }
    }
    // A block's copy lands in shared memory: a block that no CTA's shared memory holds is no
    // descriptor a kernel can use (and its `nbytes` would not fit the transaction count).
    let block_bytes = (d.block.iter()).fold(d.dtype.bits() as u64, |a, &b| a.saturating_mul(b as u64)) / 8;
    if out.is_empty() && block_bytes > crate::typeck::SMEM_CAPACITY as u64 {
        out.push(
            Diagnostic::error(
                Code::TmaBox,
                format!(
                    "a block of {block_bytes} bytes is larger than a CTA's shared memory ({} bytes)",
                    crate::typeck::SMEM_CAPACITY
                ),
                span,
                "block too large",
            )
            .with_help("make the block a tile a CTA can hold"),
        );
    }
    if !inner_bytes.is_multiple_of(16) {
        out.push(
            Diagnostic::error(
                Code::TmaBoxInner,
                format!("box inner dimension is {inner_bytes} bytes, not a multiple of 16"),
                span,
                "here",
            )
            .with_note("cuTensorMapEncodeTiled: boxDim[0] * elementSize must be a multiple of 16 bytes")
            .with_help("widen the block's last dimension"),
        );
    }
    let span_b = span_b as u64;
    if span_b > 0 && inner_bytes > span_b && !inner_bytes.is_multiple_of(span_b) {
        out.push(
            Diagnostic::error(
                Code::TmaSwizzle,
                format!("box inner dimension of {inner_bytes} bytes is wider than the {span_b}-byte swizzle span and not a multiple of it"),
                span,
                "here",
            )
            .with_note("the inner box must fit the swizzle span; wider blocks are copied as several span-wide boxes")
            .with_help(format!("make the inner dimension a multiple of {span_b} bytes")),
        );
    }
    out
}

/// A `linear` shared layout covers exactly the buffer's shape (every dimension a power of
/// two, as the offset bases imply).
pub fn check_linear_shape(op: &Op, shape: &[u32], layout: &SmemLayout) -> Result<(), Diagnostic> {
    let SmemLayout::Linear { bases } = layout else {
        return Ok(());
    };
    let l = LinearSmem::new(bases)
        .map_err(|m| Diagnostic::error(Code::SmemLayout, m.to_string(), op.span, "this linear layout"))?;
    if l.shape() != shape {
        return Err(Diagnostic::error(
            Code::SmemLayout,
            format!(
                "the linear layout's offset bases cover a {:?} buffer, not {shape:?}",
                l.shape()
            ),
            op.span,
            "shape and layout disagree",
        ));
    }
    Ok(())
}

/// Gluon's `NVMMASharedLayout` needs at least one swizzle span along the contiguous dimension.
pub(crate) fn check_nvmma_inner(
    dtype: DType,
    shape: &[u32],
    layout: &SmemLayout,
    span: crate::Span,
) -> Vec<Diagnostic> {
    if let SmemLayout::Nvmma {
        swizzle,
        transposed: false,
        fp4_padded,
    } = layout
    {
        let data = shape.last().copied().unwrap_or(0) as u64 * dtype.bits() as u64 / 8;
        let inner = if *fp4_padded { 2 * data } else { data };
        if swizzle.bytes() > 0 && inner < swizzle.bytes() as u64 {
            return vec![Diagnostic::error(
                Code::NvmmaInner,
                format!(
                    "rows of {inner} bytes are narrower than the {}-byte swizzle",
                    swizzle.bytes()
                ),
                span,
                "block shape along the contiguous dimension is too small for the swizzle byte width",
            )
            .with_help(format!(
                "use nvmma({}) or a wider block, as NVMMASharedLayout.get_default_for does",
                inner.min(128).next_power_of_two().max(32)
            ))];
        }
    }
    Vec::new()
}

/// gather4/scatter4 rules (seed 09): descriptor block `[1, BLOCK_Y]`, at least 8 rows in
/// chunks of 4, `BLOCK_Y >= (32 / bitwidth) * 8`, row-offset layout.
pub fn check_gather(op: &Op, d: &DescTy, rows: &TileTy) -> Result<(), Diagnostic> {
    if d.block.len() != 2 || d.block[0] != 1 || d.elem_strides.iter().any(|&s| s != 1) {
        return Err(Diagnostic::error(
            Code::GatherDesc,
            format!(
                "gather/scatter needs a 2-D descriptor with block [1, BLOCK_Y] and unit element strides, found {:?}{}",
                d.block,
                if d.elem_strides.iter().any(|&s| s != 1) { format!(" with elem_strides {:?}", d.elem_strides) } else { String::new() }
            ),
            op.span,
            "here",
        )
        .with_note("TMA gather4/scatter4 move whole rows; the descriptor's box is one row (seed 09)")
        .with_help("build the descriptor with block shape [1, BLOCK_Y]"));
    }
    let n = rows.shape.first().copied().unwrap_or(0);
    if n < 8 || n % 4 != 0 {
        return Err(Diagnostic::error(
            Code::GatherRows,
            format!("gather/scatter of {n} rows: needs at least 8, in chunks of 4"),
            op.span,
            "here",
        )
        .with_note("each gather4/scatter4 message moves 4 rows; Gluon requires at least 8 row offsets"));
    }
    let min = (32 / d.dtype.bits().max(1)) * 8;
    if d.block[1] < min {
        return Err(Diagnostic::error(
            Code::GatherCols,
            format!("BLOCK_Y is {} but {} needs at least {min}", d.block[1], d.dtype),
            op.span,
            "too few columns",
        )
        .with_note("BLOCK_Y >= (32 // bitwidth) * 8 (seed 09)"));
    }
    if let Some(l) = &rows.layout {
        if !offsets_layout_ok(l, n) {
            return Err(Diagnostic::error(Code::GatherOffsetLayout, "row offsets layout does not give each warp whole chunks of 4 consecutive offsets", op.span, "invalid row-offset layout")
                .with_note("the first two register bases must be [1] and [2] and every lane basis [0]: chunks of 4 in consecutive registers, the same in every lane (seed 09)")
                .with_help("convert first: `convert_layout(x_offsets, slice(0, blocked([1, 4], [32, 1], [1, NUM_WARPS], [1, 0])))`"));
        }
    }
    Ok(())
}

/// Chunks of 4 consecutive offsets in consecutive registers, the same in every lane: each thread
/// holds a multiple of 4 consecutive elements and the lanes of a warp do not split the
/// dimension (one lane along it, or one thread's chunk already covers all `n` offsets).
fn offsets_layout_ok(l: &TileLayout, n: u32) -> bool {
    let ok = |spt: u32, tpw: u32| spt.is_multiple_of(4) && (tpw == 1 || spt >= n);
    match l {
        TileLayout::Blocked { spt, tpw, .. } if spt.len() == 1 => ok(spt[0], tpw[0]),
        TileLayout::Slice { dim, parent } => match parent.as_ref() {
            TileLayout::Blocked { spt, tpw, .. } if spt.len() == 2 => {
                let keep = 1 - (*dim as usize).min(1);
                ok(spt[keep], tpw[keep])
            }
            _ => false,
        },
        _ => false,
    }
}

/// tcgen05.cp rules of seed 10: 32-bit elements, a swizzled non-transposed NVMMA source,
/// TMEM block M 128, matching shapes, and the atoms that exist.
pub fn check_tcgen05_cp(op: &Op, s: &SmemTy, t: &TmemTy) -> Result<(), Diagnostic> {
    let bad = |m: String, label: &str| {
        Err(Diagnostic::error(Code::Tcgen05CpLayout, m, op.span, label)
            .with_note("tcgen05.cp supports a limited set of smem → tmem shapes (seed 10)"))
    };
    if s.shape != t.shape {
        return bad(
            format!("copy from smem {:?} into tmem {:?}", s.shape, t.shape),
            "shape mismatch",
        );
    }
    if t.scales {
        return Ok(());
    }
    if s.dtype.bits() != 32 || t.dtype.bits() != 32 {
        return bad(
            format!(
                "tcgen05.cp into a TensorMemoryLayout needs 32-bit elements, found {}",
                s.dtype
            ),
            "not 32-bit",
        );
    }
    let SmemLayout::Nvmma {
        swizzle,
        transposed,
        fp4_padded: false,
    } = &s.layout
    else {
        return bad(
            "tcgen05.cp source must be an NVMMA shared layout".into(),
            "unsupported layout",
        );
    };
    if swizzle.bytes() == 0 {
        return bad(
            "tcgen05.cp source layout must be swizzled (swizzle > 0)".into(),
            "unswizzled source",
        );
    }
    if *transposed {
        return bad(
            "tcgen05.cp source layout cannot be transposed".into(),
            "transposed source",
        );
    }
    if t.block[0] != 128 {
        return bad(
            format!("tcgen05.cp needs TMEM block M 128, found {}", t.block[0]),
            "block M",
        );
    }
    let m = if s.shape.len() >= 2 {
        s.shape[s.shape.len() - 2]
    } else {
        1
    };
    if m == 256 && swizzle.bytes() / t.block[1].max(1) >= 8 {
        return bad(
            format!(
                "no tcgen05.cp atom for M=256 with a {}-byte swizzle and TMEM block N {}",
                swizzle.bytes(),
                t.block[1]
            ),
            "no copy atom",
        );
    }
    Ok(())
}

/// A partition reading or writing TMEM with `tcgen05.ld/st` reaches the lane quarter of each
/// of its warps (docs/semantics.md#tensor-memory): an M=128 buffer needs a multiple of 4 warps.
pub fn check_tmem_access(op: &Op, t: &TmemTy, warps: u32) -> Result<(), Diagnostic> {
    let m = if t.shape.len() >= 2 {
        t.shape[t.shape.len() - 2]
    } else {
        1
    };
    let lanes_needed = m.min(128);
    if warps * 32 < lanes_needed || (lanes_needed >= 128 && !warps.is_multiple_of(4)) {
        return Err(Diagnostic::error(
            Code::TmemLanes,
            format!("a partition of {warps} warps cannot reach the {lanes_needed} TMEM lanes of this buffer"),
            op.span,
            "here",
        )
        .with_note("warp w of a warpgroup may access only lanes 32*(w%4) .. 32*(w%4)+31")
        .with_help("read TMEM from a partition of 4 (or 8) warps"));
    }
    Ok(())
}

fn mma_k_step(d: DType) -> u32 {
    // 32 bytes of A per instruction (docs/semantics.md#mma-shapes-and-kinds).
    256 / d.bits().max(1)
}

/// tcgen05.mma shape, type and major-ness rules (docs/semantics.md#mma-shapes-and-kinds, seed TIRx
/// page).
pub fn check_tcgen05_mma(
    op: &Op,
    a: &Ty,
    b: &SmemTy,
    acc: &TmemTy,
    scales: Option<&(TmemTy, TmemTy)>,
    cta_group: u32,
) -> Result<(), Diagnostic> {
    let (a_dtype, a_shape, a_transposed) = match a {
        Ty::Smem(s) => (
            s.dtype,
            s.shape.clone(),
            matches!(s.layout, SmemLayout::Nvmma { transposed: true, .. }),
        ),
        Ty::Tmem(t) => (t.dtype, t.shape.clone(), false),
        other => {
            return Err(Diagnostic::error(
                Code::EType,
                format!(
                    "the MMA's A operand must be in shared or tensor memory, found {}",
                    other.describe()
                ),
                op.span,
                "here",
            ))
        }
    };
    let last2 = |s: &[u32]| -> (u32, u32) {
        let n = s.len();
        if n >= 2 {
            (s[n - 2], s[n - 1])
        } else {
            (1, s.first().copied().unwrap_or(1))
        }
    };
    let (m, k) = last2(&a_shape);
    let (kb, n) = last2(&b.shape);
    let (am, an) = last2(&acc.shape);
    let shape_err = |msg: String| {
        Diagnostic::error(Code::MmaShape, msg, op.span, "invalid MMA shape").with_note("cta_group::1 M 64 (N % 8) or 128 (N % 16), N <= 256; cta_group::2 M 128 or 256 (docs/semantics.md#tensor-memory-and-tcgen05)")
    };
    // cta_group::2: each CTA of the pair names its halves, A [M/2, K], B [K, N/2], ACC [M/2, N].
    let (m, n_b) = if cta_group == 2 { (2 * m, 2 * n) } else { (m, n) };
    if k != kb || am * cta_group != m || an != n_b {
        return Err(shape_err(if cta_group == 2 {
            format!(
                "A is {}x{k}, B is {kb}x{n}, the accumulator {am}x{an}: with cta_group=2 each CTA holds A [M/2, K], B [K, N/2] and the accumulator [M/2, N]",
                m / 2
            )
        } else {
            format!("A is {m}x{k}, B is {kb}x{n}, the accumulator {am}x{an}: they must be MxK, KxN and MxN")
        }));
    }
    let n = n_b;
    let m_ok = match cta_group {
        1 => m == 64 || m == 128,
        _ => m == 128 || m == 256,
    };
    if !m_ok {
        return Err(shape_err(format!(
            "M = {m} is not an instruction M for cta_group {cta_group}"
        )));
    }
    let n_mult = if cta_group == 1 && m == 64 { 8 } else { 16 };
    if n % n_mult != 0 || n < n_mult || n > 256 {
        return Err(shape_err(format!(
            "N = {n} must be a multiple of {n_mult} in {n_mult}..=256"
        )));
    }
    let step = mma_k_step(a_dtype);
    if k % step != 0 {
        return Err(shape_err(format!(
            "K = {k} is not a multiple of the {step}-element K step of {a_dtype}"
        )));
    }
    let dtype_err =
        |msg: String| Diagnostic::error(Code::MmaDtype, msg, op.span, "unsupported operand types");
    let f8f6f4 = |d: DType| matches!(d, DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1);
    let b_dtype = b.dtype;
    if scales.is_none() {
        let ok = match (a_dtype, b_dtype) {
            (DType::F16, DType::F16) | (DType::BF16, DType::BF16) => {
                matches!(acc.dtype, DType::F32 | DType::F16)
            }
            (DType::TF32 | DType::F32, DType::TF32 | DType::F32) => acc.dtype == DType::F32,
            (x, y) if f8f6f4(x) && f8f6f4(y) => matches!(acc.dtype, DType::F32 | DType::F16),
            (DType::I8 | DType::U8, DType::I8 | DType::U8) => acc.dtype == DType::I32,
            _ => false,
        };
        if !ok {
            return Err(dtype_err(format!(
                "no tcgen05.mma kind takes A {a_dtype}, B {b_dtype} into a {} accumulator",
                acc.dtype
            ))
            .with_note("kinds: f16 (f16/bf16 → f32), tf32, f8f6f4 (e4m3/e5m2/e2m1), i8 (→ s32)"));
        }
    } else {
        if !(f8f6f4(a_dtype) && f8f6f4(b_dtype)) || acc.dtype != DType::F32 {
            return Err(dtype_err(format!("block-scaled MMA takes fp8/fp6/fp4 operands into f32, found A {a_dtype}, B {b_dtype}, acc {}", acc.dtype)));
        }
        if let Some((sa, sb)) = scales {
            for s in [sa, sb] {
                if !s.dtype.is_scale() || !s.scales {
                    return Err(Diagnostic::error(
                        Code::MmaScale,
                        format!(
                            "scale factors must be ue8m0/ue4m3 in a `scales=true` TMEM buffer, found {}",
                            s.dtype
                        ),
                        op.span,
                        "bad scale operand",
                    )
                    .with_help("allocate them with `tmem.alloc ue8m0[M, K / 32], scales=true`"));
                }
            }
            if sa.dtype != sb.dtype {
                return Err(Diagnostic::error(
                    Code::MmaScale,
                    "A and B scale factors must have the same type",
                    op.span,
                    "here",
                ));
            }
        }
    }
    let mn_ok = |d: DType| {
        matches!(
            d,
            DType::F16
                | DType::BF16
                | DType::TF32
                | DType::F32
                | DType::F8E4M3
                | DType::F8E5M2
                | DType::I8
                | DType::U8
        )
    };
    let b_mn_major = !matches!(b.layout, SmemLayout::Nvmma { transposed: true, .. });
    // B is written [K, N]: its contiguous dimension is N, i.e. MN-major, unless transposed.
    if (a_transposed && !mn_ok(a_dtype)) || (b_mn_major && !mn_ok(b_dtype)) {
        return Err(Diagnostic::error(
            Code::MmaMajor,
            format!(
                "{} operands must be K-major",
                if a_transposed { a_dtype } else { b_dtype }
            ),
            op.span,
            "MN-major operand",
        )
        .with_note("MN-major only for 16-bit, tf32, e4m3, e5m2 and 8-bit integer types (docs/semantics.md#tensor-memory-and-tcgen05)")
        .with_help("store the operand K-major (`nvmma(..., transposed=true)` for B written [K, N])"));
    }
    Ok(())
}

/// The accumulator types a wgmma takes for operands `a` x `b` (PTX ISA, `wgmma.mma_async`):
/// f16 into f16 or f32, bf16 and tf32 into f32, e4m3/e5m2 (mixed as well) into f16 or f32,
/// s8/u8 (mixed as well) into s32. `None` when no wgmma takes the operand pair.
pub fn wgmma_accumulators(a: DType, b: DType) -> Option<&'static [DType]> {
    let fp8 = |d: DType| matches!(d, DType::F8E4M3 | DType::F8E5M2);
    let int8 = |d: DType| matches!(d, DType::I8 | DType::U8);
    match (a, b) {
        (DType::F16, DType::F16) => Some(&[DType::F32, DType::F16]),
        (DType::BF16, DType::BF16) => Some(&[DType::F32]),
        (DType::TF32 | DType::F32, DType::TF32 | DType::F32) => Some(&[DType::F32]),
        (x, y) if fp8(x) && fp8(y) => Some(&[DType::F32, DType::F16]),
        (x, y) if int8(x) && int8(y) => Some(&[DType::I32]),
        _ => None,
    }
}

/// Whether `n` is an N of the integer wgmma (`.s32` accumulators): 8, 16, 24, then multiples
/// of 16 up to 256 (PTX ISA, `wgmma.mma_async` shapes; ptxas refuses the others).
pub fn wgmma_int_n(n: u32) -> bool {
    matches!(n, 8 | 16 | 24) || (n.is_multiple_of(16) && (32..=256).contains(&n))
}

/// wgmma rules (docs/semantics.md#wgmma): a warpgroup multiple, M = 64 per warpgroup, N a multiple
/// of 8 up to 256 (for integers 8, 16, 24 or a multiple of 16), K steps of 32 bytes, the operand
/// and accumulator types of [`wgmma_accumulators`]; A in shared memory or in registers.
pub fn check_wgmma(op: &Op, a: &Ty, b: &SmemTy, acc: &TileTy, num_warps: u32) -> Result<(), Diagnostic> {
    let err = |m: String| {
        Err(Diagnostic::error(Code::WgmmaShape, m, op.span, "invalid wgmma")
            .with_note("M 64 per warpgroup, N % 8 == 0 and <= 256 (docs/semantics.md#wgmma)"))
    };
    if !num_warps.is_multiple_of(4) {
        return err(format!(
            "wgmma runs on whole warpgroups; num_warps is {num_warps}"
        ));
    }
    let (a_dtype, a_shape) = match a {
        Ty::Smem(s) => (s.dtype, s.shape.clone()),
        Ty::Tile(t) => (t.dtype, t.shape.clone()),
        other => {
            return err(format!(
                "A must be shared memory or a register tile, found {}",
                other.describe()
            ))
        }
    };
    if a_shape.len() != 2 || b.shape.len() != 2 || acc.shape.len() != 2 {
        return err("wgmma operands are 2-D".into());
    }
    let (m, k, n) = (a_shape[0], a_shape[1], b.shape[1]);
    if b.shape[0] != k || acc.shape != vec![m, n] {
        return err(format!(
            "A {m}x{k}, B {}x{}, accumulator {:?} do not form an MxNxK product",
            b.shape[0], b.shape[1], acc.shape
        ));
    }
    if m % 64 != 0 || m / 64 > num_warps / 4 * 2 {
        return err(format!("M = {m} is not 64 per warpgroup for {num_warps} warps"));
    }
    if n % 8 != 0 || n > 256 {
        return err(format!("N = {n} must be a multiple of 8 up to 256"));
    }
    let Some(accs) = wgmma_accumulators(a_dtype, b.dtype) else {
        return Err(Diagnostic::error(
            Code::MmaDtype,
            format!("no wgmma takes A {a_dtype} and B {}", b.dtype),
            op.span,
            "here",
        )
        .with_note(WGMMA_TYPES));
    };
    if k % mma_k_step(a_dtype) != 0 {
        return err(format!(
            "K = {k} is not a multiple of the {}-element K step",
            mma_k_step(a_dtype)
        ));
    }
    if !accs.contains(&acc.dtype) {
        let names: Vec<String> = accs.iter().map(|d| d.to_string()).collect();
        return Err(Diagnostic::error(
            Code::MmaDtype,
            format!(
                "wgmma with {a_dtype} operands accumulates in {}, not {}",
                names.join(" or "),
                acc.dtype
            ),
            op.span,
            "here",
        )
        .with_note(WGMMA_TYPES));
    }
    if acc.dtype == DType::I32 && !wgmma_int_n(n) {
        return err(format!(
            "N = {n} is not an N of the integer wgmma (8, 16, 24 or a multiple of 16 up to 256)"
        ));
    }
    Ok(())
}

/// The note of a wgmma type error: the operand and accumulator types the instruction takes.
const WGMMA_TYPES: &str =
    "wgmma types (PTX ISA): f16 -> f16 or f32; bf16, tf32 -> f32; e4m3/e5m2 -> f16 or f32; s8/u8 -> s32";
