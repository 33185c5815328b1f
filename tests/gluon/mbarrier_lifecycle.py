"""An mbarrier initialised in every iteration of a loop, written for bwsim's tests: each of
n_blocks column blocks of a [32, 64 * n_blocks] f32 matrix comes in by TMA on a barrier that
the iteration initialises, waits on and invalidates, and goes out doubled by a TMA store.

BUG='no_invalidate' leaves out the `mbarrier.invalidate`: the next iteration initialises the
barrier while it is still initialised (bwsim's `barrier-reinit`, at the `mbarrier.init`).
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma


@gluon.jit
def mbarrier_lifecycle_kernel(x_desc, y_desc, n_blocks, BUG: gl.constexpr = ''):
    BLOCK: gl.constexpr = x_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    buf = gl.allocate_shared_memory(x_desc.dtype, x_desc.block_type.shape, x_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for i in range(n_blocks):
        mbarrier.init(bar, count=1)
        mbarrier.expect(bar, x_desc.block_type.nbytes)
        tma.async_load(x_desc, [0, i * BLOCK], bar, buf)
        mbarrier.wait(bar, 0)
        x = buf.load(layout)
        buf.store(x * 2.0)
        fence_async_shared()
        tma.async_store(y_desc, [0, i * BLOCK], buf)
        tma.store_wait(0)
        if BUG != "no_invalidate":
            mbarrier.invalidate(bar)
