"""Kernels that leave their proxy fences to Triton's compiler, written for bwsim's tests.

Both scale a [32, 64 * n_blocks] f32 matrix by 2 through shared memory: a TMA load into `in_buf`,
a generic read of it into registers, a generic store of the result into `out_buf`, a TMA store
of `out_buf`. Neither calls `fence_async_shared()`. Triton's proxy-fence pass, run when the TTGIR
is lowered, puts the fences in (docs/gluon.md, "Proxy fences the compiler adds"):

- `scale_kernel`, one partition: the next block's TMA load overwrites `in_buf` after the generic
  read (every release fences it), and the TMA store reads `out_buf` after the generic store
  (Triton 3.7 and later fence it; 3.6 does not, and the kernel has a hazard there).
- `ws_scale_kernel`: with BUG='' the kernel computes one block before `warp_specialize` and a
  worker partition TMA-stores it. The pass carries what precedes `warp_specialize` into every
  partition, so 3.7 and later fence the worker's TMA store.

- `ws_join_kernel`: a worker partition computes the block, and after `warp_specialize` the
  kernel TMA-stores it. Only Triton 3.9 carries what the workers did past `warp_specialize` and
  fences the store; 3.6 to 3.8 leave it unfenced, and the kernel has a hazard there.

BUG='handoff' computes the block inside `warp_specialize` instead, in the default partition,
and hands `out_buf` to the worker over an mbarrier. The pass looks at one partition at a time:
no release fences the worker's TMA store, and the generic store is not ordered before it.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma


@gluon.jit
def scale_block(x_desc, in_buf, out_buf, bar, col, phase):
    # Block `col` of x into in_buf (TMA), then 2 * x into out_buf with generic loads and stores.
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    mbarrier.expect(bar, x_desc.block_type.nbytes)
    tma.async_load(x_desc, [0, col], bar, in_buf)
    mbarrier.wait(bar, phase)
    x = in_buf.load(layout)
    out_buf.store(x * 2.0)


@gluon.jit
def scale_kernel(x_desc, y_desc, n_blocks):
    BLOCK: gl.constexpr = x_desc.block_type.shape[1]
    in_buf = gl.allocate_shared_memory(x_desc.dtype, x_desc.block_type.shape, x_desc.layout)
    out_buf = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_type.shape, y_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    for i in range(n_blocks):
        scale_block(x_desc, in_buf, out_buf, bar, i * BLOCK, i & 1)
        # No fence: the compiler adds one before this TMA store (3.7 and later) and one before
        # the next block's TMA load into in_buf (every release).
        tma.async_store(y_desc, [0, i * BLOCK], out_buf)
        tma.store_wait(0)
    mbarrier.invalidate(bar)


@gluon.jit
def store_worker(y_desc, out_buf, ready, WAIT: gl.constexpr):
    if WAIT:
        mbarrier.wait(ready, 0)
    tma.async_store(y_desc, [0, 0], out_buf)
    tma.store_wait(0)


@gluon.jit
def handoff_default(x_desc, in_buf, out_buf, bar, ready):
    scale_block(x_desc, in_buf, out_buf, bar, 0, 0)
    # BUG: no fence between the generic store and the worker's TMA store; the compiler does not
    # add one, since the TMA store is in another partition.
    mbarrier.arrive(ready, count=1)


@gluon.jit
def idle_default():
    pass


@gluon.jit
def ws_scale_kernel(x_desc, y_desc, BUG: gl.constexpr = ''):
    in_buf = gl.allocate_shared_memory(x_desc.dtype, x_desc.block_type.shape, x_desc.layout)
    out_buf = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_type.shape, y_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.init(ready, count=1)
    if BUG == "handoff":
        gl.warp_specialize([
            (handoff_default, (x_desc, in_buf, out_buf, bar, ready)),
            (store_worker, (y_desc, out_buf, ready, True)),
        ], [1], [24])
    else:
        # The block is in out_buf before the partitions start; the compiler fences the worker's
        # TMA store of it (3.7 and later).
        scale_block(x_desc, in_buf, out_buf, bar, 0, 0)
        gl.warp_specialize([
            (idle_default, ()),
            (store_worker, (y_desc, out_buf, ready, False)),
        ], [1], [24])
    mbarrier.invalidate(bar)
    mbarrier.invalidate(ready)


@gluon.jit
def compute_worker(x_desc, in_buf, out_buf, bar):
    scale_block(x_desc, in_buf, out_buf, bar, 0, 0)


@gluon.jit
def ws_join_kernel(x_desc, y_desc):
    in_buf = gl.allocate_shared_memory(x_desc.dtype, x_desc.block_type.shape, x_desc.layout)
    out_buf = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_type.shape, y_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    gl.warp_specialize([
        (idle_default, ()),
        (compute_worker, (x_desc, in_buf, out_buf, bar)),
    ], [4], [24])
    # No fence: Triton 3.9 adds one here (what the worker wrote reaches past the join).
    tma.async_store(y_desc, [0, 0], out_buf)
    tma.store_wait(0)
    mbarrier.invalidate(bar)
