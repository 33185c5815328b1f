"""Gathers and scatters through shared memory along one axis, in Triton 3.7's Gluon API, written for
bwsim's tests.

Each program stages ROWS rows of x in shared memory and writes them out twice: gathered,
`gathered[r, c] = x[r, perm[c]]` (`shared_memory_descriptor.gather`), and scattered,
`scattered[r, perm[c]] = x[r, c]` (`shared_memory_descriptor.scatter` into a second buffer). perm is a
permutation of the COLS columns. New in 3.7 and used here: the shared-memory `gather` and `scatter`
(`ttg.local_gather`, `ttg.local_scatter`) and `gl.barrier()` (3.6's `thread_barrier`; `ttg.barrier
all` in the TTGIR), which orders one thread's shared stores before other threads' reads.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def smem_gather_scatter_kernel(x_ptr, perm_ptr, gathered_ptr, scattered_ptr, ROWS: gl.constexpr,
                               COLS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [gl.num_warps(), 1], [1, 0])
    plain: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    rows = gl.program_id(0) * ROWS + gl.arange(0, ROWS, gl.SliceLayout(1, layout))
    cols = gl.arange(0, COLS, gl.SliceLayout(0, layout))
    offs = rows[:, None] * COLS + cols[None, :]
    x = gl.load(x_ptr + offs)
    perm = gl.load(perm_ptr + cols)
    idx = gl.broadcast(perm[None, :], x)[0]

    x_smem = gl.allocate_shared_memory(gl.float32, [ROWS, COLS], plain)
    x_smem.store(x)
    gl.barrier()
    gathered = x_smem.gather(idx, axis=1)
    gl.store(gathered_ptr + offs, gathered)

    out_smem = gl.allocate_shared_memory(gl.float32, [ROWS, COLS], plain)
    out_smem.scatter(x, idx, axis=1)
    gl.barrier()
    gl.store(scattered_ptr + offs, out_smem.load(layout))
