"""A device-side assertion (`gl.device_assert`, `tt.assert`), written for bwsim's tests.

Each program loads BLOCK indices (the tail beyond n padded with -1 by the load's `other=`),
asserts that every index it was given is in [0, 64), and writes `out = 2 * x`. Triton compiles
assertions only with its `debug` option (`tools/gluon_to_ttgir.py --debug`).

BUG='no_mask' asserts without the load's mask: the padding of the last program's tail fails the
assertion (bwsim: `device-assert` at the `gl.device_assert` line, naming the message and the
first failing element; on the GPU, cudaErrorAssert).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def device_assert_kernel(x_ptr, out_ptr, n, BLOCK: gl.constexpr, BUG: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    mask = offs < n
    x = gl.load(x_ptr + offs, mask=mask, other=-1)
    if BUG == "no_mask":
        # BUG: no_mask (the padding of the tail is asserted too)
        gl.device_assert((x >= 0) & (x < 64), "index out of range")
    else:
        gl.device_assert((x >= 0) & (x < 64), "index out of range", mask=mask)
    gl.store(out_ptr + offs, 2 * x, mask=mask)
