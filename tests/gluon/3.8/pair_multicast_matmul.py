"""Two CTA pairs in one cluster of four, with multicast loads completing on pair barriers, in
Triton 3.8's Gluon API, written for bwsim's tests.

C = A @ B; one program is a cluster of four CTAs (`num_ctas=4`) computing a [BLOCK_M, BLOCK_N]
tile of C as two CTA pairs: ranks 0 and 1 form one pair, ranks 2 and 3 the other. Rank bit 0
splits the rows between the CTAs of a pair, rank bit 1 picks the pair, and each pair computes
its own half of the columns with two-CTA MMAs (`two_ctas=True`, issued by the pair's even CTA).
Both pairs need the same rows of A, so A's block is shared along rank bit 1
(`cga_layout=[[1, 0], [0, 0]]`): ranks 0 and 1 each read their half of A once and multicast it to
the same half in the other pair (ranks 2 and 3). B is split four ways by columns
(`[[0, 1], [0, 2]]`), each CTA loading its own quarter. The load barrier is the pair's
(`allocate_mbarrier(two_ctas=True)`, in the pair's even CTA), so a multicast copy completes its
bytes on the barrier of the pair each destination belongs to. An MMA reads the A halves another
pair's CTA wrote, so its completion must reach that CTA as well before it overwrites them: the
MMA is `multicast=True` and the MMA barrier counts one commit per pair reading a CTA's A
(`tcgen05_mma_barrier_count(..., multicast=True, two_ctas=True)`, 2 here). SEPARATE_COMMIT=True
signals the MMA barrier by a `tcgen05_commit` of its own whose `descs` name the MMA's buffers,
which multicasts it the same way.

BUG='single_mma_count' initialises the MMA barrier for one commit: the phase completes on the
first pair's commit, and the next multicast of A overwrites a tile the other pair's MMA may
still be reading (bwsim: `write-while-in-flight` at the multicast `tma.async_load`).
BUG='no_mma_multicast' drops `multicast=True` from the MMA (and counts one commit): each pair
hears of its own MMA only, so CTA 0 and 1 multicast the next A tiles into the other pair while
its MMA still reads the previous ones (bwsim: `write-while-in-flight` at the multicast
`tma.async_load`).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier, tcgen05_commit, tcgen05_mma
from triton.experimental.gluon.language.nvidia.blackwell import tcgen05_mma_barrier_count, tma

from matmul_parts import operand_buffers, store_accumulator


@gluon.jit
def pair_multicast_matmul_kernel(a_desc, b_desc, c_desc, K, BUG: gl.constexpr, SEPARATE_COMMIT: gl.constexpr):
    gl.static_assert(gl.num_ctas() == 4, "written for clusters of two CTA pairs")
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1]
    a_smem, b_smem = operand_buffers(a_desc, b_desc)
    load_bar = mbarrier.allocate_mbarrier(two_ctas=True)
    mma_bar = mbarrier.allocate_mbarrier()
    mbarrier.init(load_bar, count=1)
    if BUG == "single_mma_count" or BUG == "no_mma_multicast":
        # BUG: single_mma_count, no_mma_multicast (the other pair's commit is not waited for)
        mbarrier.init(mma_bar, count=1)
    else:
        mbarrier.init(mma_bar, count=tcgen05_mma_barrier_count([a_smem, b_smem], multicast=True, two_ctas=True))
    acc_layout: gl.constexpr = TensorMemoryLayout((BLOCK_M // 2, BLOCK_N // 2), col_stride=1,
                                                  cga_layout=c_desc.layout.cga_layout, two_ctas=True)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], acc_layout)

    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    phase = 0
    for k in range(0, K, BLOCK_K):
        mbarrier.expect(load_bar, a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
        tma.async_load(a_desc, [off_m, k], load_bar, a_smem, multicast=True)
        tma.async_load(b_desc, [k, off_n], load_bar, b_smem)
        mbarrier.wait(load_bar, phase)
        if SEPARATE_COMMIT:
            # The same completion as a commit of its own, multicast over the CTAs that share
            # the MMA's buffers.
            tcgen05_mma(a_smem, b_smem, acc_tmem, use_acc=k > 0)
            tcgen05_commit(mma_bar, descs=[a_smem, b_smem])
        else:
            tcgen05_mma(a_smem, b_smem, acc_tmem, use_acc=k > 0, multicast=BUG != "no_mma_multicast",
                        mbarriers=[mma_bar])
        mbarrier.wait(mma_bar, phase)
        phase ^= 1

    store_accumulator(c_desc, acc_tmem, off_m, off_n)
