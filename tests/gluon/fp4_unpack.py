"""fp4 (e2m1) values unpacked in registers with `gl.fp4_to_fp`, written for bwsim's tests.

Each byte of the int8 tensors packs two e2m1 values, the low nibble first along the unpacked
axis. `cols` unpacks a [ROWS, COLS // 2] tile along its columns into bf16 [ROWS, COLS]; `rows`
unpacks a [ROWS // 2, COLS] tile along its rows into f16 [ROWS, COLS]. Both are stored as f32.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def fp4_unpack_kernel(a_ptr, b_ptr, cols_ptr, rows_ptr, ROWS: gl.constexpr, COLS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 2], [4, 8], [gl.num_warps(), 1], [1, 0])
    # Triton's lowering unpacks four bytes of a thread at a time.
    packed: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [gl.num_warps(), 1], [1, 0])
    r = gl.arange(0, ROWS, gl.SliceLayout(1, layout))
    c = gl.arange(0, COLS, gl.SliceLayout(0, layout))
    out = r[:, None] * COLS + c[None, :]

    pr = gl.arange(0, ROWS, gl.SliceLayout(1, packed))
    pc = gl.arange(0, COLS // 2, gl.SliceLayout(0, packed))
    a = gl.load(a_ptr + pr[:, None] * (COLS // 2) + pc[None, :])
    cols = gl.fp4_to_fp(a, gl.bfloat16, 1)
    gl.store(cols_ptr + out, gl.convert_layout(cols, layout).to(gl.float32))

    rh = gl.arange(0, ROWS // 2, gl.SliceLayout(1, packed))
    ph = gl.arange(0, COLS, gl.SliceLayout(0, packed))
    b = gl.load(b_ptr + rh[:, None] * COLS + ph[None, :])
    rows = gl.fp4_to_fp(b, gl.float16, 0)
    gl.store(rows_ptr + out, gl.convert_layout(rows, layout).to(gl.float32))
