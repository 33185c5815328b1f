//! Register-tile layouts as linear maps over GF(2) (Triton's "linear layouts").
//!
//! A tile of a power-of-two shape is distributed over the threads of one partition. Which
//! element a thread holds in which of its registers is a function of three bit vectors: the
//! register index, the lane (5 bits) and the partition-local warp index. For every layout the
//! IR names (`blocked`, `slice`, `tmem32x32b`, `wgmma`) that function is linear: each input bit
//! contributes a fixed *basis* to the element's row-major flat index, and the contributions are
//! XORed. So a layout is three lists of bases, and reshape (the flat index does not move),
//! permute (the flat index's bit fields move), expand_dims, split and join are operations on
//! bases that never touch a register.
//!
//! Invariant: register bases are non-zero and linearly independent (a thread never holds the
//! same element twice). Lane and warp bases may be zero: those threads hold copies.
//!
//! This module is pure data; emitting the instructions that compute a thread's part of a flat
//! index lives in [`super::lower`].

use bwsim_isa::typeck::TileLayout;

/// A linear layout of a tile of shape `shape` over `32 * 2^warps.len()` threads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LinearLayout {
    /// The tile shape (every extent a power of two).
    pub shape: Vec<u32>,
    /// Flat-index basis of each register-index bit (bit 0 first).
    pub regs: Vec<u32>,
    /// Flat-index basis of each lane bit (5 entries).
    pub lanes: Vec<u32>,
    /// Flat-index basis of each partition-local warp-index bit.
    pub warps: Vec<u32>,
}

/// Why a register layout or a shared-memory addressing has no PTX form here.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("{what} is {value}, not a power of two")]
    NotPowerOfTwo { what: String, value: u32 },
    #[error("cannot broadcast {from:?} to {to:?}")]
    Broadcast { from: Vec<u32>, to: Vec<u32> },
    #[error("shared-memory offset overflows 32 bits")]
    OffsetOverflow,
    #[error(transparent)]
    Linear(#[from] bwsim_isa::value_types::LinearSmemError),
    /// Any other reason, in words.
    #[error("{0}")]
    Unsupported(String),
}

impl From<&str> for LayoutError {
    fn from(s: &str) -> LayoutError {
        LayoutError::Unsupported(s.to_string())
    }
}

impl From<String> for LayoutError {
    fn from(s: String) -> LayoutError {
        LayoutError::Unsupported(s)
    }
}

/// log2 of a power of two, or an error naming what is not one.
pub fn log2_exact(x: u32, what: &str) -> Result<u32, LayoutError> {
    if x == 0 || !x.is_power_of_two() {
        Err(LayoutError::NotPowerOfTwo {
            what: what.to_string(),
            value: x,
        })
    } else {
        Ok(x.trailing_zeros())
    }
}

/// Bit offset of each dimension in the row-major flat index of `shape`.
pub fn dim_offsets(shape: &[u32]) -> Result<Vec<u32>, LayoutError> {
    let mut offs = vec![0; shape.len()];
    let mut acc = 0;
    for d in (0..shape.len()).rev() {
        offs[d] = acc;
        acc += log2_exact(shape[d], "a tile extent")?;
    }
    Ok(offs)
}

impl LinearLayout {
    /// Number of registers per thread.
    pub fn num_regs(&self) -> usize {
        1usize << self.regs.len()
    }

    /// Total bits of the flat index.
    pub fn flat_bits(&self) -> u32 {
        self.shape.iter().map(|&d| d.trailing_zeros()).sum()
    }

    /// Number of elements.
    pub fn numel(&self) -> u64 {
        self.shape.iter().map(|&d| d as u64).product()
    }

    /// Flat index contributed by register index `r`.
    pub fn reg_flat(&self, r: usize) -> u32 {
        xor_bits(&self.regs, r as u32)
    }

    /// Flat index contributed by a lane and a warp.
    pub fn thread_flat(&self, lane: u32, warp: u32) -> u32 {
        xor_bits(&self.lanes, lane) ^ xor_bits(&self.warps, warp)
    }

    /// OR of every bit a thread part can set (lanes and warps).
    pub fn thread_mask(&self) -> u32 {
        self.lanes.iter().chain(self.warps.iter()).fold(0, |a, &b| a | b)
    }

    /// The register holding flat index `reg_part` (the part not contributed by the thread),
    /// if there is one.
    pub fn reg_of(&self, reg_part: u32) -> Option<usize> {
        // Register bases are independent: solve by elimination over GF(2).
        solve(&self.regs, reg_part).map(|bits| bits as usize)
    }

    /// The layout a `TileLayout` gives a tile of `shape` in a partition of `num_warps` warps.
    pub fn from_tile_layout(
        l: &TileLayout,
        shape: &[u32],
        num_warps: u32,
    ) -> Result<LinearLayout, LayoutError> {
        let wbits = log2_exact(num_warps, "the partition's warp count")?;
        match l {
            TileLayout::Blocked { spt, tpw, wpc, order } => blocked(spt, tpw, wpc, order, shape, wbits),
            TileLayout::Slice { dim, parent } => {
                let d = *dim as usize;
                if d > shape.len() {
                    return Err(format!(
                        "slice dimension {d} out of range for a tile of rank {}",
                        shape.len()
                    )
                    .into());
                }
                let mut pshape = shape.to_vec();
                pshape.insert(d, 1);
                let p = LinearLayout::from_tile_layout(parent, &pshape, num_warps)?;
                // A size-1 dimension holds no flat bits: the parent's bases are already those
                // of `shape`.
                Ok(LinearLayout {
                    shape: shape.to_vec(),
                    ..p
                }
                .normalized())
            }
            TileLayout::Tmem32x32b => tmem32x32b(shape, wbits),
            TileLayout::Wgmma { warps, n: _ } => wgmma(*warps, shape, wbits),
        }
    }

    /// The same registers seen as a tile of another shape with the same element count.
    pub fn reshape(&self, shape: &[u32]) -> Result<LinearLayout, LayoutError> {
        dim_offsets(shape)?;
        let a: u64 = shape.iter().map(|&d| d as u64).product();
        if a != self.numel() {
            return Err(format!(
                "reshape from {:?} to {shape:?} changes the element count",
                self.shape
            )
            .into());
        }
        Ok(LinearLayout {
            shape: shape.to_vec(),
            ..self.clone()
        })
    }

    /// `permute(x, order)`: dimension `i` of the result is dimension `order[i]` of the source.
    pub fn permute(&self, order: &[u32]) -> Result<LinearLayout, LayoutError> {
        let old_offs = dim_offsets(&self.shape)?;
        let new_shape: Vec<u32> = order.iter().map(|&i| self.shape[i as usize]).collect();
        let new_offs = dim_offsets(&new_shape)?;
        // Source bit (old dim d, bit b) moves to new position of dim d.
        let mut map = vec![0u32; self.flat_bits() as usize];
        for (new_d, &old_d) in order.iter().enumerate() {
            let old_d = old_d as usize;
            let bits = self.shape[old_d].trailing_zeros();
            for b in 0..bits {
                map[(old_offs[old_d] + b) as usize] = new_offs[new_d] + b;
            }
        }
        let f = |v: u32| -> u32 {
            let mut out = 0;
            for (i, &to) in map.iter().enumerate() {
                if v >> i & 1 == 1 {
                    out |= 1 << to;
                }
            }
            out
        };
        Ok(LinearLayout {
            shape: new_shape,
            regs: self.regs.iter().map(|&v| f(v)).collect(),
            lanes: self.lanes.iter().map(|&v| f(v)).collect(),
            warps: self.warps.iter().map(|&v| f(v)).collect(),
        })
    }

    /// Insert a dimension of extent 1 at `axis` (the flat index does not change).
    pub fn expand_dims(&self, axis: usize) -> LinearLayout {
        let mut shape = self.shape.clone();
        shape.insert(axis.min(shape.len()), 1);
        LinearLayout {
            shape,
            ..self.clone()
        }
    }

    /// `split(x)` along a last dimension of extent 2: the layout of each half and the register
    /// bit that selects the half, when that bit is held in registers alone.
    pub fn split(&self) -> Option<(LinearLayout, usize)> {
        if self.shape.last() != Some(&2) {
            return None;
        }
        if self.lanes.iter().chain(self.warps.iter()).any(|&b| b & 1 != 0) {
            return None;
        }
        let k = self.regs.iter().position(|&b| b == 1)?;
        if self.regs.iter().enumerate().any(|(i, &b)| i != k && b & 1 != 0) {
            return None;
        }
        let mut shape = self.shape.clone();
        shape.pop();
        let regs = self
            .regs
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != k)
            .map(|(_, &b)| b >> 1)
            .collect();
        Some((
            LinearLayout {
                shape,
                regs,
                lanes: self.lanes.iter().map(|&b| b >> 1).collect(),
                warps: self.warps.iter().map(|&b| b >> 1).collect(),
            },
            k,
        ))
    }

    /// `x[.., start:start + len, ..]` along `dim`: the layout of the slice and, for each of its
    /// registers, the register of `self` that holds the element, when the slice is a choice of
    /// registers (every bit of `dim` at or above `len` comes from one register bit alone, as in
    /// a row-per-thread TMEM layout sliced along its columns). `len` is a power of two and
    /// `start` a multiple of it.
    pub fn slice(&self, dim: usize, start: u32, len: u32) -> Option<(LinearLayout, Vec<usize>)> {
        let extent = *self.shape.get(dim)?;
        if !len.is_power_of_two() || !start.is_multiple_of(len) || start.checked_add(len)? > extent {
            return None;
        }
        let o = dim_offsets(&self.shape).ok()?[dim];
        let (k, e) = (len.trailing_zeros(), extent.trailing_zeros());
        let high: u32 = ((1u32 << e) - 1) & !((1u32 << k) - 1);
        let hmask = high << o;
        if self
            .lanes
            .iter()
            .chain(self.warps.iter())
            .any(|&b| b & hmask != 0)
        {
            return None;
        }
        // Register bits that select among the slices, and the value each must take.
        let target = (start >> k) << (o + k);
        let mut fixed = 0usize;
        let mut covered = 0u32;
        let mut free: Vec<usize> = Vec::new();
        for (i, &b) in self.regs.iter().enumerate() {
            if b & hmask == 0 {
                free.push(i);
            } else if b.count_ones() == 1 && b & hmask == b {
                covered |= b;
                if target & b != 0 {
                    fixed |= 1 << i;
                }
            } else {
                return None;
            }
        }
        if covered != hmask {
            return None;
        }
        // Flat-index bits of the slice: drop the selecting bits, move the higher ones down.
        let lo_mask = (1u32 << (o + k)) - 1;
        let f = |v: u32| (v & lo_mask) | ((v >> (o + e)) << (o + k));
        let mut shape = self.shape.clone();
        shape[dim] = len;
        let layout = LinearLayout {
            shape,
            regs: free.iter().map(|&i| f(self.regs[i])).collect(),
            lanes: self.lanes.iter().map(|&b| f(b)).collect(),
            warps: self.warps.iter().map(|&b| f(b)).collect(),
        };
        let map = (0..1usize << free.len())
            .map(|j| {
                free.iter()
                    .enumerate()
                    .fold(fixed, |r, (bit, &i)| r | (((j >> bit) & 1) << i))
            })
            .collect();
        Some((layout, map))
    }

    /// `join(a, b)` of two tiles of this layout: a new last dimension of extent 2 selected by a
    /// new highest register bit (registers of `a` first, then those of `b`).
    pub fn join(&self) -> LinearLayout {
        let mut shape = self.shape.clone();
        shape.push(2);
        let mut regs: Vec<u32> = self.regs.iter().map(|&b| b << 1).collect();
        regs.push(1);
        LinearLayout {
            shape,
            regs,
            lanes: self.lanes.iter().map(|&b| b << 1).collect(),
            warps: self.warps.iter().map(|&b| b << 1).collect(),
        }
    }

    /// This layout's bases mapped by `f` onto a tile of `shape` (a clip of a larger layout
    /// onto a smaller tile: bases past the tile map to 0, so they become replicas), normalized.
    fn clipped(&self, shape: &[u32], f: impl Fn(u32) -> u32) -> LinearLayout {
        let clip = |v: &Vec<u32>| v.iter().map(|&b| f(b)).collect();
        LinearLayout {
            shape: shape.to_vec(),
            regs: clip(&self.regs),
            lanes: clip(&self.lanes),
            warps: clip(&self.warps),
        }
        .normalized()
    }

    /// Drop register bases that are zero or depend on earlier ones.
    pub fn normalized(mut self) -> LinearLayout {
        let mut kept: Vec<u32> = Vec::new();
        for &b in &self.regs {
            if b != 0 && solve(&kept, b).is_none() {
                kept.push(b);
            }
        }
        self.regs = kept;
        self
    }

    /// A layout for a broadcast of this tile to `shape`: the same threads keep the same
    /// (projected) elements and every new element bit comes from new registers.
    pub fn broadcast_to(&self, shape: &[u32]) -> Result<LinearLayout, LayoutError> {
        let src_offs = dim_offsets(&self.shape)?;
        let dst_offs = dim_offsets(shape)?;
        let rank = shape.len();
        let lead = rank - self.shape.len();
        let mut map = vec![0u32; self.flat_bits() as usize];
        let mut new_bits = Vec::new();
        for d in 0..rank {
            let dst_bits = shape[d].trailing_zeros();
            let src_d = d.checked_sub(lead);
            let src_bits = src_d.map(|s| self.shape[s].trailing_zeros()).unwrap_or(0);
            if src_bits == dst_bits {
                if let Some(s) = src_d {
                    for b in 0..src_bits {
                        map[(src_offs[s] + b) as usize] = dst_offs[d] + b;
                    }
                }
            } else if src_bits == 0 {
                for b in 0..dst_bits {
                    new_bits.push(1u32 << (dst_offs[d] + b));
                }
            } else {
                return Err(LayoutError::Broadcast {
                    from: self.shape.clone(),
                    to: shape.to_vec(),
                });
            }
        }
        let f = |v: u32| -> u32 {
            (0..map.len())
                .filter(|&i| v >> i & 1 == 1)
                .fold(0, |a, i| a | 1 << map[i])
        };
        let mut regs: Vec<u32> = self.regs.iter().map(|&v| f(v)).collect();
        regs.extend(new_bits);
        Ok(LinearLayout {
            shape: shape.to_vec(),
            regs,
            lanes: self.lanes.iter().map(|&v| f(v)).collect(),
            warps: self.warps.iter().map(|&v| f(v)).collect(),
        })
    }
}

/// The projection of a flat index of `dst` onto a flat index of `src`, where `src`
/// broadcasts to `dst` (numpy rules): bits of broadcast dimensions are dropped.
pub fn broadcast_projection(src: &[u32], dst: &[u32]) -> Result<Vec<Option<u32>>, LayoutError> {
    let src_offs = dim_offsets(src)?;
    let dst_offs = dim_offsets(dst)?;
    let total: u32 = dst.iter().map(|&d| d.trailing_zeros()).sum();
    let mut map = vec![None; total as usize];
    let lead = dst
        .len()
        .checked_sub(src.len())
        .ok_or(LayoutError::from("source has higher rank than destination"))?;
    for d in 0..dst.len() {
        let Some(s) = d.checked_sub(lead) else { continue };
        if src[s] == dst[d] {
            for b in 0..dst[d].trailing_zeros() {
                map[(dst_offs[d] + b) as usize] = Some(src_offs[s] + b);
            }
        } else if src[s] != 1 {
            return Err(LayoutError::Broadcast {
                from: src.to_vec(),
                to: dst.to_vec(),
            });
        }
    }
    Ok(map)
}

/// Apply a bit map (from [`broadcast_projection`]) to a flat index.
pub fn project(map: &[Option<u32>], v: u32) -> u32 {
    map.iter()
        .enumerate()
        .filter(|&(i, _)| v >> i & 1 == 1)
        .fold(0, |a, (_, m)| match m {
            Some(t) => a | 1 << t,
            None => a,
        })
}

/// XOR of the bases selected by the set bits of `sel`.
pub fn xor_bits(bases: &[u32], sel: u32) -> u32 {
    bases
        .iter()
        .enumerate()
        .filter(|&(i, _)| sel >> i & 1 == 1)
        .fold(0, |a, (_, &b)| a ^ b)
}

/// Solve `xor_bits(bases, x) == target` for x (bases independent), if solvable.
pub fn solve(bases: &[u32], target: u32) -> Option<u32> {
    // Gaussian elimination keeping track of which original bases were combined.
    let mut rows: Vec<(u32, u32)> = bases.iter().enumerate().map(|(i, &b)| (b, 1u32 << i)).collect();
    let mut pivots: Vec<(u32, u32, u32)> = Vec::new(); // (pivot bit, value, combination)
    for (mut v, mut c) in rows.drain(..) {
        for &(pb, pv, pc) in &pivots {
            if v >> pb & 1 == 1 {
                v ^= pv;
                c ^= pc;
            }
        }
        if v != 0 {
            let pb = 31 - v.leading_zeros();
            // Keep pivots reduced against the new one.
            for p in pivots.iter_mut() {
                if p.1 >> pb & 1 == 1 {
                    p.1 ^= v;
                    p.2 ^= c;
                }
            }
            pivots.push((pb, v, c));
        }
    }
    let mut t = target;
    let mut comb = 0;
    for &(pb, pv, pc) in &pivots {
        if t >> pb & 1 == 1 {
            t ^= pv;
            comb ^= pc;
        }
    }
    if t == 0 {
        Some(comb)
    } else {
        None
    }
}

/// Triton's `BlockedEncodingAttr::toLinearLayout`: per dimension, from low to high bits,
/// `size_per_thread` register bits, `threads_per_warp` lane bits, `warps_per_cta` warp bits,
/// then repetitions in registers; bits beyond the tile's extent are dropped (registers) or
/// become copies (lanes, warps).
fn blocked(
    spt: &[u32],
    tpw: &[u32],
    wpc: &[u32],
    order: &[u32],
    shape: &[u32],
    wbits: u32,
) -> Result<LinearLayout, LayoutError> {
    let rank = shape.len();
    if spt.len() != rank || tpw.len() != rank || wpc.len() != rank || order.len() != rank {
        return Err(format!(
            "blocked layout of rank {} used for a tile of rank {rank}",
            spt.len()
        )
        .into());
    }
    let offs = dim_offsets(shape)?;
    let dbits: Vec<u32> = shape.iter().map(|&d| d.trailing_zeros()).collect();
    let next = std::cell::RefCell::new(vec![0u32; rank]);
    let take = |d: usize| -> Option<u32> {
        let mut n = next.borrow_mut();
        let b = n[d];
        n[d] += 1;
        (b < dbits[d]).then(|| 1u32 << (offs[d] + b))
    };
    let mut regs = Vec::new();
    let mut lanes = Vec::new();
    let mut warps = Vec::new();
    let order: Vec<usize> = order.iter().map(|&o| o as usize).collect();
    if order.iter().any(|&o| o >= rank) {
        return Err("blocked layout order out of range".into());
    }
    for &d in &order {
        for _ in 0..log2_exact(spt[d], "size_per_thread")? {
            if let Some(b) = take(d) {
                regs.push(b);
            }
        }
    }
    for &d in &order {
        for _ in 0..log2_exact(tpw[d], "threads_per_warp")? {
            lanes.push(take(d).unwrap_or(0));
        }
    }
    let mut wtotal = 0;
    for &d in &order {
        let n = log2_exact(wpc[d], "warps_per_cta")?;
        wtotal += n;
        for _ in 0..n {
            warps.push(take(d).unwrap_or(0));
        }
    }
    if wtotal != wbits {
        return Err(format!(
            "blocked layout spreads over {} warps but the partition has {}",
            1u32 << wtotal,
            1u32 << wbits
        )
        .into());
    }
    for &d in &order {
        while next.borrow()[d] < dbits[d] {
            if let Some(b) = take(d) {
                regs.push(b);
            }
        }
    }
    if lanes.len() != 5 {
        return Err("threads_per_warp must multiply to 32".into());
    }
    Ok(LinearLayout {
        shape: shape.to_vec(),
        regs,
        lanes,
        warps,
    }
    .normalized())
}

/// Gluon's `get_tmem_32x32b_reg_layout`: thread `32 * (warp % 4) + lane` holds row
/// `32 * (warp % 4) + lane` of each 128-row block, its registers run along the columns; with
/// 8 warps the second warpgroup holds the upper half of the columns; rows past 128 (a second
/// M block) come in further registers.
fn tmem32x32b(shape: &[u32], wbits: u32) -> Result<LinearLayout, LayoutError> {
    let [m, n] = shape else {
        return Err(format!("tmem32x32b describes 2-D tiles, not {shape:?}").into());
    };
    let mb = log2_exact(*m, "the TMEM tile's M")?;
    let nb = log2_exact(*n, "the TMEM tile's N")?;
    if mb < 6 {
        // A tile shorter than the layout's rows (a slice along M: `[1, N]`, the columns
        // every thread of a 32x32b access holds): the rows past M are replicas, as a linear
        // layout larger than its tile broadcasts. The bases of those rows become 0.
        let full = tmem32x32b(&[128, *n], wbits)?;
        let numel = m * n;
        return Ok(full.clipped(shape, |b| if b < numel { b } else { 0 }));
    }
    if wbits != 2 && wbits != 3 {
        return Err(format!(
            "tmem32x32b needs 4 or 8 warps, the partition has {}",
            1u32 << wbits
        )
        .into());
    }
    let row = |b: u32| 1u32 << (nb + b);
    let col = |b: u32| 1u32 << b;
    let mut col_regs = nb;
    // A column bit for the lanes or warps; a tile too narrow to give one (a slice along N:
    // `[M, 1]`, the row values every thread of the access holds) replicates over them.
    let mut take_col = || -> u32 {
        if col_regs == 0 {
            return 0;
        }
        col_regs -= 1;
        col(col_regs)
    };
    let (lanes, mut warps) = if mb == 6 {
        // M = 64 (TMEM block M 64): rows 16w .. 16w + 15 sit in the first 16 lanes of warp
        // w's lane quarter; the other 16 threads take the upper half of the columns
        // (`tcgen05.ld.16x32bx2`), as Triton's `get_tmem_reg_layout` lays it out.
        let wcol = if wbits == 3 { Some(take_col()) } else { None };
        let half = take_col();
        let mut warps = vec![row(4), row(5)];
        warps.extend(wcol);
        (vec![row(0), row(1), row(2), row(3), half], warps)
    } else {
        let mut warps = vec![row(5), row(6)];
        if wbits == 3 {
            warps.push(take_col());
        }
        ((0..5).map(row).collect(), warps)
    };
    let mut regs: Vec<u32> = (0..col_regs).map(col).collect();
    for b in 7..mb {
        regs.push(row(b));
    }
    warps.truncate(wbits as usize);
    Ok(LinearLayout {
        shape: shape.to_vec(),
        regs,
        lanes,
        warps,
    })
}

/// The wgmma accumulator fragment (docs/semantics.md#wgmma): register bits (column bit 0, row bit
/// 3, column bits 3..), lane bits (column bits 1, 2, row bits 0..2), warp bits (row bits 4, 5, then
/// one more row bit per further warpgroup), then further 64-row blocks in registers.
fn wgmma(warps: [u32; 2], shape: &[u32], wbits: u32) -> Result<LinearLayout, LayoutError> {
    let [m, n] = shape else {
        return Err(format!("the wgmma layout describes 2-D tiles, not {shape:?}").into());
    };
    if warps[1] != 1 {
        return Err(format!(
            "wgmma layouts with warps {warps:?} (split along N) are not supported by the PTX backend"
        )
        .into());
    }
    if warps[0] != 1 << wbits || wbits < 2 {
        return Err(format!(
            "the wgmma layout has {} warps but the partition has {}",
            warps[0],
            1u32 << wbits
        )
        .into());
    }
    let mb = log2_exact(*m, "the accumulator's M")?;
    let nb = log2_exact(*n, "the accumulator's N")?;
    if nb < 3 || mb < 4 + wbits {
        // A tile narrower than one fragment (a slice of the accumulator layout: `[M, 1]`, the
        // row values each thread holds, or `[1, N]`): the layout of the smallest whole
        // fragment with the bits past the tile dropped, so those threads and registers hold
        // copies (as a linear layout larger than its tile broadcasts).
        let (fm, fn_) = (mb.max(4 + wbits), nb.max(3));
        let full = wgmma(warps, &[1 << fm, 1 << fn_], wbits)?;
        return Ok(full.clipped(shape, |b| {
            let (r, c) = (b >> fn_, b & ((1 << fn_) - 1));
            if r >= 1 << mb || c >= 1 << nb {
                0
            } else {
                (r << nb) | c
            }
        }));
    }
    let row = |b: u32| 1u32 << (nb + b);
    let col = |b: u32| 1u32 << b;
    let mut regs = vec![col(0), row(3)];
    regs.extend((3..nb).map(col));
    let lanes = vec![col(1), col(2), row(0), row(1), row(2)];
    let warps: Vec<u32> = (0..wbits).map(|w| row(4 + w)).collect();
    for b in (4 + wbits)..mb {
        regs.push(row(b));
    }
    Ok(LinearLayout {
        shape: shape.to_vec(),
        regs,
        lanes,
        warps,
    })
}

/// The A operand of a wgmma in registers, for elements of `bits` bits (16: f16/bf16, 32:
/// tf32, 8: e4m3/e5m2/s8/u8) over an `[M, K]` tile: the PTX ISA's register fragments of
/// `wgmma.mma_async` (section "Register Fragments"), which give each warp of a warpgroup the
/// A fragment of `mma.m16n8kK` for its 16 rows (warp `w` rows `16w..16w+15`, the accumulator's
/// rows). With `g = lane / 4` and `t = lane % 4`, element `i` of one instruction's fragment
/// (32 bytes of K) is at
///
/// - 16-bit (K 16): row `g + 8 (i >> 1 & 1)`, column `2t + (i & 1) + 8 (i >> 2)`;
/// - 32-bit (K 8): row `g + 8 (i & 1)`, column `t + 4 (i >> 1)`;
/// - 8-bit (K 32): row `g + 8 (i >> 2 & 1)`, column `4t + (i & 3) + 16 (i >> 3)`;
///
/// and the instruction's 4 registers hold elements `i` in order, `32 / bits` per register,
/// the first in the low bits. Further registers: the K steps, then the 64-row blocks beyond the
/// partition's warpgroups (as in [`wgmma`]'s accumulator), so the registers of block `b` and K
/// step `s` are `(b * K / k + s) * n .. + n` for `n` = elements per instruction.
pub fn wgmma_a(bits: u32, shape: &[u32], wbits: u32) -> Result<LinearLayout, LayoutError> {
    let [m, k] = shape else {
        return Err(format!("the wgmma A operand is a 2-D tile, not {shape:?}").into());
    };
    let mb = log2_exact(*m, "the A operand's M")?;
    let kb = log2_exact(*k, "the A operand's K")?;
    let row = |b: u32| 1u32 << (kb + b);
    let col = |b: u32| 1u32 << b;
    let (mut regs, step_bits, lane_cols) = match bits {
        16 => (vec![col(0), row(3), col(3)], 4, [col(1), col(2)]),
        32 => (vec![row(3), col(2)], 3, [col(0), col(1)]),
        8 => (vec![col(0), col(1), row(3), col(4)], 5, [col(2), col(3)]),
        _ => return Err(format!("no wgmma takes {bits}-bit A operands from registers").into()),
    };
    if kb < step_bits {
        return Err(format!(
            "an A operand of K = {k} is narrower than one instruction's {}",
            1u32 << step_bits
        )
        .into());
    }
    if wbits < 2 || mb < 4 + wbits {
        return Err(format!(
            "an A operand of M = {m} does not cover the {} rows of {} warps",
            16u32 << wbits,
            1u32 << wbits
        )
        .into());
    }
    let lanes = vec![lane_cols[0], lane_cols[1], row(0), row(1), row(2)];
    let warps: Vec<u32> = (0..wbits).map(|w| row(4 + w)).collect();
    regs.extend((step_bits..kb).map(col));
    regs.extend(((4 + wbits)..mb).map(row));
    Ok(LinearLayout {
        shape: shape.to_vec(),
        regs,
        lanes,
        warps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elems(l: &LinearLayout, lane: u32, warp: u32) -> Vec<u32> {
        (0..l.num_regs())
            .map(|r| l.reg_flat(r) ^ l.thread_flat(lane, warp))
            .collect()
    }

    #[test]
    fn blocked_row_layout() {
        // blocked([1, 1], [1, 32], [1, 4], [1, 0]) over [32, 64]: lane l of warp w holds
        // column 32 * (w % 2) + l; the 4 warps cover 128 columns, the tile has 64, so warps 2
        // and 3 hold copies of warps 0 and 1. The 32 rows are registers.
        let l = blocked(&[1, 1], &[1, 32], &[1, 4], &[1, 0], &[32, 64], 2).unwrap();
        assert_eq!(l.num_regs(), 32);
        assert_eq!(l.warps, vec![32, 0]);
        let e = elems(&l, 3, 1);
        assert_eq!(e[0], 35);
        assert_eq!(e[1], 64 + 35);
    }

    #[test]
    fn column_slice_of_a_row_per_thread_tile_picks_registers() {
        // tmem32x32b over [128, 256] with 4 warps: thread (lane l, warp w) holds row 32w + l,
        // all 256 columns in its registers. Columns 64..128 of that tile, as a [128, 64] tile,
        // are the same thread's elements (row r, column 64 + c) for c in 0..64.
        let l = tmem32x32b(&[128, 256], 2).unwrap();
        let (s, map) = l.slice(1, 64, 64).unwrap();
        assert_eq!(s.shape, vec![128, 64]);
        assert_eq!(map.len(), 64);
        for (lane, warp) in [(0, 0), (5, 1), (31, 3)] {
            let row = 32 * warp + lane;
            let full = elems(&l, lane, warp);
            let part = elems(&s, lane, warp);
            for (j, &flat) in part.iter().enumerate() {
                let (r, c) = (flat / 64, flat % 64);
                assert_eq!(r, row);
                // The register the slice names holds element (row, 64 + c) of the full tile.
                assert_eq!(full[map[j]], row * 256 + 64 + c);
            }
            let mut cols: Vec<u32> = part.iter().map(|f| f % 64).collect();
            cols.sort();
            assert_eq!(cols, (0..64).collect::<Vec<_>>());
        }
        // Rows are spread over lanes and warps: a row slice is no choice of registers.
        assert!(l.slice(0, 0, 64).is_none());
        // Unaligned or non-power-of-two slices are refused.
        assert!(l.slice(1, 32, 64).is_none());
        assert!(l.slice(1, 0, 48).is_none());
    }

    #[test]
    fn slice_then_expand_is_parent() {
        let p = TileLayout::Blocked {
            spt: vec![1, 1],
            tpw: vec![1, 32],
            wpc: vec![1, 4],
            order: vec![1, 0],
        };
        let s = TileLayout::Slice {
            dim: 0,
            parent: Box::new(p.clone()),
        };
        let ls = LinearLayout::from_tile_layout(&s, &[64], 4)
            .unwrap()
            .expand_dims(0);
        let lp = LinearLayout::from_tile_layout(&p, &[1, 64], 4).unwrap();
        assert_eq!(ls, lp);
    }

    #[test]
    fn tmem_split_is_register_local() {
        let l = tmem32x32b(&[128, 256], 2).unwrap();
        let r = l.reshape(&[128, 2, 128]).unwrap().permute(&[0, 2, 1]).unwrap();
        let (half, bit) = r.split().unwrap();
        assert_eq!(half.shape, vec![128, 128]);
        assert_eq!(bit, 7);
        // thread 5 of warp 1 holds row 37 of both halves.
        assert_eq!(half.thread_flat(5, 1), 37 * 128);
    }

    /// `SliceLayout(0, tmem32x32b)` of a [128, 128] tile: the [128] columns every thread of the
    /// access holds, i.e. each thread holds all 128 (lanes and warps are replicas); with 8
    /// warps the second warpgroup's columns stay its own.
    #[test]
    fn row_slice_of_tmem_32x32b_is_replicated_over_threads() {
        let s = TileLayout::Slice {
            dim: 0,
            parent: Box::new(TileLayout::Tmem32x32b),
        };
        let l = LinearLayout::from_tile_layout(&s, &[128], 4).unwrap();
        assert_eq!(l.num_regs(), 128);
        assert!(l.lanes.iter().chain(&l.warps).all(|&b| b == 0), "{l:?}");
        for (lane, warp) in [(0, 0), (7, 2), (31, 3)] {
            let mut e = elems(&l, lane, warp);
            e.sort();
            assert_eq!(e, (0..128).collect::<Vec<_>>());
        }
        let l = LinearLayout::from_tile_layout(&s, &[128], 8).unwrap();
        assert_eq!(l.num_regs(), 64);
        assert_eq!(l.warps, vec![0, 0, 64]);
    }

    /// Bases written as (row, col) pairs, Triton's notation, to flat indices of a tile N wide.
    fn rc(bases: &[(u32, u32)], n: u32) -> Vec<u32> {
        bases.iter().map(|&(r, c)| r * n + c).collect()
    }

    /// Triton 3.6's `get_tmem_reg_layout` for a TMEM block M 64 tile [64, 64] with 4 warps
    /// (read from the compiled TTGIR, docs/hardware/tmem-scales.md's provenance):
    /// register [[0,1],[0,2],[0,4],[0,8],[0,16]], lane [[1,0],[2,0],[4,0],[8,0],[0,32]],
    /// warp [[16,0],[32,0]], loaded with `tcgen05.ld.16x32bx2`.
    #[test]
    fn tmem_m64_matches_triton() {
        let l = tmem32x32b(&[64, 64], 2).unwrap();
        assert_eq!(l.regs, rc(&[(0, 1), (0, 2), (0, 4), (0, 8), (0, 16)], 64));
        assert_eq!(l.lanes, rc(&[(1, 0), (2, 0), (4, 0), (8, 0), (0, 32)], 64));
        assert_eq!(l.warps, rc(&[(16, 0), (32, 0)], 64));
        // 8 warps: register [[0,1],[0,2],[0,4],[0,8]], lane [.., [0,16]], warp [[16,0],[32,0],[0,32]].
        let l = tmem32x32b(&[64, 64], 3).unwrap();
        assert_eq!(l.regs, rc(&[(0, 1), (0, 2), (0, 4), (0, 8)], 64));
        assert_eq!(l.lanes, rc(&[(1, 0), (2, 0), (4, 0), (8, 0), (0, 16)], 64));
        assert_eq!(l.warps, rc(&[(16, 0), (32, 0), (0, 32)], 64));
    }

    /// Triton 3.6's layout for [128, 256] with 8 warps: register [[0,1],...,[0,64]], lane rows
    /// 1..16, warp [[32,0],[64,0],[0,128]].
    #[test]
    fn tmem_m128_eight_warps_matches_triton() {
        let l = tmem32x32b(&[128, 256], 3).unwrap();
        assert_eq!(
            l.regs,
            rc(&[(0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (0, 32), (0, 64)], 256)
        );
        assert_eq!(l.lanes, rc(&[(1, 0), (2, 0), (4, 0), (8, 0), (16, 0)], 256));
        assert_eq!(l.warps, rc(&[(32, 0), (64, 0), (0, 128)], 256));
    }

    #[test]
    fn slices_of_the_wgmma_layout_hold_their_rows_and_columns() {
        // slice(1, wgmma): thread (lane, warp) holds rows 16w + lane/4 and 8 below it; the
        // four lanes of a row group hold copies.
        let rows = wgmma([4, 1], &[64, 1], 2).unwrap();
        for w in 0..4 {
            for lane in 0..32 {
                assert_eq!(elems(&rows, lane, w), [16 * w + lane / 4, 16 * w + lane / 4 + 8]);
            }
        }
        // slice(0, wgmma) over N = 16: columns 8j + 2(lane % 4) (+1), the same in every warp.
        let cols = wgmma([4, 1], &[1, 16], 2).unwrap();
        for w in 0..4 {
            for lane in 0..32 {
                let c = 2 * (lane % 4);
                assert_eq!(elems(&cols, lane, w), [c, c + 1, c + 8, c + 9]);
            }
        }
    }

    #[test]
    fn wgmma_fragment_matches_ptx_md() {
        // Thread t (warp w, lane l): reg 4j+0/1 at row 16w + l/4, cols 8j + 2(l%4) (+1);
        // regs 4j+2/3 at row 16w + l/4 + 8.
        let l = wgmma([4, 1], &[64, 32], 2).unwrap();
        for w in 0..4 {
            for lane in 0..32 {
                for k in 0..16usize {
                    let j = (k / 4) as u32;
                    let row = 16 * w + lane / 4 + if k % 4 >= 2 { 8 } else { 0 };
                    let colv = 8 * j + 2 * (lane % 4) + (k % 2) as u32;
                    assert_eq!(l.reg_flat(k) ^ l.thread_flat(lane, w), row * 32 + colv);
                }
            }
        }
    }

    /// The A fragments of the PTX ISA's `mma.m16n8kK` (per warp, rows 16w..) as the wgmma
    /// register fragments give them, element `i` of each instruction: (row, column).
    fn ptx_a_element(bits: u32, lane: u32, i: u32) -> (u32, u32) {
        let (g, t) = (lane / 4, lane % 4);
        match bits {
            16 => (g + 8 * (i >> 1 & 1), 2 * t + (i & 1) + 8 * (i >> 2)),
            32 => (g + 8 * (i & 1), t + 4 * (i >> 1)),
            _ => (g + 8 * (i >> 2 & 1), 4 * t + (i & 3) + 16 * (i >> 3)),
        }
    }

    #[test]
    fn wgmma_a_fragment_matches_the_ptx_isa() {
        // Two K steps and, with 4 warps, two 64-row blocks; with 8 warps, one block per
        // warpgroup.
        for (bits, kstep) in [(16u32, 16u32), (32, 8), (8, 32)] {
            for (wbits, m) in [(2u32, 128u32), (3, 128)] {
                let k = 2 * kstep;
                let l = wgmma_a(bits, &[m, k], wbits).unwrap();
                let per = kstep / 2; // elements of one instruction per thread
                let steps = k / kstep;
                let wgs = 1u32 << (wbits - 2);
                assert_eq!(l.num_regs() as u32, per * steps * (m / 64 / wgs));
                for w in 0..1u32 << wbits {
                    for lane in 0..32 {
                        for r in 0..l.num_regs() as u32 {
                            let (i, s, blk) = (r % per, r / per % steps, r / per / steps);
                            let (row, col) = ptx_a_element(bits, lane, i);
                            let row = 64 * (wgs * blk + w / 4) + 16 * (w % 4) + row;
                            let col = s * kstep + col;
                            assert_eq!(
                                l.reg_flat(r as usize) ^ l.thread_flat(lane, w),
                                row * k + col,
                                "bits {bits}, warps {}, warp {w}, lane {lane}, reg {r}",
                                1 << wbits
                            );
                        }
                    }
                }
            }
        }
        assert!(wgmma_a(16, &[64, 8], 2).is_err(), "K below one instruction");
        assert!(wgmma_a(4, &[64, 64], 2).is_err(), "fp4 A has no register form");
    }

    #[test]
    fn solve_finds_register() {
        let l = blocked(&[1, 4], &[32, 1], &[1, 4], &[1, 0], &[1, 128], 2).unwrap();
        for r in 0..l.num_regs() {
            assert_eq!(l.reg_of(l.reg_flat(r)), Some(r));
        }
    }
}
