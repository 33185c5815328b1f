"""What bwsim needs of Triton, in one place for the Python package (`bwsim.gluon`) and
tools/gluon_to_ttgir.py: which releases it reads, how Triton's launcher turns arguments into a
kernel signature, descriptor signatures, and the compile call to TTGIR.

Importing this module does not import Triton; each function that needs it imports it.

The releases: bwsim reads the TTGIR of Triton 3.6.0 and of every patch release of 3.7, 3.8 and
3.9 (the project tests 3.6.0, 3.7.1, 3.8.0 and 3.9.0). Their compile entry points are the same
(`GluonASTSource(fn, signature, constexprs, attrs)`, `triton.compile(src, target=GPUTarget(...),
options={"num_warps", "num_ctas"})`), and so are their launchers' specialization rules, which
`specialize` mirrors (tests/python/test_versions.py compares it with the installed Triton's own
`native_specialize_impl`). A release that changes either gets its branch here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import TritonMissing

#: The releases bwsim reads: an exact version, or MAJOR.MINOR for any patch release of it.
SUPPORTED: tuple[str, ...] = ("3.6.0", "3.7", "3.8", "3.9")
#: The same, for messages.
SUPPORTED_TEXT = "3.6.0, 3.7.x, 3.8.x and 3.9.x"
#: The patch release of each line that the project tests with, oldest first.
TESTED: tuple[str, ...] = ("3.6.0", "3.7.1", "3.8.0", "3.9.0")
#: The release to install (the one current PyTorch requires).
NEWEST = TESTED[-1]
#: The compile targets and their compute capabilities.
TARGETS: dict[str, int] = {"sm_100a": 100, "sm_90a": 90}


def is_supported(version: str) -> bool:
    """Whether bwsim reads the TTGIR of Triton `version` (`3.9.0`, `3.9.1+git1234`, `3.7.0rc1`)."""
    release = version.split("+")[0]
    release = re.sub(r"(a|b|rc|\.dev|\.post)\d*$", "", release)
    for supported in SUPPORTED:
        if release == supported or (supported.count(".") == 1 and release.startswith(supported + ".")):
            return True
    return False


def require_triton() -> str:
    """The installed Triton's version, or `TritonMissing` naming the supported releases."""
    try:
        import triton
    except ImportError as e:
        raise TritonMissing(
            f"bwsim compiles Gluon kernels with Triton, which is not installed; bwsim reads the TTGIR of "
            f"Triton {SUPPORTED_TEXT}: pip install triton=={NEWEST}"
        ) from e
    version = str(getattr(triton, "__version__", "unknown"))
    if not is_supported(version):
        raise TritonMissing(
            f"Triton {version} is installed, but bwsim reads the TTGIR of Triton {SUPPORTED_TEXT} only: "
            f"pip install triton=={NEWEST} (or another supported release)"
        )
    return version


def version_header(version: str) -> str:
    """The first line of every TTGIR file bwsim's tools write: the Triton that compiled it."""
    return f"// triton-version: {version}\n"


# ---------------------------------------------------------------------------------------------
# The launcher's specialization: what `kernel[grid](*args)` compiles for the arguments it gets.


@dataclass(frozen=True)
class Pointer:
    """A global pointer argument: an array's element type (Triton's name: `fp16`, `i32`, ...)
    and its address."""

    dtype: str
    address: int


@dataclass(frozen=True)
class Descriptor:
    """A TMA descriptor argument, by its signature (`tensordesc<fp16[128, 64],NVMMASharedLayout(...)>`)."""

    signature: str


@dataclass(frozen=True)
class ArgSpec:
    """How one parameter is compiled: its signature type (`i32`, `*fp16`, `tensordesc<...>`, or
    `constexpr` with `value`), and whether it carries `tt.divisibility = 16`."""

    type: str
    divisible: bool = False
    value: Any = None

    @property
    def is_constexpr(self) -> bool:
        return self.type == "constexpr"


def _launcher_rule(value: Any, is_const: bool, specialize: bool, align: bool) -> tuple[str, Any]:
    """Triton's `native_specialize_impl(backend, value, is_const, specialize, align)` for the
    arguments bwsim passes, as Triton 3.6 to 3.9 implement it (identically):

    - `None` is a constexpr; a bool is `u1`; a float `fp32`; neither is specialized.
    - An int is `i32` in [-2**31, 2**31), `i64` in [-2**63, 2**63), `u64` below 2**64. When
      specialized, 1 becomes the constexpr 1 and a multiple of 16 (0 included) is marked `D`
      (divisible by 16) unless alignment specialization is off.
    - A pointer is `*DTYPE` (`*kDTYPE` for a `const` parameter), marked `D` when its address is
      a multiple of 16 (`data_ptr() % 16 == 0`), again only when specialized and aligned.
    - A descriptor is its own signature, never marked.
    """
    if value is None:
        return "constexpr", None
    if isinstance(value, Descriptor):
        return value.signature, None
    if isinstance(value, Pointer):
        ty = ("*k" if is_const else "*") + value.dtype
        if not specialize:
            return ty, None
        return ty, "D" if align and value.address % 16 == 0 else ""
    if isinstance(value, bool):
        return "u1", None
    if isinstance(value, int):
        if specialize and value == 1:
            return "constexpr", 1
        if -(2**31) <= value < 2**31:
            ty = "i32"
        elif -(2**63) <= value < 2**63:
            ty = "i64"
        elif 0 <= value < 2**64:
            ty = "u64"
        else:
            raise ValueError(f"{value} does not fit in 64 bits")
        if not specialize:
            return ty, None
        return ty, "D" if align and value % 16 == 0 else ""
    if isinstance(value, float):
        return "fp32", None
    raise TypeError(f"{type(value).__name__} is not an argument Triton's launcher specializes")


def specialize(param: Any, value: Any) -> ArgSpec:
    """The signature type and attributes Triton's launcher gives parameter `param` (a
    `KernelParam` of the kernel) for `value` (a Python scalar, `None`, a `Pointer` or a
    `Descriptor`), as `JITFunction`'s binder computes them (`create_function_from_signature`):
    constexpr parameters take the value; a parameter annotated with a type (`n: gl.int64`) keeps
    that type, unspecialized if it is a float or a bool; `do_not_specialize` and
    `do_not_specialize_on_alignment` of the kernel are honoured."""
    if getattr(param, "is_constexpr", False):
        return ArgSpec("constexpr", value=value)
    is_const = bool(getattr(param, "is_const", False))
    spec = not getattr(param, "do_not_specialize", False)
    align = not getattr(param, "do_not_specialize_on_alignment", False)
    annotated = getattr(param, "annotation_type", "")
    if isinstance(annotated, str) and annotated:
        if annotated == "u1" or annotated[:2] in ("fp", "bf") or not spec:
            return ArgSpec(annotated)
        _, attr = _launcher_rule(value, is_const, spec, align)
        return ArgSpec(annotated, divisible=attr == "D")
    ty, attr = _launcher_rule(value, is_const, spec, align)
    if ty == "constexpr":
        return ArgSpec("constexpr", value=attr)
    return ArgSpec(ty, divisible=attr == "D")


def divisibility_attrs(params: Sequence[Any], specs: dict[str, ArgSpec]) -> dict[tuple[int, ...], list[list[Any]]]:
    """The `attrs` of `GluonASTSource`, as `JITFunction.run` hands them to `triton.compile`:
    `{(index,): [["tt.divisibility", 16]]}` for every marked parameter."""
    return {(i,): [["tt.divisibility", 16]] for i, p in enumerate(params) if specs[p.name].divisible}


# ---------------------------------------------------------------------------------------------
# Descriptors.


def default_layout(block_shape: Sequence[int], dtype: str, cga_layout: Sequence[Sequence[int]] | None = None) -> Any:
    """`NVMMASharedLayout.get_default_for(block_shape, dtype)` of the installed Triton, split
    over the CTAs of a cluster by `cga_layout` (`[[1, 0]]`: the rows halved between two CTAs,
    `[[0, 0]]`: both CTAs get the whole block, for multicast)."""
    from triton.experimental.gluon import language as gl
    from triton.language import str_to_ty

    ty = str_to_ty(dtype, None)
    shape = [int(d) for d in block_shape]
    if cga_layout is None:
        return gl.NVMMASharedLayout.get_default_for(shape, ty)
    bases = [[int(x) for x in basis] for basis in cga_layout]
    return gl.NVMMASharedLayout.get_default_for(shape, ty, cga_layout=bases)


def descriptor_signature(dtype: str, block_shape: Sequence[int], layout: Any) -> str:
    """Triton's signature of a TMA descriptor (`tensordesc<fp16[128, 64],NVMMASharedLayout(...)>`),
    as its launcher writes it for a Gluon `TensorDescriptor`."""
    return f"tensordesc<{dtype}[{', '.join(str(int(b)) for b in block_shape)}],{layout!r}>"


# ---------------------------------------------------------------------------------------------
# Compiling.


def compile_ttgir(
    fn: Any,
    signature: dict[str, str],
    constexprs: dict[str, Any],
    attrs: dict[tuple[int, ...], list[list[Any]]],
    target: str,
    num_warps: int,
    num_ctas: int = 1,
    debug: bool = False,
) -> str:
    """The TTGIR Triton compiles `fn` (a `@gluon.jit` kernel) to for `target`, first line
    `// triton-version: X.Y.Z`, ending with a newline. `debug`: Triton's `debug` option (device
    assertions are compiled in, `tt.assert`)."""
    version = require_triton()
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    src = GluonASTSource(fn, signature=signature, constexprs=constexprs, attrs=attrs)
    options = {"num_warps": int(num_warps), "num_ctas": int(num_ctas)}
    if debug:
        options["debug"] = True
    compiled = triton.compile(src, target=GPUTarget("cuda", TARGETS[target], 32), options=options)
    text = version_header(version) + str(compiled.asm["ttgir"])
    return text if text.endswith("\n") else text + "\n"


def allocate_shared_memory(ttgir: str) -> str:
    """`ttgir` (as `compile_ttgir` returns it) after Triton's shared-memory allocation pass, the
    first step of its lowering to LLVM: each `ttg.local_alloc` and each operation with shared
    scratch (a layout conversion across warps, a reduction, ...) gains `allocation.offset`, the
    scratch users `allocation.size` from Triton 3.9 on, and the module `ttg.shared`. The pass
    runs on the printed module through Triton's Python bindings; nothing is recompiled."""
    import tempfile

    from triton._C.libtriton import ir, passes

    header, _, body = ttgir.partition("\n")
    if not header.startswith("// triton-version"):
        header, body = "", ttgir
    ctx = ir.context()
    ir.load_dialects(ctx)
    try:  # the NVIDIA dialects (ttng), where the bindings load them separately
        from triton._C.libtriton import nvidia

        nvidia.load_dialects(ctx)
    except (ImportError, AttributeError):
        pass
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "kernel.ttgir")
        with open(path, "w") as f:
            f.write(body)
        module = ir.parse_mlir_module(path, ctx)
    pm = ir.pass_manager(ctx)
    passes.ttgpuir.add_allocate_shared_memory(pm)
    pm.run(module, "allocate_shared_memory")
    text = str(module)
    text = text if text.endswith("\n") else text + "\n"
    return (header + "\n" if header else "") + text


def portable_path(path: str, base: str) -> str:
    """A source path of compiler output made independent of the machine: an absolute path of a
    file of the Triton package becomes `<triton>/...`, any other absolute path is made relative to
    `base`; a relative path stays as it is."""
    import triton

    if not os.path.isabs(path):
        return path
    triton_dir = os.path.dirname(os.path.abspath(triton.__file__))
    if path.startswith(triton_dir + os.sep):
        return "<triton>/" + os.path.relpath(path, triton_dir)
    return os.path.relpath(path, base)


def relocate(ttgir: str, base: str) -> str:
    """`ttgir` with every `loc("FILE":L:C)` made independent of the machine (`portable_path`)."""
    return re.sub(r'loc\("([^"]+)":', lambda m: f'loc("{portable_path(m.group(1), base)}":', ttgir)
