"""Plain copies in Gluon, written for bwsim's tests in the shape of Gluon tutorials 01-intro and
02-layouts: the same copy compiled with different register layouts (one element or a vector
per thread; rows spread over lanes or columns spread over lanes, row- or column-major thread
order). A layout decides which thread moves which element, never the result: each variant
copies `input` into `output` exactly.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def copy_1d_kernel(in_ptr, out_ptr, numel, XBLOCK: gl.constexpr, layout: gl.constexpr):
    offs = gl.program_id(0) * XBLOCK + gl.arange(0, XBLOCK, layout)
    keep = offs < numel
    gl.store(out_ptr + offs, gl.load(in_ptr + offs, mask=keep), mask=keep)


@gluon.jit
def copy_2d_kernel(in_ptr, out_ptr, xnumel, ynumel, XBLOCK: gl.constexpr, YBLOCK: gl.constexpr,
                   layout: gl.constexpr):
    # One XBLOCK x YBLOCK tile per program of a row-major [xnumel, ynumel] matrix.
    xs = gl.program_id(0) * XBLOCK + gl.arange(0, XBLOCK, gl.SliceLayout(1, layout))
    ys = gl.program_id(1) * YBLOCK + gl.arange(0, YBLOCK, gl.SliceLayout(0, layout))
    offs = xs[:, None] * ynumel + ys[None, :]
    keep = (xs < xnumel)[:, None] & (ys < ynumel)[None, :]
    gl.store(out_ptr + offs, gl.load(in_ptr + offs, mask=keep), mask=keep)
