"""Elementwise add c = a + b two ways (Gluon tutorials 04 and 08), written for bwsim's tests.

`elementwise_add_tma_kernel` is the software-pipelined TMA baseline; `elementwise_add_ws_kernel`
splits the same work into a load, a compute and a store partition. Their hand-written twins are
kernels/tiles/elementwise_add_tma.tile and kernels/tiles/elementwise_add_ws.tile.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import tma, mbarrier, fence_async_shared

from persistence import allocate_mbarriers


@gluon.jit
def elementwise_add_tma_kernel(a_desc, b_desc, c_desc, xnumel, ynumel, XBLOCK: gl.constexpr, YBLOCK: gl.constexpr,
                               NUM_BUFFERS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [NUM_BUFFERS, XBLOCK, YBLOCK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [NUM_BUFFERS, XBLOCK, YBLOCK], b_desc.layout)
    c_smem = gl.allocate_shared_memory(dtype, [XBLOCK, YBLOCK], c_desc.layout)
    bars = allocate_mbarriers(NUM_BUFFERS)

    xoff = gl.program_id(0) * XBLOCK
    n = gl.cdiv(ynumel, YBLOCK)
    # Prologue: the first NUM_BUFFERS - 1 loads.
    for i in gl.static_range(NUM_BUFFERS - 1):
        bar = bars.index(i)
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=i < n)
        tma.async_load(a_desc, [xoff, i * YBLOCK], bar, a_bufs.index(i), pred=i < n)
        tma.async_load(b_desc, [xoff, i * YBLOCK], bar, b_bufs.index(i), pred=i < n)

    for i in range(n):
        # Issue the load NUM_BUFFERS - 1 blocks ahead, into the buffer read in the previous iteration.
        j = i + NUM_BUFFERS - 1
        jb = j % NUM_BUFFERS
        bar = bars.index(jb)
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=j < n)
        tma.async_load(a_desc, [xoff, j * YBLOCK], bar, a_bufs.index(jb), pred=j < n)
        tma.async_load(b_desc, [xoff, j * YBLOCK], bar, b_bufs.index(jb), pred=j < n)

        index = i % NUM_BUFFERS
        mbarrier.wait(bars.index(index), i // NUM_BUFFERS & 1)
        a_val = a_bufs.index(index).load(layout)
        b_val = b_bufs.index(index).load(layout)
        # Order these generic reads before the TMA load that will overwrite the buffers.
        fence_async_shared()
        c_val = a_val + b_val
        tma.store_wait(0)
        c_smem.store(c_val)
        fence_async_shared()
        tma.async_store(c_desc, [xoff, i * YBLOCK], c_smem)
    tma.store_wait(0)


@gluon.jit
def load_partition(a_desc, b_desc, a_bufs, b_bufs, load_empty_bars, load_ready_bars, ynumel, XBLOCK: gl.constexpr,
                   YBLOCK: gl.constexpr, NUM_LOAD_BUFFERS: gl.constexpr):
    xoff = gl.program_id(0) * XBLOCK
    for i in range(gl.cdiv(ynumel, YBLOCK)):
        index = i % NUM_LOAD_BUFFERS
        phase = i // NUM_LOAD_BUFFERS & 1
        # mbarriers start with phase 1 complete: wait on phase ^ 1 to fill the ring first.
        mbarrier.wait(load_empty_bars.index(index), phase ^ 1)
        yoff = i * YBLOCK
        bar = load_ready_bars.index(index)
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [xoff, yoff], bar, a_bufs.index(index))
        tma.async_load(b_desc, [xoff, yoff], bar, b_bufs.index(index))


@gluon.jit
def compute_partition(a_bufs, b_bufs, c_bufs, load_empty_bars, load_ready_bars, c_empty_bars, c_ready_bars, ynumel,
                      YBLOCK: gl.constexpr, NUM_LOAD_BUFFERS: gl.constexpr, NUM_STORE_BUFFERS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    for i in range(gl.cdiv(ynumel, YBLOCK)):
        load_index = i % NUM_LOAD_BUFFERS
        load_phase = i // NUM_LOAD_BUFFERS & 1
        mbarrier.wait(load_ready_bars.index(load_index), load_phase)
        a_val = a_bufs.index(load_index).load(layout)
        b_val = b_bufs.index(load_index).load(layout)
        # Fence before signalling the load partition so the TMA load is ordered with the shared load.
        fence_async_shared()
        mbarrier.arrive(load_empty_bars.index(load_index), count=1)

        c_val = a_val + b_val
        hand_to_store(c_val, i, c_bufs, c_empty_bars, c_ready_bars, NUM_STORE_BUFFERS)


@gluon.jit
def hand_to_store(c_val, i, c_bufs, c_empty_bars, c_ready_bars, NUM_STORE_BUFFERS: gl.constexpr):
    # Block i of the result into the store ring, for the store partition.
    store_idx = i % NUM_STORE_BUFFERS
    store_phase = i // NUM_STORE_BUFFERS & 1
    mbarrier.wait(c_empty_bars.index(store_idx), store_phase ^ 1)
    c_bufs.index(store_idx).store(c_val)
    # Fence to order with the TMA store.
    fence_async_shared()
    mbarrier.arrive(c_ready_bars.index(store_idx), count=1)


@gluon.jit
def store_partition(c_desc, c_bufs, c_empty_bars, c_ready_bars, ynumel, XBLOCK: gl.constexpr, YBLOCK: gl.constexpr,
                    NUM_STORE_BUFFERS: gl.constexpr):
    xoff = gl.program_id(0) * XBLOCK
    # Keep NUM_STORE_BUFFERS - 1 stores in flight.
    for i in range(gl.cdiv(ynumel, YBLOCK)):
        index = i % NUM_STORE_BUFFERS
        phase = i // NUM_STORE_BUFFERS & 1
        mbarrier.wait(c_ready_bars.index(index), phase)
        tma.async_store(c_desc, [xoff, i * YBLOCK], c_bufs.index(index))
        tma.store_wait(NUM_STORE_BUFFERS - 1)
        # Release the buffer stored NUM_STORE_BUFFERS - 1 iterations ago.
        mbarrier.arrive(c_empty_bars.index((i + 1) % NUM_STORE_BUFFERS), count=1, pred=i >= NUM_STORE_BUFFERS - 1)
    tma.store_wait(0)


@gluon.jit
def ws_add_buffers(a_desc, b_desc, c_desc, XBLOCK: gl.constexpr, YBLOCK: gl.constexpr, NUM_LOAD_BUFFERS: gl.constexpr,
                   NUM_STORE_BUFFERS: gl.constexpr):
    # The load ring of A and B blocks, the store ring of C blocks, and their empty and ready mbarriers.
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [NUM_LOAD_BUFFERS, XBLOCK, YBLOCK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [NUM_LOAD_BUFFERS, XBLOCK, YBLOCK], b_desc.layout)
    c_bufs = gl.allocate_shared_memory(dtype, [NUM_STORE_BUFFERS, XBLOCK, YBLOCK], c_desc.layout)
    load_empty_bars = gl.allocate_shared_memory(gl.int64, [NUM_LOAD_BUFFERS, 1], mbarrier.MBarrierLayout())
    load_ready_bars = gl.allocate_shared_memory(gl.int64, [NUM_LOAD_BUFFERS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_LOAD_BUFFERS):
        mbarrier.init(load_empty_bars.index(i), count=1)
        mbarrier.init(load_ready_bars.index(i), count=1)
    c_empty_bars = gl.allocate_shared_memory(gl.int64, [NUM_STORE_BUFFERS, 1], mbarrier.MBarrierLayout())
    c_ready_bars = gl.allocate_shared_memory(gl.int64, [NUM_STORE_BUFFERS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_STORE_BUFFERS):
        mbarrier.init(c_empty_bars.index(i), count=1)
        mbarrier.init(c_ready_bars.index(i), count=1)
    return a_bufs, b_bufs, c_bufs, load_empty_bars, load_ready_bars, c_empty_bars, c_ready_bars


@gluon.jit
def elementwise_add_ws_kernel(a_desc, b_desc, c_desc, xnumel, ynumel, XBLOCK: gl.constexpr, YBLOCK: gl.constexpr,
                              NUM_LOAD_BUFFERS: gl.constexpr, NUM_STORE_BUFFERS: gl.constexpr):
    a_bufs, b_bufs, c_bufs, load_empty_bars, load_ready_bars, c_empty_bars, c_ready_bars = ws_add_buffers(
        a_desc, b_desc, c_desc, XBLOCK, YBLOCK, NUM_LOAD_BUFFERS, NUM_STORE_BUFFERS)

    gl.warp_specialize([
        (compute_partition, (a_bufs, b_bufs, c_bufs, load_empty_bars, load_ready_bars, c_empty_bars, c_ready_bars,
                             ynumel, YBLOCK, NUM_LOAD_BUFFERS, NUM_STORE_BUFFERS)),
        (load_partition, (a_desc, b_desc, a_bufs, b_bufs, load_empty_bars, load_ready_bars, ynumel, XBLOCK, YBLOCK,
                          NUM_LOAD_BUFFERS)),
        (store_partition, (c_desc, c_bufs, c_empty_bars, c_ready_bars, ynumel, XBLOCK, YBLOCK, NUM_STORE_BUFFERS)),
    ], [1, 1], [24, 24])
