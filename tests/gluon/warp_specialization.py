"""Warp-specialized persistent tcgen05 matmul (Gluon tutorial 08), written for bwsim's tests
against its hand-written twin kernels/tiles/matmul_warp_specialized.tile.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.language.core import _aggregate as aggregate
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory, tcgen05_mma
from triton.experimental.gluon.language.nvidia.blackwell import tcgen05_commit, tma, mbarrier, fence_async_shared

from persistence import PersistentTileScheduler, GroupedPersistentTileScheduler  # noqa: F401


# A ring index with its mbarrier phase: advancing past the last buffer flips the phase.
@aggregate
class Counter:
    index: gl.tensor
    phase: gl.tensor
    num_barriers: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, index, phase, num_barriers):
        self.index = index
        self.phase = phase
        self.num_barriers = gl.constexpr(num_barriers)

    @gluon.jit
    def create(phase, num_barriers: gl.constexpr):
        return Counter(gl.to_tensor(0), gl.to_tensor(phase), num_barriers)

    @gluon.jit
    def next(self):
        incr = self.index + 1
        rollover = incr == self.num_barriers
        index = gl.where(rollover, 0, incr)
        phase = gl.where(rollover, self.phase ^ 1, self.phase)
        return Counter(index, phase, self.num_barriers)


@gluon.jit
def _split_n(x, SPLIT_FACTOR: gl.constexpr):
    # Split the last dimension in SPLIT_FACTOR pieces by repeated halving (SPLIT_FACTOR is 4 here).
    BLOCK_M: gl.constexpr = x.shape[0]
    BLOCK_N: gl.constexpr = x.shape[1]
    h0, h1 = x.reshape([BLOCK_M, 2, BLOCK_N // 2]).permute(0, 2, 1).split()
    q0, q1 = h0.reshape([BLOCK_M, 2, BLOCK_N // 4]).permute(0, 2, 1).split()
    q2, q3 = h1.reshape([BLOCK_M, 2, BLOCK_N // 4]).permute(0, 2, 1).split()
    return q0, q1, q2, q3


@gluon.jit
def matmul_load_partition(a_desc, b_desc, a_bufs, b_bufs, load_empty_bars, load_ready_bars, SchedulerImpl: gl.constexpr):
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[1]
    K = a_desc.shape[1]

    state = Counter.create(1, load_empty_bars.shape[0])
    scheduler = SchedulerImpl.initialize(a_desc.shape[0], b_desc.shape[1], BLOCK_M, BLOCK_N)
    for idx in range(scheduler.get_num_tiles()):
        pid_m, pid_n = scheduler.get_tile(idx)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        for k in range(0, K, BLOCK_K):
            # Acquire buffers, issue loads, and complete them asynchronously.
            bar = load_ready_bars.index(state.index)
            mbarrier.wait(load_empty_bars.index(state.index), state.phase)
            mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_load(a_desc, [off_m, k], bar, a_bufs.index(state.index))
            tma.async_load(b_desc, [k, off_n], bar, b_bufs.index(state.index))
            state = state.next()


@gluon.jit
def matmul_mma_partition(a_desc, b_desc, a_bufs, b_bufs, load_empty_bars, load_ready_bars, acc_bufs, acc_empty_bars,
                         acc_ready_bars, SchedulerImpl: gl.constexpr):
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[1]
    K = a_desc.shape[1]

    load_state = Counter.create(0, load_empty_bars.shape[0])
    acc_state = Counter.create(1, acc_empty_bars.shape[0])
    scheduler = SchedulerImpl.initialize(a_desc.shape[0], b_desc.shape[1], BLOCK_M, BLOCK_N)
    for _ in range(scheduler.get_num_tiles()):
        # Acquire the accumulator for the entire inner loop.
        mbarrier.wait(acc_empty_bars.index(acc_state.index), acc_state.phase)
        acc_buf = acc_bufs.index(acc_state.index)
        use_acc = False
        for k in range(0, K, BLOCK_K):
            # Wait for the operands, issue the MMA and release the buffers when it completes.
            mbarrier.wait(load_ready_bars.index(load_state.index), load_state.phase)
            tcgen05_mma(a_bufs.index(load_state.index), b_bufs.index(load_state.index), acc_buf, use_acc=use_acc)
            tcgen05_commit(load_empty_bars.index(load_state.index))
            load_state = load_state.next()
            use_acc = True
        # Complete the accumulator asynchronously.
        tcgen05_commit(acc_ready_bars.index(acc_state.index))
        acc_state = acc_state.next()


@gluon.jit
def matmul_epilogue_partition(c_desc, acc_bufs, acc_empty_bars, acc_ready_bars, acc_smem, M, N,
                              SchedulerImpl: gl.constexpr, SUBTILE_FACTOR: gl.constexpr):
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    SPLIT_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = SPLIT_N * SUBTILE_FACTOR
    dtype: gl.constexpr = c_desc.dtype
    gl.static_assert(SUBTILE_FACTOR == 4, "the epilogue is written for SUBTILE_FACTOR = 4")
    acc_layout: gl.constexpr = acc_bufs.index(0).get_reg_layout()

    acc_state = Counter.create(0, acc_empty_bars.shape[0])
    scheduler = SchedulerImpl.initialize(M, N, BLOCK_M, BLOCK_N)
    for idx in range(scheduler.get_num_tiles()):
        pid_m, pid_n = scheduler.get_tile(idx)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        # Wait for the accumulator; it is stored in SUBTILE_FACTOR pieces through one buffer.
        mbarrier.wait(acc_ready_bars.index(acc_state.index), acc_state.phase)
        acc = acc_bufs.index(acc_state.index).load(acc_layout)
        q0, q1, q2, q3 = _split_n(acc, SUBTILE_FACTOR)
        tma.store_wait(pendings=0)
        acc_smem.store(q0.to(dtype))
        # Release the accumulator after the first shared-memory store.
        mbarrier.arrive(acc_empty_bars.index(acc_state.index), count=1)
        fence_async_shared()
        tma.async_store(c_desc, [off_m, off_n], acc_smem)
        tma.store_wait(pendings=0)
        acc_smem.store(q1.to(dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m, off_n + SPLIT_N], acc_smem)
        tma.store_wait(pendings=0)
        acc_smem.store(q2.to(dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m, off_n + 2 * SPLIT_N], acc_smem)
        tma.store_wait(pendings=0)
        acc_smem.store(q3.to(dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m, off_n + 3 * SPLIT_N], acc_smem)
        acc_state = acc_state.next()
    # Overlap the last store with the wait, then wait for it here.
    tma.store_wait(pendings=0)


@gluon.jit
def allocate_operand_ring(a_desc, b_desc, num_buffers: gl.constexpr):
    # num_buffers A and B tiles, with their empty and ready mbarriers.
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [num_buffers] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [num_buffers] + b_desc.block_type.shape, b_desc.layout)
    load_empty_bars = gl.allocate_shared_memory(gl.int64, [num_buffers, 1], mbarrier.MBarrierLayout())
    load_ready_bars = gl.allocate_shared_memory(gl.int64, [num_buffers, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(num_buffers):
        mbarrier.init(load_empty_bars.index(i), count=1)
        mbarrier.init(load_ready_bars.index(i), count=1)
    return a_bufs, b_bufs, load_empty_bars, load_ready_bars


@gluon.jit
def allocate_accumulators(BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    # Two f32 accumulators in tensor memory, with their empty and ready mbarriers.
    tmem_layout: gl.constexpr = TensorMemoryLayout([BLOCK_M, BLOCK_N], col_stride=1)
    acc_bufs = allocate_tensor_memory(gl.float32, [2, BLOCK_M, BLOCK_N], tmem_layout)
    acc_empty_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    acc_ready_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(acc_empty_bars.index(i), count=1)
        mbarrier.init(acc_ready_bars.index(i), count=1)
    return acc_bufs, acc_empty_bars, acc_ready_bars


@gluon.jit
def matmul_warp_specialized_kernel(a_desc, b_desc, c_desc, SchedulerImpl: gl.constexpr, num_buffers: gl.constexpr,
                                   SUBTILE_FACTOR: gl.constexpr):
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[1]
    a_bufs, b_bufs, load_empty_bars, load_ready_bars = allocate_operand_ring(a_desc, b_desc, num_buffers)
    acc_bufs, acc_empty_bars, acc_ready_bars = allocate_accumulators(BLOCK_M, BLOCK_N)
    acc_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)

    gl.warp_specialize([
        (matmul_epilogue_partition, (c_desc, acc_bufs, acc_empty_bars, acc_ready_bars, acc_smem, c_desc.shape[0],
                                     b_desc.shape[1], SchedulerImpl, SUBTILE_FACTOR)),
        (matmul_load_partition, (a_desc, b_desc, a_bufs, b_bufs, load_empty_bars, load_ready_bars, SchedulerImpl)),
        (matmul_mma_partition, (a_desc, b_desc, a_bufs, b_bufs, load_empty_bars, load_ready_bars, acc_bufs,
                                acc_empty_bars, acc_ready_bars, SchedulerImpl)),
    ], [1, 1], [24, 24])
