"""Pieces the cluster matmuls of this folder share, in Triton 3.8's Gluon API, written for bwsim's tests.

Each kernel here computes C = A @ B with one shared buffer per operand, TMA loads completing on one
barrier, tcgen05 MMAs into a tensor-memory accumulator and a TMA store of C. The kernels keep the
steps their planted bugs are reported at in their own source; these helpers are the steps every
kernel does alike (Gluon inlines them, and bwsim reports a finding inside one at its line here).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import fence_async_shared, mbarrier, tma


@gluon.jit
def operand_buffers(a_desc, b_desc):
    """A shared buffer for a block of A and one for a block of B (each as its descriptor lays it out)."""
    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_shape, b_desc.layout)
    return a_smem, b_smem


@gluon.jit
def load_operands(a_desc, b_desc, off_m, off_n, k, bar, a_smem, b_smem, phase, MULTICAST: gl.constexpr = False):
    """Loads A's block at [off_m, k] and B's at [k, off_n] (both multicast to the CTAs sharing them if
    MULTICAST) and waits for both on `bar` in phase `phase`."""
    mbarrier.expect(bar, a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
    tma.async_load(a_desc, [off_m, k], bar, a_smem, multicast=MULTICAST)
    tma.async_load(b_desc, [k, off_n], bar, b_smem, multicast=MULTICAST)
    mbarrier.wait(bar, phase)


@gluon.jit
def store_accumulator(c_desc, acc_tmem, off_m, off_n):
    """Stores the accumulator, converted to C's type, as C's block at [off_m, off_n] and waits for the store."""
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_shape, c_desc.layout)
    c_smem.store(acc_tmem.load().to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)
