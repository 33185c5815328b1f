"""Tensor-memory register layouts, written for bwsim's tests: a tile goes into tensor memory and back
through the register layout of one TMEM message shape (32x32b, 16x64b, 16x128b, 16x256b), for
tensor-memory blocks as large as the tensor or smaller than it (a (64, 64) block in a 128-row
tensor, 128-row blocks of a 256-row tensor), as `get_reg_layout` gives them. The output is the
input, element for element.
"""
import triton_compat  # noqa: F401  (Triton 3.6-3.8: the 3.9 names used below)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory


@gluon.jit
def tmem_roundtrip_kernel(in_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr,
                          VARIANT: gl.constexpr):
    blk: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, M, gl.SliceLayout(1, blk))
    cols = gl.arange(0, N, gl.SliceLayout(0, blk))
    offs = rows[:, None] * N + cols[None, :]
    x = gl.load(in_ptr + offs)
    tmem = allocate_tensor_memory(gl.float32, [M, N], TensorMemoryLayout((BM, BN), col_stride=1))
    reg: gl.constexpr = tmem.get_reg_layout(instr_variant=VARIANT)
    tmem.store(gl.convert_layout(x, reg))
    y = tmem.load(reg)
    gl.store(out_ptr + offs, gl.convert_layout(y, blk))
