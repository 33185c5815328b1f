"""The pieces of a one-buffer tcgen05 matmul that several kernels of this folder share (mma_scaled.py,
conv.py): per K step one TMA barrier and one MMA-commit barrier, an f32 accumulator in tensor memory,
the commit-and-wait after each MMA, and the epilogue's read of the accumulator.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import fence_async_shared, mbarrier, tcgen05_commit, tma


@gluon.jit
def allocate_step_barriers():
    # A K step's two barriers, initialised: one counts its TMA loads, one its MMA's commit.
    load_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(load_bar, count=1)
    mbarrier.init(mma_bar, count=1)
    return load_bar, mma_bar


@gluon.jit
def allocate_f32_acc(BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    # A [BLOCK_M, BLOCK_N] f32 accumulator in tensor memory, one column per element.
    acc_layout: gl.constexpr = TensorMemoryLayout([BLOCK_M, BLOCK_N], col_stride=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], acc_layout)
    return acc_tmem


@gluon.jit
def wait_mma(mma_bar, phase):
    # The MMAs issued so far, committed to mma_bar and waited for (its phase `phase`); the phase of
    # mma_bar's next completion.
    tcgen05_commit(mma_bar)
    mbarrier.wait(mma_bar, phase)
    return phase ^ 1


@gluon.jit
def read_acc(acc_tmem, load_bar, mma_bar):
    # After the last K step: the step barriers retired and the accumulator read into registers.
    mbarrier.invalidate(load_bar)
    mbarrier.invalidate(mma_bar)
    return acc_tmem.load(acc_tmem.get_reg_layout())


@gluon.jit
def store_tile(c_desc, acc, off_m, off_n):
    # The accumulator rounded to C's type and stored by TMA at (off_m, off_n), through shared memory.
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)
