"""`bwsim.gluon.run(..., device="gpu")`: the kernel through bwsim's PTX on the local GPU.

The compiled TTGIR, its launch sidecar and the caller's arrays go to `bwsim gpu FILE --input
NAME=FILE.npy --save-outputs DIR --json`, which runs the simulator and the GPU on the same
inputs and compares every output element (the differential harness of `bwsim gpu --all`).
The GPU's outputs come back into the caller's arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._cli import call
from .errors import CompileError, GpuMismatch, NoGpu

if TYPE_CHECKING:
    from .gluon import _Launch

# `bwsim gpu`'s exit status when no case ran because there is no CUDA driver or GPU.
EXIT_NO_GPU = 77


@dataclass
class GpuResult:
    """What `run(..., device="gpu")` returns: the comparison of the GPU with the simulator."""

    result: str
    """`pass`, as `bwsim gpu` says it."""
    max_err: float | None
    """The largest |gpu - sim| over the outputs (0.0: bit for bit)."""
    gpu_ms: float | None
    """Median GPU time of the timed launches after the checked one, in milliseconds."""
    target: str
    written: list[str]
    """The arguments whose arrays the GPU changed (and bwsim wrote back)."""
    notes: list[str] = field(default_factory=list)
    json: dict[str, Any] = field(default_factory=dict, repr=False)


def run_on_gpu(launch: _Launch, seed: int, outdir: Path, write_back: Any) -> GpuResult:
    """Run `launch` with `bwsim gpu`; raises `NoGpu`, `CompileError` (bwsim could not lower or
    assemble it) or `GpuMismatch` (after writing the GPU's outputs back)."""
    status, row, _ = call(
        ["gpu", str(launch.ttgir), "--seed", str(int(seed)), "--save-outputs", str(outdir), *launch.input_flags()],
        statuses=(0, 1, EXIT_NO_GPU),
    )
    result = str(row.get("result", ""))
    if status == EXIT_NO_GPU or result.startswith("skipped"):
        raise NoGpu(result.removeprefix("skipped: ") or "no CUDA driver/GPU found")
    if result.startswith("ERROR"):
        raise CompileError(result.removeprefix("ERROR: "))
    written = write_back(launch, outdir) if outdir.exists() else []
    if result != "pass":
        raise GpuMismatch(row)
    return GpuResult(
        result=result,
        max_err=row.get("max_err"),
        gpu_ms=row.get("gpu_ms"),
        target=launch.target,
        written=written,
        notes=list(row.get("notes", [])),
        json=row,
    )
