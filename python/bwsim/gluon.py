"""Run, check and time a `@gluon.jit` kernel on numpy arrays with bwsim, no GPU needed.

The kernel is compiled on the CPU by the installed Triton (3.6.0, 3.7.x, 3.8.x or 3.9.x) to TTGIR,
specialized for the arguments as Triton's launcher specializes them (arrays are global pointers,
16-byte aligned ones marked so, `TensorDescriptor`s are TMA descriptors, Python ints and floats are
scalars, an int 1 a constexpr, ints that are multiples of 16 marked so; constexprs come by
keyword). The arrays go
to the `bwsim` executable as `.npy` files next to the TTGIR and its launch sidecar; every array
the kernel wrote comes back into the caller's array.

    c = np.zeros((M, N), np.float32)
    bwsim.gluon.run(kernel, (grid,), a_desc, b_desc, c_desc, BLOCK_K=64)
    bwsim.gluon.check(kernel, (grid,), a_desc, b_desc, c_desc, BLOCK_K=64)  # HazardError
    bwsim.gluon.time(kernel, (grid,), a_desc, b_desc, c_desc, BLOCK_K=64, chip="gb200")
"""

from __future__ import annotations

import contextlib
import faulthandler
import hashlib
import inspect
import itertools
import math
import multiprocessing
import os
import pickle
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import _triton
from ._cli import call
from ._gpu import GpuResult, run_on_gpu
from .errors import (
    ArgumentError,
    BwsimError,
    CompileError,
    Deadlock,
    HazardError,
    KernelFault,
    LimitReached,
)

TARGETS = _triton.TARGETS
CHIPS = {"b200": "sm_100a", "gb200": "sm_100a", "h100": "sm_90a", "h200": "sm_90a"}
# The hazard checker's codes (stage `check` in docs/codes.md): an error with one of
# these is a HazardError, any other a CompileError.
HAZARD_CODES = frozenset(
    "race missing-fence read-before-complete write-while-in-flight phase-aliasing deadlock tx-mismatch "
    "over-arrival uninit-read barrier-misuse illegal-instruction tmem-leak".split()
)


#: The Triton releases bwsim reads ("3.6.0, 3.7.x, 3.8.x and 3.9.x").
SUPPORTED_TRITON = _triton.SUPPORTED_TEXT
#: The installed Triton's version, which compiles every kernel (a supported one, else importing
#: this module raised `TritonMissing`).
TRITON_VERSION = _triton.require_triton()


@dataclass(frozen=True)
class _DType:
    triton: str  # the name in Triton's signatures
    bwsim: str  # the launch tensor's element type
    storage: str  # the numpy type of the .npy exchanged with bwsim (raw bits where numpy has none)


# Keyed by numpy's dtype name (ml_dtypes names bfloat16 and the fp8 types) or torch's.
_DTYPES: dict[str, _DType] = {
    "float32": _DType("fp32", "f32", "float32"),
    "float16": _DType("fp16", "f16", "float16"),
    "bfloat16": _DType("bf16", "bf16", "uint16"),
    "float8_e4m3fn": _DType("fp8e4nv", "f8e4m3", "uint8"),
    "float8_e5m2": _DType("fp8e5", "f8e5m2", "uint8"),
    "bool": _DType("i1", "i1", "bool"),
    "int8": _DType("i8", "i8", "int8"),
    "int16": _DType("i16", "i16", "int16"),
    "int32": _DType("i32", "i32", "int32"),
    "int64": _DType("i64", "i64", "int64"),
    "uint8": _DType("u8", "u8", "uint8"),
    "uint16": _DType("u16", "u16", "uint16"),
    "uint32": _DType("u32", "u32", "uint32"),
    "uint64": _DType("u64", "u64", "uint64"),
}


@dataclass
class _Array:
    """A caller's array (numpy or torch CPU) and a numpy view of its storage bits."""

    obj: Any
    dtype_name: str
    dtype: _DType
    bits: np.ndarray  # shares memory with `obj`

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.bits.shape)

    @property
    def key(self) -> tuple[int, tuple[int, ...], str]:
        return (int(self.bits.__array_interface__["data"][0]), self.shape, self.dtype_name)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _as_array(what: str, x: Any) -> _Array:
    """`x` as an array bwsim can pass, or an `ArgumentError` naming `what`."""
    if _is_torch(x):
        import torch

        if x.device.type != "cpu":
            raise ArgumentError(f"{what}: a torch tensor on {x.device}; bwsim needs CPU tensors (x.cpu())")
        if not x.is_contiguous():
            raise ArgumentError(f"{what}: the tensor is not contiguous; pass x.contiguous()")
        name = str(x.dtype).removeprefix("torch.")
        if name not in _DTYPES:
            raise ArgumentError(f"{what}: dtype {name} is not supported (supported: {', '.join(_DTYPES)})")
        dt = _DTYPES[name]
        if name == "bfloat16":
            bits = x.detach().view(torch.int16).numpy().view(np.uint16)
        elif name.startswith("float8"):
            bits = x.detach().view(torch.uint8).numpy()
        else:
            bits = x.detach().numpy()
        return _Array(x, name, dt, bits)
    if not isinstance(x, np.ndarray):
        raise ArgumentError(f"{what}: expected a numpy array, got {type(x).__name__}")
    name = x.dtype.name
    if name not in _DTYPES:
        raise ArgumentError(
            f"{what}: dtype {name} is not supported (supported: {', '.join(_DTYPES)}; "
            "bfloat16 and fp8 through ml_dtypes or torch)"
        )
    if not x.flags.c_contiguous:
        raise ArgumentError(f"{what}: the array is not C-contiguous; pass np.ascontiguousarray(x)")
    if x.ndim == 0:
        raise ArgumentError(f"{what}: a 0-d array; pass a Python scalar, or an array with a dimension")
    if x.size == 0:
        raise ArgumentError(f"{what}: the array is empty; a launch tensor needs at least one element")
    dt = _DTYPES[name]
    return _Array(x, name, dt, x.view(np.dtype(dt.storage)))


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _row_major_strides(shape: Sequence[int]) -> list[int]:
    """The element strides of a C-contiguous array of `shape`."""
    return [int(math.prod(shape[i + 1 :])) for i in range(len(shape))]


class TensorDescriptor:
    """A TMA tensor descriptor over a whole numpy array (or torch CPU tensor), as Gluon's.

    `layout` is the shared-memory layout of a block, by default
    `NVMMASharedLayout.get_default_for(block_shape, dtype, cga_layout=cga_layout)`. A kernel
    launched with `num_ctas` > 1 (a cluster) splits a block between the CTAs of the cluster by its
    layout's `cga_layout`: `[[1, 0]]` halves the rows between two CTAs, `[[0, 0]]` gives each CTA
    the whole block (what a multicast load delivers).
    """

    def __init__(
        self,
        base: Any,
        shape: Sequence[int],
        strides: Sequence[int],
        block_shape: Sequence[int],
        layout: Any = None,
        padding: str = "zero",
        cga_layout: Sequence[Sequence[int]] | None = None,
    ) -> None:
        arr = _as_array("TensorDescriptor base", base)
        self.base = base
        self.shape = [int(d) for d in shape]
        self.strides = [int(s) for s in strides]
        if self.shape != list(arr.shape):
            raise ArgumentError(
                f"TensorDescriptor shape {self.shape}: bwsim describes the whole array, of shape {list(arr.shape)}"
            )
        c_strides = _row_major_strides(arr.shape)
        if self.strides != c_strides:
            raise ArgumentError(f"TensorDescriptor strides {self.strides}: the array's are {c_strides}")
        self.block_shape = _check_block_shape(block_shape, arr)
        from triton.experimental.gluon import language as gl

        if layout is None:
            layout = _default_layout(self.block_shape, arr.dtype.triton, cga_layout)
        elif not isinstance(layout, gl.NVMMASharedLayout):
            raise ArgumentError(f"layout: expected a gl.NVMMASharedLayout, got {type(layout).__name__}")
        elif cga_layout is not None:
            raise ArgumentError("cga_layout: give it to the layout you pass (NVMMASharedLayout(..., cga_layout=...))")
        if padding not in ("zero", "nan"):
            raise ArgumentError(f"padding: `{padding}` is neither 'zero' nor 'nan'")
        if padding == "nan":
            raise ArgumentError("padding: 'nan' is not simulated by bwsim; use 'zero'")
        self.layout = layout
        self.padding = padding
        self._array = arr

    @staticmethod
    def from_tensor(
        array: Any,
        block_shape: Sequence[int],
        layout: Any = None,
        padding: str = "zero",
        cga_layout: Sequence[Sequence[int]] | None = None,
    ) -> TensorDescriptor:
        """A descriptor over all of `array`, moving blocks of `block_shape`."""
        shape = list(_as_array("array", array).shape)
        return TensorDescriptor(array, shape, _row_major_strides(shape), block_shape, layout, padding, cga_layout)

    def signature(self) -> str:
        """Triton's signature string of this descriptor (`tensordesc<fp16[128, 64],...>`)."""
        return _triton.descriptor_signature(self._array.dtype.triton, self.block_shape, self.layout)

    def __repr__(self) -> str:
        return (
            f"TensorDescriptor(shape={self.shape}, block_shape={self.block_shape}, "
            f"dtype={self._array.dtype_name}, layout={self.layout!r})"
        )


def _check_block_shape(block_shape: Sequence[int], arr: _Array) -> list[int]:
    try:
        block = [int(b) for b in block_shape]
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"block_shape: expected a list of ints, got {block_shape!r}") from e
    if len(block) != len(arr.shape):
        raise ArgumentError(f"block_shape {block}: rank {len(block)}, but the array has rank {len(arr.shape)}")
    if not 1 <= len(block) <= 5:
        raise ArgumentError(f"block_shape {block}: a TMA descriptor has rank 1 to 5")
    for i, b in enumerate(block):
        if not _is_power_of_two(b):
            raise ArgumentError(f"block_shape {block}: element {i} ({b}) is not a power of two")
        if b > 256:
            raise ArgumentError(f"block_shape {block}: element {i} ({b}) exceeds the TMA box limit of 256")
    item = np.dtype(arr.dtype.storage).itemsize
    if (block[-1] * item) % 16:
        raise ArgumentError(
            f"block_shape {block}: its last dimension is {block[-1] * item} bytes; a TMA box's is a multiple of 16"
        )
    if len(arr.shape) > 1 and (arr.shape[-1] * item) % 16:
        raise ArgumentError(
            f"array: rows of {arr.shape[-1]} x {item} bytes; TMA needs every stride but the last "
            "to be a multiple of 16 bytes"
        )
    return block


def _default_layout(block: list[int], dtype: str, cga_layout: Sequence[Sequence[int]] | None) -> Any:
    if cga_layout is not None:
        try:
            bases = [[int(x) for x in basis] for basis in cga_layout]
        except (TypeError, ValueError) as e:
            raise ArgumentError(f"cga_layout: expected a list of bases such as [[1, 0]], got {cga_layout!r}") from e
        if any(len(basis) != len(block) for basis in bases):
            raise ArgumentError(f"cga_layout {bases}: each basis has one entry per dimension of the block {block}")
        cga_layout = bases
    try:
        return _triton.default_layout(block, dtype, cga_layout)
    except TypeError as e:
        if cga_layout is None:
            raise
        raise ArgumentError(f"cga_layout: Triton {TRITON_VERSION}'s NVMMASharedLayout has no cga_layout ({e})") from e


def _as_descriptor(what: str, x: Any) -> TensorDescriptor | None:
    """Ours, or Triton's own (`triton.experimental.gluon.nvidia.hopper.TensorDescriptor`)."""
    if isinstance(x, TensorDescriptor):
        return x
    if all(hasattr(x, a) for a in ("base", "block_shape", "layout", "shape", "strides")):
        if getattr(x, "mode", "tiled") != "tiled":
            raise ArgumentError(f"{what}: a {x.mode} TMA descriptor; bwsim simulates tiled ones")
        if getattr(x, "round_f32_to_tf32", False):
            raise ArgumentError(f"{what}: round_f32_to_tf32 is not simulated by bwsim")
        try:
            return TensorDescriptor(x.base, x.shape, x.strides, x.block_shape, x.layout, getattr(x, "padding", "zero"))
        except ArgumentError as e:
            raise ArgumentError(f"{what}: {e}") from e
    return None


# ---------------------------------------------------------------------------------------------
# A launch: the compiled kernel, its sidecar and its input files.


@dataclass
class _Tensor:
    name: str
    array: _Array
    args: list[str] = field(default_factory=list)


@dataclass
class _Launch:
    dir: Path
    ttgir: Path
    tensors: list[_Tensor]
    target: str

    def input_flags(self) -> list[str]:
        flags = []
        for t in self.tensors:
            path = self.dir / f"in_{t.name}.npy"
            np.save(path, t.array.bits, allow_pickle=False)
            flags += ["--input", f"{t.name}={path}"]
        return flags


def _kernel_name(kernel: Any) -> str:
    return getattr(getattr(kernel, "fn", None), "__name__", None) or getattr(kernel, "__name__", "kernel")


def _bind(kernel: Any, args: Sequence[Any], kwargs: dict[str, Any], num_warps: int) -> dict[str, Any]:
    """Arguments by parameter name, as Python binds a call (constexpr defaults filled in)."""
    name = _kernel_name(kernel)
    params = list(kernel.params)
    names = [p.name for p in params]
    if len(args) > len(params):
        raise ArgumentError(f"{name}() takes {len(params)} arguments ({', '.join(names)}) but {len(args)} were given")
    bound: dict[str, Any] = dict(zip(names, args, strict=False))
    for k, v in kwargs.items():
        if k not in names:
            raise ArgumentError(f"{name}() has no parameter `{k}` (its parameters: {', '.join(names)})")
        if k in bound:
            raise ArgumentError(f"{name}() got two values for argument `{k}`")
        bound[k] = v
    for p in params:
        if p.name in bound:
            continue
        if p.is_constexpr and p.name == "num_warps":
            bound[p.name] = num_warps
        elif p.has_default:
            bound[p.name] = p.default
        elif p.is_constexpr:
            raise ArgumentError(f"{name}() misses constexpr argument `{p.name}` (pass {p.name}=... by keyword)")
        else:
            raise ArgumentError(f"{name}() misses argument `{p.name}`")
    return bound


def _grid(grid: Any, bound: dict[str, Any]) -> list[int]:
    g = grid(bound) if callable(grid) else grid
    if isinstance(g, (int, np.integer)):
        g = (g,)
    try:
        dims = [int(x) for x in g]
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"grid: expected an int or a tuple of 1 to 3 ints, got {g!r}") from e
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise ArgumentError(f"grid {tuple(dims)}: 1 to 3 positive sizes")
    return dims + [1] * (3 - len(dims))


def _scalar(what: str, v: Any) -> bool | int | float:
    """`v` as the Python scalar Triton's launcher takes (numpy scalars become Python's)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        v = int(v)
        if not -(2**63) <= v < 2**63:
            raise ArgumentError(f"{what}: {v} does not fit in a signed 64-bit integer")
        return v
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(float(v)):
            raise ArgumentError(f"{what}: {v} is not a finite float")
        return float(v)
    raise ArgumentError(
        f"{what}: {type(v).__name__} is not an argument bwsim can pass "
        "(numpy arrays, TensorDescriptor, int, float, bool)"
    )


def _literal(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    text = repr(float(v))
    if "e" in text or "E" in text:
        text = f"{float(v):.17f}".rstrip("0")
    if "." not in text:
        text += ".0"
    return text if not text.endswith(".") else text + "0"


def _cache_dir(kernel: Any) -> str:
    """A Triton cache of this kernel's source file alone. Triton's cache key is the source
    text, not its path, and the TTGIR it returns carries the file locations of the copy that
    was compiled first: the same kernel in two checkouts would point diagnostics at the other."""
    try:
        path = inspect.getsourcefile(getattr(kernel, "fn", kernel)) or "?"
    except TypeError:
        path = "?"
    key = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), "bwsim-triton-cache", key)


@dataclass(frozen=True)
class _Compile:
    """What Triton compiles: the kernel, its specialized signature and the options."""

    kernel: Any
    signature: dict[str, str]
    constexprs: dict[str, Any]
    attrs: dict[tuple[int, ...], list[list[Any]]]
    target: str
    num_warps: int
    num_ctas: int


def _compile_here(c: _Compile) -> str:
    before = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = _cache_dir(c.kernel)
    try:
        return _triton.compile_ttgir(c.kernel, c.signature, c.constexprs, c.attrs, c.target, c.num_warps, c.num_ctas)
    finally:
        if before is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = before


def _compile_child(conn: Any, stderr_path: str, c: _Compile) -> None:
    # What Triton's compiler prints before it aborts goes to the parent's message.
    faulthandler.disable()
    with open(stderr_path, "w") as err:
        os.dup2(err.fileno(), 2)
    try:
        conn.send(("ok", _compile_here(c)))
    except BaseException as e:  # noqa: BLE001 - every failure goes back to the parent
        try:
            pickle.loads(pickle.dumps(e))
            conn.send(("err", e))
        except Exception:  # noqa: BLE001 - an exception that does not pickle goes back as text
            conn.send(("err", CompileError(f"{type(e).__name__}: {e}")))
    finally:
        conn.close()


def _compile(c: _Compile) -> str:
    """Triton's TTGIR of the kernel. Triton runs in a forked child where the platform has fork:
    some kernels make its compiler abort the process (tcgen05 compiled for sm_90a), which must
    cost the caller an exception, not the interpreter."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return _compile_here(c)
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    with tempfile.TemporaryDirectory(prefix="bwsim-triton-") as d:
        stderr_path = os.path.join(d, "stderr")
        child = ctx.Process(target=_compile_child, args=(send, stderr_path, c), daemon=True)
        child.start()
        send.close()
        try:
            kind, payload = recv.recv()
        except (EOFError, OSError):
            kind, payload = "died", None
        finally:
            recv.close()
            child.join()
        said = Path(stderr_path).read_text(errors="replace").strip() if os.path.exists(stderr_path) else ""
    if kind == "ok":
        return str(payload)
    if kind == "err":
        raise payload
    tail = "\n".join(said.splitlines()[-12:])
    raise CompileError(
        f"Triton's compiler stopped the process (exit status {child.exitcode}) while compiling "
        f"`{_kernel_name(c.kernel)}` for {c.target}; does the kernel use an operation the target lacks "
        f"(tcgen05 on sm_90a)?" + (f"\nTriton said:\n{tail}" if tail else "")
    )


def _prepare(
    kernel: Any,
    grid: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    num_warps: int,
    num_ctas: int,
    target: str,
    workdir: Path,
) -> _Launch:
    if not hasattr(kernel, "params") or not getattr(kernel, "is_gluon", lambda: False)():
        raise ArgumentError(f"kernel: expected a @gluon.jit function, got {type(kernel).__name__}")
    if target not in TARGETS:
        raise ArgumentError(f"target: `{target}` is not one of {', '.join(TARGETS)}")
    if not isinstance(num_warps, int) or not _is_power_of_two(num_warps):
        raise ArgumentError(f"num_warps: {num_warps!r} is not a power of two")
    if not isinstance(num_ctas, int) or not _is_power_of_two(num_ctas) or num_ctas > 16:
        raise ArgumentError(f"num_ctas: {num_ctas!r} is not a cluster size (a power of two, at most 16)")
    bound = _bind(kernel, args, kwargs, num_warps)
    dims = _grid(grid, bound)
    # Triton's launcher runs `grid` clusters of `num_ctas` CTAs along x (CUDA's grid counts CTAs).
    dims[0] *= num_ctas
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    specs: dict[str, _triton.ArgSpec] = {}
    tensors: list[_Tensor] = []
    lines: list[str] = []
    by_key: dict[tuple[int, tuple[int, ...], str], _Tensor] = {}

    def tensor_of(param: str, arr: _Array) -> _Tensor:
        t = by_key.get(arr.key)
        if t is None:
            for other in tensors:
                if np.shares_memory(other.array.bits, arr.bits):
                    raise ArgumentError(
                        f"argument `{param}` overlaps argument `{other.args[0]}` without being the same array"
                    )
            t = _Tensor(f"{param}_data", arr)
            by_key[arr.key] = t
            tensors.append(t)
        t.args.append(param)
        return t

    # Each parameter specialized as Triton's launcher specializes it (`_triton.specialize`): a
    # pointer or an int marked divisible by 16 when it is, an int 1 compiled as a constexpr.
    for p in kernel.params:
        v = bound[p.name]
        what = f"argument `{p.name}`"
        if p.is_constexpr:
            spec = _triton.specialize(p, v)
        elif (desc := _as_descriptor(what, v)) is not None:
            if desc._array.key[0] % 16:
                raise ArgumentError(f"{what}: the descriptor's base is not 16-byte aligned, as TMA requires")
            spec = _triton.specialize(p, _triton.Descriptor(desc.signature()))
            lines.append(f"  {p.name} = {tensor_of(p.name, desc._array).name}")
        elif isinstance(v, np.ndarray) or _is_torch(v):
            arr = _as_array(what, v)
            spec = _triton.specialize(p, _triton.Pointer(arr.dtype.triton, arr.key[0]))
            lines.append(f"  {p.name} = {tensor_of(p.name, arr).name}")
        else:
            scalar = None if v is None else _scalar(what, v)
            spec = _triton.specialize(p, scalar)
            if not spec.is_constexpr:
                lines.append(f"  {p.name} = {_literal(scalar)}")
        specs[p.name] = spec
        signature[p.name] = spec.type
        if spec.is_constexpr:
            constexprs[p.name] = spec.value

    attrs = _triton.divisibility_attrs(kernel.params, specs)
    ttgir = _compile(_Compile(kernel, signature, constexprs, attrs, target, num_warps, num_ctas))
    name = re.sub(r"\W", "_", _kernel_name(kernel))
    path = workdir / f"{name}.{target}.ttgir"
    path.write_text(ttgir)
    decls = [
        f"  tensor {t.name}: {t.array.dtype.bwsim}[{', '.join(str(d) for d in t.array.shape)}] = zeros()"
        for t in tensors
    ]
    launch = [
        f"// Launch of {name}, written by bwsim.gluon.",
        "launch {",
        f"  grid = [{', '.join(str(d) for d in dims)}]",
        *([f"  cluster = [{num_ctas}]"] if num_ctas > 1 else []),
        *decls,
        *lines,
        f"  outputs = [{', '.join(t.name for t in tensors)}]",
        "}",
        "",
    ]
    (workdir / f"{name}.launch").write_text("\n".join(launch))
    return _Launch(workdir, path, tensors, target)


@contextlib.contextmanager
def _workdir(workdir: str | os.PathLike[str] | None) -> Iterator[Path]:
    if workdir is not None:
        p = Path(workdir)
        p.mkdir(parents=True, exist_ok=True)
        yield p.resolve()
    else:
        with tempfile.TemporaryDirectory(prefix="bwsim-") as d:
            yield Path(d)


# ---------------------------------------------------------------------------------------------
# Diagnostics and results.


def _diagnostic(d: dict[str, Any], seed: int | None = None, replay: str | None = None) -> dict[str, Any]:
    prim = d.get("primary") or {}
    line, col = (prim.get("line_col") or [0, 0])[:2]
    return {
        "code": d.get("code", ""),
        "message": d.get("message", ""),
        "severity": str(d.get("severity", "")).lower(),
        "level": str(d.get("level", d.get("severity", ""))).lower(),
        "default_level": str(d.get("default_level", "")).lower(),
        "file": prim.get("file", ""),
        "line": int(line),
        "column": int(col),
        "label": prim.get("message", ""),
        "labels": [
            {
                "file": lab.get("file", ""),
                "line": int((lab.get("line_col") or [0, 0])[0]),
                "column": int((lab.get("line_col") or [0, 0])[1]),
                "message": lab.get("message", ""),
            }
            for lab in d.get("labels", [])
        ],
        "notes": list(d.get("notes", [])),
        "help": d.get("help"),
        "seed": seed,
        "replay": replay,
        "rendered": d.get("rendered", ""),
    }


Codes = str | Sequence[str] | None
"""A code (`"uninit-read"`), several, or none: what `deny=`, `warn=` and `allow=` take."""


def _level_flags(deny: Codes, warn: Codes, allow: Codes) -> list[str]:
    """`--deny CODE ...` for the keyword arguments, as `bwsim check --help` describes them:
    `deny` makes codes errors (`"warnings"`: every warning), `warn` makes lints warnings,
    `allow` silences lints. bwsim refuses unknown codes and conflicting levels."""
    flags: list[str] = []
    for flag, codes in (("--deny", deny), ("--warn", warn), ("--allow", allow)):
        if codes is None:
            continue
        names = [codes] if isinstance(codes, str) else list(codes)
        for n in names:
            if not isinstance(n, str) or not n:
                raise ArgumentError(f"{flag[2:]}: {n!r} is not a diagnostic code (a str such as 'uninit-read')")
            flags += [flag, n]
    return flags


def _python_replay(text: str, ttgir: Path) -> str:
    """The CLI's replay hint (`bwsim check TMP.ttgir --seed N`) as the Python call."""
    return re.sub(
        re.escape(f"bwsim check {ttgir}") + r" --seed (\d+)",
        r"bwsim.gluon.check(kernel, grid, *args, seed=\1)",
        text,
    )


@dataclass
class RunResult:
    """What `run` returns: the outcome, the step count and the simulator's counters."""

    outcome: str
    steps: int
    counters: dict[str, Any]
    diagnostics: list[dict[str, Any]]
    wall_seconds: float
    grid: list[int]
    target: str
    written: list[str]
    """The arguments whose arrays the kernel changed (and bwsim wrote back)."""
    json: dict[str, Any] = field(repr=False)


@dataclass
class CheckReport:
    """What a clean `check` returns; warnings, if any, are in `diagnostics`."""

    schedules: int
    seconds: float
    diagnostics: list[dict[str, Any]]
    json: dict[str, Any] = field(repr=False)


def _static_failure(out: dict[str, Any]) -> CompileError:
    diags = [_diagnostic(d) for d in out.get("diagnostics", [])]
    text = "\n".join(d["rendered"].rstrip("\n") for d in diags) or "bwsim refused the kernel"
    return CompileError(text, diags)


def _raise_for_outcome(out: dict[str, Any]) -> None:
    if "outcome" not in out:
        raise _static_failure(out)
    outcome = out["outcome"]
    diags = [_diagnostic(d) for d in out.get("diagnostics", [])]
    errors = [d for d in diags if d["severity"] == "error"]
    if outcome == "Completed" and out.get("ok", True):
        return
    if outcome == "Trapped" and out.get("trap"):
        raise KernelFault(out["trap"])
    if outcome == "Deadlock":
        raise Deadlock([d for d in diags if d["code"] == "deadlock"] or diags)
    if isinstance(outcome, dict) and "LimitReached" in outcome:
        raise LimitReached("\n".join(d["rendered"].rstrip("\n") for d in diags) or f"stopped: {outcome}")
    if errors:
        raise HazardError(errors)
    raise BwsimError(f"the run ended with {outcome}: {out.get('result', '')}")


def _write_back(launch: _Launch, outdir: Path) -> list[str]:
    written = []
    for t in launch.tensors:
        path = outdir / f"{t.name}.npy"
        if not path.exists():
            continue
        got = np.load(path, allow_pickle=False)
        if got.shape != t.array.bits.shape or got.dtype != t.array.bits.dtype:
            raise BwsimError(f"bwsim returned {t.name} as {got.dtype}{list(got.shape)}")
        if got.tobytes() != t.array.bits.tobytes():
            np.copyto(t.array.bits, got)
            written += t.args
    return written


def run(
    kernel: Any,
    grid: Any,
    *args: Any,
    num_warps: int = 4,
    num_ctas: int = 1,
    target: str = "sm_100a",
    seed: int = 0,
    trace: str | os.PathLike[str] | None = None,
    chrome: str | os.PathLike[str] | None = None,
    workdir: str | os.PathLike[str] | None = None,
    device: str = "sim",
    deny: Codes = None,
    warn: Codes = None,
    allow: Codes = None,
    **constexprs: Any,
) -> RunResult | GpuResult:
    """Simulate `kernel[grid](*args, **constexprs)` and write the arrays it wrote back.

    Raises `KernelFault` on a trap, `Deadlock` when every agent blocks, `HazardError` when the
    run stops at an error diagnostic, `CompileError` when bwsim cannot import the kernel.
    `trace` / `chrome` write the event trace (text, or Chrome JSON for Perfetto); `workdir`
    keeps the TTGIR, launch sidecar and arrays there instead of a temporary directory.
    `num_warps` and `num_ctas` are Triton's launch options: `num_ctas` > 1 runs every program
    of `grid` as a cluster of that many CTAs.

    `device="gpu"` runs bwsim's PTX of the kernel on the local GPU (whose architecture must be
    `target`'s) and the simulator on the same arrays, writes the GPU's outputs back and returns
    the comparison as a `GpuResult`; raises `NoGpu` without a suitable GPU and `GpuMismatch`
    when the two differ (`bwsim gpu`).
    `deny`, `warn`, `allow` set diagnostic levels as `bwsim run --deny CODE` does.
    """
    levels = _level_flags(deny, warn, allow)
    if device not in ("sim", "gpu"):
        raise ArgumentError(f"device: `{device}` is neither 'sim' nor 'gpu'")
    with _workdir(workdir) as wd:
        launch = _prepare(kernel, grid, args, constexprs, num_warps, num_ctas, target, wd)
        if device == "gpu":
            return run_on_gpu(launch, seed, wd / "gpu_out", _write_back)
        outdir = wd / "out"
        cmd = ["run", str(launch.ttgir), "--seed", str(int(seed)), "--save-outputs", str(outdir)]
        if trace is not None:
            cmd += ["--trace", os.fspath(Path(trace).resolve())]
        if chrome is not None:
            cmd += ["--chrome", os.fspath(Path(chrome).resolve())]
        _, out, _ = call(cmd + levels + launch.input_flags())
        _raise_for_outcome(out)
        written = _write_back(launch, outdir)
    counters = out.get("counters", {})
    return RunResult(
        outcome=str(out["outcome"]).lower(),
        steps=int(counters.get("steps", 0)),
        counters=counters,
        diagnostics=[_diagnostic(d) for d in out.get("diagnostics", [])],
        wall_seconds=float(out.get("wall_seconds", 0.0)),
        grid=list(out.get("grid", [])),
        target=target,
        written=written,
        json=out,
    )


def check(
    kernel: Any,
    grid: Any,
    *args: Any,
    schedules: int = 200,
    seed: int | None = None,
    jobs: int | None = None,
    num_warps: int = 4,
    num_ctas: int = 1,
    target: str = "sm_100a",
    workdir: str | os.PathLike[str] | None = None,
    deny: Codes = None,
    warn: Codes = None,
    allow: Codes = None,
    **constexprs: Any,
) -> CheckReport:
    """Run the hazard checker over `schedules` schedules (or replay one with `seed=`).

    Raises `HazardError` when any error is found; its `.diagnostics` point at your Python
    lines. Returns a `CheckReport` when there is none: warnings (an `uninit-read`, by
    default) are in its `diagnostics`. Levels work as `bwsim check --deny/--warn/--allow`:
    `deny=["uninit-read"]` makes a code an error, `deny="warnings"` every warning,
    `warn=`/`allow=` make a lint a warning or silence it. Arrays are read, never written.
    """
    if not isinstance(schedules, int) or schedules < 1:
        raise ArgumentError(f"schedules: {schedules!r} is not a positive int")
    levels = _level_flags(deny, warn, allow)
    with _workdir(workdir) as wd:
        launch = _prepare(kernel, grid, args, constexprs, num_warps, num_ctas, target, wd)
        cmd = ["check", str(launch.ttgir)]
        if seed is not None:
            cmd += ["--seed", str(int(seed))]
        else:
            cmd += ["--schedules", str(schedules)]
        if jobs is not None:
            cmd += ["--jobs", str(int(jobs))]
        _, out, _ = call(cmd + levels + launch.input_flags())
    if "findings" in out:
        diags = []
        for f in out["findings"]:
            d = _diagnostic(f["diagnostic"], f.get("seed"), None)
            d["replay"] = f"bwsim.gluon.check(kernel, grid, *args, seed={f.get('seed')})"
            d["rendered"] = _python_replay(d["rendered"], launch.ttgir)
            diags.append(d)
    elif "seed" in out and "diagnostics" in out:
        diags = [_diagnostic(d, out["seed"]) for d in out["diagnostics"]]
    else:
        raise _static_failure(out)
    if any(d["severity"] == "error" for d in diags):
        # Errors first, then in source order, as a compiler lists them.
        diags.sort(key=lambda d: (d["severity"] != "error", d["file"], d["line"], d["column"]))
        raise HazardError(diags)
    return CheckReport(
        schedules=int(out.get("schedules", 1)),
        seconds=float(out.get("seconds", 0.0)),
        diagnostics=diags,
        json=out,
    )


def time(
    kernel: Any,
    grid: Any,
    *args: Any,
    chip: str = "gb200",
    num_warps: int = 4,
    num_ctas: int = 1,
    target: str | None = None,
    timing_only: bool = False,
    chrome: str | os.PathLike[str] | None = None,
    workdir: str | os.PathLike[str] | None = None,
    sweep: Mapping[str, Sequence[Any]] | None = None,
    **constexprs: Any,
) -> dict[str, Any]:
    """The timing model's prediction for `chip` (b200, gb200, h100, h200) as a dict: cycles,
    microseconds, TFLOP/s or TB/s, unit utilisation, the critical resource.

    A functional run checks the kernel first (skipped with `timing_only=True`). The target is
    the chip's (sm_100a for B200/GB200, sm_90a for H100/H200) unless given.

    `sweep={"NUM_STAGES": [2, 3, 4], "num_warps": [4, 8]}` compiles and times every combination
    of the listed constexpr values (and `num_warps`, `num_ctas`) through Triton, timing only, and
    returns `{"chip": ..., "configs": [...]}`, fastest first: each configuration's values, its
    `microseconds`, `tflops` or `tbps`, `critical` resource, `slowdown` against the fastest and
    the full `report`, or its `error` when Triton or bwsim refuses it (it is then listed last).
    """
    if chip not in CHIPS:
        raise ArgumentError(f"chip: `{chip}` is not one of {', '.join(CHIPS)}")
    if sweep is not None:
        return _sweep(kernel, grid, args, chip, num_warps, num_ctas, target, workdir, sweep, constexprs)
    with _workdir(workdir) as wd:
        launch = _prepare(kernel, grid, args, constexprs, num_warps, num_ctas, target or CHIPS[chip], wd)
        cmd = ["time", str(launch.ttgir), "--chip", chip]
        if timing_only:
            cmd.append("--timing-only")
        if chrome is not None:
            cmd += ["--chrome", os.fspath(Path(chrome).resolve())]
        _, out, _ = call(cmd + launch.input_flags())
    if out.get("ok") is False:
        diags = [_diagnostic(d) for d in out.get("diagnostics", [])]
        errors = [d for d in diags if d["severity"] == "error"]
        if any(d["code"] in HAZARD_CODES for d in errors):
            raise HazardError(errors)
        raise _static_failure(out)
    return out


def _sweep(
    kernel: Any,
    grid: Any,
    args: Sequence[Any],
    chip: str,
    num_warps: int,
    num_ctas: int,
    target: str | None,
    workdir: str | os.PathLike[str] | None,
    sweep: Mapping[str, Sequence[Any]],
    constexprs: dict[str, Any],
) -> dict[str, Any]:
    """`time(..., sweep=...)`: every combination timed, ranked."""
    names = list(sweep)
    for n in names:
        if n in constexprs:
            raise ArgumentError(f"sweep: `{n}` is also given as a constexpr")
        if isinstance(sweep[n], (str, bytes)) or len(sweep[n]) == 0:
            raise ArgumentError(f"sweep: `{n}` needs a non-empty list of values")
    configs: list[dict[str, Any]] = []
    for values in itertools.product(*(list(sweep[n]) for n in names)):
        config = dict(zip(names, values, strict=True))
        launch = {"num_warps": num_warps, "num_ctas": num_ctas}
        launch.update({k: int(v) for k, v in config.items() if k in launch})
        consts = {**constexprs, **{k: v for k, v in config.items() if k not in launch}}
        row: dict[str, Any] = {"config": config}
        try:
            out = time(
                kernel,
                grid,
                *args,
                chip=chip,
                target=target,
                timing_only=True,
                workdir=workdir,
                num_warps=launch["num_warps"],
                num_ctas=launch["num_ctas"],
                **consts,
            )
        except Exception as e:  # noqa: BLE001 (a configuration Triton or bwsim refuses is a row)
            row["error"] = f"{type(e).__name__}: {e}"
        else:
            for k in ("microseconds", "tflops", "tbps", "critical"):
                row[k] = out.get(k)
            row["report"] = out
        configs.append(row)
    timed = sorted((c for c in configs if "error" not in c), key=lambda c: c["microseconds"])
    best = timed[0]["microseconds"] if timed else 0.0
    for c in timed:
        c["slowdown"] = c["microseconds"] / best if best else 1.0
    return {"chip": chip, "configs": timed + [c for c in configs if "error" in c]}


@contextlib.contextmanager
def simulate(check: bool = False, schedules: int = 50, target: str = "sm_100a") -> Iterator[None]:
    """Inside the block, `kernel[grid](...)` of any `@gluon.jit` kernel runs on bwsim (after
    the hazard checker over `schedules` schedules when `check`), with your arrays or CPU
    tensors, bwsim's or Triton's `TensorDescriptor`s."""
    from triton.experimental.gluon._runtime import GluonJITFunction

    original = GluonJITFunction.run
    checking = check

    def run_on_bwsim(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> RunResult | None:
        if warmup:
            return None
        num_warps = int(kwargs.pop("num_warps", 4))
        num_ctas = int(kwargs.pop("num_ctas", 1))
        for option in ("num_stages", "maxnreg", "debug", "instrumentation_mode"):
            kwargs.pop(option, None)
        launch = {"num_warps": num_warps, "num_ctas": num_ctas, "target": target}
        if checking:
            _check_fn(self, grid, *args, schedules=schedules, **launch, **kwargs)
        return run(self, grid, *args, **launch, **kwargs)

    GluonJITFunction.run = run_on_bwsim  # type: ignore[method-assign]
    try:
        yield
    finally:
        GluonJITFunction.run = original  # type: ignore[method-assign]


_check_fn: Callable[..., CheckReport] = check
