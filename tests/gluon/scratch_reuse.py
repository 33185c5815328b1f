"""A TMA store's source buffer and a layout conversion's scratch space at the same shared
addresses, in the style of the concurrency sanitizer's tests, written for bwsim's tests.

A [XBLOCK, YBLOCK] f32 tile is loaded with its rows across the warps, written to a shared
buffer and stored to `out_desc` by TMA; the tile doubled is then converted to a layout with its
columns across the warps and stored to `out2_ptr`. A conversion across warps goes through shared
scratch the compiler allocates (the `allocation.offset` of `ttg.convert_layout`), and the
allocator reuses the bytes of a buffer whose last use in program order is over: the TMA store's
issue. The store reads its source asynchronously, until `tma.store_wait`.

BUG='no_store_wait' converts before the wait: the conversion's scratch writes may overwrite the
buffer while the TMA store still reads it (bwsim: `write-while-in-flight` at the conversion, the
TMA store in flight, from Triton's PTX and from the TTGIR written with its allocation). The
correct kernel waits for the store to have read its source first.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma


@gluon.jit
def scratch_reuse_kernel(in_ptr, out_desc, out2_ptr, XBLOCK: gl.constexpr, YBLOCK: gl.constexpr, BUG: gl.constexpr):
    rows_layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [gl.num_warps(), 1], [1, 0])
    cols_layout: gl.constexpr = gl.BlockedLayout([4, 1], [8, 4], [1, gl.num_warps()], [0, 1])
    rows = gl.arange(0, XBLOCK, gl.SliceLayout(1, rows_layout))[:, None]
    cols = gl.arange(0, YBLOCK, gl.SliceLayout(0, rows_layout))[None, :]
    x = gl.load(in_ptr + rows * YBLOCK + cols)
    buf = gl.allocate_shared_memory(gl.float32, [XBLOCK, YBLOCK], out_desc.layout)
    buf.store(x)
    fence_async_shared()
    tma.async_store(out_desc, [0, 0], buf)
    if BUG != "no_store_wait":
        # The TMA store has read buf before the conversion's scratch may reuse its bytes.
        tma.store_wait(0)
    # BUG: no_store_wait (the conversion's scratch overwrites buf while the TMA store reads it)
    y = gl.convert_layout(x * 2.0, cols_layout)
    rows2 = gl.arange(0, XBLOCK, gl.SliceLayout(1, cols_layout))[:, None]
    cols2 = gl.arange(0, YBLOCK, gl.SliceLayout(0, cols_layout))[None, :]
    gl.store(out2_ptr + rows2 * YBLOCK + cols2, y)
    tma.store_wait(0)
