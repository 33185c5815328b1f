"""A histogram through shared-memory atomics, in Triton 3.8's Gluon API, written for bwsim's tests.

Each program reads BLOCK values of x (non-negative int32), counts them into BINS bins of a
shared-memory histogram with `atomic_scatter_add` (bin `v % BINS`) and keeps each bin's largest
value with `atomic_scatter_max`, then adds its counts into the global histogram and merges its
maxima with global atomics. New in 3.8 and used here: `shared_memory_descriptor.atomic_scatter_*`
(`ttg.local_atomic_scatter_rmw` in the TTGIR, the old values as the result).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def smem_histogram_kernel(x_ptr, hist_ptr, maxes_ptr, n, BINS: gl.constexpr, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    plain: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    mask = offs < n
    v = gl.load(x_ptr + offs, mask=mask, other=0)
    bins = v % BINS

    hist = gl.allocate_shared_memory(gl.int32, [BINS], plain)
    maxes = gl.allocate_shared_memory(gl.int32, [BINS], plain)
    hist.store(gl.zeros([BINS], gl.int32, layout))
    maxes.store(gl.full([BINS], -1, gl.int32, layout))
    gl.barrier()
    hist.atomic_scatter_add(gl.full([BLOCK], 1, gl.int32, layout), bins, axis=0, mask=mask)
    maxes.atomic_scatter_max(v, bins, axis=0, mask=mask)
    gl.barrier()

    b = gl.arange(0, BINS, layout)
    gl.atomic_add(hist_ptr + b, hist.load(layout))
    gl.atomic_max(maxes_ptr + b, maxes.load(layout))
