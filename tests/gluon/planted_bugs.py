"""The checker catalogue's bugs (tests/fail/), planted in Gluon source: the warp-specialized add
and the pipelined matmul of elementwise_add.py and persistence.py, with `BUG` selecting one
mistake (`""` is the correct kernel):

- "no_fence":      a `fence_async_shared()` removed (generic access, then async proxy).
- "wrong_parity":  an mbarrier waited on the wrong phase.
- "short_expect":  `mbarrier.expect` of fewer bytes than the TMA loads deliver.
- "early_release": a buffer handed back before the reads of it are done.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.language.core import _aggregate as aggregate
from triton.experimental.gluon.language.nvidia.hopper import tma, mbarrier, fence_async_shared
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    tensor_memory_descriptor,
    allocate_tensor_memory,
    tcgen05_mma,
    tcgen05_commit,
)

from elementwise_add import hand_to_store, store_partition, ws_add_buffers


@gluon.jit
def load_partition(a_desc, b_desc, a_bufs, b_bufs, load_empty_bars, load_ready_bars, ynumel, XBLOCK: gl.constexpr,
                   YBLOCK: gl.constexpr, NUM_LOAD_BUFFERS: gl.constexpr, BUG: gl.constexpr):
    xoff = gl.program_id(0) * XBLOCK
    for i in range(gl.cdiv(ynumel, YBLOCK)):
        index = i % NUM_LOAD_BUFFERS
        phase = i // NUM_LOAD_BUFFERS & 1
        if BUG == "wrong_parity":
            # BUG: a fresh barrier has not completed phase 0.
            mbarrier.wait(load_empty_bars.index(index), phase)
        else:
            mbarrier.wait(load_empty_bars.index(index), phase ^ 1)
        yoff = i * YBLOCK
        bar = load_ready_bars.index(index)
        if BUG == "short_expect":
            # BUG: expects the bytes of one of the two loads.
            mbarrier.expect(bar, a_desc.block_type.nbytes)
        else:
            mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [xoff, yoff], bar, a_bufs.index(index))
        tma.async_load(b_desc, [xoff, yoff], bar, b_bufs.index(index))


@gluon.jit
def compute_partition(a_bufs, b_bufs, c_bufs, load_empty_bars, load_ready_bars, c_empty_bars, c_ready_bars, ynumel,
                      YBLOCK: gl.constexpr, NUM_LOAD_BUFFERS: gl.constexpr, NUM_STORE_BUFFERS: gl.constexpr,
                      BUG: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    for i in range(gl.cdiv(ynumel, YBLOCK)):
        load_index = i % NUM_LOAD_BUFFERS
        load_phase = i // NUM_LOAD_BUFFERS & 1
        mbarrier.wait(load_ready_bars.index(load_index), load_phase)
        if BUG == "early_release":
            # BUG: the buffers go back to the load partition before they are read.
            mbarrier.arrive(load_empty_bars.index(load_index), count=1)
        a_val = a_bufs.index(load_index).load(layout)
        b_val = b_bufs.index(load_index).load(layout)
        if BUG != "early_release":
            if BUG != "no_fence":
                # The fence orders these generic reads before the next TMA load into the buffers.
                fence_async_shared()
            mbarrier.arrive(load_empty_bars.index(load_index), count=1)

        c_val = a_val + b_val
        hand_to_store(c_val, i, c_bufs, c_empty_bars, c_ready_bars, NUM_STORE_BUFFERS)


@gluon.jit
def ws_add_kernel(a_desc, b_desc, c_desc, xnumel, ynumel, XBLOCK: gl.constexpr, YBLOCK: gl.constexpr,
                  NUM_LOAD_BUFFERS: gl.constexpr, NUM_STORE_BUFFERS: gl.constexpr, BUG: gl.constexpr):
    a_bufs, b_bufs, c_bufs, load_empty_bars, load_ready_bars, c_empty_bars, c_ready_bars = ws_add_buffers(
        a_desc, b_desc, c_desc, XBLOCK, YBLOCK, NUM_LOAD_BUFFERS, NUM_STORE_BUFFERS)

    gl.warp_specialize([
        (compute_partition, (a_bufs, b_bufs, c_bufs, load_empty_bars, load_ready_bars, c_empty_bars, c_ready_bars,
                             ynumel, YBLOCK, NUM_LOAD_BUFFERS, NUM_STORE_BUFFERS, BUG)),
        (load_partition, (a_desc, b_desc, a_bufs, b_bufs, load_empty_bars, load_ready_bars, ynumel, XBLOCK, YBLOCK,
                          NUM_LOAD_BUFFERS, BUG)),
        (store_partition, (c_desc, c_bufs, c_empty_bars, c_ready_bars, ynumel, XBLOCK, YBLOCK, NUM_STORE_BUFFERS)),
    ], [1, 1], [24, 24])


# The tcgen05 MMA wrapper of persistence.py, with the commit barrier's parity as a parameter.
@aggregate
class MMAv5:
    use_acc: gl.tensor
    acc_tmem: tensor_memory_descriptor
    bar: gl.shared_memory_descriptor
    counter: gl.tensor
    reg_layout: gl.constexpr
    BUG: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, use_acc, acc_tmem, bar, counter, reg_layout, BUG):
        self.use_acc = use_acc
        self.acc_tmem = acc_tmem
        self.bar = bar
        self.counter = counter
        self.reg_layout = gl.constexpr(reg_layout)
        self.BUG = gl.constexpr(BUG)

    @gluon.jit
    def initialize(dtype: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, num_warps: gl.constexpr,
                   BUG: gl.constexpr):
        layout: gl.constexpr = TensorMemoryLayout([BLOCK_M, BLOCK_N], col_stride=1)
        acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], layout)
        bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(bar, count=1)
        reg_layout: gl.constexpr = acc_tmem.get_reg_layout(num_warps)
        return MMAv5(gl.to_tensor(False), acc_tmem, bar, gl.to_tensor(0), reg_layout, BUG)

    @gluon.jit
    def issue_async_mma(self, a, b):
        tcgen05_mma(a, b, self.acc_tmem, use_acc=self.use_acc)
        tcgen05_commit(self.bar)
        return MMAv5(gl.to_tensor(True), self.acc_tmem, self.bar, self.counter + 1, self.reg_layout, self.BUG)

    @gluon.jit
    def wait_num_outstanding(self, num_outstanding: gl.constexpr):
        if self.BUG == "wrong_parity":
            # BUG: off by one: waits for the commit of an MMA not yet issued.
            mbarrier.wait(self.bar, (self.counter - num_outstanding) & 1)
        else:
            mbarrier.wait(self.bar, (self.counter - 1 - num_outstanding) & 1)
        return self

    @gluon.jit
    def take_result(self):
        next = MMAv5(gl.to_tensor(False), self.acc_tmem, self.bar, self.counter, self.reg_layout, self.BUG)
        return self.acc_tmem.load(self.reg_layout), next


@gluon.jit
def issue_loads(producer, a_desc, b_desc, off_m, off_n, k, bars, a_bufs, b_bufs, num_buffers: gl.constexpr,
                BUG: gl.constexpr):
    index = producer % num_buffers
    producer += 1
    bar = bars.index(index)
    if BUG == "short_expect":
        # BUG: expects the A tile only; the B tile's bytes complete a later phase.
        mbarrier.expect(bar, a_desc.block_type.nbytes)
    else:
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    tma.async_load(a_desc, [off_m, k], bar, a_bufs.index(index))
    tma.async_load(b_desc, [k, off_n], bar, b_bufs.index(index))
    return producer


@gluon.jit
def issue_mma(consumer, mma, bars, a_bufs, b_bufs, num_buffers: gl.constexpr, BUG: gl.constexpr):
    index = consumer % num_buffers
    phase = consumer // num_buffers & 1
    consumer += 1
    mbarrier.wait(bars.index(index), phase)
    if BUG != "early_release":
        # Wait for the previous MMA before reusing its operand buffers.
        mma = mma.wait_num_outstanding(0)
    mma = mma.issue_async_mma(a_bufs.index(index), b_bufs.index(index))
    return consumer, mma


@gluon.jit
def pipelined_matmul_kernel(a_desc, b_desc, c_desc, num_buffers: gl.constexpr, num_warps: gl.constexpr,
                            BUG: gl.constexpr):
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    K = a_desc.shape[1]

    a_bufs = gl.allocate_shared_memory(dtype, [num_buffers] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [num_buffers] + b_desc.block_type.shape, b_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [num_buffers, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(num_buffers):
        mbarrier.init(bars.index(i), count=1)
    producer = 0
    consumer = 0

    pid_m = gl.program_id(axis=0)
    pid_n = gl.program_id(axis=1)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N

    mma = MMAv5.initialize(dtype, BLOCK_M, BLOCK_N, num_warps, BUG)

    for k in gl.static_range(0, BLOCK_K * (num_buffers - 2), BLOCK_K):
        producer = issue_loads(producer, a_desc, b_desc, off_m, off_n, k, bars, a_bufs, b_bufs, num_buffers, BUG)

    for k in range(BLOCK_K * (num_buffers - 2), K, BLOCK_K):
        producer = issue_loads(producer, a_desc, b_desc, off_m, off_n, k, bars, a_bufs, b_bufs, num_buffers, BUG)
        consumer, mma = issue_mma(consumer, mma, bars, a_bufs, b_bufs, num_buffers, BUG)

    for _ in gl.static_range(num_buffers - 2):
        consumer, mma = issue_mma(consumer, mma, bars, a_bufs, b_bufs, num_buffers, BUG)

    mma = mma.wait_num_outstanding(0)
    c_smem = gl.allocate_shared_memory(dtype, c_desc.block_type.shape, c_desc.layout)
    c, mma = mma.take_result()
    c_smem.store(c.to(dtype))
    if BUG != "no_fence":
        # The fence orders the generic store before the TMA store reads c_smem.
        fence_async_shared()
    tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(pendings=0)
