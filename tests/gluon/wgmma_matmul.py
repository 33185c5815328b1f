"""A Hopper matmul in Gluon, written for bwsim's tests in the shape of Gluon tutorial 05-wgmma:
each program computes one BLOCK_M x BLOCK_N tile of C = A @ B (f16 in, f32 accumulator, f16
out). Per K step, one mbarrier counts the bytes of the A and B tiles TMA brings into shared
memory; a synchronous `warpgroup_mma` consumes them before the next step reuses the buffers.
The tile goes back through shared memory and a TMA store.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    tma,
    mbarrier,
    fence_async_shared,
    warpgroup_mma,
)


@gluon.jit
def wgmma_zeros(BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    # A warpgroup-wide f32 accumulator: 16 x BLOCK_N instructions stacked over the warps.
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[gl.num_warps(), 1],
                                                         instr_shape=[16, BLOCK_N, 16])
    return gl.zeros((BLOCK_M, BLOCK_N), gl.float32, acc_layout)


@gluon.jit
def wgmma_matmul_kernel(a_desc, b_desc, c_desc, K):
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N

    a_smem = gl.allocate_shared_memory(dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(dtype, b_desc.block_type.shape, b_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    fence_async_shared()

    acc = wgmma_zeros(BLOCK_M, BLOCK_N)
    phase = 0
    for k in range(0, K, BLOCK_K):
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [off_m, k], bar, a_smem)
        tma.async_load(b_desc, [k, off_n], bar, b_smem)
        mbarrier.wait(bar, phase)
        phase ^= 1
        acc = warpgroup_mma(a_smem, b_smem, acc)
    mbarrier.invalidate(bar)

    c_smem = gl.allocate_shared_memory(dtype, c_desc.block_type.shape, c_desc.layout)
    c_smem.store(acc.to(dtype))
    fence_async_shared()
    tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)
