"""Triton 3.9's Gluon names on Triton 3.6, 3.7 and 3.8, for the kernels of this folder.

The kernels here are written once, in Triton 3.9's Gluon API, and compiled by every supported
Triton (3.6.0, 3.7.x, 3.8.x, 3.9.x). A kernel file that uses a name older releases spell
differently imports this module first, for its effect:

    import triton_compat  # noqa: F401  (3.9 names on older Tritons)

On an older Triton it binds the 3.9 name to the SAME builtin object as the old name (so the
JIT calls the builtin directly, the TTGIR is what the old name emits, and every operation
carries the kernel's own line, not a line of this file), or, where no builtin exists, adds one
that computes what 3.9 computes. On Triton 3.9 it changes nothing.

| 3.9 name                                          | older spelling                                  | until |
|---------------------------------------------------|-------------------------------------------------|-------|
| `gl.barrier()`                                    | `gl.thread_barrier()`                           | 3.6   |
| `tma.async_load`, `tma.async_store` (hopper and   | `tma.async_copy_global_to_shared`,              | 3.7   |
| blackwell)                                        | `tma.async_copy_shared_to_global`               |       |
| `async_copy.async_load` (ampere, cp.async)        | `async_copy.async_copy_global_to_shared`        | 3.7   |
| `tensor_memory_descriptor.get_reg_layout()`       | `get_tmem_reg_layout(dtype, shape, layout, nw)` | 3.7   |
| `shared_memory_descriptor.reinterpret`,           | `._reinterpret`                                 | 3.8   |
| `tensor_memory_descriptor.reinterpret`            |                                                 |       |
"""

from __future__ import annotations

from typing import Any

import triton
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language import _core
from triton.experimental.gluon.language.nvidia import blackwell
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.blackwell import tma as blackwell_tma
from triton.experimental.gluon.language.nvidia.hopper import tma as hopper_tma

__all__ = ["TRITON_VERSION"]

#: The installed Triton's (major, minor).
TRITON_VERSION: tuple[int, int] = tuple(int(p) for p in triton.__version__.split(".")[:2])  # type: ignore[assignment]


def _alias(owner: object, new: str, old: str) -> None:
    """Give `owner` the attribute `new`, bound to the same object as its `old` (if it lacks `new`)."""
    if not hasattr(owner, new):
        setattr(owner, new, getattr(owner, old))


def _tmem_get_reg_layout(
    self: Any,
    num_warps: Any = None,
    instr_variant: Any = "32x32b",
    _semantic: Any = None,
    _generator: Any = None,
) -> Any:
    """`tensor_memory_descriptor.get_reg_layout()` as Triton 3.8 defines it: the register layout of
    a tcgen05.ld/st of this descriptor, for the warps of the calling context unless `num_warps` is
    given (3.6 and 3.7 compute it with `get_tmem_reg_layout` from the descriptor's own type)."""
    num_warps = _core._unwrap_if_constexpr(num_warps)
    if num_warps is None:
        num_warps = gl.num_warps(_semantic=_semantic, _generator=_generator)
    return blackwell.get_tmem_reg_layout(
        self.dtype, self.shape, self.layout, _core._unwrap_if_constexpr(num_warps), instr_variant
    )


if TRITON_VERSION < (3, 7):
    _alias(gl, "barrier", "thread_barrier")

if TRITON_VERSION < (3, 8):
    for _tma in (hopper_tma, blackwell_tma):
        _alias(_tma, "async_load", "async_copy_global_to_shared")
        _alias(_tma, "async_store", "async_copy_shared_to_global")
    _alias(async_copy, "async_load", "async_copy_global_to_shared")
    if not hasattr(blackwell.tensor_memory_descriptor, "get_reg_layout"):
        blackwell.tensor_memory_descriptor.get_reg_layout = _core.builtin(_tmem_get_reg_layout)

if TRITON_VERSION < (3, 9):
    _alias(gl.shared_memory_descriptor, "reinterpret", "_reinterpret")
    _alias(blackwell.tensor_memory_descriptor, "reinterpret", "_reinterpret")
