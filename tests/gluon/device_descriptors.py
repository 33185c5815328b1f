"""Tensor descriptors built on the device (`tma.make_tensor_descriptor`), written for bwsim's tests.

`grouped_scale_kernel` is the pattern of grouped and mixture-of-experts GEMMs, reduced to a copy:
the rows of x are split into groups (group g is rows `starts[g]` to `starts[g + 1]`), and
program g scales its group's rows by `scales[g]` into out. The kernel has no descriptor
arguments: each program builds a descriptor over its own group's rows of x and of out, so the
group's last row bounds every TMA copy (a load past it reads zeros, a store past it writes
nothing), whatever the group's size.

Triton's TMA lowering (part of making the TTGIR) turns each `make_tensor_descriptor` into a
128-byte global scratch buffer (`ttg.global_scratch_alloc`), the tensor map written into it
(`ttng.tensormap_create`), the tensormap-proxy acquire fence (`ttng.tensormap_fenceproxy_acquire`)
and the buffer read as a descriptor (`ttng.reinterpret_tensor_descriptor`), all at the call's line.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma


@gluon.jit
def grouped_scale_kernel(x_ptr, out_ptr, starts_ptr, scales_ptr, N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    g = gl.program_id(0)
    start = gl.load(starts_ptr + g)
    rows = gl.load(starts_ptr + g + 1) - start
    scale = gl.load(scales_ptr + g)
    smem_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_N], gl.float32)
    # The group's rows of x and of out, as descriptors built here.
    x_desc = tma.make_tensor_descriptor(x_ptr + start * N, shape=[rows, N], strides=[N, 1],
                                        block_shape=[BLOCK_M, BLOCK_N], layout=smem_layout)
    out_desc = tma.make_tensor_descriptor(out_ptr + start * N, shape=[rows, N], strides=[N, 1],
                                          block_shape=[BLOCK_M, BLOCK_N], layout=smem_layout)

    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    in_buf = gl.allocate_shared_memory(gl.float32, [BLOCK_M, BLOCK_N], smem_layout)
    out_buf = gl.allocate_shared_memory(gl.float32, [BLOCK_M, BLOCK_N], smem_layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    phase = 0
    for m in range(0, rows, BLOCK_M):
        for n in range(0, N, BLOCK_N):
            mbarrier.expect(bar, BLOCK_M * BLOCK_N * 4)
            tma.async_load(x_desc, [m, n], bar, in_buf)
            mbarrier.wait(bar, phase)
            phase ^= 1
            x = in_buf.load(layout)
            # The previous block's TMA store has read out_buf.
            tma.store_wait(0)
            out_buf.store(x * scale)
            fence_async_shared()
            tma.async_store(out_desc, [m, n], out_buf)
    tma.store_wait(0)
    mbarrier.invalidate(bar)
