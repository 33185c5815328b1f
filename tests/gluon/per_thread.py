"""Per-thread operations in Gluon, written for bwsim's tests in the manner of Triton's Gluon
tutorial 14-per-thread-ops: reductions over the part of a row a thread holds in its registers
(a reshape that splits the row into [groups, registers] and a reduction over the register
axis), the reduce-then-broadcast idiom (a reduced value brought back to the tile's layout by
replaying the reduction and a trivial layout conversion), and per-thread quantization (each
thread scales its own group of a row to int8 with its own scale and dequantizes it).

For each row of a [xnumel, YBLOCK] f32 matrix x:
  sums[r]         = sum of the row (lane shuffles: a row spans several threads)
  centered[r, c]  = x[r, c] - max of row r
  deq[r, c]       = q / s with q = int8(trunc(x[r, c] * s)) and s = 127 / max(|x| over the group
                    of REG columns that holds c, 1e-12)
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def group_max(x, REG: gl.constexpr):
    # Maximum over each thread's REG-wide register group of every row: [M, N] -> [M, N // REG].
    M: gl.constexpr = x.shape[0]
    N: gl.constexpr = x.shape[1]
    return gl.max(x.reshape([M, N // REG, REG]), axis=2)


@gluon.jit
def broadcast_back(x, y, AXIS: gl.constexpr):
    # y (shaped like x reduced over AXIS) in x's layout: replay the reduction to get the reduced
    # layout, take y's values in it, then expand the reduced axis back.
    x_red = gl.max(x, axis=AXIS)
    y = gl.convert_layout(y.reshape(x_red.shape), x_red.type.layout, assert_trivial=True)
    return y.expand_dims(AXIS)


@gluon.jit
def per_thread_kernel(x_ptr, sums_ptr, centered_ptr, deq_ptr, xnumel, XBLOCK: gl.constexpr,
                      YBLOCK: gl.constexpr):
    # Each thread holds 8 consecutive columns of a row; 4 lanes cover a 32-column row.
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [8, 4], [gl.num_warps(), 1], [1, 0])
    REG: gl.constexpr = layout.size_per_thread[1]
    rows = gl.program_id(0) * XBLOCK + gl.arange(0, XBLOCK, gl.SliceLayout(1, layout))
    cols = gl.arange(0, YBLOCK, gl.SliceLayout(0, layout))
    offs = rows[:, None] * YBLOCK + cols[None, :]
    mask = (rows[:, None] < xnumel) & (cols[None, :] < YBLOCK)
    x = gl.load(x_ptr + offs, mask=mask, other=0.0)

    gl.store(sums_ptr + rows, gl.sum(x, axis=1), mask=rows < xnumel)

    row_max = gl.max(x, axis=1)
    gl.store(centered_ptr + offs, x - broadcast_back(x, row_max, 1), mask=mask)

    # Quantize each register group with its own scale; nothing leaves the thread.
    x3 = x.reshape([XBLOCK, YBLOCK // REG, REG])
    scale = 127.0 / gl.maximum(group_max(gl.abs(x), REG), 1e-12)
    scale3 = broadcast_back(x3, scale, 2)
    q = (x3 * scale3).to(gl.int8)
    deq = (q.to(gl.float32) / scale3).reshape([XBLOCK, YBLOCK])
    gl.store(deq_ptr + offs, gl.convert_layout(deq, layout), mask=mask)
