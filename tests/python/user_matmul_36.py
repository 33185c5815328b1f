"""A tcgen05 matmul written for these tests (not one of the bundled kernels), in Triton 3.6's Gluon
API (3.7 reads it too; user_matmul.py is the same kernel in 3.9's): C = A @ B with one
TMA load per operand and K step, the accumulator in tensor memory, a TMA store of C.

`WAIT_MMA=False` drops the wait for the MMA before the next loads overwrite its operands: the
mistake the hazard checker must point at.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    allocate_tensor_memory,
    get_tmem_reg_layout,
    tcgen05_commit,
    tcgen05_mma,
)
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma


@gluon.jit
def matmul_kernel(a_desc, b_desc, c_desc, K, WAIT_MMA: gl.constexpr = True):
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N

    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
    tma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(tma_bar, count=1)
    mbarrier.init(mma_bar, count=1)

    tmem_layout: gl.constexpr = TensorMemoryLayout([BLOCK_M, BLOCK_N], col_stride=1)
    acc = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], tmem_layout)

    phase = 0
    for k in range(0, K, BLOCK_K):
        mbarrier.expect(tma_bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [off_m, k], tma_bar, a_smem)
        tma.async_copy_global_to_shared(b_desc, [k, off_n], tma_bar, b_smem)
        mbarrier.wait(tma_bar, phase)
        tcgen05_mma(a_smem, b_smem, acc, use_acc=k > 0)
        tcgen05_commit(mma_bar)
        if WAIT_MMA:
            mbarrier.wait(mma_bar, phase)
        phase ^= 1
    mbarrier.invalidate(tma_bar)
    mbarrier.invalidate(mma_bar)

    reg_layout: gl.constexpr = get_tmem_reg_layout(gl.float32, (BLOCK_M, BLOCK_N), tmem_layout, gl.num_warps())
    c = acc.load(reg_layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    c_smem.store(c.to(c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)
