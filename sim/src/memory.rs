//! Per-CTA memories: shared memory (a byte array with per-byte "written" bits) and tensor
//! memory (128 lanes x 512 columns of 32-bit cells, with the column allocator of
//! `tcgen05.alloc`/`dealloc`).
//!
//! Reads and writes go through the placement functions of [`crate::views`]; this module only
//! stores bits and checks bounds and allocation. It knows nothing of agents or of which op is
//! accessing (the caller turns a [`Fault`] into a trap with the op's span).

use crate::trap::{CudaError, Fault, OpResult};
use crate::value::{SmemView, TmemView};
use crate::views::{self, TmemCell};
use bwsim_isa::Span;

/// Shared memory a CTA may use on sm_90/sm_100 (227 KiB).
pub const SMEM_CAPACITY: u32 = bwsim_isa::typeck::SMEM_CAPACITY;
/// TMEM lanes (docs/semantics.md#tensor-memory).
pub const TMEM_LANES: u32 = 128;
/// TMEM columns (docs/semantics.md#tensor-memory).
pub const TMEM_COLS: u32 = 512;
/// Allocation granule of `tcgen05.alloc` (power of two >= 32, docs/semantics.md#allocation).
pub const TMEM_GRANULE: u32 = 32;

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// One CTA's shared memory.
#[derive(Clone, Debug)]
pub struct Smem {
    bytes: Vec<u8>,
    written: Vec<u64>,
}

impl Smem {
    /// Shared memory of `size` bytes (rounded up to a whole 1024-byte swizzle period, capped at
    /// the capacity), zero-filled and marked unwritten.
    pub fn new(size: u32) -> Smem {
        let n = size
            .div_ceil(1024)
            .saturating_mul(1024)
            .clamp(1024, SMEM_CAPACITY) as usize;
        Smem {
            bytes: vec![0; n],
            written: vec![0; n.div_ceil(64)],
        }
    }
    pub fn len(&self) -> usize {
        self.bytes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    fn range(&self, addr: u32, shift: u32, bits: u32) -> OpResult<(usize, usize)> {
        let nbytes = (shift + bits).div_ceil(8) as usize;
        let a = addr as usize;
        if a + nbytes > self.bytes.len() {
            return Err(Fault::trap(
                CudaError::IllegalAddress,
                format!(
                    "shared-memory access at byte {addr} is outside the {} bytes of this CTA",
                    self.bytes.len()
                ),
            ));
        }
        Ok((a, nbytes))
    }
    /// Read `bits` bits at `(addr, shift)`.
    #[inline]
    pub fn read(&self, addr: u32, shift: u32, bits: u32) -> OpResult<u64> {
        if shift == 0 {
            let a = addr as usize;
            let word = match bits {
                32 => self
                    .bytes
                    .get(a..a + 4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64),
                16 => self
                    .bytes
                    .get(a..a + 2)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]) as u64),
                8 => self.bytes.get(a).map(|&b| b as u64),
                _ => None,
            };
            if let Some(w) = word {
                return Ok(w);
            }
        }
        self.read_general(addr, shift, bits)
    }

    /// The `n` bytes at `addr`, or `None` when they do not all lie in this CTA's shared memory.
    pub fn read_bytes(&self, addr: u32, n: usize) -> Option<&[u8]> {
        let a = addr as usize;
        self.bytes.get(a..a.checked_add(n)?)
    }

    /// [`Smem::read`] of any width and bit offset (kept out of line).
    #[inline(never)]
    fn read_general(&self, addr: u32, shift: u32, bits: u32) -> OpResult<u64> {
        let (a, n) = self.range(addr, shift, bits)?;
        let mut v = 0u64;
        for k in 0..n {
            v |= (self.bytes[a + k] as u64) << (8 * k);
        }
        Ok((v >> shift) & mask(bits))
    }
    /// Write `bits` bits at `(addr, shift)`.
    #[inline]
    pub fn write(&mut self, addr: u32, shift: u32, bits: u32, value: u64) -> OpResult<()> {
        // Whole 8/16/32-bit elements within one word of the written bits: fixed-size copies
        // (a copy of a run-time length is a library call).
        let a = addr as usize;
        if shift == 0 && a % 64 + (bits / 8) as usize <= 64 {
            let le = value.to_le_bytes();
            let done = match bits {
                32 => self.bytes.get_mut(a..a + 4).map(|d| d.copy_from_slice(&le[..4])),
                16 => self.bytes.get_mut(a..a + 2).map(|d| d.copy_from_slice(&le[..2])),
                8 => self.bytes.get_mut(a).map(|d| *d = le[0]),
                _ => None,
            };
            if done.is_some() {
                self.written[a / 64] |= mask(bits / 8) << (a % 64);
                return Ok(());
            }
        }
        self.write_general(addr, shift, bits, value)
    }

    /// Write whole bytes at `addr` (as many [`Smem::write`]s of their bytes would), marking
    /// them written.
    pub fn write_bytes(&mut self, addr: u32, data: &[u8]) -> OpResult<()> {
        if data.is_empty() {
            return Ok(());
        }
        let (a, n) = self.range(addr, 0, data.len() as u32 * 8)?;
        self.bytes[a..a + n].copy_from_slice(data);
        self.mark_written(a, n);
        Ok(())
    }

    /// Mark bytes `a..a + n` (in range) written.
    fn mark_written(&mut self, a: usize, n: usize) {
        let mut k = a;
        while k < a + n {
            let w = k / 64;
            let end = (a + n).min((w + 1) * 64);
            self.written[w] |= mask((end - k) as u32) << (k % 64);
            k = end;
        }
    }

    /// Whether every byte of `a..=b` (in range) was written.
    fn all_written(&self, a: usize, b: usize) -> bool {
        let (w0, w1) = (a / 64, b / 64);
        let head = !0u64 << (a % 64);
        let tail = mask((b % 64) as u32 + 1);
        if w0 == w1 {
            return self.written[w0] & head & tail == head & tail;
        }
        self.written[w0] & head == head
            && self.written[w0 + 1..w1].iter().all(|&x| x == u64::MAX)
            && self.written[w1] & tail == tail
    }

    /// The first of the element addresses `addrs` whose first byte was not written in this
    /// launch (as [`Smem::was_written`] of each in order), looked for one by one only when
    /// some byte between the lowest and the highest address is unwritten.
    pub fn first_unwritten(&self, addrs: &[(u32, u32)]) -> Option<u32> {
        let (lo, hi) = addrs
            .iter()
            .fold((u32::MAX, 0), |(lo, hi), &(a, _)| (lo.min(a), hi.max(a)));
        if !addrs.is_empty() && (hi as usize) < self.bytes.len() && self.all_written(lo as usize, hi as usize)
        {
            return None;
        }
        addrs.iter().map(|&(a, _)| a).find(|&a| !self.was_written(a))
    }

    /// Whether every element at `addrs` is a whole, naturally aligned 8/16/32-bit element
    /// inside this shared memory (what the bulk paths below take).
    fn all_whole(&self, addrs: &[(u32, u32)], bits: u32) -> bool {
        let w = (bits / 8) as usize;
        let Some(last) = self.bytes.len().checked_sub(w) else {
            return false;
        };
        // One pass without early exits: the shifts and addresses ORed (any shift, any
        // misaligned address shows) and the highest address; `w` is a power of two.
        let (shifts, ors, hi) = addrs
            .iter()
            .fold((0, 0, 0), |(s, o, h), &(a, shift)| (s | shift, o | a, h.max(a)));
        matches!(bits, 8 | 16 | 32) && shifts == 0 && ors as usize & (w - 1) == 0 && hi as usize <= last
    }

    /// [`Smem::read`] of each element at `addrs` (`bits` wide), appended to `out` in order
    /// (whole aligned elements in one tight loop).
    pub fn read_elems(&self, addrs: &[(u32, u32)], bits: u32, out: &mut Vec<u64>) -> OpResult<()> {
        if self.all_whole(addrs, bits) {
            let b = &self.bytes;
            match bits {
                32 => out.extend(addrs.iter().map(|&(a, _)| {
                    let c = &b[a as usize..a as usize + 4];
                    u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64
                })),
                16 => out.extend(addrs.iter().map(|&(a, _)| {
                    let c = &b[a as usize..a as usize + 2];
                    u16::from_le_bytes([c[0], c[1]]) as u64
                })),
                _ => out.extend(addrs.iter().map(|&(a, _)| b[a as usize] as u64)),
            }
            return Ok(());
        }
        for &(a, shift) in addrs {
            out.push(self.read(a, shift, bits)?);
        }
        Ok(())
    }

    /// [`Smem::write`] of `value(i)` to each element `i` at `addrs` (`bits` wide), in order
    /// (whole aligned elements in one tight loop).
    pub fn write_elems(
        &mut self,
        addrs: &[(u32, u32)],
        bits: u32,
        value: impl Fn(usize) -> u64,
    ) -> OpResult<()> {
        if self.all_whole(addrs, bits) {
            let w = (bits / 8) as usize;
            let m = mask(bits / 8);
            for (i, &(a, _)) in addrs.iter().enumerate() {
                let (a, v) = (a as usize, value(i));
                match w {
                    4 => self.bytes[a..a + 4].copy_from_slice(&(v as u32).to_le_bytes()),
                    2 => self.bytes[a..a + 2].copy_from_slice(&(v as u16).to_le_bytes()),
                    _ => self.bytes[a] = v as u8,
                }
                // Naturally aligned: the element lies within one word of the written bits.
                self.written[a / 64] |= m << (a % 64);
            }
            return Ok(());
        }
        for (i, &(a, shift)) in addrs.iter().enumerate() {
            self.write(a, shift, bits, value(i))?;
        }
        Ok(())
    }

    /// Write element `k` of `addrs` (whole aligned 8/16/32-bit elements inside this shared
    /// memory) from bytes `src[k * w..(k + 1) * w]`, as [`Smem::write`] of each in order
    /// would; returns `false`, writing nothing, when an element is not such an element or
    /// `src` is not as long as the elements.
    pub fn copy_elems(&mut self, addrs: &[(u32, u32)], bits: u32, src: &[u8]) -> bool {
        let w = (bits / 8) as usize;
        if src.len() != addrs.len() * w || !self.all_whole(addrs, bits) {
            return false;
        }
        let m = mask(bits / 8);
        match w {
            4 => {
                for (&(a, _), v) in addrs.iter().zip(src.chunks_exact(4)) {
                    let a = a as usize;
                    self.bytes[a..a + 4].copy_from_slice(v);
                    self.written[a / 64] |= m << (a % 64);
                }
            }
            2 => {
                for (&(a, _), v) in addrs.iter().zip(src.chunks_exact(2)) {
                    let a = a as usize;
                    self.bytes[a..a + 2].copy_from_slice(v);
                    self.written[a / 64] |= m << (a % 64);
                }
            }
            _ => {
                for (&(a, _), &v) in addrs.iter().zip(src) {
                    let a = a as usize;
                    self.bytes[a] = v;
                    self.written[a / 64] |= m << (a % 64);
                }
            }
        }
        true
    }

    /// [`Smem::write`] of any width and bit offset (kept out of line: the whole-element
    /// path above is the common one).
    #[inline(never)]
    fn write_general(&mut self, addr: u32, shift: u32, bits: u32, value: u64) -> OpResult<()> {
        let (a, n) = self.range(addr, shift, bits)?;
        if bits.is_multiple_of(8) && shift == 0 {
            let le = value.to_le_bytes();
            self.bytes[a..a + n].copy_from_slice(&le[..n]);
            let (w0, w1) = (a / 64, (a + n - 1) / 64);
            if w0 == w1 {
                self.written[w0] |= mask(n as u32) << (a % 64);
            } else {
                for k in a..a + n {
                    self.written[k / 64] |= 1 << (k % 64);
                }
            }
            return Ok(());
        }
        let m = mask(bits) << shift;
        let mut old = 0u64;
        for k in 0..n {
            old |= (self.bytes[a + k] as u64) << (8 * k);
        }
        let new = (old & !m) | ((value << shift) & m);
        for k in 0..n {
            self.bytes[a + k] = (new >> (8 * k)) as u8;
            self.written[(a + k) / 64] |= 1 << ((a + k) % 64);
        }
        Ok(())
    }
    /// Whether byte `addr` was written in this launch.
    pub fn was_written(&self, addr: u32) -> bool {
        let a = addr as usize;
        a < self.bytes.len() && self.written[a / 64] & (1 << (a % 64)) != 0
    }
    /// Element `idx` of a view.
    pub fn read_view(&self, v: &SmemView, idx: &[u32]) -> OpResult<u64> {
        let (addr, shift) = views::view_element(v, idx).ok_or_else(addr_overflow)?;
        self.read(addr, shift, v.dtype.bits())
    }
    pub fn write_view(&mut self, v: &SmemView, idx: &[u32], value: u64) -> OpResult<()> {
        let (addr, shift) = views::view_element(v, idx).ok_or_else(addr_overflow)?;
        self.write(addr, shift, v.dtype.bits(), value)
    }
    /// Raw bytes (for tests and dumps).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A shared memory of the same size holding this one's bytes in `ranges` and zeros
    /// elsewhere, every byte marked unwritten (what a computation that reads only `ranges`
    /// needs).
    pub fn with_ranges(&self, ranges: &[std::ops::Range<usize>]) -> Smem {
        let mut out = Smem {
            bytes: vec![0; self.bytes.len()],
            written: vec![0; self.written.len()],
        };
        out.copy_ranges(self, ranges);
        out
    }

    /// Copy `src`'s bytes in `ranges` into this shared memory of the same size (the rest and
    /// the written marks are left as they are).
    pub fn copy_ranges(&mut self, src: &Smem, ranges: &[std::ops::Range<usize>]) {
        for r in ranges {
            if let (Some(dst), Some(src)) = (self.bytes.get_mut(r.clone()), src.bytes.get(r.clone())) {
                dst.copy_from_slice(src);
            }
        }
    }

    /// Whether the bytes in `range` equal `other`'s (a range past either end: false).
    pub fn same_bytes(&self, other: &Smem, range: std::ops::Range<usize>) -> bool {
        match (self.bytes.get(range.clone()), other.bytes.get(range)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }
}

fn addr_overflow() -> Fault {
    Fault::trap(
        CudaError::IllegalAddress,
        "shared-memory address does not fit 32 bits",
    )
}

/// A manual (`tcgen05.alloc`) allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmemAllocation {
    pub col: u32,
    pub cols: u32,
    pub span: Span,
}

/// One CTA's tensor memory and its column allocator.
#[derive(Clone, Debug)]
pub struct Tmem {
    cells: Vec<u32>,
    allocated: Vec<bool>,
    /// Live manual allocations.
    pub manual: Vec<TmemAllocation>,
}

impl Default for Tmem {
    fn default() -> Tmem {
        Tmem::new()
    }
}

impl Tmem {
    pub fn new() -> Tmem {
        Tmem {
            cells: vec![0; (TMEM_LANES * TMEM_COLS) as usize],
            allocated: vec![false; TMEM_COLS as usize],
            manual: Vec::new(),
        }
    }
    /// Mark a scoped allocation of the static plan as allocated for the CTA's lifetime.
    pub fn reserve(&mut self, col: u32, cols: u32) {
        for c in col..col.saturating_add(cols).min(TMEM_COLS) {
            self.allocated[c as usize] = true;
        }
    }
    /// `tcgen05.alloc`: first fit on 32-column granules. `None` when no run of free columns
    /// is long enough (the hardware blocks until columns are freed).
    pub fn alloc(&mut self, cols: u32, span: Span) -> Option<u32> {
        let mut start = 0;
        while start + cols <= TMEM_COLS {
            if (start..start + cols).all(|c| !self.allocated[c as usize]) {
                self.reserve(start, cols);
                self.manual.push(TmemAllocation {
                    col: start,
                    cols,
                    span,
                });
                return Some(start);
            }
            start += TMEM_GRANULE;
        }
        None
    }
    /// Whether [`Tmem::alloc`] of `cols` would succeed now.
    pub fn can_alloc(&self, cols: u32) -> bool {
        let mut start = 0;
        while start + cols <= TMEM_COLS {
            if (start..start + cols).all(|c| !self.allocated[c as usize]) {
                return true;
            }
            start += TMEM_GRANULE;
        }
        false
    }
    /// `tcgen05.dealloc` of the allocation starting at `col`.
    pub fn dealloc(&mut self, col: u32, cols: u32) -> OpResult<()> {
        let Some(i) = self.manual.iter().position(|a| a.col == col && a.cols == cols) else {
            return Err(Fault::trap(
                CudaError::IllegalInstruction,
                format!(
                    "tcgen05.dealloc of columns {col}..{} that are not an allocation of this CTA",
                    col.saturating_add(cols)
                ),
            ));
        };
        self.manual.remove(i);
        for c in col..(col + cols).min(TMEM_COLS) {
            self.allocated[c as usize] = false;
        }
        Ok(())
    }
    fn check(&self, cell: TmemCell) -> OpResult<usize> {
        if cell.lane >= TMEM_LANES || cell.col >= TMEM_COLS || !self.allocated[cell.col as usize] {
            return Err(Fault::trap(
                CudaError::IllegalInstruction,
                format!(
                    "TMEM access at lane {}, column {} is outside any allocation of this CTA",
                    cell.lane, cell.col
                ),
            ));
        }
        Ok((cell.lane * TMEM_COLS + cell.col) as usize)
    }
    /// A tensor memory with this one's allocation state and the cells of columns `cols` in
    /// every lane, zeros elsewhere (what a computation that reads only `cols` needs).
    pub fn with_columns(&self, cols: std::ops::Range<u32>) -> Tmem {
        let mut out = Tmem {
            cells: vec![0; self.cells.len()],
            allocated: Vec::new(),
            manual: Vec::new(),
        };
        out.copy_columns(self, cols);
        out
    }

    /// Copy `src`'s allocation state and the cells of columns `cols` in every lane into this
    /// tensor memory (the other cells are left as they are).
    pub fn copy_columns(&mut self, src: &Tmem, cols: std::ops::Range<u32>) {
        self.allocated.clone_from(&src.allocated);
        self.manual.clone_from(&src.manual);
        for lane in 0..TMEM_LANES {
            let r = Tmem::lane_range(lane, &cols);
            if let (Some(dst), Some(src)) = (self.cells.get_mut(r.clone()), src.cells.get(r)) {
                dst.copy_from_slice(src);
            }
        }
    }

    /// Whether the cells of columns `cols` in every lane and the allocation state equal
    /// `other`'s.
    pub fn same_columns(&self, other: &Tmem, cols: std::ops::Range<u32>) -> bool {
        self.allocated == other.allocated
            && (0..TMEM_LANES).all(|lane| {
                let r = Tmem::lane_range(lane, &cols);
                matches!((self.cells.get(r.clone()), other.cells.get(r)), (Some(a), Some(b)) if a == b)
            })
    }

    /// The indices of columns `cols` of `lane` in `cells`.
    fn lane_range(lane: u32, cols: &std::ops::Range<u32>) -> std::ops::Range<usize> {
        let base = (lane * TMEM_COLS) as usize;
        base + cols.start.min(TMEM_COLS) as usize..base + cols.end.min(TMEM_COLS) as usize
    }

    pub fn read(&self, cell: TmemCell, bits: u32) -> OpResult<u64> {
        let i = self.check(cell)?;
        if bits >= 32 {
            return Ok(self.cells[i] as u64);
        }
        Ok(((self.cells[i] >> cell.shift) as u64) & mask(bits))
    }
    pub fn write(&mut self, cell: TmemCell, bits: u32, value: u64) -> OpResult<()> {
        let i = self.check(cell)?;
        if bits >= 32 {
            self.cells[i] = value as u32;
        } else {
            let m = (mask(bits) as u32) << cell.shift;
            self.cells[i] = (self.cells[i] & !m) | (((value as u32) << cell.shift) & m);
        }
        Ok(())
    }
    /// Element `idx` of a view (a scale-factor view's copy in lane quarter 0).
    pub fn read_view(&self, v: &TmemView, idx: &[u32]) -> OpResult<u64> {
        self.read(views::tmem_element(v, idx), v.dtype.bits())
    }
    /// Element `idx` of a view as the datapath of lane quarter `quarter` sees it.
    pub fn read_view_in(&self, v: &TmemView, idx: &[u32], quarter: u32) -> OpResult<u64> {
        self.read(views::tmem_element_in(v, idx, quarter), v.dtype.bits())
    }
    /// Write element `idx` of a view; a scale-factor view's element in all four lane quarters
    /// (what `tcgen05.cp ... .warpx4` does).
    pub fn write_view(&mut self, v: &TmemView, idx: &[u32], value: u64) -> OpResult<()> {
        let quarters = if v.scales { 4 } else { 1 };
        for q in 0..quarters {
            self.write(views::tmem_element_in(v, idx, q), v.dtype.bits(), value)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smem_nibbles_and_bounds() {
        let mut s = Smem::new(10);
        assert_eq!(s.len(), 1024);
        s.write(3, 4, 4, 0xa).expect("in range");
        s.write(3, 0, 4, 0x5).expect("in range");
        assert_eq!(s.read(3, 0, 8).expect("in range"), 0xa5);
        assert!(s.was_written(3) && !s.was_written(4));
        assert!(matches!(
            s.read(1023, 0, 16),
            Err(Fault::Trap(CudaError::IllegalAddress, _))
        ));
    }

    /// A run of bytes written at once leaves the same bytes and written marks as writing them
    /// one by one, across 64-byte words; out of range it traps.
    #[test]
    fn byte_runs_write_and_mark_like_single_bytes() {
        let data: Vec<u8> = (0..150u32).map(|i| (i * 7 + 3) as u8).collect();
        let (mut bulk, mut single) = (Smem::new(1024), Smem::new(1024));
        bulk.write_bytes(50, &data).expect("in range");
        for (i, &b) in data.iter().enumerate() {
            single.write(50 + i as u32, 0, 8, b as u64).expect("in range");
        }
        assert_eq!(bulk.bytes(), single.bytes());
        for a in 0..1024 {
            assert_eq!(bulk.was_written(a), single.was_written(a), "byte {a}");
        }
        assert!(bulk.was_written(50) && bulk.was_written(199) && !bulk.was_written(200));
        assert!(matches!(
            bulk.write_bytes(1000, &data),
            Err(Fault::Trap(CudaError::IllegalAddress, _))
        ));
    }

    #[test]
    fn whole_element_writes_mark_exactly_their_bytes() {
        let mut s = Smem::new(1024);
        // Within one 64-byte word of the written bits, and across two.
        s.write(60, 0, 32, 0x1122_3344).expect("in range");
        s.write(126, 0, 32, 0xaabb_ccdd).expect("in range");
        s.write(200, 0, 16, 0xbeef).expect("in range");
        s.write(300, 0, 8, 0x7f).expect("in range");
        assert_eq!(s.read(60, 0, 32).expect("in range"), 0x1122_3344);
        assert_eq!(s.read(126, 0, 32).expect("in range"), 0xaabb_ccdd);
        assert_eq!(s.read(200, 0, 16).expect("in range"), 0xbeef);
        assert_eq!(s.read(300, 0, 8).expect("in range"), 0x7f);
        assert_eq!(&s.bytes()[126..130], &[0xdd, 0xcc, 0xbb, 0xaa]);
        let written: Vec<u32> = (0..1024).filter(|&a| s.was_written(a)).collect();
        assert_eq!(written, vec![60, 61, 62, 63, 126, 127, 128, 129, 200, 201, 300]);
        assert!(s.write(1022, 0, 32, 0).is_err(), "past the end");
    }

    /// Element lists read, written and copied in bulk give the same values, bytes and
    /// written marks as element-by-element reads and writes, for whole aligned elements (the tight loop)
    /// and for shifted, unaligned or out-of-range ones (one by one, trapping where a single
    /// access traps).
    #[test]
    fn bulk_element_reads_and_writes_match_single_ones() {
        let perm = |n: u32, w: u32, base: u32| -> Vec<(u32, u32)> {
            (0..n).map(|i| (base + ((i * 7 + 3) % n) * w, 0)).collect()
        };
        let cases: Vec<(u32, Vec<(u32, u32)>)> = vec![
            (32, perm(64, 4, 128)),
            (16, perm(50, 2, 6)),
            (8, perm(33, 1, 900)),
            (32, vec![(10, 0), (3, 0), (40, 0)]),
            (4, vec![(5, 4), (5, 0), (6, 4)]),
            (32, vec![(0, 0), (1022, 0), (8, 0)]),
        ];
        for (bits, addrs) in cases {
            let value = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9) & mask(bits);
            let (mut bulk, mut single) = (Smem::new(1024), Smem::new(1024));
            let r_bulk = bulk.write_elems(&addrs, bits, value);
            let mut r_single = Ok(());
            for (i, &(a, sh)) in addrs.iter().enumerate() {
                r_single = single.write(a, sh, bits, value(i));
                if r_single.is_err() {
                    break;
                }
            }
            assert_eq!(
                format!("{r_bulk:?}"),
                format!("{r_single:?}"),
                "{bits}: {addrs:?}"
            );
            assert_eq!(bulk.bytes(), single.bytes(), "{bits}: {addrs:?}");
            for a in 0..1024 {
                assert_eq!(bulk.was_written(a), single.was_written(a), "byte {a}");
            }
            // The same elements copied from their bytes: the same memory, or nothing written
            // when the list is not one of whole aligned elements inside shared memory.
            let mut copied = Smem::new(1024);
            let w = (bits as usize).div_ceil(8);
            let src: Vec<u8> = (0..addrs.len())
                .flat_map(|i| value(i).to_le_bytes()[..w].to_vec())
                .collect();
            if copied.copy_elems(&addrs, bits, &src) {
                assert_eq!(copied.bytes(), single.bytes(), "{bits}: {addrs:?}");
                assert!((0..1024).all(|a| copied.was_written(a) == single.was_written(a)));
            } else {
                assert!(r_single.is_err() || bits == 4 || addrs.iter().any(|&(a, _)| a % (bits / 8) != 0));
                assert!((0..1024).all(|a| !copied.was_written(a)), "{bits}: {addrs:?}");
            }
            assert!(!copied.copy_elems(&addrs, bits, &src[1..]), "short source");
            let mut got = Vec::new();
            let r = bulk.read_elems(&addrs, bits, &mut got);
            let want: Result<Vec<u64>, _> = addrs.iter().map(|&(a, sh)| single.read(a, sh, bits)).collect();
            match want {
                Ok(want) => assert_eq!((r.is_ok(), got), (true, want), "{bits}: {addrs:?}"),
                Err(e) => assert_eq!(format!("{:?}", r.err()), format!("{:?}", Some(e))),
            }
        }
    }

    /// The first element whose first byte is unwritten, in list order, whether the bytes
    /// between the lowest and highest address are all written or not.
    #[test]
    fn first_unwritten_finds_the_first_in_order() {
        let mut s = Smem::new(1024);
        s.write_bytes(100, &[1; 200]).expect("in range");
        let addrs: Vec<(u32, u32)> = (0..50).map(|i| (296 - 4 * i, 0)).collect();
        assert_eq!(s.first_unwritten(&addrs), None);
        assert_eq!(s.first_unwritten(&[(100, 0), (299, 0)]), None);
        assert_eq!(s.first_unwritten(&[(200, 0), (300, 0), (99, 0)]), Some(300));
        let mut gap = Smem::new(1024);
        gap.write_bytes(0, &[1; 64]).expect("in range");
        gap.write_bytes(65, &[1; 63]).expect("in range");
        assert_eq!(gap.first_unwritten(&[(0, 0), (127, 0), (66, 0)]), None);
        assert_eq!(
            gap.first_unwritten(&[(0, 0), (127, 0), (64, 0), (63, 0)]),
            Some(64)
        );
        assert_eq!(gap.first_unwritten(&[(1020, 0)]), Some(1020));
        assert_eq!(gap.first_unwritten(&[]), None);
    }

    #[test]
    fn tmem_allocator() {
        let mut t = Tmem::new();
        t.reserve(0, 2);
        assert_eq!(t.alloc(256, Span::DUMMY), Some(32));
        assert_eq!(t.alloc(256, Span::DUMMY), None);
        assert_eq!(t.alloc(128, Span::DUMMY), Some(288));
        assert!(t.dealloc(32, 256).is_ok());
        assert!(t.dealloc(32, 256).is_err(), "double dealloc");
        let cell = TmemCell {
            lane: 0,
            col: 40,
            shift: 0,
        };
        assert!(t.read(cell, 32).is_err(), "freed columns");
        assert_eq!(t.alloc(256, Span::DUMMY), Some(32));
        t.write(cell, 32, 7).expect("allocated");
        assert_eq!(t.read(cell, 32).expect("allocated"), 7);
    }
}
