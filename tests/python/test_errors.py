"""Bad calls raise a Python exception that names the argument, never a panic or a hang; and
Triton missing or of another version is reported on import."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bwsim
import bwsim.gluon as bg
from conftest import HERE
from user_matmul import matmul_kernel


def descs(a_dtype=np.float16, c=None):
    a = np.zeros((128, 64), a_dtype)
    b = np.zeros((64, 128), a_dtype)
    c = np.zeros((128, 128), np.float32) if c is None else c
    return (
        bg.TensorDescriptor.from_tensor(a, [128, 64]),
        bg.TensorDescriptor.from_tensor(b, [64, 128]),
        bg.TensorDescriptor.from_tensor(c, [128, 128]),
    )


def raises(match: str):
    return pytest.raises(bwsim.ArgumentError, match=match)


def test_too_many_arguments():
    with raises(r"matmul_kernel\(\) takes 5 arguments .* but 6 were given"):
        bg.run(matmul_kernel, (1, 1), *descs(), 64, True, 3)


def test_missing_argument_is_named():
    with raises("misses argument `K`"):
        bg.run(matmul_kernel, (1, 1), *descs())


def test_unknown_keyword_is_named():
    with raises("no parameter `BLOCK`"):
        bg.run(matmul_kernel, (1, 1), *descs(), 64, BLOCK=3)


def test_wrong_argument_type_is_named():
    with raises("argument `K`: str is not an argument"):
        bg.run(matmul_kernel, (1, 1), *descs(), "64")
    with raises("argument `a_desc`: dtype float64 is not supported"):
        bg.run(matmul_kernel, (1, 1), np.zeros((4, 4)), *descs()[1:], 64)


def test_empty_and_0d_arrays_are_named():
    from scalar_kernels import scale_kernel

    with raises("argument `x_ptr`: the array is empty"):
        bg.run(scale_kernel, (1,), np.zeros(0, np.float32), np.zeros(128, np.float32), 1.0, 0, N=128)
    with raises("argument `y_ptr`: a 0-d array"):
        bg.run(scale_kernel, (1,), np.zeros(128, np.float32), np.zeros((), np.float32), 1.0, 0, N=128)


def test_unsupported_dtype_is_named():
    with raises("array: dtype float64 is not supported"):
        bg.TensorDescriptor.from_tensor(np.zeros((128, 64)), [128, 64])
    with raises("array: dtype complex64"):
        bg.TensorDescriptor.from_tensor(np.zeros((128, 64), np.complex64), [128, 64])


def test_non_contiguous_array_is_named():
    with raises("array: the array is not C-contiguous"):
        bg.TensorDescriptor.from_tensor(np.zeros((64, 128), np.float16).T, [64, 64])
    import gather_scatter

    offsets = np.zeros(256, np.int32)[::2]
    out = np.zeros((128, 128), np.float32)
    desc = bg.TensorDescriptor.from_tensor(np.zeros((256, 128), np.float32), [1, 128])
    with raises("argument `x_offsets_ptr`: the array is not C-contiguous"):
        bg.run(gather_scatter.async_gather_kernel, (1,), desc, offsets, 0, out, BLOCK_X=128)


@pytest.mark.parametrize(
    "block,match",
    [
        ([128, 48], "element 1 .48. is not a power of two"),
        ([512, 64], "exceeds the TMA box limit of 256"),
        ([128], "rank 1, but the array has rank 2"),
        ([128, "x"], "expected a list of ints"),
    ],
)
def test_invalid_block_shape_is_named(block, match):
    with raises("block_shape.*" + match):
        bg.TensorDescriptor.from_tensor(np.zeros((256, 128), np.float16), block)


def test_tma_byte_rules():
    with raises(r"block_shape \[32, 2\]: its last dimension is 8 bytes"):
        bg.TensorDescriptor.from_tensor(np.zeros((32, 64), np.float32), [32, 2])
    with raises("array: rows of 12 x 2 bytes"):
        bg.TensorDescriptor.from_tensor(np.zeros((8, 12), np.float16), [8, 8])


def test_bad_grid_target_chip():
    with raises("grid"):
        bg.run(matmul_kernel, (0,), *descs(), 64)
    with raises("target: `sm_80`"):
        bg.run(matmul_kernel, (1, 1), *descs(), 64, target="sm_80")
    with raises("chip: `a100`"):
        bg.time(matmul_kernel, (1, 1), *descs(), 64, chip="a100")
    with raises("kernel: expected a @gluon.jit function"):
        bg.run(print, (1,))


def test_overlapping_arrays_are_refused():
    a = np.zeros((256, 64), np.float16)
    c = np.zeros((128, 128), np.float32)
    with raises("argument `b_desc` overlaps argument `a_desc`"):
        bg.run(
            matmul_kernel,
            (1, 1),
            bg.TensorDescriptor.from_tensor(a[:128], [128, 64]),
            bg.TensorDescriptor.from_tensor(a, [128, 64]),
            bg.TensorDescriptor.from_tensor(c, [128, 128]),
            64,
        )


TANH = """
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def tanh_kernel(ptr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, 128, layout)
    x = gl.load(ptr + offs)
    y = gl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=gl.float32, is_pure=True, pack=1)
    gl.store(ptr + offs, y)
"""


def test_an_operation_bwsim_does_not_import_is_a_compile_error_at_its_line(tmp_path, monkeypatch):
    (tmp_path / "tanh_asm.py").write_text(TANH)
    monkeypatch.syspath_prepend(str(tmp_path))
    import tanh_asm

    x = np.zeros(128, np.float32)
    with pytest.raises(bwsim.CompileError) as e:
        bg.run(tanh_asm.tanh_kernel, (1,), x)
    d = e.value.diagnostics[0]
    assert d["code"] == "ttgir-unsupported-op", d
    assert "tanh.approx.f32" in d["message"] + str(d.get("notes", "")), d
    asm_line = next(i for i, line in enumerate(TANH.splitlines(), 1) if "inline_asm_elementwise" in line)
    assert d["file"].endswith("tanh_asm.py") and d["line"] == asm_line
    assert not x.any()


def run_with_fake_triton(tmp_path, body: str) -> subprocess.CompletedProcess:
    fake = tmp_path / "fake"
    if body:
        (fake / "triton").mkdir(parents=True)
        (fake / "triton" / "__init__.py").write_text(body)
    else:
        fake.mkdir()
        # A module that fails to import stands in for a missing package.
        (fake / "triton.py").write_text("raise ImportError('No module named triton')\n")
    code = textwrap.dedent("""
        import bwsim
        try:
            import bwsim.gluon
        except bwsim.TritonMissing as e:
            print("TritonMissing:", e)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake), *sys.path]))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=HERE, timeout=120, check=False
    )


def test_wrong_triton_version_is_reported(tmp_path):
    p = run_with_fake_triton(tmp_path, "__version__ = '3.5.1'\n")
    expected = (
        "TritonMissing: Triton 3.5.1 is installed, but bwsim reads the TTGIR of Triton 3.6.0, 3.7.x, 3.8.x"
        " and 3.9.x only"
    )
    assert expected in p.stdout, p
    assert "pip install triton==3.9.0" in p.stdout


def test_missing_triton_is_reported(tmp_path):
    p = run_with_fake_triton(tmp_path, "")
    assert "TritonMissing: bwsim compiles Gluon kernels with Triton, which is not installed" in p.stdout, p


UNDEFINED = """
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def undefined_kernel(x_ptr, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    gl.store(x_ptr + gl.arange(0, N, layout), undefined_name)
"""


def test_tritons_compile_errors_reach_the_caller_unchanged(tmp_path, monkeypatch):
    from triton.compiler.errors import CompilationError

    (tmp_path / "undefined.py").write_text(UNDEFINED)
    monkeypatch.syspath_prepend(str(tmp_path))
    import undefined

    with pytest.raises(CompilationError, match="undefined_name is not defined"):
        bg.run(undefined.undefined_kernel, (1,), np.zeros(128, np.float32), N=128)
