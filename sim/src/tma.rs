//! The TMA unit's data movement and fault rules (docs/semantics.md#tma,
//! docs/semantics.md#gather4-and-scatter4, docs/semantics.md#faults).
//!
//! - A tile copy is cut into messages ([`tile_copy`], [`bwsim_isa::tma`],
//!   docs/hardware/tma-messages.md): the box is the descriptor's block clipped to 256 elements
//!   per dimension and to the swizzle span along the inner one, and one message moves one box
//!   per piece of the buffer (its shape clipped the same way). When the pieces are the box,
//!   message `k` lands in the buffer's sub-block at `k * piece`; when they are not (or the
//!   element types differ), each message still moves a whole box of the descriptor's type,
//!   laid out from where its piece starts: the bytes are what the hardware moves.
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
//! A box is placed in shared memory through [`crate::views`]: box element with linear index
//! `l` (row-major over the box) is element `l` of its message's view in physical order (the
//! last two dimensions swapped for an MN-major `transposed` buffer). Coordinates are in
//! the descriptor's dimension order (outermost first, as Gluon writes them); PTX's `c0` is the
//! last one. This module knows memories and descriptors, not agents or time.

use crate::lower::DescInfo;
use crate::memory::Smem;
use crate::trap::{CudaError, Fault, OpResult};
use crate::value::{unravel, Dims, Layout, SmemView, MAX_RANK};
use crate::views;
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

/// The messages of one tile copy, resolved at its issue ([`tile_copy`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Msgs {
    /// What each message moves: the descriptor's traversed hardware box.
    pub boxd: Vec<u32>,
    /// Each message's coordinates (the descriptor's rank each), one message after another.
    coords: Vec<i64>,
}

impl Msgs {
    /// Number of messages.
    pub fn count(&self) -> u64 {
        (self.coords.len() / self.boxd.len().max(1)) as u64
    }
    /// The coordinates of message `m`.
    pub fn coords(&self, m: u64) -> &[i64] {
        let r = self.boxd.len();
        &self.coords[m as usize * r..(m as usize + 1) * r]
    }
    /// Box rows (all dimensions but the innermost) of one message.
    pub fn rows(&self) -> u64 {
        box_rows(&self.boxd)
    }
    /// Elements of one message.
    pub fn elems(&self) -> u64 {
        self.boxd.iter().map(|&d| d as u64).product()
    }
    /// Box rows of the whole copy: message `m` is rows `m * rows()..(m + 1) * rows()`.
    pub fn total_rows(&self) -> u64 {
        self.rows() * self.count()
    }
    /// Bytes of the whole copy (what a load completes on its barrier).
    pub fn bytes(&self, dtype: DType) -> u64 {
        self.elems() * self.count() * dtype.bits() as u64 / 8
    }
}

/// The shared-memory `(byte, bit shift)` of every element a copy moves, in order.
pub type Addrs = Arc<Vec<(u32, u32)>>;

/// The physical shape of a view: its shape, the last two dimensions swapped for an MN-major
/// (`transposed`) buffer, which is stored that way.
fn physical(v: &SmemView) -> Vec<u32> {
    let mut s = v.shape.as_slice().to_vec();
    let r = s.len();
    if v.layout.transposed() && r >= 2 {
        s.swap(r - 1, r - 2);
    }
    s
}

/// The messages of a tile copy of view `v` through `desc` ([`bwsim_isa::tma::plan`]).
pub fn plan_of(desc: &DescInfo, v: &SmemView) -> OpResult<bwsim_isa::tma::Plan> {
    bwsim_isa::tma::plan(
        &desc.block,
        desc.dtype,
        desc.layout.swizzle().bytes(),
        &desc.elem_strides,
        &physical(v),
    )
    .map_err(|e| {
        Fault::unsupported(format!(
            "a shared view of shape {:?} cannot be copied through a descriptor of block {:?} ({e:?})",
            v.shape.as_slice(),
            desc.block
        ))
    })
}

/// Resolve a tile load or store at its issue: its messages, and the shared-memory address of
/// every element each moves (the messages' boxes one after another, each in box order). The
/// faults the hardware raises before it moves a byte are checked for every message.
pub fn tile_copy(desc: &DescInfo, coords: &[i64], v: &SmemView, store: bool) -> OpResult<(Msgs, Addrs)> {
    let r = desc.block.len();
    if coords.len() != r {
        return Err(Fault::unsupported(format!(
            "descriptor of rank {r} given {} coordinates",
            coords.len()
        )));
    }
    let plan = plan_of(desc, v)?;
    let n = plan.messages();
    let mut mc = Vec::with_capacity(n as usize * r);
    for m in 0..n {
        // One message of a buffer of another rank (a reshaped box) starts at the coordinates.
        let o = if n == 1 { vec![0; r] } else { plan.origin(m) };
        for (k, &c) in coords.iter().enumerate() {
            mc.push(c.saturating_add(o.get(k).copied().unwrap_or(0) as i64));
        }
        check_coords(desc, &mc[m as usize * r..], store)?;
    }
    let msgs = Msgs {
        boxd: plan.boxd.clone(),
        coords: mc,
    };
    let whole = plan.mismatch.is_none() && v.dtype == desc.dtype;
    if n == 1 && whole {
        check_smem(v)?;
        return Ok((msgs, box_addresses(v)?));
    }
    let mut addrs = Vec::with_capacity((msgs.elems() * n) as usize);
    for m in 0..n {
        let view = if whole {
            piece_view(v, &plan.origin(m), &plan.piece)
        } else {
            box_at(desc, v, &plan, m)
        }
        .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
        check_smem(&view)?;
        addrs.extend_from_slice(&box_addresses(&view)?);
    }
    Ok((msgs, Arc::new(addrs)))
}

/// The illegal-instruction fault of an innermost coordinate `c` (of `bits`-bit elements) that
/// is not at a 16-byte boundary of its row: `what` names the coordinate, `rule` says what it
/// must be.
fn check_16_byte(c: i64, bits: i64, what: &str, rule: &str) -> OpResult<()> {
    if bit_offset_aligned(c, bits) {
        return Ok(());
    }
    Err(Fault::trap(
        CudaError::IllegalInstruction,
        format!(
            "{what} {c} is at byte offset {} of its row, {rule}",
            c as i128 * bits as i128 / 8
        ),
    ))
}

/// The faults of a message's coordinates: an innermost coordinate not 16-byte aligned, and a
/// negative coordinate on a store.
fn check_coords(desc: &DescInfo, coords: &[i64], store: bool) -> OpResult<()> {
    let r = desc.block.len();
    let c0 = coords[r - 1];
    let bits = desc.dtype.bits() as i64;
    let what = format!(
        "TMA {} innermost coordinate",
        if store { "store" } else { "load" }
    );
    check_16_byte(c0, bits, &what, "not a multiple of 16")?;
    if store {
        if let Some((k, c)) = coords.iter().enumerate().find(|(_, &c)| c < 0) {
            return Err(Fault::trap(
                CudaError::IllegalInstruction,
                format!("TMA store with negative coordinate {c} in dimension {k} (stores accept no negative coordinates)"),
            ));
        }
    }
    Ok(())
}

/// The sub-view of `v` a message moves when its piece is the box: `piece` elements from
/// `origin` (both in physical order).
fn piece_view(v: &SmemView, origin: &[u32], piece: &[u32]) -> Option<SmemView> {
    let (mut o, mut p) = (origin.to_vec(), piece.to_vec());
    let r = o.len();
    if v.layout.transposed() && r >= 2 {
        o.swap(r - 1, r - 2);
        p.swap(r - 1, r - 2);
    }
    Some(SmemView {
        origin: v.root_index(&o),
        shape: Dims::from_slice(&p)?,
        ..*v
    })
}

/// Where message `m` of a copy whose pieces are not its box (or whose element type differs
/// from the buffer's) lands: one box of the descriptor's element type, laid out as the
/// descriptor's layout lays a box out, from the byte where the message's piece starts in the
/// buffer seen with the descriptor's element type.
fn box_at(desc: &DescInfo, v: &SmemView, plan: &bwsim_isa::tma::Plan, m: u64) -> Option<SmemView> {
    let phys = physical(v);
    let layout = match v.layout {
        Layout::Nvmma {
            swizzle, fp4_padded, ..
        } => Layout::Nvmma {
            swizzle,
            transposed: false,
            fp4_padded,
        },
        _ => Layout::Plain,
    };
    let origin = if plan.messages() == 1 {
        vec![0; phys.len()]
    } else {
        plan.origin(m)
    };
    let off = views::offset_bits(desc.dtype, &phys, layout, &origin) / 8;
    let base = u32::try_from((views::view_start(v)? as u64).checked_add(off)?).ok()?;
    let bx = Dims::from_slice(&plan.boxd)?;
    Some(SmemView {
        base,
        dtype: desc.dtype,
        layout,
        root: bx,
        origin: Dims::zeros(bx.len()),
        dropped: 0,
        shape: bx,
        alloc: v.alloc,
    })
}

/// Whether element offset `c` of `bits`-bit elements starts on a 16-byte boundary (for any
/// `c`: `c * bits` is taken modulo 128 without overflowing).
fn bit_offset_aligned(c: i64, bits: i64) -> bool {
    (c.rem_euclid(128) * bits).rem_euclid(128) == 0
}

/// The shared-memory operand of a TMA must be 128-byte aligned [H100].
pub fn check_smem(smem: &SmemView) -> OpResult<()> {
    let start = views::view_start(smem)
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
    let what = format!("{} column offset", if scatter { "scatter4" } else { "gather4" });
    check_16_byte(col, bits, &what, "not 16-byte aligned")?;
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
    let addrs = views::view_addresses(v)
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
/// coordinate `coords[k] + i * stride[k]` [docs/semantics.md#tma].
/// `bx` is the message's traversed box ([`Msgs::boxd`]).
fn row_base(desc: &DescInfo, bx: &[u32], coords: &[i64], row: u64, scratch: &mut [u32]) -> Option<i64> {
    let r = bx.len();
    unravel(row, &bx[..r - 1], &mut scratch[..r - 1]);
    let mut lin = i64::try_from(desc.base).ok()?;
    // The row-major stride of dimension k (a descriptor's own strides replace it).
    let mut dense = desc.shape[r - 1] as i64;
    for k in (0..r - 1).rev() {
        let g = coords[k].checked_add(scratch[k] as i64 * desc.stride(k) as i64)?;
        if g < 0 || g >= desc.shape[k] as i64 {
            return None;
        }
        let st = desc.strides.get(k).map_or(dense, |&s| s as i64);
        lin = lin.checked_add(g.checked_mul(st)?)?;
        dense = dense.checked_mul(desc.shape[k] as i64)?;
    }
    Some(lin)
}

impl DescInfo {
    /// Element stride of dimension `k` in its tensor: a descriptor built on the device has
    /// its own, a parameter the tensor's row-major one.
    pub fn dim_stride(&self, k: usize) -> i64 {
        match self.strides.get(k) {
            Some(&s) => s as i64,
            None => (self.shape.iter().skip(k + 1)).fold(1i64, |a, &d| a.saturating_mul(d as i64)),
        }
    }
}

/// The linear index of gather row `x`'s first element.
fn gather_row(desc: &DescInfo, x: i64) -> i64 {
    (desc.base as i64).saturating_add(x.saturating_mul(desc.dim_stride(0)))
}

/// Land rows `rows` of a tile load's messages (message `m` is rows `m * msgs.rows()..` of the
/// copy) at `addrs` (from [`tile_copy`]); returns the bytes delivered (OOB included).
pub fn load_msgs(
    desc: &DescInfo,
    msgs: &Msgs,
    g: &HostTensor,
    smem: &mut Smem,
    addrs: &[(u32, u32)],
    rows: Range<u64>,
) -> OpResult<u64> {
    let per = msgs.rows().max(1);
    let elems = msgs.elems() as usize;
    let mut bytes = 0;
    let mut row = rows.start;
    while row < rows.end {
        let m = row / per;
        let hi = (rows.end - m * per).min(per);
        let a = addrs
            .get(m as usize * elems..(m as usize + 1) * elems)
            .ok_or_else(|| Fault::unsupported("TMA message outside its copy"))?;
        bytes += load_rows(desc, &msgs.boxd, msgs.coords(m), g, smem, a, row % per..hi)?;
        row = m * per + hi;
    }
    Ok(bytes)
}

/// The columns of one message's box rows: how many (the box's innermost extent), the first one's
/// coordinate in the tensor and the tensor's row length.
fn box_columns(desc: &DescInfo, bx: &[u32], coords: &[i64]) -> (usize, i64, i64) {
    let inner = bx.last().copied().unwrap_or(1) as usize;
    let c0 = coords.last().copied().unwrap_or(0);
    let width = desc.shape.last().copied().unwrap_or(1) as i64;
    (inner, c0, width)
}

/// Land box rows `rows` of one message (box `bx`, coordinates `coords`) at `addrs`, its box's
/// addresses; returns the bytes delivered (OOB included).
fn load_rows(
    desc: &DescInfo,
    bx: &[u32],
    coords: &[i64],
    g: &HostTensor,
    smem: &mut Smem,
    addrs: &[(u32, u32)],
    rows: Range<u64>,
) -> OpResult<u64> {
    let (inner, c0, width) = box_columns(desc, bx, coords);
    let inner = inner as u64;
    let bits = desc.dtype.bits();
    let w = (bits / 8) as usize;
    let mut scratch = [0u32; MAX_RANK];
    for row in rows.clone() {
        let base = row_base(desc, bx, coords, row, &mut scratch);
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

/// The global elements a tile load's rows `rows` read (message `m` is rows `m * msgs.rows()..`
/// of the copy), as linear index ranges of the tensor, one per in-bounds box row (the hazard
/// checker's record of the copy's global reads; out-of-bounds parts read nothing).
pub fn load_ranges(desc: &DescInfo, msgs: &Msgs, rows: Range<u64>, out: &mut Vec<Range<u64>>) {
    let per = msgs.rows().max(1);
    let mut scratch = [0u32; MAX_RANK];
    for row in rows {
        let m = row / per;
        if m >= msgs.count() {
            break;
        }
        let coords = msgs.coords(m);
        let (inner, c0, width) = box_columns(desc, &msgs.boxd, coords);
        let Some(base) = row_base(desc, &msgs.boxd, coords, row % per, &mut scratch) else {
            continue;
        };
        let lo = c0.clamp(0, width);
        let hi = c0.saturating_add(inner as i64).clamp(lo, width);
        if lo < hi {
            out.push((base + lo) as u64..(base + hi) as u64);
        }
    }
}

/// The global elements gather4 messages `msgs` (rows `4m..4m+4` each) read, as linear index
/// ranges (one per in-bounds row), like [`load_ranges`].
pub fn gather_ranges(desc: &DescInfo, xs: &[i64], col: i64, msgs: Range<u64>, out: &mut Vec<Range<u64>>) {
    let (by, nrows, ncols) = gather_dims(desc);
    let lo = col.clamp(0, ncols);
    let hi = col.saturating_add(by as i64).clamp(lo, ncols);
    for m in msgs {
        for i in (m * 4)..(m * 4 + 4).min(xs.len() as u64) {
            let x = xs[i as usize];
            if (0..nrows).contains(&x) && lo < hi {
                out.push((gather_row(desc, x) + lo) as u64..(gather_row(desc, x) + hi) as u64);
            }
        }
    }
}

/// The row length (`BLOCK_Y`) a gather4 or scatter4 moves, and its tensor's rows and columns.
fn gather_dims(desc: &DescInfo) -> (u64, i64, i64) {
    let by = desc.block.last().copied().unwrap_or(1) as u64;
    let nrows = desc.shape[0] as i64;
    let ncols = desc.shape.get(1).copied().unwrap_or(1) as i64;
    (by, nrows, ncols)
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
    let (by, nrows, ncols) = gather_dims(desc);
    let bits = desc.dtype.bits();
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
                    g.get_bits((gather_row(desc, x) + gc) as u64)
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

impl StoreData {
    /// The global elements the store writes (elements of `bits` each), as linear index ranges
    /// (what lies past the tensor's end is written nowhere and is not listed).
    pub fn elem_ranges(&self, bits: u32, numel: u64, out: &mut Vec<Range<u64>>) {
        let w = (bits / 8).max(1) as u64;
        for &(off, len) in &self.runs {
            let (lo, hi) = (off as u64 / w, ((off + len) as u64).div_ceil(w).min(numel));
            if lo < hi {
                out.push(lo..hi);
            }
        }
        out.extend(
            self.elems
                .iter()
                .filter(|e| e.0 < numel)
                .map(|&(lin, _)| lin..lin + 1),
        );
    }
}

/// A store's shared-memory reads, every message's: the data of every in-bounds element; the
/// shared-memory `(byte, shift)` of each element read is appended to `read`.
pub fn store_msgs(
    desc: &DescInfo,
    msgs: &Msgs,
    smem: &Smem,
    addrs: &[(u32, u32)],
    read: &mut Vec<(u32, u32)>,
) -> OpResult<StoreData> {
    let elems = msgs.elems() as usize;
    let mut out = StoreData::default();
    for m in 0..msgs.count() {
        let a = addrs
            .get(m as usize * elems..(m as usize + 1) * elems)
            .ok_or_else(|| Fault::unsupported("TMA message outside its copy"))?;
        let d = store_read(desc, &msgs.boxd, msgs.coords(m), smem, a, read)?;
        if m == 0 {
            out = d;
        } else {
            out.runs.extend(d.runs);
            out.bytes.extend(d.bytes);
            out.elems.extend(d.elems);
        }
    }
    Ok(out)
}

/// One message's shared-memory reads (box `bx`, coordinates `coords`, its box's addresses
/// `addrs`): the data of every in-bounds element, each element read appended to `read`.
fn store_read(
    desc: &DescInfo,
    bx: &[u32],
    coords: &[i64],
    smem: &Smem,
    addrs: &[(u32, u32)],
    read: &mut Vec<(u32, u32)>,
) -> OpResult<StoreData> {
    let (inner, c0, width) = box_columns(desc, bx, coords);
    let bits = desc.dtype.bits();
    let mut scratch = [0u32; MAX_RANK];
    // The in-bounds columns of every row: `c0 + c` in `0..width`.
    let lo = c0.saturating_neg().clamp(0, inner as i64) as usize;
    let hi = width.saturating_sub(c0).clamp(lo as i64, inner as i64) as usize;
    let whole = bits.is_multiple_of(8);
    let w = (bits / 8) as usize;
    let mut out = StoreData::default();
    read.reserve(addrs.len());
    if whole {
        out.bytes.reserve(addrs.len() * w);
    }
    for row in 0..box_rows(bx) {
        let Some(base) = row_base(desc, bx, coords, row, &mut scratch) else {
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
    let (by, nrows, ncols) = gather_dims(desc);
    let bits = desc.dtype.bits();
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
            out.push(((gather_row(desc, x) + gc) as u64, smem.read(addr, shift, bits)?));
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

/// A reducing store's landing (`cp.reduce.async.bulk.tensor`): every element of `data`
/// (elements of type `d`) combined by `op` into the element of `g` it lands on, one element
/// at a time (the PTX ISA makes each element's update atomic; the order of the elements of
/// one copy is unobservable, as no other access of them comes between).
pub fn global_reduce(
    g: &mut HostTensor,
    data: &StoreData,
    op: bwsim_isa::value_types::TmaReduceOp,
    d: DType,
) {
    let n = g.numel();
    let esize = (d.bits() as usize / 8).max(1);
    let mut k = 0;
    for &(off, len) in &data.runs {
        for e in 0..len / esize {
            let lin = ((off + e * esize) / esize) as u64;
            let at = k + e * esize;
            let mut src = 0u64;
            for (i, b) in data.bytes[at..at + esize].iter().enumerate() {
                src |= (*b as u64) << (8 * i);
            }
            if lin < n {
                g.set_bits(lin, op.apply(d, g.get_bits(lin), src));
            }
        }
        k += len;
    }
    for &(lin, bits) in &data.elems {
        if lin < n {
            g.set_bits(lin, op.apply(d, g.get_bits(lin), bits));
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
            base: 0,
            strides: Vec::new(),
            device: false,
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
                let data = store_read(&d, &d.block, &coords, &smem, &addrs, &mut read).expect("in range");
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
        let err = store_read(&d, &d.block, &[0, 0], &smem, &addrs, &mut Vec::new()).expect_err("outside");
        let want = smem.read(1024, 0, 32).expect_err("outside");
        assert_eq!(format!("{err:?}"), format!("{want:?}"));
    }
}
