"""Two cp.async copies into one shared buffer, in the shape of the concurrency sanitizer's
cp.async test: an [XBLOCK, YBLOCK] f32 tile is copied from `a` and then from `b` into the same
buffer, and the buffer is written to `out`.

BUG='overlap' commits both copies as one group and waits once: the second copy is issued while
the first may still be landing, so the buffer holds a mix of `a` and `b` (bwsim:
`write-while-in-flight` at the second copy). The correct variant retires the first copy's group
before issuing the second: `out` is `b`.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp


@gluon.jit
def cp_async_overlap_kernel(a_ptr, b_ptr, out_ptr, XBLOCK: gl.constexpr, YBLOCK: gl.constexpr, BUG: gl.constexpr = ''):
    layout: gl.constexpr = gl.BlockedLayout([1, YBLOCK // 32], [1, 32], [gl.num_warps(), 1], [1, 0])
    smem_layout: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    rows = gl.arange(0, XBLOCK, gl.SliceLayout(1, layout))
    cols = gl.arange(0, YBLOCK, gl.SliceLayout(0, layout))
    offs = rows[:, None] * YBLOCK + cols[None, :]
    buf = gl.allocate_shared_memory(gl.float32, [XBLOCK, YBLOCK], smem_layout)
    cp.async_load(buf, a_ptr + offs)
    if BUG != 'overlap':
        cp.commit_group()
        cp.wait_group(0)
    # BUG: overlap (without the wait above, this copy lands over one still in flight)
    cp.async_load(buf, b_ptr + offs)
    cp.commit_group()
    cp.wait_group(0)
    gl.store(out_ptr + offs, buf.load(layout))
