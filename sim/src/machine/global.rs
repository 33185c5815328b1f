//! Global memory seen by the warps: element loads, stores and atomics through a tensor of
//! offsets into a launch tensor (`global.load`, `global.store`, `global.atomic`), with masks,
//! bounds checks and the element helpers they share. Each can list the element offsets it
//! touched (`seen`; a store also says whether it left the element's bits as they were), which
//! the hazard checker's global shadow records.

use super::*;

pub(super) fn shape_of(v: &Value) -> Vec<u32> {
    match v {
        Value::Tile(t) => t.shape.clone(),
        _ => vec![1],
    }
}

pub(super) fn elem_i(v: &Value, i: usize) -> i64 {
    match v {
        Value::Tile(t) => t.i(i),
        other => other.as_int().unwrap_or(0),
    }
}

pub(super) fn elem_bits(v: &Value, i: usize, dtype: bwsim_isa::DType) -> OpResult<u64> {
    match v {
        Value::Tile(t) => Ok(eval::convert_bits(t.dtype, dtype, t.bits[i])),
        other => eval::scalar_bits(dtype, other),
    }
}

pub(super) fn oob(g: &HostTensor, off: i64, what: &str) -> Fault {
    Fault::trap(
        CudaError::IllegalAddress,
        format!(
            "{what} at element offset {off} of tensor `{}`, which has {} elements",
            g.name,
            g.numel()
        ),
    )
}

/// Whether element `lin` is masked off (`mask` is false there; `bm` indexes it).
fn masked_off(mask: Option<&Value>, bm: &Option<BIndex>, lin: u64) -> bool {
    match (mask, bm) {
        (Some(m), Some(b)) => elem_i(m, b.at(lin)) == 0,
        _ => false,
    }
}

/// The element offset into `g` that element `lin` of `offs` (indexed by `bo`) names, or the
/// out-of-bounds trap of operation `what`.
fn offset_at(g: &HostTensor, offs: &Value, bo: &BIndex, lin: u64, what: &str) -> OpResult<u64> {
    let off = elem_i(offs, bo.at(lin));
    if off < 0 || off as u64 >= g.numel() {
        return Err(oob(g, off, what));
    }
    Ok(off as u64)
}

pub(super) fn global_load(
    g: &HostTensor,
    offs: &Value,
    mask: Option<&Value>,
    other: Option<&Value>,
    mut seen: Option<&mut Vec<u64>>,
) -> OpResult<Value> {
    let os = shape_of(offs);
    let shape = match mask {
        Some(m) => broadcast_shapes(&os, &shape_of(m))
            .ok_or_else(|| Fault::unsupported("mask does not broadcast with the offsets"))?,
        None => os.clone(),
    };
    let (bo, bm) = (
        BIndex::new(&os, &shape),
        mask.map(|m| BIndex::new(&shape_of(m), &shape)),
    );
    let bother = other.map(|o| BIndex::new(&shape_of(o), &shape));
    let n: u64 = shape.iter().map(|&x| x as u64).product();
    let mut bits = Vec::with_capacity(n as usize);
    for lin in 0..n {
        if masked_off(mask, &bm, lin) {
            bits.push(match (other, &bother) {
                (Some(o), Some(b)) => elem_bits(o, b.at(lin), g.dtype)?,
                _ => 0,
            });
            continue;
        }
        let off = offset_at(g, offs, &bo, lin, "global.load")?;
        if let Some(v) = seen.as_deref_mut() {
            v.push(off);
        }
        bits.push(g.get_bits(off));
    }
    Ok(Value::Tile(Arc::new(Tile {
        dtype: g.dtype,
        shape,
        bits,
    })))
}

pub(super) fn global_store(
    g: &mut HostTensor,
    offs: &Value,
    val: &Value,
    mask: Option<&Value>,
    mut seen: Option<&mut Vec<(u64, bool)>>,
) -> OpResult<()> {
    let os = shape_of(offs);
    let vs = shape_of(val);
    let mut shape =
        broadcast_shapes(&os, &vs).ok_or_else(|| Fault::unsupported("offsets and value do not broadcast"))?;
    if let Some(m) = mask {
        shape = broadcast_shapes(&shape, &shape_of(m))
            .ok_or_else(|| Fault::unsupported("mask does not broadcast"))?;
    }
    let (bo, bv) = (BIndex::new(&os, &shape), BIndex::new(&vs, &shape));
    let bm = mask.map(|m| BIndex::new(&shape_of(m), &shape));
    let n: u64 = shape.iter().map(|&x| x as u64).product();
    for lin in 0..n {
        if masked_off(mask, &bm, lin) {
            continue;
        }
        let off = offset_at(g, offs, &bo, lin, "global.store")?;
        let b = elem_bits(val, bv.at(lin), g.dtype)?;
        if let Some(v) = seen.as_deref_mut() {
            v.push((off, g.get_bits(off) == b));
        }
        g.set_bits(off, b);
    }
    Ok(())
}

/// One atomic read-modify-write of an element of type `dt` holding `cur` with operand `x`
/// (`cmp`: `cas`'s compare value): the new bits. Floats combine exactly and round once;
/// integers wrap, and compare as `dt`'s signedness says.
pub(super) fn atomic_combine(
    op: AtomicOp,
    dt: bwsim_isa::DType,
    cur: u64,
    x: u64,
    cmp: Option<u64>,
) -> OpResult<u64> {
    // An atomic read stores what it found.
    if op == AtomicOp::Load {
        return Ok(cur);
    }
    Ok(if dt.is_float() {
        let (a, b) = (
            bwsim_isa::numeric::decode(dt, cur),
            bwsim_isa::numeric::decode(dt, x),
        );
        let r = match op {
            AtomicOp::Add => a + b,
            AtomicOp::Max => a.max(b),
            AtomicOp::Min => a.min(b),
            AtomicOp::Xchg => b,
            other => {
                let other = other.name();
                return Err(Fault::unsupported(format!("atomic `{other}` on {dt} elements")));
            }
        };
        bwsim_isa::numeric::encode(dt, r)
    } else {
        let bits = dt.bits();
        let mask_bits = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let signed = |v: u64| -> i64 {
            if bits >= 64 {
                v as i64
            } else {
                ((v << (64 - bits)) as i64) >> (64 - bits)
            }
        };
        let unsigned = matches!(dt, bwsim_isa::DType::U32 | bwsim_isa::DType::U64);
        let r = match op {
            // Compare-and-swap: the element's bits against the compare value's.
            AtomicOp::Cas => match cmp {
                Some(c) if c & mask_bits == cur & mask_bits => x,
                Some(_) => cur,
                None => return Err(Fault::unsupported("`cas` without a compare value")),
            },
            AtomicOp::Add => cur.wrapping_add(x),
            AtomicOp::Max if unsigned => cur.max(x),
            AtomicOp::Min if unsigned => cur.min(x),
            AtomicOp::Max => signed(cur).max(signed(x)) as u64,
            AtomicOp::Min => signed(cur).min(signed(x)) as u64,
            AtomicOp::And => cur & x,
            AtomicOp::Or => cur | x,
            AtomicOp::Xor => cur ^ x,
            AtomicOp::Xchg => x,
            AtomicOp::Load => cur,
        };
        r & mask_bits
    })
}

/// `global.atomic`: each unmasked element in order reads the old value, combines it with its
/// operand and writes the result; the old values come back (0 where masked). Elements that
/// hit the same address see each other's writes in element order (the hardware's order among
/// them is unspecified; the final memory is the same for every order of these operations).
pub(super) fn global_atomic(
    g: &mut HostTensor,
    op: AtomicOp,
    offs: &Value,
    val: &Value,
    mask: Option<&Value>,
    compare: Option<&Value>,
    mut seen: Option<&mut Vec<u64>>,
) -> OpResult<Value> {
    let os = shape_of(offs);
    let vs = shape_of(val);
    let (bo, bv) = (BIndex::new(&os, &os), BIndex::new(&vs, &os));
    let bm = mask.map(|m| BIndex::new(&shape_of(m), &os));
    let bc = compare.map(|c| BIndex::new(&shape_of(c), &os));
    let n: u64 = os.iter().map(|&x| x as u64).product();
    let dt = g.dtype;
    let mut old = vec![0u64; n as usize];
    for lin in 0..n {
        if masked_off(mask, &bm, lin) {
            continue;
        }
        let off = offset_at(g, offs, &bo, lin, "global.atomic")?;
        if let Some(v) = seen.as_deref_mut() {
            v.push(off);
        }
        let cur = g.get_bits(off);
        let x = elem_bits(val, bv.at(lin), dt)?;
        let cmp = match (compare, &bc) {
            (Some(c), Some(b)) => Some(elem_bits(c, b.at(lin), dt)?),
            _ => None,
        };
        let new = atomic_combine(op, dt, cur, x, cmp)?;
        g.set_bits(off, new);
        old[lin as usize] = cur;
    }
    Ok(Value::Tile(Arc::new(Tile {
        dtype: dt,
        shape: os,
        bits: old,
    })))
}
