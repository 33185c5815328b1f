"""A persistent matmul over CTA pairs that claims its tiles with cluster launch control, in Triton
3.8's Gluon API, written for bwsim's tests (the scheduling of the multi-CTA tutorial's persistent
kernel on the two-CTA matmul of two_cta_matmul.py).

C = A @ B in [BLOCK_M, BLOCK_N] tiles, one tile per cluster of two CTAs (`num_ctas=2`): A and C are
split between the pair by rows, B by columns, and the first CTA issues `cta_group::2` MMAs for both
(`two_ctas=True` accumulator, a load barrier of the pair). The grid has one cluster per tile; a
running cluster computes its tile, then cancels a cluster not yet launched and takes over its tile
(`clc.try_cancel`: in a cluster kernel the response is multicast, written into both CTAs' result
buffers and completing 16 bytes on both CTAs' barriers; `program_id(0)` of the response is the
cancelled cluster's). The request for the next tile goes out before the current tile's K loop, so
the answer arrives while the tile is computed. Both CTAs read the same response and so take the
same path. The first CTA issues the request (Triton lowers `try_cancel` of a cluster kernel to one
multicast request from CTA rank 0), so it must not issue the next one until the second CTA has read
the current response out of its buffer: a cluster barrier after the read hands the buffer back.

BUG plants a mistake (empty: the correct kernel):
  'acc_early'        the epilogue reads the accumulator without waiting for the last MMA's commit
                     (bwsim: `read-before-complete` at `acc_tmem.load()`, naming the pair MMA)
  'relaxed_handoff'  the hand-off is a relaxed cluster barrier, which orders no memory access: CTA
                     rank 0 does not learn that the second CTA is done with its buffer before the
                     next response is multicast into it (bwsim: `write-while-in-flight` at
                     `clc.try_cancel`, in CTA rank 1, issued by rank 0)
  'no_handoff'       no cluster barrier after the read: the same hazard
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import clc, fence_async_shared, mbarrier, tcgen05_mma
from triton.experimental.gluon.language.nvidia.blackwell import tcgen05_mma_barrier_count, tma
from triton.experimental.gluon.language.nvidia.hopper import cluster

from matmul_parts import load_operands, operand_buffers


@gluon.jit
def clc_pair_matmul_kernel(a_desc, b_desc, c_desc, K, BUG: gl.constexpr):
    gl.static_assert(gl.num_ctas() == 2, "written for clusters of two CTAs")
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1]
    tiles_n = gl.cdiv(c_desc.shape[1], BLOCK_N)
    a_smem, b_smem = operand_buffers(a_desc, b_desc)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_shape, c_desc.layout)
    load_bar = mbarrier.allocate_mbarrier(two_ctas=True)
    mma_bar = mbarrier.allocate_mbarrier()
    clc_bar = mbarrier.allocate_mbarrier()
    mbarrier.init(load_bar, count=1)
    mbarrier.init(mma_bar, count=tcgen05_mma_barrier_count([a_smem, b_smem], multicast=False, two_ctas=True))
    mbarrier.init(clc_bar, count=1)
    # The 16-byte response of a cancellation request, as two int64, whole in each CTA.
    clc_result = gl.allocate_shared_memory(gl.int64, [2], gl.SwizzledSharedLayout(1, 1, 1, [0], cga_layout=[[0]]))
    acc_layout: gl.constexpr = TensorMemoryLayout((BLOCK_M // 2, BLOCK_N), col_stride=1,
                                                  cga_layout=c_desc.layout.cga_layout, two_ctas=True)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], acc_layout)

    tile = gl.program_id(0)
    has_work = gl.to_tensor(True)
    phase = 0
    clc_phase = 0
    while has_work:
        # Ask for the next tile now; the answer is read once this tile is stored.
        mbarrier.expect(clc_bar, 16)
        clc.try_cancel(clc_result, clc_bar)

        off_m = tile // tiles_n * BLOCK_M
        off_n = tile % tiles_n * BLOCK_N
        for k in range(0, K, BLOCK_K):
            load_operands(a_desc, b_desc, off_m, off_n, k, load_bar, a_smem, b_smem, phase)
            tcgen05_mma(a_smem, b_smem, acc_tmem, use_acc=k > 0, mbarriers=[mma_bar])
            if BUG != "acc_early" or k + BLOCK_K < K:
                mbarrier.wait(mma_bar, phase)
            # BUG: acc_early (the last MMA's commit is not waited for before the epilogue)
            phase ^= 1

        tma.store_wait(0)  # the previous tile's store has read c_smem
        c_smem.store(acc_tmem.load().to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m, off_n], c_smem)

        mbarrier.wait(clc_bar, clc_phase)
        result = clc.load_result(clc_result)
        has_work = result.is_canceled()
        tile = result.program_id(0)
        clc_phase ^= 1
        # Both CTAs have read the response before the first CTA asks for the next one.
        if BUG == "relaxed_handoff":
            cluster.barrier(relaxed=True)  # BUG: relaxed_handoff (orders no access)
        elif BUG != "no_handoff":
            cluster.barrier()
        # BUG: no_handoff (nothing keeps the next response out of a buffer still being read)
    tma.store_wait(0)
