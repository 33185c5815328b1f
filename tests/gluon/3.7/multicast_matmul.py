"""A two-CTA cluster matmul with TMA multicast, in Triton 3.7's Gluon API, written for bwsim's tests.

C = A @ B, f16 in, f32 accumulated in tensor memory, f16 out. One program is a cluster of two CTAs
(`num_ctas=2`) owning 2 * BLOCK_M rows of C: A and C are split between the CTAs by rows (their
shared layouts have `cga_layout=[[1, 0]]`), while both CTAs need the same [BLOCK_K, BLOCK_N] tile
of B at every K step (`cga_layout=[[0, 0]]`), so one TMA copy with `multicast=True` delivers it to
both. New in 3.7 and used here: `mbarrier.allocate_mbarrier()` (one barrier per CTA),
`tensor_descriptor.nbytes_per_cta` (the bytes that land in each CTA, what `mbarrier.expect` takes),
the multicast TMA load, `tcgen05_mma(..., multicast=True)` (the MMA's completion arrives on the
barriers of every CTA whose shared tiles it read) with `tcgen05_mma_barrier_count`, and
`mbarrier.sync_cluster_init()`: Triton 3.7 does not order the barriers' initialisation before the
other CTA's first multicast copy or MMA arrival, the kernel must.

BUG plants one cluster synchronisation mistake (empty: the correct kernel):
  'no_cluster_init'  the barriers are used without `sync_cluster_init()`: the other CTA's multicast
                     copy may complete bytes on this CTA's load barrier before it is initialised
                     (bwsim: `barrier-misuse` at the multicast `async_copy_global_to_shared` line)
  'expect_cluster'   `expect` of the bytes of the whole cluster: each CTA's barrier waits for twice
                     the bytes that land in it (bwsim: `deadlock` at the load barrier's `wait`, the
                     barrier's transaction count never reaching zero)
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import fence_async_shared, get_tmem_reg_layout, mbarrier
from triton.experimental.gluon.language.nvidia.blackwell import tcgen05_mma, tcgen05_mma_barrier_count, tma


@gluon.jit
def multicast_matmul_kernel(a_desc, b_desc, c_desc, K, BUG: gl.constexpr):
    gl.static_assert(gl.num_ctas() == 2, "written for clusters of two CTAs")
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]  # the cluster's rows, BLOCK_M // 2 per CTA
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[1]
    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
    load_bar = mbarrier.allocate_mbarrier()
    mma_bar = mbarrier.allocate_mbarrier()
    mbarrier.init(load_bar, count=1)
    # Each CTA's MMA arrives on the barrier of every CTA that holds a copy of B: two arrivals.
    mbarrier.init(mma_bar, count=tcgen05_mma_barrier_count([a_smem, b_smem], True))
    if BUG != "no_cluster_init":
        mbarrier.sync_cluster_init()
    # BUG: no_cluster_init (without the line above, the other CTA may signal a barrier not yet initialised)
    # The accumulator's rows split between the CTAs as C's are (Triton 3.7 spells it cta_split_num).
    acc_layout: gl.constexpr = TensorMemoryLayout((BLOCK_M // 2, BLOCK_N), col_stride=1, cta_split_num=(2, 1))
    acc = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], acc_layout)

    off_m = gl.program_id(0) * BLOCK_M
    phase = 0
    for k in range(0, K, BLOCK_K):
        if BUG == "expect_cluster":
            # BUG: expect_cluster (the bytes of both CTAs: this CTA receives only its share)
            mbarrier.expect(load_bar, 2 * (a_desc.nbytes_per_cta + b_desc.nbytes_per_cta))
        else:
            mbarrier.expect(load_bar, a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
        tma.async_copy_global_to_shared(a_desc, [off_m, k], load_bar, a_smem)
        tma.async_copy_global_to_shared(b_desc, [k, 0], load_bar, b_smem, multicast=True)
        mbarrier.wait(load_bar, phase)
        tcgen05_mma(a_smem, b_smem, acc, use_acc=k > 0, multicast=True, mbarriers=[mma_bar])
        # Both CTAs' MMAs have read this B before either overwrites it with the next multicast.
        mbarrier.wait(mma_bar, phase)
        phase ^= 1

    reg_layout: gl.constexpr = get_tmem_reg_layout(gl.float32, (BLOCK_M, BLOCK_N), acc_layout, gl.num_warps(),
                                                   cga_layout=c_desc.layout.cga_layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    c_smem.store(acc.load(reg_layout).to(c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [off_m, 0], c_smem)
    tma.store_wait(0)
