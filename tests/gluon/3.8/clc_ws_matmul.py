"""A warp-specialized persistent tcgen05 matmul whose tiles are claimed by cluster launch control, in
Triton 3.8's Gluon API, written for bwsim's tests (the structure of the multi-CTA tutorial's
persistent CLC matmul, at one CTA per cluster).

C = A @ B in [BLOCK_M, BLOCK_N] tiles; the grid has one program per tile. Three partitions:
- the load partition (one warp) also schedules: for each tile it asks the hardware to cancel a
  program not yet launched (`clc.try_cancel`) before loading the tile's A and B steps into a ring of
  two stages, then reads the response and hands the next tile id (or -1 when nothing was
  cancelled) to the other two partitions through a one-element int64 shared buffer, with a `ready`
  barrier (one arrival: the id is written) and an `empty` barrier (two arrivals: both readers are
  done with it);
- the MMA partition (one warp) waits for each stage, issues the MMA into the tensor-memory
  accumulator and releases the stage with a commit, then commits the accumulator;
- the default partition (the epilogue) loads the accumulator, releases it, and stores the tile.
The MMA and epilogue partitions learn their next tile from the buffer, so all three walk the same
tiles.

BUG plants a mistake in the tile-id hand-off (empty: the correct kernel):
  'id_unwaited'  the epilogue reads the next tile id without waiting for its slot's `ready`
                 barrier (bwsim: `race` at the `tile_id.load` of `_read_tile_id`, with the
                 scheduler's store)
  'slot_reused'  the scheduler writes the buffer without waiting for its `empty` barrier, while a
                 reader may still read the previous id there (bwsim: `race` at the scheduler's
                 store)
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import clc, fence_async_shared, mbarrier, tcgen05_commit
from triton.experimental.gluon.language.nvidia.blackwell import tcgen05_mma, tma


@gluon.jit
def _read_tile_id(tile_id, tile_ready, tile_empty, i, wait: gl.constexpr):
    # The i-th id written into the buffer; the buffer is then released.
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    if wait:
        mbarrier.wait(tile_ready, i & 1)
    tile = gl.max(tile_id.load(layout), axis=0).to(gl.int32)
    mbarrier.arrive(tile_empty, count=1)
    return tile


@gluon.jit
def clc_ws_load_partition(a_desc, b_desc, a_bufs, b_bufs, load_empty, load_ready, clc_result, clc_bar, tile_id,
                          tile_ready, tile_empty, BUG: gl.constexpr):
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    tiles_n = gl.cdiv(b_desc.shape[1], BLOCK_N)
    K = a_desc.shape[1]
    tile = gl.program_id(0)
    i = 0
    stage = 0
    phase = 1  # a fresh `empty` barrier passes a wait on parity 1
    while tile >= 0:
        # Ask for the next tile now; the answer is read once this tile's loads are issued.
        mbarrier.expect(clc_bar, 16)
        clc.try_cancel(clc_result, clc_bar)
        off_m = tile // tiles_n * BLOCK_M
        off_n = tile % tiles_n * BLOCK_N
        for k in range(0, K, BLOCK_K):
            mbarrier.wait(load_empty.index(stage), phase)
            bar = load_ready.index(stage)
            mbarrier.expect(bar, a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
            tma.async_load(a_desc, [off_m, k], bar, a_bufs.index(stage))
            tma.async_load(b_desc, [k, off_n], bar, b_bufs.index(stage))
            stage ^= 1
            if stage == 0:
                phase ^= 1
        mbarrier.wait(clc_bar, i & 1)
        result = clc.load_result(clc_result)
        tile = gl.where(result.is_canceled(), result.program_id(0), -1)
        # Hand the next tile id to the MMA and epilogue partitions.
        if BUG != "slot_reused":
            mbarrier.wait(tile_empty, (i & 1) ^ 1)
        # BUG: slot_reused (the buffer may still be read by a partition that has not released it)
        tile_id.store(gl.full([1], tile, gl.int64, layout))
        mbarrier.arrive(tile_ready, count=1)
        i += 1


@gluon.jit
def clc_ws_mma_partition(a_bufs, b_bufs, load_empty, load_ready, acc_tmem, acc_empty, acc_ready, tile_id, tile_ready,
                         tile_empty, K, BLOCK_K: gl.constexpr):
    tile = gl.program_id(0)
    i = 0
    stage = 0
    phase = 0
    while tile >= 0:
        mbarrier.wait(acc_empty, (i & 1) ^ 1)  # the epilogue has read the previous tile
        for k in range(0, K, BLOCK_K):
            mbarrier.wait(load_ready.index(stage), phase)
            tcgen05_mma(a_bufs.index(stage), b_bufs.index(stage), acc_tmem, use_acc=k > 0)
            tcgen05_commit(load_empty.index(stage))
            stage ^= 1
            if stage == 0:
                phase ^= 1
        tcgen05_commit(acc_ready)
        tile = _read_tile_id(tile_id, tile_ready, tile_empty, i, True)
        i += 1


@gluon.jit
def clc_ws_epilogue_partition(c_desc, c_smem, acc_tmem, acc_empty, acc_ready, tile_id, tile_ready, tile_empty,
                              BUG: gl.constexpr):
    BLOCK_M: gl.constexpr = c_desc.block_shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_shape[1]
    tiles_n = gl.cdiv(c_desc.shape[1], BLOCK_N)
    tile = gl.program_id(0)
    i = 0
    while tile >= 0:
        off_m = tile // tiles_n * BLOCK_M
        off_n = tile % tiles_n * BLOCK_N
        mbarrier.wait(acc_ready, i & 1)
        acc = acc_tmem.load()
        mbarrier.arrive(acc_empty, count=1)
        tma.store_wait(0)  # the previous tile's store has read c_smem
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m, off_n], c_smem)
        # BUG: id_unwaited (the id is read before the scheduler wrote it)
        tile = _read_tile_id(tile_id, tile_ready, tile_empty, i, BUG != "id_unwaited")
        i += 1
    tma.store_wait(0)


@gluon.jit
def clc_ws_matmul_kernel(a_desc, b_desc, c_desc, BUG: gl.constexpr):
    BLOCK_M: gl.constexpr = c_desc.block_shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [2] + a_desc.block_shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [2] + b_desc.block_shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_shape, c_desc.layout)
    load_empty = mbarrier.allocate_mbarrier(batch=2)
    load_ready = mbarrier.allocate_mbarrier(batch=2)
    tile_ready = mbarrier.allocate_mbarrier()
    tile_empty = mbarrier.allocate_mbarrier()
    acc_empty = mbarrier.allocate_mbarrier()
    acc_ready = mbarrier.allocate_mbarrier()
    clc_bar = mbarrier.allocate_mbarrier()
    for s in gl.static_range(2):
        mbarrier.init(load_empty.index(s), count=1)
        mbarrier.init(load_ready.index(s), count=1)
    mbarrier.init(tile_ready, count=1)
    mbarrier.init(tile_empty, count=2)
    mbarrier.init(acc_empty, count=1)
    mbarrier.init(acc_ready, count=1)
    mbarrier.init(clc_bar, count=1)
    # The 16-byte response of a cancellation request, and the next tile id.
    clc_result = gl.allocate_shared_memory(gl.int64, [2], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    tile_id = gl.allocate_shared_memory(gl.int64, [1], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], TensorMemoryLayout([BLOCK_M, BLOCK_N], 1))

    gl.warp_specialize([
        (clc_ws_epilogue_partition, (c_desc, c_smem, acc_tmem, acc_empty, acc_ready, tile_id, tile_ready, tile_empty,
                                     BUG)),
        (clc_ws_load_partition, (a_desc, b_desc, a_bufs, b_bufs, load_empty, load_ready, clc_result, clc_bar, tile_id,
                                 tile_ready, tile_empty, BUG)),
        (clc_ws_mma_partition, (a_bufs, b_bufs, load_empty, load_ready, acc_tmem, acc_empty, acc_ready, tile_id,
                                tile_ready, tile_empty, a_desc.shape[1], BLOCK_K)),
    ], [1, 1], [24, 24])
