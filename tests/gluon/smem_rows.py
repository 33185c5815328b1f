"""Shared-memory rows, integer casts and 2-byte `cp.async`, written for bwsim's tests in the style of
the concurrency sanitizer's Hopper tests (facts only: a matrix in shared memory addressed row by row
with a run-time index, an i32 to f16 conversion, `cp.async` of f16 elements).

One program. `x` (ROWS x COLS f32) is written into shared memory one row at a time
(`smem.index(r)`), read back in reverse row order after a CTA barrier, truncated to i32 and
converted to f16 into `out`; `h` (f16) is copied into shared memory by `cp.async` (8 elements, 16
bytes, per copy), waited for, doubled and stored into `hout`.

BUG='no_wait' reads the f16 buffer without waiting for its copies (bwsim: `read-before-complete`
at the load, naming the `cp.async`).
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp


@gluon.jit
def smem_rows_kernel(x_ptr, h_ptr, out_ptr, hout_ptr, ROWS: gl.constexpr, COLS: gl.constexpr,
                     BUG: gl.constexpr = ''):
    row_layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    tile: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    # A layout of one dimension fewer than the buffer: the buffer is an array of rows.
    row_array: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    plain: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    rows_smem = gl.allocate_shared_memory(gl.float32, [ROWS, COLS], row_array)
    cols = gl.arange(0, COLS, row_layout)
    for r in range(ROWS):
        rows_smem.index(r).store(gl.load(x_ptr + r * COLS + cols))
    gl.barrier()
    for r in range(ROWS):
        v = rows_smem.index(ROWS - 1 - r).load(row_layout)
        gl.store(out_ptr + r * COLS + cols, v.to(gl.int32).to(gl.float16))

    h_smem = gl.allocate_shared_memory(gl.float16, [ROWS, COLS], plain)
    r2 = gl.arange(0, ROWS, gl.SliceLayout(1, tile))
    c2 = gl.arange(0, COLS, gl.SliceLayout(0, tile))
    offs = r2[:, None] * COLS + c2[None, :]
    cp.async_load(h_smem, h_ptr + offs)
    cp.commit_group()
    if BUG != 'no_wait':
        cp.wait_group(0)
    # BUG: no_wait (the copies may still be landing)
    gl.store(hout_ptr + offs, h_smem.load(tile) * 2.0)
