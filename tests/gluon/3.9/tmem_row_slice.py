"""Row slices of a tensor-memory accumulator, with Triton 3.9's `tensor_memory_descriptor.slice(...,
dim=0)`, written for bwsim's tests.

C = A @ B for one [BLOCK_M, BLOCK_N] tile per program with BLOCK_M = 2 * 128: one tensor-memory
allocation of [BLOCK_M, BLOCK_N] (in blocks of 128 rows) holds the tile, and each K step issues one
128-row MMA per half, into the accumulator's row slice `acc_tmem.slice(r, 128, dim=0)` from A's
rows `a_smem.slice(r, 128, dim=0)`. The epilogue loads each row slice with the register layout
`load()` infers and stores it through TMA. Before 3.9 a tensor-memory slice was a slice of columns
(`dim` was not a parameter); in the TTGIR: `ttng.tmem_subslice` with a row offset.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import fence_async_shared, mbarrier, tcgen05_commit
from triton.experimental.gluon.language.nvidia.blackwell import tcgen05_mma, tma


@gluon.jit
def tmem_row_slice_kernel(a_desc, b_desc, c_desc, K):
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1]
    MMA_M: gl.constexpr = 128
    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_shape, b_desc.layout)
    load_bar = mbarrier.allocate_mbarrier()
    mma_bar = mbarrier.allocate_mbarrier()
    mbarrier.init(load_bar, count=1)
    mbarrier.init(mma_bar, count=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], TensorMemoryLayout((MMA_M, BLOCK_N), 1))

    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    phase = 0
    for k in range(0, K, BLOCK_K):
        mbarrier.expect(load_bar, a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
        tma.async_load(a_desc, [off_m, k], load_bar, a_smem)
        tma.async_load(b_desc, [k, off_n], load_bar, b_smem)
        mbarrier.wait(load_bar, phase)
        for r in gl.static_range(0, BLOCK_M, MMA_M):
            tcgen05_mma(a_smem.slice(r, MMA_M, dim=0), b_smem, acc_tmem.slice(r, MMA_M, dim=0), use_acc=k > 0)
        tcgen05_commit(mma_bar)
        mbarrier.wait(mma_bar, phase)
        phase ^= 1

    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_shape, c_desc.layout)
    for r in gl.static_range(0, BLOCK_M, MMA_M):
        rows = acc_tmem.slice(r, MMA_M, dim=0)
        tma.store_wait(0)  # the previous slice's store has read c_smem
        c_smem.store(rows.load().to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m + r, off_n], c_smem)
    tma.store_wait(0)
