"""A persistent TMA kernel that claims its tiles with cluster launch control, in Triton 3.8's Gluon
API, written for bwsim's tests (the scheduling of tutorial 12-cluster-launch-control on a simpler
body).

y = alpha * x + 1 over [BLOCK_M, BLOCK_N] tiles of a 2-D f32 tensor; the grid has one program per
tile. A running program processes its own tile, then asks the hardware to cancel a program not yet
launched and takes over that program's tile (`clc.try_cancel`, completed on an mbarrier with 16
bytes: the response; `clc.load_result`; `is_canceled()`; `program_id(0)`), until no launch is left
to cancel. The request for the next tile is issued before the current tile is processed, so the
response arrives while the tile loads, computes and stores. New in 3.8 and used here: the `clc`
module and `tma.async_load`/`async_store`.

BUG plants a mistake in the hand-off of the response (empty: the correct kernel):
  'no_expect'  the response barrier gets no `expect`: nothing arrives on it, the response only
               completes bytes (bwsim: `deadlock` at `mbarrier.wait(clc_bar, phase)`)
  'no_wait'    the response is read without waiting for its barrier (bwsim: `read-before-complete`
               at `clc.load_result`, naming the `clc.try_cancel` in flight)
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import clc, fence_async_shared, mbarrier, tma


@gluon.jit
def clc_scale_kernel(x_desc, y_desc, alpha, BUG: gl.constexpr):
    BLOCK_M: gl.constexpr = x_desc.block_shape[0]
    BLOCK_N: gl.constexpr = x_desc.block_shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [2, 16], [gl.num_warps(), 1], [1, 0])
    tiles_n = gl.cdiv(x_desc.shape[1], BLOCK_N)
    x_smem = gl.allocate_shared_memory(x_desc.dtype, x_desc.block_shape, x_desc.layout)
    y_smem = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_shape, y_desc.layout)
    load_bar = mbarrier.allocate_mbarrier()
    clc_bar = mbarrier.allocate_mbarrier()
    mbarrier.init(load_bar, count=1)
    mbarrier.init(clc_bar, count=1)
    # The 16-byte response of a cancellation request, as two int64.
    clc_result = gl.allocate_shared_memory(gl.int64, [2], gl.SwizzledSharedLayout(1, 1, 1, [0]))

    tile = gl.program_id(0)
    has_work = gl.to_tensor(True)
    phase = 0
    while has_work:
        # Ask for the next tile now; its answer is read after this tile is done.
        if BUG != "no_expect":
            mbarrier.expect(clc_bar, 16)
        # BUG: no_expect (without the expect above, the response barrier never completes a phase)
        clc.try_cancel(clc_result, clc_bar)

        off_m = tile // tiles_n * BLOCK_M
        off_n = tile % tiles_n * BLOCK_N
        mbarrier.expect(load_bar, x_desc.nbytes_per_cta)
        tma.async_load(x_desc, [off_m, off_n], load_bar, x_smem)
        mbarrier.wait(load_bar, phase)
        x = x_smem.load(layout)
        # Order this read of x_smem before the next tile's TMA load overwrites it.
        fence_async_shared()
        y = x * alpha + 1.0
        tma.store_wait(0)  # the previous tile's store has read y_smem
        y_smem.store(y)
        fence_async_shared()
        tma.async_store(y_desc, [off_m, off_n], y_smem)

        if BUG != "no_wait":
            mbarrier.wait(clc_bar, phase)
        # BUG: no_wait (without the wait above, the response may not have landed)
        result = clc.load_result(clc_result)
        has_work = result.is_canceled()
        tile = result.program_id(0)
        phase ^= 1
    tma.store_wait(0)
