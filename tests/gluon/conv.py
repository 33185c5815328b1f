"""A 2-D convolution as an implicit GEMM, written for bwsim's tests in the structure of Gluon
tutorial 13-conv-im2col, with the one change Triton 3.6 needs: it has no TMA im2col mode, so the
patch rows of each filter tap come from an ordinary 4-D tiled TMA load whose box is a rectangle
of input pixels, shifted by the tap; TMA fills the zero padding around the image (negative and
past-the-end coordinates read zeros).

y[n, h, w, co] = sum over (r, s, c) of x[n, h + r - PAD, w + s - PAD, c] * wt[co, (r * S + s) * C + c]
(NHWC, stride 1). One program computes a TILE_H x TILE_W rectangle of output pixels (the GEMM's
BLOCK_M = TILE_H * TILE_W rows) for BLOCK_N output channels. Per K step (a filter tap and a block
of BLOCK_C input channels) it brings the shifted [1, TILE_H, TILE_W, BLOCK_C] box of x and the
[BLOCK_N, BLOCK_C] block of weights by TMA, views the box as the [BLOCK_M, BLOCK_C] A operand (a
reshape of the shared buffer that merges its leading dimensions: the same bytes), and issues one
MMA; the epilogue stores the tile through a [1, TILE_H, TILE_W, BLOCK_N] buffer.

`conv2d_kernel` uses tcgen05 (sm_100a), `conv2d_wgmma_kernel` a synchronous warpgroup MMA (sm_90a).
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import fence_async_shared, mbarrier, tcgen05_mma, tma
from triton.experimental.gluon.language.nvidia.hopper import warpgroup_mma

from tcgen05_steps import allocate_f32_acc, allocate_step_barriers, read_acc, wait_mma
from wgmma_matmul import wgmma_zeros


@gluon.jit
def output_tile(x_desc, w_desc, H, W):
    # The program's output tile (image n, TILE_H x TILE_W pixels from (oh0, ow0), channels from co0)
    # and the shared buffers of its operands.
    TILE_H: gl.constexpr = x_desc.block_type.shape[1]
    TILE_W: gl.constexpr = x_desc.block_type.shape[2]
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    tiles_w = W // TILE_W
    tiles_per_image = (H // TILE_H) * tiles_w
    pid = gl.program_id(0)
    n = pid // tiles_per_image
    oh0 = (pid % tiles_per_image) // tiles_w * TILE_H
    ow0 = pid % tiles_w * TILE_W
    co0 = gl.program_id(1) * BLOCK_N
    x_smem = gl.allocate_shared_memory(x_desc.dtype, x_desc.block_type.shape, x_desc.layout)
    w_smem = gl.allocate_shared_memory(w_desc.dtype, w_desc.block_type.shape, w_desc.layout)
    return n, oh0, ow0, co0, x_smem, w_smem


@gluon.jit
def tap(rs, S: gl.constexpr):
    # Filter tap rs as its (row, column) in the R x S filter.
    return rs // S, rs % S


@gluon.jit
def load_tap(x_desc, w_desc, x_smem, w_smem, bar, phase, n, oh0, ow0, co0, r, s, rs, c0, C, PAD: gl.constexpr):
    # Filter tap rs = (r, s), input channels c0..: the tap's shifted box of x (rows and columns
    # outside the image read zeros) and its block of weights, waited for.
    mbarrier.expect(bar, x_desc.block_type.nbytes + w_desc.block_type.nbytes)
    tma.async_load(x_desc, [n, oh0 + r - PAD, ow0 + s - PAD, c0], bar, x_smem)
    tma.async_load(w_desc, [co0, rs * C + c0], bar, w_smem)
    mbarrier.wait(bar, phase)


@gluon.jit
def store_tile(y_desc, acc, n, oh0, ow0, co0):
    # The [TILE_H * TILE_W, BLOCK_N] accumulator rounded to y's type and stored by TMA.
    BLOCK_M: gl.constexpr = y_desc.block_type.shape[1] * y_desc.block_type.shape[2]
    BLOCK_N: gl.constexpr = y_desc.block_type.shape[3]
    y_smem = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_type.shape, y_desc.layout)
    y_smem.reshape([BLOCK_M, BLOCK_N]).store(acc.to(y_desc.dtype))
    fence_async_shared()
    tma.async_store(y_desc, [n, oh0, ow0, co0], y_smem)
    tma.store_wait(0)


@gluon.jit
def conv2d_kernel(x_desc, w_desc, y_desc, H, W, C, R: gl.constexpr, S: gl.constexpr, PAD: gl.constexpr):
    BLOCK_C: gl.constexpr = x_desc.block_type.shape[3]
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    BLOCK_M: gl.constexpr = x_desc.block_type.shape[1] * x_desc.block_type.shape[2]
    n, oh0, ow0, co0, x_smem, w_smem = output_tile(x_desc, w_desc, H, W)
    load_bar, mma_bar = allocate_step_barriers()
    acc_tmem = allocate_f32_acc(BLOCK_M, BLOCK_N)

    phase = 0
    use_acc = False
    for rs in range(R * S):
        r, s = tap(rs, S)
        for c0 in range(0, C, BLOCK_C):
            load_tap(x_desc, w_desc, x_smem, w_smem, load_bar, phase, n, oh0, ow0, co0, r, s, rs, c0, C, PAD)
            a = x_smem.reshape([BLOCK_M, BLOCK_C])
            tcgen05_mma(a, w_smem.permute((1, 0)), acc_tmem, use_acc=use_acc)
            phase = wait_mma(mma_bar, phase)
            use_acc = True

    store_tile(y_desc, read_acc(acc_tmem, load_bar, mma_bar), n, oh0, ow0, co0)


@gluon.jit
def conv2d_wgmma_kernel(x_desc, w_desc, y_desc, H, W, C, R: gl.constexpr, S: gl.constexpr, PAD: gl.constexpr):
    BLOCK_M: gl.constexpr = x_desc.block_type.shape[1] * x_desc.block_type.shape[2]
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    BLOCK_C: gl.constexpr = x_desc.block_type.shape[3]
    n, oh0, ow0, co0, x_smem, w_smem = output_tile(x_desc, w_desc, H, W)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    fence_async_shared()

    acc = wgmma_zeros(BLOCK_M, BLOCK_N)
    phase = 0
    for rs in range(R * S):
        r, s = tap(rs, S)
        for c0 in range(0, C, BLOCK_C):
            load_tap(x_desc, w_desc, x_smem, w_smem, bar, phase, n, oh0, ow0, co0, r, s, rs, c0, C, PAD)
            acc = warpgroup_mma(x_smem.reshape([BLOCK_M, BLOCK_C]), w_smem.permute((1, 0)), acc)
            phase ^= 1

    mbarrier.invalidate(bar)
    store_tile(y_desc, acc, n, oh0, ow0, co0)
