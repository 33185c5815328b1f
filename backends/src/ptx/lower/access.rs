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

/// Where element `(m, n)` of a TMEM view lives relative to the view's region address: (lane,
/// column, bit shift), by [`bwsim_isa::placement::TmemLayout::cell`], the simulator's
/// placement. Scale-factor views are placed as plain 8-bit matrices here: the lowerings that
/// move scale factors place them with [`bwsim_isa::typeck::scale_cell`] themselves.
pub(super) fn tmem_cell(v: &TmemView, m: u32, n: u32) -> (u32, u32, u32) {
    let layout = bwsim_isa::placement::TmemLayout {
        dtype: v.dtype,
        block: v.block,
        col_stride: v.col_stride,
        scales: false,
    };
    let r = v.full.len();
    let mut idx = vec![0; r];
    match r {
        0 => {}
        1 => idx[0] = n,
        _ => {
            idx[r - 2] = m;
            idx[r - 1] = n;
        }
    }
    let c = layout.cell(0, &v.full, &idx, 0);
    (c.lane, c.col, c.shift)
}
