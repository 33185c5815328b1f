"""The seed tutorials' kernels (tests/gluon/*.py) launched from host code written for numpy, each
output compared with a numpy reference computed from the tutorial's semantics."""

import ml_dtypes
import numpy as np
import pytest
from triton.experimental.gluon import language as gl

import bwsim
import bwsim.gluon as bg
from conftest import GLUON, lines_of


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@pytest.mark.parametrize("target", ["sm_100a", "sm_90a"])
@pytest.mark.parametrize(
    "kernel,buffers",
    [
        ("elementwise_add_tma_kernel", {"NUM_BUFFERS": 2}),
        ("elementwise_add_ws_kernel", {"NUM_LOAD_BUFFERS": 2, "NUM_STORE_BUFFERS": 2}),
    ],
)
def test_elementwise_add(rng, target, kernel, buffers):
    import elementwise_add

    xnumel, ynumel, XBLOCK, YBLOCK = 200, 300, 32, 64  # ragged edges in both dimensions
    a = rng.standard_normal((xnumel, ynumel), dtype=np.float32)
    b = rng.standard_normal((xnumel, ynumel), dtype=np.float32)
    c = np.zeros_like(a)
    descs = [bg.TensorDescriptor.from_tensor(x, [XBLOCK, YBLOCK]) for x in (a, b, c)]
    fn = getattr(elementwise_add, kernel)
    bg.run(fn, (cdiv(xnumel, XBLOCK),), *descs, xnumel, ynumel, XBLOCK=XBLOCK, YBLOCK=YBLOCK, target=target, **buffers)
    np.testing.assert_array_equal(c, a + b)


MATMUL_SHAPE = (208, 416, 304)  # not multiples of the blocks: TMA clips and zero-fills


def matmul_operands(rng):
    M, N, K = MATMUL_SHAPE
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    return a, b, c


def descriptors(*arrays_and_blocks):
    """A TensorDescriptor of each (array, block shape) pair."""
    return tuple(bg.TensorDescriptor.from_tensor(x, block) for x, block in arrays_and_blocks)


def matmul_reference(a, b):
    return (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)


@pytest.mark.parametrize("target", ["sm_100a", "sm_90a"])
@pytest.mark.parametrize(
    "kernel", ["matmul_pipelined_kernel", "persistent_matmul_kernel", "persistent_matmul_pipelined_kernel"]
)
def test_persistence_matmuls(rng, target, kernel):
    import persistence

    a, b, c = matmul_operands(rng)
    M, N, _ = MATMUL_SHAPE
    descs = descriptors((a, [128, 64]), (b, [64, 256]), (c, [128, 256]))
    consts = {"MMAImpl": persistence.MMAv5 if target == "sm_100a" else persistence.WGMMA, "num_buffers": 3}
    if kernel == "matmul_pipelined_kernel":
        grid = (cdiv(M, 128), cdiv(N, 256))
    else:
        grid = (3,)  # three programs, each walking several tiles
        consts["SchedulerImpl"] = persistence.PersistentTileScheduler
        if kernel == "persistent_matmul_pipelined_kernel":
            consts["STEALB"] = False
    bg.run(getattr(persistence, kernel), grid, *descs, num_warps=8, target=target, **consts)
    np.testing.assert_allclose(c.astype(np.float32), matmul_reference(a, b).astype(np.float32), rtol=1e-2, atol=1e-2)


def test_warp_specialized_matmul(rng):
    import persistence
    import warp_specialization

    a, b, c = matmul_operands(rng)
    descs = descriptors((a, [128, 64]), (b, [64, 256]), (c, [128, 64]))
    bg.run(
        warp_specialization.matmul_warp_specialized_kernel,
        (4,),
        *descs,
        SchedulerImpl=persistence.PersistentTileScheduler,
        num_buffers=4,
        SUBTILE_FACTOR=4,
    )
    np.testing.assert_allclose(c.astype(np.float32), matmul_reference(a, b).astype(np.float32), rtol=1e-2, atol=1e-2)


def test_tcgen05_copy_round_trip(rng):
    import tcgen05_copy

    M, N = 128, 64
    x = rng.standard_normal((M, N), dtype=np.float32)
    y = np.zeros_like(x)
    bg.run(
        tcgen05_copy.tcgen05_copy_kernel,
        (1,),
        x,
        y,
        M=M,
        N=N,
        smem_layout=gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=32, rank=2),
        tmem_layout=tcgen05_copy.TensorMemoryLayout(block=(M, N), col_stride=1),
    )
    np.testing.assert_array_equal(y, x)


def gather_operands(rng):
    X = Y = 1024
    BLOCK_X, BLOCK_Y = 128, 128
    src = rng.standard_normal((X, Y)).astype(ml_dtypes.bfloat16)
    # Some rows out of bounds on both sides: TMA gathers zeros for them.
    offsets = rng.permutation(np.linspace(-X, 2 * X, BLOCK_X).astype(np.int32))
    out = np.full((BLOCK_X, BLOCK_Y), 7, ml_dtypes.bfloat16)
    layout = gl.NVMMASharedLayout.get_default_for([BLOCK_X, BLOCK_Y], gl.bfloat16)
    desc = bg.TensorDescriptor.from_tensor(src, [1, BLOCK_Y], layout)
    return src, offsets, out, desc


def test_async_gather_bf16(rng):
    import gather_scatter

    src, offsets, out, desc = gather_operands(rng)
    y_offset = 48
    bg.run(gather_scatter.async_gather_kernel, (1,), desc, offsets, y_offset, out, BLOCK_X=128)
    expected = np.zeros(out.shape, np.float32)
    for i, x in enumerate(offsets):
        if 0 <= x < src.shape[0]:
            expected[i] = src[x, y_offset : y_offset + 128].astype(np.float32)
    np.testing.assert_array_equal(out.astype(np.float32), expected)


def test_misaligned_gather_is_a_kernel_fault_at_the_python_line(rng):
    import gather_scatter

    _, offsets, out, desc = gather_operands(rng)
    before = out.copy()
    with pytest.raises(bwsim.KernelFault) as e:
        # 2 bf16 columns are 4 bytes: gather4 needs 16-byte aligned columns.
        bg.run(gather_scatter.async_gather_kernel, (1,), desc, offsets, 2, out, BLOCK_X=128)
    assert "illegal instruction" in e.value.error
    assert e.value.file.endswith("gather_scatter.py")
    assert e.value.line in lines_of(GLUON / "gather_scatter.py", "tma.async_gather(")
    assert e.value.reason
    np.testing.assert_array_equal(out.astype(np.float32), before.astype(np.float32))


def test_async_scatter_bf16(rng):
    import gather_scatter

    X = Y = 1024
    dst = rng.standard_normal((X, Y)).astype(ml_dtypes.bfloat16)
    before = dst.copy()
    # Distinct rows, the upper half out of bounds: TMA drops those rows.
    offsets = rng.permutation(np.linspace(0, 2 * X, 128).astype(np.int32))
    src = rng.standard_normal((128, 128)).astype(ml_dtypes.bfloat16)
    layout = gl.NVMMASharedLayout.get_default_for([128, 128], gl.bfloat16)
    desc = bg.TensorDescriptor.from_tensor(dst, [1, 128], layout)
    y_offset = 48
    r = bg.run(gather_scatter.async_scatter_kernel, (1,), desc, offsets, y_offset, src, BLOCK_X=128)
    assert r.written == ["tensor_desc"]
    expected = before.astype(np.float32)
    for i, x in enumerate(offsets):
        if x < X:
            expected[x, y_offset : y_offset + 128] = src[i].astype(np.float32)
    np.testing.assert_array_equal(dst.astype(np.float32), expected)


def test_gemm_async_reads_b_transposed(rng):
    import gemm_async

    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((128, 64)).astype(np.float16)  # stored [N, K]
    out = np.zeros((128, 128), np.float32)
    bg.run(
        gemm_async.gemm_async_kernel,
        (1,),
        bg.TensorDescriptor.from_tensor(a, [128, 64]),
        bg.TensorDescriptor.from_tensor(b, [128, 64]),
        out,
    )
    np.testing.assert_allclose(out, a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-4, atol=1e-3)


def test_matmul_accumulate(rng):
    import tcgen05_copy

    M = N = K = 256
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = rng.standard_normal((M, N), dtype=np.float32)
    d = np.zeros((M, N), np.float32)
    descs = descriptors((a, [128, 64]), (b, [64, 128]), (c, [128, 128]))
    bg.run(
        tcgen05_copy.matmul_accumulate_kernel,
        (4,),
        *descs,
        d,
        N,
        1,
        SchedulerImpl=tcgen05_copy.GroupedPersistentTileScheduler(8),
        num_buffers=3,
    )
    np.testing.assert_allclose(d, a.astype(np.float32) @ b.astype(np.float32) + c, rtol=1e-4, atol=1e-3)


def test_matmul_fused_gather_scatter(rng):
    import gather_scatter

    M = N = K = 256
    x = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    out = np.zeros((M, N), ml_dtypes.bfloat16)
    gather = rng.permutation(M).astype(np.int32)
    scatter = rng.permutation(M).astype(np.int32)
    descs = (
        bg.TensorDescriptor.from_tensor(x, [1, 64], gl.NVMMASharedLayout.get_default_for([128, 64], gl.bfloat16)),
        bg.TensorDescriptor.from_tensor(w, [64, 128]),
        bg.TensorDescriptor.from_tensor(out, [1, 128], gl.NVMMASharedLayout.get_default_for([128, 128], gl.bfloat16)),
    )
    bg.run(
        gather_scatter.matmul_fused_gather_scatter_kernel,
        (4,),
        *descs,
        gather,
        scatter,
        BLOCK_M=128,
        SchedulerImpl=gather_scatter.GroupedPersistentTileScheduler(8),
        num_buffers=3,
    )
    # Row i of the product of the gathered rows lands in row scatter[i].
    expected = np.zeros((M, N), np.float32)
    expected[scatter] = x.astype(np.float32)[gather] @ w.astype(np.float32)
    np.testing.assert_allclose(out.astype(np.float32), expected, rtol=2e-2, atol=2e-2)
