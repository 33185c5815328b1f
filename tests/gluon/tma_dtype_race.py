"""Two bugs in one kernel, in the style of the concurrency sanitizer's tests: a [XBLOCK, YBLOCK]
f32 tile is written to shared memory and stored by TMA through an f16 descriptor, and the
buffer is overwritten before `store_wait` says the store has read it.

- The element types differ (bwsim: `tma-dtype`, at the store). The hardware still runs the
  copy: it moves the descriptor's f16 box from the start of the f32 buffer, so `out` receives
  the buffer's first half, reinterpreted.
- The second `store` writes the buffer while the TMA store may still be reading it (bwsim:
  `write-while-in-flight`).

`bwsim check` reports both in one run: the element type mismatch does not stop the analysis.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma


@gluon.jit
def tma_dtype_race_kernel(out_desc, XBLOCK: gl.constexpr, YBLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, XBLOCK, gl.SliceLayout(1, layout))[:, None]
    cols = gl.arange(0, YBLOCK, gl.SliceLayout(0, layout))[None, :]
    values = (rows * YBLOCK + cols).to(gl.float32)
    buf = gl.allocate_shared_memory(gl.float32, [XBLOCK, YBLOCK], out_desc.layout)
    buf.store(values)
    fence_async_shared()
    # BUG: tma-dtype (an f32 buffer, allocated with the f16 descriptor's layout, stored through it)
    tma.async_store(out_desc, [0, 0], buf)
    # BUG: race (the store above may still be reading the buffer)
    buf.store(values + 1.0)
    tma.store_wait(pendings=0)
