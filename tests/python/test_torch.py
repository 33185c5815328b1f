"""torch CPU tensors in and out, as docs/python.md promises, where torch is installed (the test
environments of scripts/test-python have no torch: these tests are skipped there)."""

import numpy as np
import pytest

import bwsim
import bwsim.gluon as bg
from spec_kernels import offset_copy_kernel
from test_matmul import K, M, N, matmul_kernel

torch = pytest.importorskip("torch")


def test_tensors_in_and_out():
    x = torch.randn(300)
    y = torch.zeros(300)
    r = bg.run(offset_copy_kernel, (3,), x, y, 2.5, 300, N=128)
    assert r.written == ["y_ptr"]
    torch.testing.assert_close(y, x + 2.5)


def test_descriptors_over_tensors_bwsims_and_tritons():
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    a = torch.randn(M, K).to(torch.float16)
    b = torch.randn(K, N).to(torch.float16)
    for own in (False, True):
        c = torch.zeros(M, N)
        blocks = ((a, [128, 64], gl.float16), (b, [64, 128], gl.float16), (c, [128, 128], gl.float32))
        if own:
            descs = [bg.TensorDescriptor.from_tensor(x, blk) for x, blk, _ in blocks]
        else:
            descs = [
                TensorDescriptor.from_tensor(x, blk, gl.NVMMASharedLayout.get_default_for(blk, dt))
                for x, blk, dt in blocks
            ]
        bg.run(matmul_kernel, (M // 128, N // 128), *descs, K)
        torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-4, atol=1e-3)


def test_bfloat16_tensors_travel_as_their_bits():
    x = torch.randn(256).to(torch.bfloat16)
    y = torch.zeros(256, dtype=torch.bfloat16)
    bg.run(offset_copy_kernel, (2,), x, y, 0.0, 256, N=128)
    np.testing.assert_array_equal(y.view(torch.int16).numpy(), x.view(torch.int16).numpy())


def test_gpu_tensors_are_refused():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = torch.zeros(128, device="cuda")
    with pytest.raises(bwsim.ArgumentError, match="CPU tensors"):
        bg.run(offset_copy_kernel, (1,), x, x, 1.0, 128, N=128)
