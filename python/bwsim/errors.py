"""The exceptions bwsim raises: one class per way a kernel can go wrong, and one for bad calls."""

from __future__ import annotations

from typing import Any


class BwsimError(Exception):
    """Anything bwsim reports about a kernel or a call; the base of the classes below."""


class ArgumentError(BwsimError, TypeError, ValueError):
    """A call bwsim cannot make: a wrong argument count, type, dtype, shape or layout.

    The message names the argument. It is both a `TypeError` and a `ValueError`, so code that
    catches either keeps working.
    """


class TritonMissing(BwsimError, ImportError):
    """Triton is not installed, or not a release bwsim reads (3.6.0, 3.7.x, 3.8.x, 3.9.x); the
    message names them."""


class CompileError(BwsimError):
    """Triton or bwsim's importer or verifier refused the kernel; `.diagnostics` says why."""

    def __init__(self, message: str, diagnostics: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.diagnostics: list[dict[str, Any]] = diagnostics or []


class HazardError(BwsimError):
    """The hazard checker found a problem (race, missing fence, deadlock, ...).

    `.diagnostics` is a list of dicts with `code`, `message`, `file`, `line`, `column`, `seed`,
    `severity`, `replay` and `rendered`; `str()` is the rustc-style rendering of all of them.
    """

    def __init__(self, diagnostics: list[dict[str, Any]]) -> None:
        self.diagnostics: list[dict[str, Any]] = diagnostics
        super().__init__("\n".join(d["rendered"].rstrip("\n") for d in diagnostics))

    @property
    def codes(self) -> list[str]:
        """The diagnostic codes, in the order reported."""
        return [d["code"] for d in self.diagnostics]


class KernelFault(BwsimError):
    """The kernel trapped as the GPU would (illegal instruction, misaligned address, ...).

    `.error` is the CUDA error, `.reason` what the hardware does not say, `.file` and `.line`
    the faulting operation's Python location, `.op` the operation.
    """

    def __init__(self, trap: dict[str, Any]) -> None:
        self.error: str = trap.get("error", "")
        self.code: str = trap.get("code", "")
        self.reason: str = trap.get("reason", "")
        self.op: str = trap.get("op", "")
        self.file: str = trap.get("file", "")
        self.line: int = int(trap.get("line", 0))
        self.column: int = int(trap.get("column", 0))
        super().__init__(f"{self.file}:{self.line}: `{self.op}`: {self.error}: {self.reason}")


class Deadlock(BwsimError):
    """Every agent of the run blocked with nothing in flight; the message holds the wait-for
    graph (who waits on which barrier and phase, who could still arrive)."""

    def __init__(self, diagnostics: list[dict[str, Any]]) -> None:
        self.diagnostics: list[dict[str, Any]] = diagnostics
        text = "\n".join(d["rendered"].rstrip("\n") for d in diagnostics)
        super().__init__(text or "deadlock: every agent blocked with nothing in flight")


class LimitReached(BwsimError):
    """The run stopped at a resource limit (steps, wall time, memory, trace events)."""


class NoGpu(BwsimError):
    """`device="gpu"` found no CUDA driver or GPU, or a GPU of another architecture than the
    kernel's target; the message says which."""


class GpuMismatch(BwsimError):
    """`device="gpu"`: the GPU's outputs differ from the simulator's (or one of them trapped).

    `.result` is the verdict of `bwsim gpu`, `.max_err` the largest |gpu - sim|, `.notes` the
    first mismatching elements. The arrays hold what the GPU computed.
    """

    def __init__(self, row: dict[str, Any]) -> None:
        self.result: str = str(row.get("result", ""))
        self.max_err: float | None = row.get("max_err")
        self.notes: list[str] = list(row.get("notes", []))
        super().__init__("\n".join([self.result, *self.notes]))
