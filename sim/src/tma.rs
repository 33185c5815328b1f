//! The TMA unit's data movement and fault rules (PTX.md sections 3, 4 and 7).
//!
//! - Tile loads (rank 1..5): every box element outside the tensor (negative or past the end,
//!   any dimension) is filled with zeros, or with the 16-bit pattern 0x7FF7 repeated for
//!   `oob=nan` (an f32 reads 0x7FF77FF7) [H100]. The transaction count is the full box, OOB
//!   included. A load may land in pieces (ranges of box rows), each completing its own bytes.
//! - Tile stores write only the in-bounds elements [H100].
//! - Element strides step every dimension but the innermost: the box moved is
//!   `ceil(block / stride)` per dimension, packed densely, and counts that many bytes [H100].
//! - gather4/scatter4: rows in groups of 4, one message each; gather fills OOB rows/columns,
//!   scatter drops rows and columns past the end [seed 09].
//! - Faults: innermost coordinate not 16-byte aligned (loads and stores) and gather/scatter
//!   column not 16-byte aligned → illegal instruction; any negative coordinate on a store or
//!   scatter → illegal instruction; shared-memory box not 128-byte aligned → misaligned
//!   address.
//!
//! The box is placed in shared memory through [`crate::layout`]: box element with linear index
//! `l` (row-major over the box) is element `l` of the destination view in its physical order
//! (the last two dimensions swapped for an MN-major `transposed` buffer). Coordinates are in
//! the descriptor's dimension order (outermost first, as Gluon writes them); PTX's `c0` is the
//! last one. This module knows memories and descriptors, not agents or time.

use crate::layout;
use crate::lower::DescInfo;
use crate::memory::Smem;
use crate::trap::{CudaError, Fault, OpResult};
use crate::value::{unravel, SmemView, MAX_RANK};
use bwsim_isa::launch::HostTensor;
use bwsim_isa::types::{DType, OobFill};
use std::ops::Range;
use std::sync::Arc;

/// The bits an out-of-bounds element reads, given its physical address.
pub fn oob_bits(fill: OobFill, dtype: DType, addr: u32) -> u64 {
    match fill {
        OobFill::Zero => 0,
        OobFill::Nan => match dtype.bits() {
            64 => 0x7FF7_7FF7_7FF7_7FF7,
            32 => 0x7FF7_7FF7,
            16 => 0x7FF7,
            8 => {
                if addr.is_multiple_of(2) {
                    0xF7
                } else {
                    0x7F
                }
            }
            _ => 0,
        },
    }
}

fn box_rows(block: &[u32]) -> u64 {
    block[..block.len().saturating_sub(1)]
        .iter()
        .map(|&x| x as u64)
        .product()
}

/// Number of box rows (all dimensions but the innermost) a copy moves.
pub fn rows(desc: &DescInfo) -> u64 {
    box_rows(&desc.box_shape())
}

/// Check a tile load or store before it is issued.
pub fn check_tile(desc: &DescInfo, coords: &[i64], smem: &SmemView, store: bool) -> OpResult<()> {
    let r = desc.block.len();
    if coords.len() != r {
        return Err(Fault::unsupported(format!(
            "descriptor of rank {r} given {} coordinates",
            coords.len()
        )));
    }
    let c0 = coords[r - 1];
    let bits = desc.dtype.bits() as i64;
    if !bit_offset_aligned(c0, bits) {
        return Err(Fault::trap(
            CudaError::IllegalInstruction,
            format!(
                "TMA {} innermost coordinate {c0} is at byte offset {} of its row, not a multiple of 16",
                if store { "store" } else { "load" },
                c0 as i128 * bits as i128 / 8
            ),
        ));
    }
    if store {
        if let Some((k, c)) = coords.iter().enumerate().find(|(_, &c)| c < 0) {
            return Err(Fault::trap(
                CudaError::IllegalInstruction,
                format!("TMA store with negative coordinate {c} in dimension {k} (stores accept no negative coordinates)"),
            ));
        }
    }
    check_smem(smem)?;
    let box_elems: u64 = desc.box_shape().iter().map(|&x| x as u64).product();
    if smem.shape.numel() != box_elems {
        return Err(Fault::unsupported(format!(
            "shared view of {} elements for a box of {box_elems}",
            smem.shape.numel()
        )));
    }
    Ok(())
}

/// Whether element offset `c` of `bits`-bit elements starts on a 16-byte boundary (for any
/// `c`: `c * bits` is taken modulo 128 without overflowing).
fn bit_offset_aligned(c: i64, bits: i64) -> bool {
    (c.rem_euclid(128) * bits).rem_euclid(128) == 0
}

/// The shared-memory operand of a TMA must be 128-byte aligned [H100].
pub fn check_smem(smem: &SmemView) -> OpResult<()> {
    let start = layout::view_start(smem)
        .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
    if start % 128 != 0 {
        return Err(Fault::trap(
            CudaError::MisalignedAddress,
            format!("TMA shared-memory box at byte {start} is not 128-byte aligned"),
        ));
    }
    Ok(())
}

/// Check a gather4/scatter4 before it is issued.
pub fn check_gather(desc: &DescInfo, xs: &[i64], col: i64, smem: &SmemView, scatter: bool) -> OpResult<()> {
    let bits = desc.dtype.bits() as i64;
    if !bit_offset_aligned(col, bits) {
        return Err(Fault::trap(
            CudaError::IllegalInstruction,
            format!(
                "{} column offset {col} is at byte offset {} of its row, not 16-byte aligned",
                if scatter { "scatter4" } else { "gather4" },
                col as i128 * bits as i128 / 8
            ),
        ));
    }
    if scatter {
        if col < 0 {
            return Err(Fault::trap(
                CudaError::IllegalInstruction,
                format!("scatter4 with negative column offset {col}"),
            ));
        }
        if let Some((i, x)) = xs.iter().enumerate().find(|(_, &x)| x < 0) {
            return Err(Fault::trap(
                CudaError::IllegalInstruction,
                format!("scatter4 with negative row offset {x} (row {i})"),
            ));
        }
    }
    check_smem(smem)?;
    let by = desc.block.last().copied().unwrap_or(1) as u64;
    if smem.shape.numel() != xs.len() as u64 * by {
        return Err(Fault::unsupported(
            "gather/scatter shared view does not match the rows",
        ));
    }
    Ok(())
}

/// Physical `(byte, shift)` of every box element, in box order (row-major over the box): the
/// destination view's elements in its physical order (last two dimensions swapped for an
/// MN-major `transposed` view).
pub fn box_addresses(v: &SmemView) -> OpResult<Arc<Vec<(u32, u32)>>> {
    let addrs = layout::view_addresses(v)
        .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
    let shape = v.shape.as_slice();
    let r = shape.len();
    if !(v.layout.transposed() && r >= 2) {
        return Ok(addrs);
    }
    // Box element (.., p, q) with p < shape[r-1], q < shape[r-2] is view element (.., q, p).
    let (a, b) = (shape[r - 2] as usize, shape[r - 1] as usize);
    let mat = a * b;
    let mut out = Vec::with_capacity(addrs.len());
    for outer in 0..addrs.len() / mat.max(1) {
        for p in 0..b {
            for q in 0..a {
                out.push(addrs[outer * mat + q * b + p]);
            }
        }
    }
    Ok(Arc::new(out))
}

/// For box row `row` (all dims but the innermost, in the traversed box), the global linear
/// index of its element at inner offset 0, or `None` when an outer coordinate is out of range.
/// Element strides step the outer coordinates: row index `i` of dimension `k` is global
/// coordinate `coords[k] + i * stride[k]` [PTX.md section 3].
/// `bx` is the traversed box ([`DescInfo::box_shape`], taken once per copy).
fn row_base(desc: &DescInfo, bx: &[u32], coords: &[i64], row: u64, scratch: &mut [u32]) -> Option<i64> {
    let r = bx.len();
    unravel(row, &bx[..r - 1], &mut scratch[..r - 1]);
    let mut lin: i64 = 0;
    for k in 0..r - 1 {
        let g = coords[k].checked_add(scratch[k] as i64 * desc.stride(k) as i64)?;
        if g < 0 || g >= desc.shape[k] as i64 {
            return None;
        }
        lin = lin.checked_mul(desc.shape[k] as i64)?.checked_add(g)?;
    }
    lin.checked_mul(desc.shape[r - 1] as i64)
}

/// Land box rows `rows` of a tile load at `addrs` (see [`box_addresses`]); returns the bytes
/// delivered (OOB included).
pub fn load_rows(
    desc: &DescInfo,
    coords: &[i64],
    g: &HostTensor,
    smem: &mut Smem,
    addrs: &[(u32, u32)],
    rows: Range<u64>,
) -> OpResult<u64> {
    let inner = desc.block.last().copied().unwrap_or(1) as u64;
    let bits = desc.dtype.bits();
    let mut scratch = [0u32; MAX_RANK];
    let c0 = coords.last().copied().unwrap_or(0);
    let width = desc.shape.last().copied().unwrap_or(1) as i64;
    let w = (bits / 8) as usize;
    let bx = desc.box_shape();
    for row in rows.clone() {
        let base = row_base(desc, &bx, coords, row, &mut scratch);
        let row_addrs = &addrs[(row * inner) as usize..((row + 1) * inner) as usize];
        // A row wholly inside the tensor, of whole aligned elements inside shared memory: one
        // tight copy (anything else takes the element and run walk below).
        if let Some(b) = base.filter(|_| c0 >= 0 && c0.saturating_add(inner as i64) <= width) {
            let from = (b + c0) as usize * w;
            if let Some(src) = g.data.get(from..from + inner as usize * w) {
                if smem.copy_elems(row_addrs, bits, src) {
                    continue;
                }
            }
        }
        let mut c = 0u64;
        while c < inner {
            let (addr, shift) = row_addrs[c as usize];
            let gc = c0.saturating_add(c as i64);
            match base {
                Some(b) if gc >= 0 && gc < width => {
                    if bits.is_multiple_of(8) && shift == 0 {
                        // A run of whole-byte elements that lie next to each other in shared
                        // memory (a 16-byte chunk at least, whatever the swizzle) and in the
                        // row: one copy of their bytes.
                        let last = (inner - 1).min((width - 1 - c0).max(0) as u64);
                        let mut end = c + 1;
                        while end <= last
                            && row_addrs[end as usize] == (addr + (end - c) as u32 * w as u32, 0)
                        {
                            end += 1;
                        }
                        let from = (b + gc) as usize * w;
                        let to = from + (end - c) as usize * w;
                        let bytes = g.data.get(from..to).ok_or_else(|| {
                            Fault::unsupported("TMA load reads past the end of its global tensor")
                        })?;
                        smem.write_bytes(addr, bytes)?;
                        c = end;
                        continue;
                    }
                    smem.write(addr, shift, bits, g.get_bits((b + gc) as u64))?;
                }
                _ => smem.write(addr, shift, bits, oob_bits(desc.oob, desc.dtype, addr))?,
            }
            c += 1;
        }
    }
    Ok((rows.end - rows.start) * inner * bits as u64 / 8)
}

/// Land gather4 messages `msgs` (rows `4m..4m+4` each) at `addrs` (the `[rows, BLOCK_Y]` view
/// in row-major order); returns the bytes delivered.
pub fn gather_msgs(
    desc: &DescInfo,
    xs: &[i64],
    col: i64,
    g: &HostTensor,
    smem: &mut Smem,
    addrs: &[(u32, u32)],
    msgs: Range<u64>,
) -> OpResult<u64> {
    let by = desc.block.last().copied().unwrap_or(1) as u64;
    let bits = desc.dtype.bits();
    let (nrows, ncols) = (
        desc.shape[0] as i64,
        desc.shape.get(1).copied().unwrap_or(1) as i64,
    );
    let mut moved = 0u64;
    for m in msgs {
        for i in (m * 4)..(m * 4 + 4).min(xs.len() as u64) {
            let x = xs[i as usize];
            for c in 0..by {
                let gc = col.saturating_add(c as i64);
                let (addr, shift) = addrs[(i * by + c) as usize];
                let v = if x < 0 || x >= nrows || gc < 0 || gc >= ncols {
                    oob_bits(desc.oob, desc.dtype, addr)
                } else {
                    g.get_bits((x * ncols + gc) as u64)
                };
                smem.write(addr, shift, bits, v)?;
            }
        }
        moved += 4 * by * bits as u64 / 8;
    }
    Ok(moved)
}

/// What a TMA store or scatter read from shared memory, written to its global tensor when the
/// store lands: runs of whole-byte elements that lie next to each other in shared memory and
/// in the global row (copied as bytes), and single elements of any width.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreData {
    /// `(global byte offset, length)` of each run; their bytes follow one another in `bytes`.
    runs: Vec<(usize, usize)>,
    bytes: Vec<u8>,
    /// `(global linear index, bits)` of each element outside the runs.
    elems: Vec<(u64, u64)>,
}

impl StoreData {
    /// Single elements, `(global linear index, bits)` each.
    pub fn from_elems(elems: Vec<(u64, u64)>) -> StoreData {
        StoreData {
            elems,
            ..StoreData::default()
        }
    }
}

/// A store's shared-memory reads: the data of every in-bounds element; the shared-memory
/// `(byte, shift)` of each element read is appended to `read`.
pub fn store_read(
    desc: &DescInfo,
    coords: &[i64],
    smem: &Smem,
    addrs: &[(u32, u32)],
    read: &mut Vec<(u32, u32)>,
) -> OpResult<StoreData> {
    let inner = desc.block.last().copied().unwrap_or(1) as usize;
    let bits = desc.dtype.bits();
    let mut scratch = [0u32; MAX_RANK];
    let c0 = coords.last().copied().unwrap_or(0);
    let width = desc.shape.last().copied().unwrap_or(1) as i64;
    // The in-bounds columns of every row: `c0 + c` in `0..width`.
    let lo = c0.saturating_neg().clamp(0, inner as i64) as usize;
    let hi = width.saturating_sub(c0).clamp(lo as i64, inner as i64) as usize;
    let whole = bits.is_multiple_of(8);
    let w = (bits / 8) as usize;
    let mut out = StoreData::default();
    let bx = desc.box_shape();
    read.reserve(addrs.len());
    if whole {
        out.bytes.reserve(addrs.len() * w);
    }
    for row in 0..box_rows(&bx) {
        let Some(base) = row_base(desc, &bx, coords, row, &mut scratch) else {
            continue;
        };
        let row_addrs = &addrs[row as usize * inner..(row as usize + 1) * inner];
        read.extend_from_slice(&row_addrs[lo..hi]);
        let mut c = lo;
        while c < hi {
            let (addr, shift) = row_addrs[c];
            let lin = (base + c0 + c as i64) as u64;
            if whole && shift == 0 {
                // A run of whole-byte elements next to each other in shared memory (a 16-byte
                // chunk at least, whatever the swizzle) and in the row: one copy of their bytes.
                let mut end = c + 1;
                while end < hi && row_addrs[end] == (addr.wrapping_add(((end - c) * w) as u32), 0) {
                    end += 1;
                }
                // Out of range, the element reads below trap at the first element outside.
                if let Some(b) = smem.read_bytes(addr, (end - c) * w) {
                    out.runs.push((lin as usize * w, b.len()));
                    out.bytes.extend_from_slice(b);
                    c = end;
                    continue;
                }
            }
            out.elems.push((lin, smem.read(addr, shift, bits)?));
            c += 1;
        }
    }
    Ok(out)
}

/// A scatter's shared-memory reads (rows and columns past the end dropped); the elements read
/// are appended to `read` as in [`store_read`].
pub fn scatter_read(
    desc: &DescInfo,
    xs: &[i64],
    col: i64,
    smem: &Smem,
    addrs: &[(u32, u32)],
    read: &mut Vec<(u32, u32)>,
) -> OpResult<StoreData> {
    let by = desc.block.last().copied().unwrap_or(1) as u64;
    let bits = desc.dtype.bits();
    let (nrows, ncols) = (
        desc.shape[0] as i64,
        desc.shape.get(1).copied().unwrap_or(1) as i64,
    );
    let mut out = Vec::new();
    for (i, &x) in xs.iter().enumerate() {
        if x < 0 || x >= nrows {
            continue;
        }
        for c in 0..by {
            let gc = col.saturating_add(c as i64);
            if gc < 0 || gc >= ncols {
                continue;
            }
            let (addr, shift) = addrs[i * by as usize + c as usize];
            read.push((addr, shift));
            out.push(((x * ncols + gc) as u64, smem.read(addr, shift, bits)?));
        }
    }
    Ok(StoreData::from_elems(out))
}

/// Write a store's data to global memory (what lies past the tensor's end is dropped).
pub fn global_write(g: &mut HostTensor, data: &StoreData) {
    let mut k = 0;
    for &(off, len) in &data.runs {
        let src = &data.bytes[k..k + len];
        k += len;
        let end = (off + len).min(g.data.len());
        if off < end {
            g.data[off..end].copy_from_slice(&src[..end - off]);
        }
    }
    let n = g.numel();
    for &(lin, bits) in &data.elems {
        if lin < n {
            g.set_bits(lin, bits);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Layout;

    fn desc(dtype: DType, block: [u32; 2], shape: [u64; 2]) -> DescInfo {
        DescInfo {
            name: "d".into(),
            dtype,
            block: block.to_vec(),
            layout: Layout::Plain,
            oob: OobFill::Zero,
            tensor: 0,
            shape: shape.to_vec(),
            elem_strides: vec![1, 1],
        }
    }

    /// A box of `rows x inner` elements of `bits` placed in 16-byte chunks whose order is
    /// reversed within each row (a swizzle-like permutation: runs of 16 bytes), `(byte,
    /// shift)` per element in box order.
    fn chunked_addrs(rows: u32, inner: u32, bits: u32) -> Vec<(u32, u32)> {
        let row_bytes = inner * bits / 8;
        let chunks = row_bytes / 16;
        (0..rows * inner)
            .map(|l| {
                let (r, c) = (l / inner, l % inner);
                let bit = c * bits;
                let (chunk, within) = (bit / 128, bit % 128);
                let byte = r * row_bytes + (chunks - 1 - chunk) * 16 + within / 8;
                (byte, within % 8)
            })
            .collect()
    }

    /// What a store must leave in global memory, element by element: the in-bounds box
    /// elements read from shared memory, every other element untouched.
    fn expected(
        d: &DescInfo,
        coords: [i64; 2],
        smem: &Smem,
        addrs: &[(u32, u32)],
        g: &HostTensor,
    ) -> HostTensor {
        let mut want = g.clone();
        let (rows, inner) = (d.block[0] as i64, d.block[1] as i64);
        for r in 0..rows {
            for c in 0..inner {
                let (gr, gc) = (coords[0] + r, coords[1] + c);
                if gr < 0 || gr >= d.shape[0] as i64 || gc < 0 || gc >= d.shape[1] as i64 {
                    continue;
                }
                let (addr, shift) = addrs[(r * inner + c) as usize];
                let v = smem.read(addr, shift, d.dtype.bits()).expect("in range");
                want.set_bits((gr * d.shape[1] as i64 + gc) as u64, v);
            }
        }
        want
    }

    /// Stores of whole-byte elements (copied as byte runs) and of 4-bit ones (element by
    /// element) leave exactly the in-bounds elements in global memory, past the right and
    /// bottom edges and at a negative column included; the elements read are the in-bounds
    /// ones.
    #[test]
    fn a_store_writes_exactly_its_in_bounds_elements() {
        for (dtype, inner) in [
            (DType::F32, 16u32),
            (DType::F16, 32),
            (DType::F8E4M3, 64),
            (DType::F4E2M1, 64),
        ] {
            let bits = dtype.bits();
            let d = desc(dtype, [4, inner], [6, 100]);
            let addrs = chunked_addrs(4, inner, bits);
            let mut smem = Smem::new(1024);
            let n = 4 * inner * bits / 8;
            let fill: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            smem.write_bytes(0, &fill).expect("in range");
            for coords in [
                [0i64, 0],
                [1, 100 - inner as i64 / 2],
                [4, 32],
                [2, -(inner as i64) / 4],
            ] {
                let mut g = HostTensor::zeros("g", dtype, vec![6, 100]);
                let pattern: Vec<u8> = (0..g.data.len()).map(|i| (i * 13 + 5) as u8).collect();
                g.data.copy_from_slice(&pattern);
                let want = expected(&d, coords, &smem, &addrs, &g);
                let mut read = Vec::new();
                let data = store_read(&d, &coords, &smem, &addrs, &mut read).expect("in range");
                global_write(&mut g, &data);
                assert_eq!(g.data, want.data, "{dtype:?} at {coords:?}");
                let in_rows = (coords[0]..coords[0] + 4).filter(|&r| r < 6).count();
                let in_cols = (coords[1]..coords[1] + inner as i64)
                    .filter(|&c| (0..100).contains(&c))
                    .count();
                assert_eq!(read.len(), in_rows * in_cols, "{dtype:?} at {coords:?}");
            }
        }
    }

    /// A store whose box reaches past the CTA's shared memory traps at the first element
    /// outside it, as element-by-element reads do.
    #[test]
    fn a_store_reading_past_shared_memory_traps_at_the_first_element_outside() {
        let d = desc(DType::F32, [2, 16], [2, 16]);
        let addrs: Vec<(u32, u32)> = (0..32).map(|i| (1024 - 64 + 4 * i, 0)).collect();
        let smem = Smem::new(1024);
        let err = store_read(&d, &[0, 0], &smem, &addrs, &mut Vec::new()).expect_err("outside");
        let want = smem.read(1024, 0, 32).expect_err("outside");
        assert_eq!(format!("{err:?}"), format!("{want:?}"));
    }
}
