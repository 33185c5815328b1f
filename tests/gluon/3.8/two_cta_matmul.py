"""A two-CTA tcgen05 matmul (`cta_group::2`), in Triton 3.8's Gluon API, written for bwsim's tests.

C = A @ B, one program a cluster of two CTAs (`num_ctas=2`) computing one [BLOCK_M, BLOCK_N] tile of
C with MMAs that span the pair: A and C are split between the CTAs by rows (`cga_layout=[[1, 0]]`),
B by columns (`[[0, 1]]`); the accumulator's layout has `two_ctas=True`, and the first CTA of the
pair issues each MMA for both, reading both CTAs' shared tiles. So the barrier its loads complete
on must count both CTAs' bytes before it issues (`mbarrier.allocate_mbarrier(two_ctas=True)`: one
barrier for the pair, in the first CTA), and the MMA's completion arrives on both CTAs' barriers
(`tcgen05_mma_barrier_count(..., two_ctas=True)`). New in 3.8 as used here: `two_ctas` of
`tcgen05_mma_barrier_count`, `cga_layout` on `TensorMemoryLayout`, `acc_tmem.load()`.

BUG='per_cta_load_bar' allocates the load barrier per CTA (`two_ctas=False`): the first CTA waits for
its own tiles only and issues an MMA that reads the other CTA's halves of A and B before they have
landed (bwsim: `read-before-complete` at `tcgen05_mma`, naming the other CTA's `tma.async_load`).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier, tcgen05_mma, tcgen05_mma_barrier_count

from matmul_parts import load_operands, operand_buffers, store_accumulator


@gluon.jit
def two_cta_matmul_kernel(a_desc, b_desc, c_desc, K, BUG: gl.constexpr):
    gl.static_assert(gl.num_ctas() == 2, "written for clusters of two CTAs")
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1]
    a_smem, b_smem = operand_buffers(a_desc, b_desc)
    if BUG == "per_cta_load_bar":
        # BUG: per_cta_load_bar (the issuing CTA does not wait for the other CTA's tiles)
        load_bar = mbarrier.allocate_mbarrier()
    else:
        load_bar = mbarrier.allocate_mbarrier(two_ctas=True)
    mma_bar = mbarrier.allocate_mbarrier()
    mbarrier.init(load_bar, count=1)
    mbarrier.init(mma_bar, count=tcgen05_mma_barrier_count([a_smem, b_smem], multicast=False, two_ctas=True))
    acc_layout: gl.constexpr = TensorMemoryLayout((BLOCK_M // 2, BLOCK_N), col_stride=1,
                                                  cga_layout=c_desc.layout.cga_layout, two_ctas=True)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], acc_layout)

    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    phase = 0
    for k in range(0, K, BLOCK_K):
        load_operands(a_desc, b_desc, off_m, off_n, k, load_bar, a_smem, b_smem, phase)
        tcgen05_mma(a_smem, b_smem, acc_tmem, use_acc=k > 0, mbarriers=[mma_bar])
        mbarrier.wait(mma_bar, phase)
        phase ^= 1

    store_accumulator(c_desc, acc_tmem, off_m, off_n)
