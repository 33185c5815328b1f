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
fn row_base(desc: &DescInfo, coords: &[i64], row: u64, scratch: &mut [u32]) -> Option<i64> {
    let bx = desc.box_shape();
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
    for row in rows.clone() {
        let base = row_base(desc, coords, row, &mut scratch);
        let row_addrs = &addrs[(row * inner) as usize..((row + 1) * inner) as usize];
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

/// A store's shared-memory reads: (global linear index, bits) of every in-bounds element; the
/// shared-memory `(byte, shift)` of each element read is appended to `read`.
pub fn store_read(
    desc: &DescInfo,
    coords: &[i64],
    smem: &Smem,
    addrs: &[(u32, u32)],
    read: &mut Vec<(u32, u32)>,
) -> OpResult<Vec<(u64, u64)>> {
    let inner = desc.block.last().copied().unwrap_or(1) as u64;
    let bits = desc.dtype.bits();
    let mut scratch = [0u32; MAX_RANK];
    let c0 = coords.last().copied().unwrap_or(0);
    let width = desc.shape.last().copied().unwrap_or(1) as i64;
    let mut out = Vec::new();
    for row in 0..rows(desc) {
        let Some(base) = row_base(desc, coords, row, &mut scratch) else {
            continue;
        };
        for c in 0..inner {
            let gc = c0.saturating_add(c as i64);
            if gc < 0 || gc >= width {
                continue;
            }
            let (addr, shift) = addrs[(row * inner + c) as usize];
            read.push((addr, shift));
            out.push(((base + gc) as u64, smem.read(addr, shift, bits)?));
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
) -> OpResult<Vec<(u64, u64)>> {
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
    Ok(out)
}

/// Write a store's data to global memory.
pub fn global_write(g: &mut HostTensor, data: &[(u64, u64)]) {
    let n = g.numel();
    for &(lin, bits) in data {
        if lin < n {
            g.set_bits(lin, bits);
        }
    }
}
