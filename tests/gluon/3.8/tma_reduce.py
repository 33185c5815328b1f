"""A sum of stacked matrices by TMA reductions, in Triton 3.8's Gluon API, written for bwsim's tests.

x holds S matrices of [R, C] f32 stacked by rows ([S * R, C]); out ([R, C], zeros at launch)
receives their sum. Program (i, s) walks BLOCK_M rows of matrix s one [BLOCK_M, BLOCK_N] tile at a
time: a TMA load into shared memory, then `tma.async_atomic_add` of that buffer into out (a
`cp.reduce.async.bulk.tensor` add; the S programs of a tile add in any order). New in 3.8 and used
here: `tma.async_load`, `tma.async_atomic_add` and `tma.store_wait(pendings, read_only=...)`: with
`read_only=True` (the default) the wait ends once the pending stores and reductions have read their
shared sources, enough to reuse the buffer; `read_only=False` waits until their writes are done.

BUG='no_store_wait' reuses the buffer without waiting: the next tile's TMA load may overwrite it
while the reduction still reads it (bwsim: `write-while-in-flight` at `tma.async_load`, the
`tma.async_atomic_add` as the access in flight).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier, tma


@gluon.jit
def tma_reduce_kernel(x_desc, out_desc, BUG: gl.constexpr):
    BLOCK_M: gl.constexpr = x_desc.block_shape[0]
    BLOCK_N: gl.constexpr = x_desc.block_shape[1]
    R = out_desc.shape[0]
    C = out_desc.shape[1]
    x_smem = gl.allocate_shared_memory(x_desc.dtype, x_desc.block_shape, x_desc.layout)
    bar = mbarrier.allocate_mbarrier()
    mbarrier.init(bar, count=1)
    off_m = gl.program_id(0) * BLOCK_M
    row0 = gl.program_id(1) * R + off_m
    for j in range(gl.cdiv(C, BLOCK_N)):
        mbarrier.expect(bar, x_desc.nbytes_per_cta)
        tma.async_load(x_desc, [row0, j * BLOCK_N], bar, x_smem)
        mbarrier.wait(bar, j & 1)
        tma.async_atomic_add(out_desc, [off_m, j * BLOCK_N], x_smem)
        if BUG != "no_store_wait":
            # The reduction has read x_smem before the next load overwrites it.
            tma.store_wait(0)
        # BUG: no_store_wait (without the wait above, the next load races the reduction's read)
    # Every sum of this program is in global memory.
    tma.store_wait(0, read_only=False)
    mbarrier.invalidate(bar)
