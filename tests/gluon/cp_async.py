"""A cp.async pipeline in Gluon, written for bwsim's tests in the shape of Gluon tutorial
03-async-copy: each program owns XBLOCK rows of two row-major [n_rows, n_cols] f32 matrices and
walks their columns YBLOCK at a time through a ring of NUM_BUFFERS shared-memory stages. The
copies of stage k + NUM_BUFFERS - 1 are in flight while stage k is read: `commit_group` closes
one stage's pair of copies, `wait_group(NUM_BUFFERS - 1)` lets the newer stages stay in flight.
Outputs: the sum a + b, and the running maximum of each row of the sum.

BUG='no_wait' drops the wait in the steady-state loop: the stage is read while its copies may
still be landing.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp


@gluon.jit
def cp_async_kernel(a_ptr, b_ptr, c_ptr, max_ptr, n_rows, n_cols, XBLOCK: gl.constexpr, YBLOCK: gl.constexpr,
                    NUM_BUFFERS: gl.constexpr, BUG: gl.constexpr = ''):
    # A warp spans one row's YBLOCK columns; the warps stack over rows.
    layout: gl.constexpr = gl.BlockedLayout([1, YBLOCK // 32], [1, 32], [gl.num_warps(), 1], [1, 0])
    rows = gl.program_id(0) * XBLOCK + gl.arange(0, XBLOCK, gl.SliceLayout(1, layout))
    cols = gl.arange(0, YBLOCK, gl.SliceLayout(0, layout))
    row_ok = (rows < n_rows)[:, None]
    base = rows[:, None] * n_cols

    ring: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    a_bufs = gl.allocate_shared_memory(gl.float32, [NUM_BUFFERS, XBLOCK, YBLOCK], ring)
    b_bufs = gl.allocate_shared_memory(gl.float32, [NUM_BUFFERS, XBLOCK, YBLOCK], ring)
    steps = gl.cdiv(n_cols, YBLOCK)

    # Prologue: the first NUM_BUFFERS - 1 stages (masked off past the last column block).
    for s in gl.static_range(NUM_BUFFERS - 1):
        y = s * YBLOCK + cols
        m = row_ok & (y < n_cols)[None, :]
        cp.async_load(a_bufs.index(s), a_ptr + base + y[None, :], mask=m)
        cp.async_load(b_bufs.index(s), b_ptr + base + y[None, :], mask=m)
        cp.commit_group()

    row_max = gl.full([XBLOCK], float('-inf'), gl.float32, gl.SliceLayout(1, layout))
    for k in range(steps):
        # Refill the stage read NUM_BUFFERS - 1 steps ago.
        nxt = k + NUM_BUFFERS - 1
        y = nxt * YBLOCK + cols
        m = row_ok & (y < n_cols)[None, :]
        cp.async_load(a_bufs.index(nxt % NUM_BUFFERS), a_ptr + base + y[None, :], mask=m)
        cp.async_load(b_bufs.index(nxt % NUM_BUFFERS), b_ptr + base + y[None, :], mask=m)
        cp.commit_group()
        if BUG != 'no_wait':
            cp.wait_group(NUM_BUFFERS - 1)
        # BUG: no_wait (without the wait above, this reads a stage whose copies may still be landing)
        a = a_bufs.index(k % NUM_BUFFERS).load(layout)
        b = b_bufs.index(k % NUM_BUFFERS).load(layout)
        c = a + b
        y = k * YBLOCK + cols
        m = row_ok & (y < n_cols)[None, :]
        gl.store(c_ptr + base + y[None, :], c, mask=m)
        row_max = gl.maximum(row_max, gl.max(gl.where(m, c, float('-inf')), axis=1))
    cp.wait_group(0)
    gl.store(max_ptr + rows, row_max, mask=rows < n_rows)
