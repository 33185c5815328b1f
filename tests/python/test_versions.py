"""The package under whichever supported Triton is installed (scripts/test runs this folder once per
release: 3.6.0, 3.7.1, 3.8.0 and 3.9.0): the release is accepted, an unsupported one refused with
one error naming the supported releases; arguments are specialized exactly as the installed
Triton's own launcher specializes them (pointers and ints divisible by 16, an int 1 a constexpr);
the TTGIR states its release; cluster launches (`num_ctas`) with `cga_layout` descriptors run and
check from Python."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import triton
from triton.backends.nvidia.compiler import CUDABackend
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as TritonDescriptor
from triton.language import str_to_ty
from triton.runtime.jit import create_function_from_signature

import bwsim
import bwsim.gluon as bg
from bwsim import _triton
from conftest import GLUON, HERE, at_lines, lines_of
from spec_kernels import offset_copy_kernel, signature_kernel

REPO = HERE.parent.parent
TRITON = tuple(int(x) for x in triton.__version__.split(".")[:2])
SUPPORTED = "3.6.0, 3.7.x, 3.8.x and 3.9.x"


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=300, check=False
    )


# ---- Which releases ----------------------------------------------------------------------------


def test_the_installed_triton_is_the_one_that_compiles():
    assert _triton.is_supported(triton.__version__)
    assert bg.TRITON_VERSION == triton.__version__
    assert bg.SUPPORTED_TRITON == SUPPORTED


@pytest.mark.parametrize("version", ["3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0", "3.9.1", "3.9.0+git1234abc"])
def test_supported_releases(version):
    assert _triton.is_supported(version)


@pytest.mark.parametrize("version", ["3.5.1", "3.5.0", "3.4.0", "3.10.0", "4.0.0", "2.3.1", "3.6.1", "unknown"])
def test_unsupported_releases(version):
    assert not _triton.is_supported(version)


def test_an_unsupported_triton_is_refused_naming_the_supported_ones(monkeypatch):
    monkeypatch.setattr(triton, "__version__", "3.5.1")
    with pytest.raises(bwsim.TritonMissing) as e:
        _triton.require_triton()
    assert "Triton 3.5.1 is installed" in str(e.value)
    assert SUPPORTED in str(e.value)
    assert isinstance(e.value, ImportError)


def test_importing_bwsim_gluon_under_an_unsupported_triton_raises_one_clear_error():
    # What a user with Triton 3.5.1 installed sees: `import bwsim` works, `bwsim.gluon` refuses.
    p = run_python("import triton; triton.__version__ = '3.5.1'; import bwsim; import bwsim.gluon")
    assert p.returncode == 1
    last = p.stderr.strip().splitlines()[-1]
    assert last == (
        f"bwsim.errors.TritonMissing: Triton 3.5.1 is installed, but bwsim reads the TTGIR of Triton {SUPPORTED} "
        "only: pip install triton==3.9.0 (or another supported release)"
    ), p.stderr
    # One error, not a chain of them.
    assert [ln for ln in p.stderr.splitlines() if re.match(r"\w[\w.]*(Error|Missing):", ln)] == [last]
    assert "During handling" not in p.stderr and "direct cause" not in p.stderr


def test_without_triton_bwsim_imports_and_bwsim_gluon_says_what_to_install():
    p = run_python(
        "import sys; sys.modules['triton'] = None\n"
        "import bwsim\n"
        "try:\n"
        "    import bwsim.gluon\n"
        "except bwsim.TritonMissing as e:\n"
        "    print(e)\n"
    )
    assert p.returncode == 0, p.stderr
    assert "Triton, which is not installed" in p.stdout and SUPPORTED in p.stdout
    assert "pip install triton==3.9.0" in p.stdout


def test_the_tool_refuses_an_unsupported_triton(tmp_path):
    tool = REPO / "tools" / "gluon_to_ttgir.py"
    argv = ["gluon_to_ttgir.py", "spec_kernels.py", "offset_copy_kernel", "-o", str(tmp_path / "k.ttgir")]
    p = run_python(
        "import runpy, sys, triton\n"
        "triton.__version__ = '3.5.1'\n"
        f"sys.argv = {argv!r}\n"
        f"runpy.run_path({str(tool)!r}, run_name='__main__')\n"
    )
    assert p.returncode == 2
    assert p.stderr.strip() == (
        f"gluon_to_ttgir: error: Triton 3.5.1 is installed, but bwsim reads the TTGIR of Triton {SUPPORTED} "
        "only: pip install triton==3.9.0 (or another supported release)"
    )
    assert not (tmp_path / "k.ttgir").exists()


def test_the_command_refuses_ttgir_of_an_unsupported_triton(tmp_path, rng):
    x = rng.standard_normal(256, dtype=np.float32)
    y = np.zeros_like(x)
    bg.run(offset_copy_kernel, (2,), x, y, 2.5, 256, N=128, workdir=tmp_path)
    ttgir = tmp_path / "offset_copy_kernel.sm_100a.ttgir"
    lines = ttgir.read_text().splitlines(keepends=True)
    assert lines[0] == f"// triton-version: {triton.__version__}\n"
    ttgir.write_text("// triton-version: 3.5.1\n" + "".join(lines[1:]))
    p = subprocess.run([bwsim.binary(), "check", str(ttgir)], capture_output=True, text=True, check=False)
    assert p.returncode != 0
    assert "Triton 3.5.1 is not supported" in p.stderr, p.stderr
    assert "3.6.0, 3.7.1, 3.8.0 and 3.9.0" in p.stderr, p.stderr


# ---- The launcher's specialization -------------------------------------------------------------


class _Tensor:
    """What Triton's launcher reads of a tensor: `data_ptr()` and `dtype`."""

    def __init__(self, dtype: str, address: int, shape=(64, 64)):
        self.name = dtype
        self.dtype = str_to_ty(dtype, None)
        self.address = address
        self.shape = list(shape)

    def data_ptr(self) -> int:
        return self.address

    def stride(self) -> list[int]:
        return [self.shape[1], 1]


def _ours(value):
    if isinstance(value, _Tensor):
        return _triton.Pointer(value.name, value.address)
    return value


CASES = [
    # p, q_any (no alignment specialization), n, n_plain (not specialized), n64 (annotated i64),
    # f, g (annotated fp32), flag, none
    (_Tensor("fp32", 1024), _Tensor("fp16", 1032), 32, 32, 48, 1.5, 2.0, True, None),
    (_Tensor("fp32", 1028), _Tensor("fp16", 1024), 1, 1, 1, -0.5, 1.0, False, None),
    (_Tensor("bf16", 2048), _Tensor("i32", 2056), 17, 16, 2**40, 0.0, -3.0, True, None),
    (_Tensor("u8", 4096 + 8), _Tensor("i64", 64), 2**31, 0, -16, 1e30, 7.0, False, None),
    (_Tensor("fp8e4nv", 48), _Tensor("fp8e5", 8), -(2**31), -(2**33), 0, 2.5, 0.5, True, None),
    (_Tensor("i16", 16), _Tensor("u8", 0), 0, 2**40, 17, -1.0, 4.0, False, None),
]


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_specialization_is_the_launchers(case):
    """bwsim's signature and divisibility marks for each argument are those the installed Triton's
    binder (`create_function_from_signature`, JITFunction.run's) computes."""
    binder = create_function_from_signature(signature_kernel.signature, signature_kernel.params, CUDABackend)
    _, theirs, _ = binder(*case, 4)
    for p, value, (ty, attr) in zip(signature_kernel.params, [*case, 4], theirs, strict=True):
        mine = _triton.specialize(p, _ours(value))
        if ty == "constexpr":
            assert mine.is_constexpr and mine.value == attr, (p.name, value, ty, attr, mine)
        else:
            assert (mine.type, mine.divisible) == (ty, attr == "D"), (p.name, value, ty, attr, mine)


@pytest.mark.parametrize(
    "dtype,block,cga",
    [
        ("fp16", [128, 64], None),
        ("fp32", [32, 64], None),
        ("bf16", [1, 128], None),
        ("fp8e4nv", [128, 128], None),
        ("fp16", [256, 64], [[1, 0]]),
        ("fp16", [64, 64], [[0, 0]]),
    ],
)
def test_descriptor_signature_is_the_launchers(dtype, block, cga):
    if cga is None:
        layout = gl.NVMMASharedLayout.get_default_for(block, str_to_ty(dtype, None))
    else:
        layout = gl.NVMMASharedLayout.get_default_for(block, str_to_ty(dtype, None), cga_layout=cga)
    base = _Tensor(dtype, 1024, (512, 256))
    theirs = TritonDescriptor(base, base.shape, base.stride(), block, layout)
    binder = create_function_from_signature(signature_kernel.signature, signature_kernel.params, CUDABackend)
    _, spec, _ = binder(theirs, *CASES[0][1:], 4)
    numpy_dtype = {"fp16": np.float16, "fp32": np.float32, "bf16": np.uint16, "fp8e4nv": np.uint8}[dtype]
    array = np.zeros((512, 256), numpy_dtype)
    if dtype in ("bf16", "fp8e4nv"):
        ml_dtypes = pytest.importorskip("ml_dtypes")
        array = array.view({"bf16": ml_dtypes.bfloat16, "fp8e4nv": ml_dtypes.float8_e4m3fn}[dtype])
    ours = bg.TensorDescriptor.from_tensor(array, block, cga_layout=cga)
    assert spec[0] == (ours.signature(), None)
    assert _triton.specialize(signature_kernel.params[0], _triton.Descriptor(ours.signature())).type == spec[0][0]


def _func_args(ttgir: str) -> dict[str, str]:
    """Each parameter of the kernel's `tt.func` and its type and attributes (`!tt.ptr<f32>
    {tt.divisibility = 16 : i32}`)."""
    head = ttgir[ttgir.index("tt.func public") :]
    head = head[: head.index("attributes {noinline")]
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"%([\w.]+): (.*?) loc\(", head)}


def test_the_ttgir_is_specialized_as_the_launcher_would(rng, tmp_path):
    buf = rng.standard_normal(300, dtype=np.float32)
    aligned = np.zeros(256, np.float32)
    assert aligned.__array_interface__["data"][0] % 16 == 0
    unaligned = buf[1:257]  # 4 bytes past a 16-byte boundary, or more: never a multiple of 16
    if unaligned.__array_interface__["data"][0] % 16 == 0:
        unaligned = buf[2:258]
    y = np.zeros(256, np.float32)
    cases = [
        # (x, offset, n): the marks Triton gives x_ptr, y_ptr, offset and n
        (aligned, 32, 200, {"x_ptr": True, "y_ptr": True, "offset": True, "n": False}),
        (unaligned, 17, 208, {"x_ptr": False, "y_ptr": True, "offset": False, "n": True}),
        (aligned, 1, 256, {"x_ptr": True, "y_ptr": True, "offset": None, "n": True}),
    ]
    for i, (x, offset, n, marks) in enumerate(cases):
        y[:] = 0
        wd = tmp_path / f"case{i}"
        bg.run(offset_copy_kernel, (2,), x, y, offset, n, N=128, workdir=wd)
        np.testing.assert_array_equal(y[:n], x[:n] + np.float32(offset))
        assert not y[n:].any()
        text = (wd / "offset_copy_kernel.sm_100a.ttgir").read_text()
        assert text.startswith(f"// triton-version: {triton.__version__}\n")
        args = _func_args(text)
        launch = (wd / "offset_copy_kernel.launch").read_text()
        for name, divisible in marks.items():
            if divisible is None:  # an int 1 is compiled as the constant: no parameter, no launch value
                assert name not in args, args
                assert f"  {name} = " not in launch
            else:
                assert ("tt.divisibility = 16" in args[name]) == divisible, (i, name, args[name])


# ---- Clusters: num_ctas and cga_layout ---------------------------------------------------------


def _load(path: Path):
    # The kernel's folder is importable, as tools/gluon_to_ttgir.py makes it: the 3.8 cluster
    # matmuls import their shared steps from 3.8/matmul_parts.py.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"bwsim_test_{path.parent.name.replace('.', '_')}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _multicast():
    """The two-CTA multicast matmul in the installed Triton's API (tests/gluon/3.7/ or 3.8/)."""
    if TRITON < (3, 7):
        pytest.skip(f"the multicast kernels are written for Triton 3.7 and later, not {triton.__version__}")
    path = GLUON / ("3.7" if TRITON < (3, 8) else "3.8") / "multicast_matmul.py"
    return path, _load(path).multicast_matmul_kernel


def _operands(rng, M, N, K, blocks, cga_layouts):
    """f16 a [M, K] and b [K, N] drawn from `rng`, c [M, N] zero, and their descriptors: the
    block shapes `blocks` and CGA layouts `cga_layouts` of a, b and c."""
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    descs = tuple(
        bg.TensorDescriptor.from_tensor(t, block, cga_layout=cga)
        for t, block, cga in zip((a, b, c), blocks, cga_layouts, strict=True)
    )
    return a, b, c, descs


def _cluster_operands(rng, M=512, N=64, K=128):
    blocks = ([256, 64], [64, 64], [256, 64])
    return _operands(rng, M, N, K, blocks, ([[1, 0]], [[0, 0]], [[1, 0]]))


def test_a_cluster_launch_is_triton_s(rng, tmp_path):
    """`num_ctas=2`: the kernel compiled for clusters of two CTAs (`ttg.num-ctas`), the launch of
    Triton's grid (2,) as CUDA's: four CTAs in clusters of two; the run computes a @ b."""
    _, kernel = _multicast()
    a, b, c, descs = _cluster_operands(rng)
    r = bg.run(kernel, (2,), *descs, 128, num_ctas=2, BUG="", workdir=tmp_path)
    launch = (tmp_path / "multicast_matmul_kernel.launch").read_text()
    assert "  grid = [4, 1, 1]\n  cluster = [2]\n" in launch
    assert '"ttg.num-ctas" = 2' in (tmp_path / "multicast_matmul_kernel.sm_100a.ttgir").read_text()
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)
    assert r.written == ["c_desc"]


def test_a_cluster_bug_is_found_at_its_line(rng):
    path, kernel = _multicast()
    _, _, _, descs = _cluster_operands(rng, M=256)
    if TRITON < (3, 8):
        bug, code = "no_cluster_init", "barrier-misuse"
    else:
        bug, code = "single_count", "write-while-in-flight"
    with pytest.raises(bwsim.HazardError) as e:
        bg.check(kernel, (1,), *descs, 128, num_ctas=2, BUG=bug, schedules=20)
    found = [d for d in e.value.diagnostics if d["code"] == code]
    assert found, str(e.value)
    load_b = set(lines_of(path, "multicast=True)")) & set(lines_of(path, "b_desc"))
    assert any(at_lines(d, path, load_b) for d in found), str(e.value)


def _pair_multicast():
    """Two CTA pairs in a cluster of four (tests/gluon/3.8/pair_multicast_matmul.py)."""
    if TRITON < (3, 8):
        pytest.skip(f"the two-pair kernel is written for Triton 3.8 and later, not {triton.__version__}")
    path = GLUON / "3.8" / "pair_multicast_matmul.py"
    return path, _load(path).pair_multicast_matmul_kernel


def _pair_operands(rng, M=512, N=256, K=128):
    blocks = ([256, 64], [64, 256], [256, 256])
    return _operands(rng, M, N, K, blocks, ([[1, 0], [0, 0]], [[0, 1], [0, 2]], [[1, 0], [0, 1]]))


def test_two_pairs_of_a_cluster_of_four_compute_their_tiles(rng, tmp_path):
    """`num_ctas=4` with two-CTA MMAs: two pairs per cluster, A multicast between them onto the
    pairs' load barriers; Triton's grid (2,) is eight CTAs in clusters of four; c = a @ b."""
    _, kernel = _pair_multicast()
    a, b, c, descs = _pair_operands(rng)
    bg.run(kernel, (2,), *descs, 128, num_ctas=4, BUG="", SEPARATE_COMMIT=False, workdir=tmp_path)
    launch = (tmp_path / "pair_multicast_matmul_kernel.launch").read_text()
    assert "  grid = [8, 1, 1]\n  cluster = [4]\n" in launch
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=1e-2, atol=2e-2)


def test_two_pairs_missing_each_others_commits_is_found_at_the_multicast(rng):
    path, kernel = _pair_multicast()
    _, _, _, descs = _pair_operands(rng, M=256)
    with pytest.raises(bwsim.HazardError) as e:
        bg.check(kernel, (1,), *descs, 128, num_ctas=4, BUG="no_mma_multicast", SEPARATE_COMMIT=False, schedules=8)
    found = [d for d in e.value.diagnostics if d["code"] == "write-while-in-flight"]
    assert found, str(e.value)
    load_a = set(lines_of(path, "multicast=True)")) & set(lines_of(path, "a_desc"))
    assert any(at_lines(d, path, load_a) for d in found), str(e.value)


def test_simulate_passes_num_ctas(rng):
    _, kernel = _multicast()
    a, b, c, descs = _cluster_operands(rng)
    with bg.simulate():
        kernel[(2,)](*descs, 128, BUG="", num_ctas=2)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_cluster_arguments_are_checked(rng):
    x = np.zeros((256, 64), np.float16)
    with pytest.raises(bwsim.ArgumentError, match="num_ctas: 3 is not a cluster size"):
        bg.run(offset_copy_kernel, (1,), x, x, 1.0, 1, N=128, num_ctas=3)
    with pytest.raises(bwsim.ArgumentError, match="cga_layout: give it to the layout"):
        layout = gl.NVMMASharedLayout.get_default_for([128, 64], gl.float16)
        bg.TensorDescriptor.from_tensor(x, [128, 64], layout=layout, cga_layout=[[1, 0]])
    with pytest.raises(bwsim.ArgumentError, match="one entry per dimension"):
        bg.TensorDescriptor.from_tensor(x, [128, 64], cga_layout=[[1]])
