"""gemm_async (the TIRx tcgen05 dispatch) in Gluon, written for bwsim's tests against its hand-written
twin kernels/tiles/gemm_async.tile at f16 on one CTA: one warpgroup multiplies a 128x64 A tile by a
64x128 B tile stored [N, K] (K-major) into tensor-memory columns 256:384 of a 512-column
allocation. A and B are TMA-loaded into stages 1 and 2 of 3-stage shared rings; K / MMA_K MMAs
accumulate after the first, a commit signals the mbarrier, and the result is read back and stored.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    allocate_tensor_memory,
    tcgen05_commit,
    tcgen05_mma,
    mbarrier,
    tma,
)


@gluon.jit
def gemm_async_kernel(a_desc, b_desc, out_ptr, num_warps: gl.constexpr):
    dtype: gl.constexpr = a_desc.dtype
    M: gl.constexpr = a_desc.block_type.shape[0]
    K: gl.constexpr = a_desc.block_type.shape[1]
    N: gl.constexpr = b_desc.block_type.shape[0]
    # The instruction's K: 32 bytes of each operand row.
    MMA_K: gl.constexpr = 256 // dtype.primitive_bitwidth

    a_smem = gl.allocate_shared_memory(dtype, [3, M, K], a_desc.layout)
    b_smem = gl.allocate_shared_memory(dtype, [3, N, K], b_desc.layout)
    tma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(tma_bar, count=1)
    mbarrier.init(mma_bar, count=1)

    # All 512 columns; the accumulator is columns 256:384.
    tmem_layout: gl.constexpr = TensorMemoryLayout([M, N], col_stride=1)
    tm = allocate_tensor_memory(gl.float32, [M, 512], tmem_layout)
    acc = tm.slice(256, N)

    mbarrier.expect(tma_bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    tma.async_load(a_desc, [0, 0], tma_bar, a_smem.index(1))
    tma.async_load(b_desc, [0, 0], tma_bar, b_smem.index(2))
    mbarrier.wait(tma_bar, 0)

    # B is stored [N, K]; the MMA reads it as [K, N] through a transposed view.
    b_t = b_smem.index(2).permute((1, 0))
    for kk in gl.static_range(K // MMA_K):
        a = a_smem.index(1).slice(kk * MMA_K, MMA_K, dim=1)
        b = b_t.slice(kk * MMA_K, MMA_K, dim=0)
        tcgen05_mma(a, b, acc, use_acc=kk != 0)
    tcgen05_commit(mma_bar)
    mbarrier.wait(mma_bar, 0)

    reg_layout: gl.constexpr = acc.get_reg_layout(num_warps)
    d = acc.load(reg_layout)
    row: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [num_warps, 1], [1, 0])
    offs_m = gl.arange(0, M, gl.SliceLayout(1, row))
    offs_n = gl.arange(0, N, gl.SliceLayout(0, row))
    gl.store(out_ptr + offs_m[:, None] * N + offs_n[None, :], gl.convert_layout(d, row))
