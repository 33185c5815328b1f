"""Calls of `noinline` helpers (`tt.call` of a `tt.func private`), written for bwsim's tests.

Gluon compiles a helper marked `@gluon.jit(noinline=True)` into a function of its own, called
with `tt.call`; it takes scalars only (numbers and pointers) and may return several. Program p
computes `a = s * p + 1` and `b = s - p` with one helper, then adds them to rows 2p and 2p + 1
of x with two calls of another (one function, called twice):

    out[2p] = x[2p] + a,    out[2p + 1] = x[2p + 1] + b

BUG='shared_row' gives programs 2k and 2k + 1 the same rows: both write them, with different
values and nothing ordering them (bwsim: `global-race` at the helper's `gl.store`, the other
program's store by the same line).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit(noinline=True)
def _affine(s, p):
    return s * p + 1.0, s - p


@gluon.jit(noinline=True)
def _add_row(src_ptr, dst_ptr, row, v, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = row * N + gl.arange(0, N, layout)
    x = gl.load(src_ptr + offs)
    gl.store(dst_ptr + offs, x + v)


@gluon.jit
def noinline_calls_kernel(x_ptr, out_ptr, s, N: gl.constexpr, BUG: gl.constexpr):
    pid = gl.program_id(0)
    a, b = _affine(s, pid.to(gl.float32))
    row = 2 * pid
    if BUG == "shared_row":
        # BUG: shared_row (two programs write the same rows)
        row = 2 * (pid // 2)
    _add_row(x_ptr, out_ptr, row, a, N)
    _add_row(x_ptr, out_ptr, row + 1, b, N)
