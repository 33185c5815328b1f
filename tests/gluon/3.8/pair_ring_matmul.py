"""A two-CTA tcgen05 matmul over a ring of stages, in Triton 3.8's Gluon API, written for bwsim's tests.

C = A @ B, one program a cluster of two CTAs computing one [BLOCK_M, BLOCK_N] tile of C, as in
two_cta_matmul.py (A and C split between the CTAs by rows, B by columns, MMAs issued by the pair's
first CTA for both), but K is walked through a ring of STAGES shared-memory stages, allocated as one
buffer of the tile's layout with a leading stage dimension (`[STAGES] + block_shape`), and the
barriers are allocated as batches (`allocate_mbarrier(batch=STAGES)`). Each MMA is followed by a
separate `tcgen05_commit` on the stage's barrier: in a kernel of two-CTA MMAs that commit is the
pair's, so it reaches the barriers of both CTAs, and each CTA waits on its own before it reloads
the stage that MMA read. The barriers are invalidated at the end, the pair's in its first CTA.

The second kernel relays a vector through shared memory between the partitions of a
warp-specialized cluster kernel, each CTA with its own half and its own barrier (nothing reaches
another CTA, so Triton adds no cluster barrier after the barriers' initialisation).

The third kernel signals the pair's barrier from a worker partition of each CTA: the barrier's
initialisation, released to the cluster before the `warp_specialize`, is known to the workers.

BUG='stage_unwaited' reloads a stage without waiting for the commit of the MMA that read it (bwsim:
`write-while-in-flight` at the `tma.async_load` of A, naming the `tcgen05_mma`).
BUG='no_wait' (the relay) reads the buffer without waiting for the producer (bwsim: `race`).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import fence_async_shared, mbarrier, tcgen05_commit
from triton.experimental.gluon.language.nvidia.blackwell import tcgen05_mma, tma


@gluon.jit
def pair_ring_matmul_kernel(a_desc, b_desc, c_desc, K, BUG: gl.constexpr):
    gl.static_assert(gl.num_ctas() == 2, "written for clusters of two CTAs")
    STAGES: gl.constexpr = 2
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1]
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_shape, b_desc.layout)
    # Loads complete on a barrier of the pair (the issuing CTA waits for both CTAs' tiles); the
    # pair's commits arrive on each CTA's own barrier.
    loaded = mbarrier.allocate_mbarrier(batch=STAGES, two_ctas=True)
    consumed = mbarrier.allocate_mbarrier(batch=STAGES)
    for j in gl.static_range(STAGES):
        mbarrier.init(loaded.index(j), count=1)
        mbarrier.init(consumed.index(j), count=1)
    acc_layout: gl.constexpr = TensorMemoryLayout((BLOCK_M // 2, BLOCK_N), col_stride=1,
                                                  cga_layout=c_desc.layout.cga_layout, two_ctas=True)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], acc_layout)

    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    steps = gl.cdiv(K, BLOCK_K)
    for i in range(steps):
        s = i % STAGES
        use = i // STAGES
        if BUG != "stage_unwaited":
            # The MMA of step i - STAGES read this stage: its commit is this stage's previous phase.
            mbarrier.wait(consumed.index(s), (use + 1) & 1, pred=i >= STAGES)
        mbarrier.expect(loaded.index(s), a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
        tma.async_load(a_desc, [off_m, i * BLOCK_K], loaded.index(s), a_ring.index(s))
        tma.async_load(b_desc, [i * BLOCK_K, off_n], loaded.index(s), b_ring.index(s))
        mbarrier.wait(loaded.index(s), use & 1)
        tcgen05_mma(a_ring.index(s), b_ring.index(s), acc_tmem, use_acc=i > 0)
        tcgen05_commit(consumed.index(s))
    # The last commit of every stage (the kernel takes at least STAGES steps).
    for t in gl.static_range(STAGES):
        last = steps - 1 - t
        mbarrier.wait(consumed.index(last % STAGES), (last // STAGES) & 1)
    # A pair's barrier is invalidated where it lives, in the pair's first CTA.
    for j in gl.static_range(STAGES):
        mbarrier.invalidate(loaded.index(j))
        mbarrier.invalidate(consumed.index(j))

    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_shape, c_desc.layout)
    c_smem.store(acc_tmem.load().to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit
def _relay_consumer(out_ptr, buf, ready, BLOCK: gl.constexpr, layout: gl.constexpr, BUG: gl.constexpr):
    if BUG != "no_wait":
        mbarrier.wait(ready.index(0), 0)
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    gl.store(out_ptr + offs, buf.load(layout) + 1.0)


@gluon.jit
def _relay_producer(x_ptr, buf, ready, BLOCK: gl.constexpr, layout: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    buf.store(gl.load(x_ptr + offs) * 2.0)
    mbarrier.arrive(ready.index(0), count=1)


@gluon.jit
def cluster_ws_relay_kernel(x_ptr, out_ptr, BLOCK: gl.constexpr, BUG: gl.constexpr):
    gl.static_assert(gl.num_ctas() == 2, "written for clusters of two CTAs")
    # The program's BLOCK elements, half in each CTA.
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0], cga_layout=[[1]])
    buf = gl.allocate_shared_memory(gl.float32, [BLOCK], gl.SwizzledSharedLayout(1, 1, 1, [0], cga_layout=[[1]]))
    ready = mbarrier.allocate_mbarrier(batch=1)
    mbarrier.init(ready.index(0), count=1)
    gl.warp_specialize([
        (_relay_consumer, (out_ptr, buf, ready, BLOCK, layout, BUG)),
        (_relay_producer, (x_ptr, buf, ready, BLOCK, layout)),
    ], [4], [32])


@gluon.jit
def _pair_signal_wait(out_ptr, arrived):
    # Only the pair's first CTA waits on the pair's barrier (it lives there).
    mbarrier.wait(arrived, 0)
    gl.store(out_ptr + gl.program_id(0), 1.0)


@gluon.jit
def _pair_signal_arrive(arrived):
    mbarrier.arrive(arrived, count=1)


@gluon.jit
def cluster_ws_pair_signal_kernel(out_ptr):
    gl.static_assert(gl.num_ctas() == 2, "written for clusters of two CTAs")
    # One barrier for the pair, in its first CTA: a worker partition of each CTA arrives on it.
    arrived = mbarrier.allocate_mbarrier(two_ctas=True)
    mbarrier.init(arrived, count=1)
    gl.warp_specialize([
        (_pair_signal_wait, (out_ptr, arrived)),
        (_pair_signal_arrive, (arrived, )),
    ], [1], [24])
