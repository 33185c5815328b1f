"""A two-CTA cluster matmul with TMA multicast, in Triton 3.8's Gluon API, written for bwsim's tests.

The kernel of 3.7/multicast_matmul.py as Triton 3.8 spells it: C = A @ B, one program a cluster of
two CTAs (`num_ctas=2`) owning 2 * BLOCK_M rows of C, A and C split between the CTAs by rows
(`cga_layout=[[1, 0]]`), B's tile needed whole by both and delivered by one multicast TMA copy
(`cga_layout=[[0, 0]]`). What 3.8 changes: `tma.async_load`/`async_store`; the accumulator's split
is a `cga_layout` of its `TensorMemoryLayout`; `tcgen05_mma_barrier_count` takes `two_ctas`; the
accumulator is loaded with the register layout `acc_tmem.load()` infers; and the compiler orders
the barriers' initialisation before the other CTA's first use (no `sync_cluster_init()`).

BUG='single_count' initialises the MMA barrier for one arrival where two come (this CTA's MMA and
the other CTA's, whose completion is multicast because it read the same B): the barrier's phase
completes on the first, so a CTA may multicast the next B tile into the other CTA's buffer while that
CTA's MMA still reads it (bwsim: `write-while-in-flight` at the multicast `tma.async_load` of B, the
other CTA's `tcgen05_mma` as the access in flight).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier, tcgen05_mma, tcgen05_mma_barrier_count, tma

from matmul_parts import operand_buffers, store_accumulator


@gluon.jit
def multicast_matmul_kernel(a_desc, b_desc, c_desc, K, BUG: gl.constexpr):
    gl.static_assert(gl.num_ctas() == 2, "written for clusters of two CTAs")
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]  # the cluster's rows, BLOCK_M // 2 per CTA
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1]
    a_smem, b_smem = operand_buffers(a_desc, b_desc)
    load_bar = mbarrier.allocate_mbarrier()
    mma_bar = mbarrier.allocate_mbarrier()
    mbarrier.init(load_bar, count=1)
    if BUG == "single_count":
        # BUG: single_count (the other CTA's MMA arrives here too)
        mbarrier.init(mma_bar, count=1)
    else:
        mbarrier.init(mma_bar, count=tcgen05_mma_barrier_count([a_smem, b_smem], multicast=True, two_ctas=False))
    acc_layout: gl.constexpr = TensorMemoryLayout((BLOCK_M // 2, BLOCK_N), col_stride=1,
                                                  cga_layout=c_desc.layout.cga_layout)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], acc_layout)

    off_m = gl.program_id(0) * BLOCK_M
    phase = 0
    for k in range(0, K, BLOCK_K):
        mbarrier.expect(load_bar, a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
        tma.async_load(a_desc, [off_m, k], load_bar, a_smem)
        tma.async_load(b_desc, [k, 0], load_bar, b_smem, multicast=True)
        mbarrier.wait(load_bar, phase)
        tcgen05_mma(a_smem, b_smem, acc_tmem, use_acc=k > 0, multicast=True, mbarriers=[mma_bar])
        # Both CTAs' MMAs have read this B before either overwrites it with the next multicast.
        mbarrier.wait(mma_bar, phase)
        phase ^= 1

    store_accumulator(c_desc, acc_tmem, off_m, 0)
