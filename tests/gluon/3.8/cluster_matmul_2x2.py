"""A matmul over a 2x2 cluster of four CTAs with TMA multicast along both axes, in Triton 3.8's Gluon API, written for bwsim's tests.

C = A @ B, one program a cluster of four CTAs (`num_ctas=4`) owning a [2 * BLOCK_M, 2 * BLOCK_N] tile of C.
Bit 0 of a CTA's rank picks its rows, bit 1 its columns: A's block is split by rows over bit 0 and shared
along bit 1 (`cga_layout=[[1, 0], [0, 0]]`), B's split by columns over bit 1 and shared along bit 0
(`[[0, 0], [0, 1]]`), C's split both ways (`[[1, 0], [0, 1]]`). Each shared half is loaded once and
multicast to the two CTAs that need it, so a CTA's B buffer is written by its column partner's load and
its A buffer by its row partner's; each CTA's MMA completion is multicast to the CTAs whose loads write
the buffers it read, and each CTA's MMA barrier counts the arrivals of itself and of both partners
(`tcgen05_mma_barrier_count`).

BUG='partner_count' initialises the MMA barrier for two arrivals where three come: a phase can complete
before one partner's MMA has read the buffers this CTA's next multicast overwrites (bwsim:
`write-while-in-flight` at a multicast `tma.async_load`, the partner's `tcgen05_mma` in flight).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier, tcgen05_mma, tcgen05_mma_barrier_count

from matmul_parts import load_operands, operand_buffers, store_accumulator


@gluon.jit
def cluster_matmul_2x2_kernel(a_desc, b_desc, c_desc, K, BUG: gl.constexpr):
    gl.static_assert(gl.num_ctas() == 4, "written for clusters of four CTAs")
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]  # the cluster's rows, BLOCK_M // 2 per CTA
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1]  # the cluster's columns, BLOCK_N // 2 per CTA
    a_smem, b_smem = operand_buffers(a_desc, b_desc)
    load_bar = mbarrier.allocate_mbarrier()
    mma_bar = mbarrier.allocate_mbarrier()
    mbarrier.init(load_bar, count=1)
    if BUG == "partner_count":
        # BUG: partner_count (three MMAs arrive: this CTA's and both partners')
        mbarrier.init(mma_bar, count=2)
    else:
        mbarrier.init(mma_bar, count=tcgen05_mma_barrier_count([a_smem, b_smem], multicast=True, two_ctas=False))
    acc_layout: gl.constexpr = TensorMemoryLayout((BLOCK_M // 2, BLOCK_N // 2), col_stride=1,
                                                  cga_layout=c_desc.layout.cga_layout)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], acc_layout)

    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    phase = 0
    for k in range(0, K, BLOCK_K):
        load_operands(a_desc, b_desc, off_m, off_n, k, load_bar, a_smem, b_smem, phase, MULTICAST=True)
        tcgen05_mma(a_smem, b_smem, acc_tmem, use_acc=k > 0, multicast=True, mbarriers=[mma_bar])
        # Every CTA whose multicast writes these buffers waits for this MMA before the next one.
        mbarrier.wait(mma_bar, phase)
        phase ^= 1

    store_accumulator(c_desc, acc_tmem, off_m, off_n)
