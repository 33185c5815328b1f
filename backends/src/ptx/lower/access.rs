//! What the memory, tensor-memory and wgmma lowerings share about an access: the PTX type
//! of an element load or store, the operand type of a wgmma or descriptor, and where an
//! element of a tensor-memory view lives. It knows nothing of operations or registers.

use super::*;

/// Per register of a tile: (TMEM column relative to the warp's base address, register index,
/// bit shift inside the 32-bit cell).
pub(super) type TmemCells = Vec<(u32, usize, u32)>;

/// PTX type of a load/store of one tile element.
pub(super) fn ldst_ty(d: DType) -> Option<&'static str> {
    Some(match d.bits() {
        64 => "b64",
        32 => {
            if matches!(d, DType::F32 | DType::TF32) {
                "f32"
            } else {
                "b32"
            }
        }
        16 => "b16",
        8 => "u8",
        _ => return None,
    })
}

/// Operand-type name of a wgmma / descriptor type.
pub(super) fn wgmma_ty(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::TF32 | DType::F32 => "tf32",
        DType::F8E4M3 => "e4m3",
        DType::F8E5M2 => "e5m2",
        DType::I8 => "s8",
        DType::U8 => "u8",
        _ => return None,
    })
}

/// Where an element of a TMEM view lives relative to the view's region address: (lane,
/// column), as the simulator places it (DESIGN.md section 4; Triton's `TensorMemoryLayout`).
pub(super) fn tmem_cell(v: &TmemView, m: u32, n: u32) -> (u32, u32, u32) {
    let (mm, nn) = match v.full.len() {
        0 => (0u64, 1u64),
        1 => (0, v.full[0] as u64),
        r => (m as u64, v.full[r - 1] as u64),
    };
    let _ = mm;
    let bm = v.block[0].max(1) as u64;
    let bn = v.block[1].max(1) as u64;
    let eb = v.dtype.bits() as u64 * v.col_stride.max(1) as u64;
    let m = m as u64;
    let n = n as u64;
    let rr = m % bm;
    let lane = if bm == 64 { (rr / 16) * 32 + rr % 16 } else { rr };
    let bit = (m / bm) * nn.div_ceil(bn) * bn * eb + (n / bn) * bn * eb + (n % bn) * eb;
    (lane as u32, (bit / 32) as u32, (bit % 32) as u32)
}
