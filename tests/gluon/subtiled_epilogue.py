"""A subtiled TMA epilogue in the shape of Gluon tutorial 08's: the output descriptor's block is
the whole [BLOCK_M, BLOCK_N] tile, and the tile is stored SPLIT_N columns at a time through one
[BLOCK_M, SPLIT_N] shared buffer allocated with the descriptor's layout. Each program loads its
[BLOCK_M, BLOCK_N] tile of x in one copy (the box is the block clipped to the 128-byte swizzle
span, so the copy is BLOCK_N / 64 messages) and stores it back to y one subtile at a time:
y = x. Triton 3.6 encodes both tensor maps with the box [128, 64] and issues one message per
[128, 64] store (docs/hardware/tma-messages.md).
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma


@gluon.jit
def subtiled_epilogue_kernel(x_desc, y_desc, SUBTILE_FACTOR: gl.constexpr):
    BLOCK_M: gl.constexpr = y_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = y_desc.block_type.shape[1]
    SPLIT_N: gl.constexpr = BLOCK_N // SUBTILE_FACTOR
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N

    x_smem = gl.allocate_shared_memory(x_desc.dtype, x_desc.block_type.shape, x_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, x_desc.block_type.nbytes)
    tma.async_load(x_desc, [off_m, off_n], bar, x_smem)
    mbarrier.wait(bar, 0)

    # The epilogue's buffer holds one subtile; the descriptor's block is the whole tile.
    acc_smem = gl.allocate_shared_memory(y_desc.dtype, [BLOCK_M, SPLIT_N], y_desc.layout)
    for i in gl.static_range(SUBTILE_FACTOR):
        sub = x_smem.slice(i * SPLIT_N, SPLIT_N, dim=1).load(layout)
        tma.store_wait(pendings=0)
        acc_smem.store(sub)
        fence_async_shared()
        tma.async_store(y_desc, [off_m, off_n + i * SPLIT_N], acc_smem)
    tma.store_wait(pendings=0)
    mbarrier.invalidate(bar)
