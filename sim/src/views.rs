//! Where an element lives: shared-memory buffer element → physical byte (and bit), and
//! tensor-memory buffer element → (lane, column, bit).
//!
//! The placement itself (NVMMA, swizzled, linear and plain shared layouts; TMEM blocks and
//! scale factors) is [`bwsim_isa::placement`], shared with the PTX backend; this module adds
//! what the simulator needs on top of it: views (an origin and a shape inside a root buffer),
//! and the per-thread caches of whole placed views that TMA loads/stores/gather/scatter,
//! generic `smem.load`/`smem.store`, tcgen05.mma/cp and wgmma operand reads all go through,
//! so a layout bug shows up everywhere at once, as it would on hardware.

use crate::value::{Dims, Layout, SmemView, TmemView};
use bwsim_isa::placement::TmemLayout;
pub use bwsim_isa::placement::{buffer_bytes, offset_bits, smem_element, TmemCell};
use bwsim_isa::types::{DType, Swizzle};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// Physical location of element `idx` of a view.
pub fn view_element(v: &SmemView, idx: &[u32]) -> Option<(u32, u32)> {
    let r = v.root_index(idx);
    smem_element(v.base, v.dtype, v.root.as_slice(), v.layout, r.as_slice())
}

/// Physical `(byte, bit shift)` of every element of a view, in the view's row-major order
/// ([`place_view`]). A kernel's loop walks the same few views again and again (a ring of
/// buffers), so each thread keeps the lists it placed, by view, up to [`PLACED_ELEMENTS`]
/// elements in all (then it starts over).
pub fn view_addresses(v: &SmemView) -> Option<Arc<Vec<(u32, u32)>>> {
    thread_local! {
        static PLACED: RefCell<Placed<SmemView, (u32, u32)>> = RefCell::new(Placed::default());
    }
    // The allocation index names the buffer in diagnostics; it does not move an element.
    placed(&PLACED, SmemView { alloc: 0, ..*v }, || place_view(v))
}

/// Placements a thread keeps, by view: up to [`PLACED_ELEMENTS`] elements in all, then it
/// starts over.
struct Placed<K, T> {
    map: HashMap<K, Arc<Vec<T>>>,
    elements: usize,
}

impl<K, T> Default for Placed<K, T> {
    fn default() -> Self {
        Placed {
            map: HashMap::new(),
            elements: 0,
        }
    }
}

/// The placement kept in `cache` under `key`, or `place()` (kept when it fits).
fn placed<K: std::hash::Hash + Eq, T>(
    cache: &'static std::thread::LocalKey<RefCell<Placed<K, T>>>,
    key: K,
    place: impl FnOnce() -> Option<Vec<T>>,
) -> Option<Arc<Vec<T>>> {
    if let Some(hit) = cache.with(|p| p.borrow().map.get(&key).cloned()) {
        return Some(hit);
    }
    let fresh = Arc::new(place()?);
    cache.with(|p| {
        let p = &mut *p.borrow_mut();
        if p.elements + fresh.len() > PLACED_ELEMENTS {
            p.map.clear();
            p.elements = 0;
        }
        if fresh.len() <= PLACED_ELEMENTS {
            p.elements += fresh.len();
            p.map.insert(key, fresh.clone());
        }
    });
    Some(fresh)
}

/// Elements of placed views a thread keeps ([`view_addresses`]): 8 MiB.
const PLACED_ELEMENTS: usize = 1 << 20;

/// [`view_addresses`] computed: the same results as calling [`view_element`] per element, in
/// bulk: for NVMMA and plain layouts the offset is a sum of a part that depends on the last
/// index only and a part that does not, so each row costs one full evaluation and each element
/// an addition.
pub fn place_view(v: &SmemView) -> Option<Vec<(u32, u32)>> {
    let shape = v.shape.as_slice();
    let n = v.shape.numel() as usize;
    let root = v.root.as_slice();
    let rr = root.len();
    let separable = !matches!(v.layout, Layout::Swizzled { .. } | Layout::Linear { .. })
        && rr >= 1
        && (v.dropped as usize) < rr
        && !shape.is_empty();
    let mut out = Vec::with_capacity(n);
    if !separable {
        let mut idx = vec![0u32; shape.len()];
        for lin in 0..n as u64 {
            crate::value::unravel(lin, shape, &mut idx);
            out.push(view_element(v, &idx)?);
        }
        return Some(out);
    }
    let cols = *shape.last()? as usize;
    let o_last = v.origin.as_slice()[rr - 1];
    // g(b): the last index's contribution (other indices zero).
    let mut zero = vec![0u32; rr];
    let mut g = Vec::with_capacity(cols);
    for c in 0..cols as u32 {
        zero[rr - 1] = o_last + c;
        g.push(offset_bits(v.dtype, root, v.layout, &zero));
    }
    let swz = v.layout.swizzle();
    let rows = n.checked_div(cols).unwrap_or(0);
    let outer_shape = &shape[..shape.len() - 1];
    let mut oidx = vec![0u32; outer_shape.len()];
    for row in 0..rows as u64 {
        crate::value::unravel(row, outer_shape, &mut oidx);
        let mut ri = v.origin;
        let off = v.dropped as usize;
        for (j, &i) in oidx.iter().enumerate() {
            ri.as_mut_slice()[off + j] += i;
        }
        ri.as_mut_slice()[rr - 1] = 0;
        let rowpart = offset_bits(v.dtype, root, v.layout, ri.as_slice());
        for &gc in &g {
            let bit = rowpart + gc;
            let byte = u32::try_from(v.base as u64 + bit / 8).ok()?;
            let phys = match v.layout {
                Layout::Nvmma { .. } => swz.apply(byte),
                _ => byte,
            };
            out.push((phys, (bit % 8) as u32));
        }
    }
    Some(out)
}

/// Logical (unswizzled) byte address of a view's element 0: the address TMA and the MMA
/// descriptors start from.
pub fn view_start(v: &SmemView) -> Option<u32> {
    let off = offset_bits(v.dtype, v.root.as_slice(), v.layout, v.origin.as_slice()) / 8;
    u32::try_from((v.base as u64).checked_add(off)?).ok()
}

/// The TMEM layout of a view's buffer.
fn tmem_layout(v: &TmemView) -> TmemLayout {
    TmemLayout {
        dtype: v.dtype,
        block: v.block,
        col_stride: v.col_stride,
        scales: v.scales,
    }
}

/// Columns one `[M, N]` matrix of a TMEM view's buffer occupies (as
/// [`bwsim_isa::typeck::TmemTy::matrix_cols`]).
pub fn tmem_matrix_cols(v: &TmemView) -> u64 {
    tmem_layout(v).matrix_cols(v.root.as_slice())
}

/// Where element `idx` of a TMEM view lives (for a scale-factor view, its copy in lane
/// quarter 0).
pub fn tmem_element(v: &TmemView, idx: &[u32]) -> TmemCell {
    tmem_element_in(v, idx, 0)
}

/// Where element `idx` of a TMEM view lives in lane quarter `quarter`: a scale-factor view has
/// a copy of every row in each quarter; any other view has one cell (`quarter` is ignored).
pub fn tmem_element_in(v: &TmemView, idx: &[u32], quarter: u32) -> TmemCell {
    let ri: Dims = v.root_index(idx);
    tmem_layout(v).cell(v.col, v.root.as_slice(), ri.as_slice(), quarter)
}

/// [`tmem_element_in`] of every element of a view, row-major over its shape
/// ([`place_tmem_view`]), kept per thread by view and quarter like [`view_addresses`].
pub fn tmem_view_cells(v: &TmemView, quarter: u32) -> Arc<Vec<TmemCell>> {
    thread_local! {
        static PLACED: RefCell<Placed<(TmemView, u32), TmemCell>> = RefCell::new(Placed::default());
    }
    let key = (TmemView { alloc: 0, ..*v }, quarter);
    placed(&PLACED, key, || Some(place_tmem_view(v, quarter))).unwrap_or_default()
}

/// The TMEM cells `(lane, column)` of every element of a view in the lane quarters whose bits
/// are set in `quarters` (in increasing quarter order), consecutive duplicates of packed
/// elements removed; kept per thread like [`tmem_view_cells`] (the checker asks for the same
/// accumulator's cells on every MMA).
pub fn tmem_view_lane_cols(v: &TmemView, quarters: u8) -> Arc<Vec<(u32, u32)>> {
    thread_local! {
        static PLACED: RefCell<Placed<(TmemView, u8), (u32, u32)>> = RefCell::new(Placed::default());
    }
    let key = (TmemView { alloc: 0, ..*v }, quarters);
    placed(&PLACED, key, || {
        let mut out: Vec<(u32, u32)> = Vec::with_capacity(v.shape.numel() as usize);
        for q in (0..4u32).filter(|q| quarters & (1 << q) != 0) {
            for c in tmem_view_cells(v, q).iter() {
                if out.last() != Some(&(c.lane, c.col)) {
                    out.push((c.lane, c.col));
                }
            }
        }
        Some(out)
    })
    .unwrap_or_default()
}

/// [`tmem_view_lane_cols`] of every copy of a view: a scale-factor view's copies in all four
/// lane quarters (what the tensor pipe reads and `tcgen05.cp` writes), another view's one.
pub fn tmem_view_copies(v: &TmemView) -> Arc<Vec<(u32, u32)>> {
    tmem_view_lane_cols(v, if v.scales { 0b1111 } else { 0b0001 })
}

/// [`tmem_view_cells`] computed. Within a row of a matrix view the bit offset grows by `bits *
/// col_stride` per element (the block split along N cancels: `(n / BN) * BN + n % BN = n`), so
/// each row costs one [`tmem_element_in`].
pub fn place_tmem_view(v: &TmemView, quarter: u32) -> Vec<TmemCell> {
    let shape = v.shape.as_slice();
    let n = v.shape.numel() as usize;
    let mut out = Vec::with_capacity(n);
    let rank = shape.len();
    let linear = !v.scales && v.root.len() >= 2 && rank >= 1 && v.dropped as usize + rank == v.root.len();
    let mut idx = vec![0u32; rank];
    if !linear {
        for lin in 0..n as u64 {
            crate::value::unravel(lin, shape, &mut idx);
            out.push(tmem_element_in(v, &idx, quarter));
        }
        return out;
    }
    let cols = shape[rank - 1] as usize;
    let eb = v.dtype.bits() as u64 * v.col_stride.max(1) as u64;
    for row in 0..n.checked_div(cols).unwrap_or(0) as u64 {
        crate::value::unravel(row, &shape[..rank - 1], &mut idx[..rank - 1]);
        idx[rank - 1] = 0;
        let first = tmem_element_in(v, &idx, quarter);
        for j in 0..cols as u64 {
            let bit = first.shift as u64 + j * eb;
            out.push(TmemCell {
                lane: first.lane,
                col: u32::try_from(first.col as u64 + bit / 32).unwrap_or(u32::MAX),
                shift: (bit % 32) as u32,
            });
        }
    }
    out
}

/// `smem.reinterpret`: a whole view of `dtype[shape]` with `layout` starting at the byte of
/// `v`'s first element, in `v`'s allocation; `None` when that byte's address overflows. The
/// functional machine and the timing engine both build the view here (each reports the
/// overflow its own way; the machine also checks the end against shared memory's size).
pub fn smem_reinterpret(v: &SmemView, dtype: DType, layout: Layout, shape: Dims) -> Option<SmemView> {
    Some(SmemView::whole(view_start(v)?, dtype, layout, shape, v.alloc))
}

/// `tmem.reinterpret`: a view of `dtype[shape]` with TMEM layout (`block`, `col_stride`)
/// starting at the column of `v`'s first element (lane 0 of its matrix).
pub fn tmem_reinterpret(
    v: &TmemView,
    dtype: DType,
    shape: Dims,
    block: [u32; 2],
    col_stride: u32,
) -> TmemView {
    let first = tmem_element(v, &vec![0; v.shape.len()]);
    TmemView {
        col: first.col,
        dtype,
        block,
        col_stride,
        scales: false,
        root: shape,
        origin: Dims::zeros(shape.len()),
        dropped: 0,
        shape,
        alloc: v.alloc,
    }
}

/// The swizzle mode's span in bytes (0 when unswizzled), re-exported for the TMA unit.
pub fn span_bytes(s: Swizzle) -> u32 {
    s.bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_addresses_match_per_element() {
        use crate::value::Dims;
        use DType::{F16, F32, F4E2M1, I8};
        let nvmma = |swizzle, transposed| Layout::Nvmma {
            swizzle,
            transposed,
            fp4_padded: false,
        };
        let (b128, b128_t, b64) = (
            nvmma(Swizzle::B128, false),
            nvmma(Swizzle::B128, true),
            nvmma(Swizzle::B64, false),
        );
        let swizzled = Layout::Swizzled {
            vec: 8,
            per_phase: 1,
            max_phase: 4,
        };
        // A view at byte 1152 of allocation 0 with no dropped dimension: dtype, root, layout,
        // origin, shape.
        let dims = |d: &[u32]| Dims::from_slice(d).expect("fits");
        let view = |dtype, root: &[u32], layout, origin: &[u32], shape: &[u32]| SmemView {
            origin: dims(origin),
            shape: dims(shape),
            ..SmemView::whole(1024 + 128, dtype, layout, dims(root), 0)
        };
        let cases = [
            SmemView {
                dropped: 1,
                ..view(F16, &[3, 64, 128], b128, &[1, 0, 16], &[64, 32])
            },
            view(F16, &[64, 128], b128_t, &[16, 0], &[16, 128]),
            view(F32, &[8, 4], b64, &[0, 0], &[8, 4]),
            view(F4E2M1, &[4, 256], b128, &[0, 0], &[4, 256]),
            view(I8, &[4, 64], swizzled, &[0, 0], &[4, 64]),
            SmemView {
                dropped: 1,
                ..view(F32, &[2, 8, 8], Layout::Plain, &[1, 2, 0], &[6, 8])
            },
        ];
        for v in cases {
            let (dtype, layout, shape) = (v.dtype, v.layout, v.shape.as_slice());
            let bulk = view_addresses(&v).expect("fits");
            let mut idx = vec![0u32; shape.len()];
            for (lin, got) in bulk.iter().enumerate() {
                crate::value::unravel(lin as u64, shape, &mut idx);
                assert_eq!(
                    *got,
                    view_element(&v, &idx).expect("fits"),
                    "{dtype} {layout:?} element {idx:?}"
                );
            }
        }
    }

    /// Scale factors as docs/hardware/tmem-scales.md places them: row m in lane m % 32 of every
    /// quarter, column m / 32 per group of 4 K blocks, the K block's byte in the cell.
    #[test]
    fn scale_factor_placement() {
        let v = TmemView {
            col: 40,
            dtype: DType::UE8M0,
            block: [128, 8],
            col_stride: 1,
            scales: true,
            root: Dims::from_slice(&[128, 8]).expect("fits"),
            origin: Dims::zeros(2),
            dropped: 0,
            shape: Dims::from_slice(&[128, 8]).expect("fits"),
            alloc: 0,
        };
        let cell = |lane, col, shift| TmemCell { lane, col, shift };
        assert_eq!(tmem_element(&v, &[0, 0]), cell(0, 40, 0));
        assert_eq!(tmem_element(&v, &[33, 1]), cell(1, 41, 8));
        assert_eq!(tmem_element(&v, &[127, 3]), cell(31, 43, 24));
        // K blocks 4..8: the second group of cells, 128 / 32 = 4 columns further.
        assert_eq!(tmem_element(&v, &[5, 4]), cell(5, 44, 0));
        assert_eq!(tmem_element(&v, &[70, 6]), cell(6, 46, 16));
        // Every lane quarter holds a copy.
        assert_eq!(tmem_element_in(&v, &[33, 1], 2), cell(65, 41, 8));
        assert_eq!(tmem_element_in(&v, &[127, 3], 3), cell(127, 43, 24));
        assert_eq!(tmem_matrix_cols(&v), 8);
        // A 64-row matrix takes 2 columns per group; stacked matrices follow each other.
        let v64 = TmemView {
            root: Dims::from_slice(&[2, 64, 4]).expect("fits"),
            origin: Dims::zeros(3),
            shape: Dims::from_slice(&[2, 64, 4]).expect("fits"),
            ..v
        };
        assert_eq!(tmem_matrix_cols(&v64), 2);
        assert_eq!(tmem_element(&v64, &[0, 40, 2]), cell(8, 41, 16));
        assert_eq!(tmem_element(&v64, &[1, 40, 2]), cell(8, 43, 16));
        // A view of K blocks 4..8 starts at the second group.
        let sub = TmemView {
            origin: Dims::from_slice(&[0, 4]).expect("fits"),
            shape: Dims::from_slice(&[128, 4]).expect("fits"),
            ..v
        };
        assert_eq!(tmem_element(&sub, &[1, 0]), cell(1, 44, 0));
        // Other views ignore the quarter.
        let acc = TmemView {
            scales: false,
            dtype: DType::F32,
            ..v
        };
        assert_eq!(tmem_element_in(&acc, &[33, 1], 2), tmem_element(&acc, &[33, 1]));
    }

    /// The bulk placement of a TMEM view matches element-wise placement: packed types, column
    /// strides, 64-row blocks, N blocks, stacked matrices, sub-views with origins and dropped
    /// dimensions, scale factors in every quarter.
    #[test]
    fn tmem_view_cells_match_elementwise_placement() {
        use DType::{F16, F32, F8E4M3, UE8M0};
        /// A view at column 32 of allocation 0, of data (not scale factors), with no dropped
        /// dimension: dtype, block, col_stride, root, origin, shape.
        fn view(
            dtype: DType,
            block: [u32; 2],
            col_stride: u32,
            root: &[u32],
            origin: &[u32],
            shape: &[u32],
        ) -> TmemView {
            let dims = |d: &[u32]| Dims::from_slice(d).expect("fits");
            TmemView {
                col: 32,
                dtype,
                block,
                col_stride,
                scales: false,
                root: dims(root),
                origin: dims(origin),
                dropped: 0,
                shape: dims(shape),
                alloc: 0,
            }
        }
        let cases = [
            view(F32, [128, 64], 1, &[128, 128], &[0, 0], &[128, 128]),
            view(F32, [64, 32], 1, &[256, 96], &[64, 8], &[128, 40]),
            view(F16, [128, 64], 1, &[128, 96], &[0, 3], &[128, 61]),
            view(F16, [128, 64], 2, &[128, 64], &[0, 0], &[128, 64]),
            view(F8E4M3, [64, 16], 1, &[64, 40], &[0, 5], &[64, 35]),
            TmemView {
                dropped: 1,
                ..view(F32, [128, 128], 1, &[2, 128, 64], &[1, 0, 0], &[128, 64])
            },
            view(F32, [128, 64], 1, &[3, 128, 32], &[0, 0, 0], &[3, 128, 32]),
            TmemView {
                scales: true,
                ..view(UE8M0, [128, 8], 1, &[128, 8], &[0, 0], &[128, 8])
            },
        ];
        for v in cases {
            let (dtype, root, shape) = (v.dtype, v.root.as_slice(), v.shape.as_slice());
            for quarter in 0..4 {
                let bulk = tmem_view_cells(&v, quarter);
                assert_eq!(bulk.len() as u64, v.shape.numel());
                let mut idx = vec![0u32; shape.len()];
                for (lin, got) in bulk.iter().enumerate() {
                    crate::value::unravel(lin as u64, shape, &mut idx);
                    assert_eq!(
                        *got,
                        tmem_element_in(&v, &idx, quarter),
                        "{dtype} {root:?} {shape:?} element {idx:?} quarter {quarter}"
                    );
                }
            }
        }
    }
}
