"""wgmma with its left operand in registers, written for bwsim's tests in the shape of Gluon
tutorial 05's small MMA: one program brings A, B and C into shared memory with TMA, moves A
into registers in the dot-operand layout of the accumulator (`k_width = 32 / bits`, the
register fragment wgmma reads) when LHS_IN_REG, computes D = A @ B + C with one
`warpgroup_mma` and stores D with TMA.

The accumulator has C's type: f32, f16 (f16 or fp8 operands: `wgmma...f16.f16.f16`) or i32
(s8/u8 operands). With TRANSPOSE_B, B is stored [N, K] and read K-major through a permuted
view, the only way wgmma reads 8-bit operands.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    tma,
    mbarrier,
    fence_async_shared,
    warpgroup_mma,
    warpgroup_mma_wait,
)


@gluon.jit
def wgmma_regs_kernel(a_desc, b_desc, c_desc, d_desc, LHS_IN_REG: gl.constexpr, TRANSPOSE_B: gl.constexpr,
                      INSTR_N: gl.constexpr, num_warps: gl.constexpr):
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes + c_desc.block_type.nbytes)
    tma.async_load(a_desc, [0, 0], bar, a_smem)
    tma.async_load(b_desc, [0, 0], bar, b_smem)
    tma.async_load(c_desc, [0, 0], bar, c_smem)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)

    # One wgmma instruction covers 16 rows per warp, INSTR_N columns and 32 bytes of K.
    bits: gl.constexpr = a_desc.dtype.primitive_bitwidth
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                         instr_shape=[16, INSTR_N, 256 // bits])
    if LHS_IN_REG:
        a = a_smem.load(gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=32 // bits))
    else:
        a = a_smem
    if TRANSPOSE_B:
        b = b_smem.permute((1, 0))
    else:
        b = b_smem
    c = c_smem.load(acc_layout)
    d = warpgroup_mma(a, b, c, is_async=True)
    d = warpgroup_mma_wait(num_outstanding=0, deps=(d, ))

    d_smem = gl.allocate_shared_memory(d_desc.dtype, d_desc.block_type.shape, d_desc.layout)
    d_smem.store(d)
    fence_async_shared()
    tma.async_store(d_desc, [0, 0], d_smem)
    tma.store_wait(pendings=0)
