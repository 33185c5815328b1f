"""Pointers as integers in Gluon, written for bwsim's tests: `ptr.to(gl.int64)` (`tt.ptr_to_int`)
and an integer cast back to a pointer (`tt.int_to_ptr`), as kernels that do address arithmetic in
bytes, check alignment, or receive a pointer as an `int64` argument (`x.data_ptr()`) do.

Each program copies its BLOCK f32 elements of `x` to `out`, reading them through a pointer
rebuilt from the byte address of its tile, and writes to `rems` the remainder modulo 16 of the
address of its tile's element `pid` (`4 * pid mod 16`: tensors are 16-byte aligned); `y_addr` is the address of `y` passed as an integer, whose
tile the program adds to the copy.

`BUG='next_tile'` rebuilds the address one tile too far: the last program reads past the end of
`x`, which on the GPU is an illegal address (the load at the rebuilt pointer).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def int_ptr_kernel(x_ptr, out_ptr, rems_ptr, y_addr, BLOCK: gl.constexpr, BUG: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0])
    pid = gl.program_id(0)
    offs = gl.arange(0, BLOCK, layout)
    # The tile's byte address: the base pointer as an integer plus the tile's bytes.
    tile = pid * BLOCK
    if BUG == "next_tile":
        tile = tile + BLOCK
    addr = x_ptr.to(gl.int64) + tile * 4
    gl.store(rems_ptr + pid, ((addr + pid * 4) % 16).to(gl.int32))
    x_tile = addr.to(gl.pointer_type(gl.float32))
    y_tile = (y_addr + pid * BLOCK * 4).to(gl.pointer_type(gl.float32))
    gl.store(out_ptr + pid * BLOCK + offs, gl.load(x_tile + offs) + gl.load(y_tile + offs))
