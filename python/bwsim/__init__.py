"""bwsim from Python: run, check and time Gluon kernels on a simulated Blackwell (sm_100a) or
Hopper (sm_90a) SM, on numpy arrays, with no GPU.

    import bwsim.gluon
    bwsim.gluon.run(kernel, grid, *args, **constexprs)     # outputs written into your arrays
    bwsim.gluon.check(kernel, grid, *args, **constexprs)   # raises bwsim.HazardError
    bwsim.gluon.time(kernel, grid, *args, chip="gb200")    # the timing model's prediction

See docs/python.md in the repository.
"""

from ._cli import binary
from .errors import (
    ArgumentError,
    BwsimError,
    CompileError,
    Deadlock,
    GpuMismatch,
    HazardError,
    KernelFault,
    LimitReached,
    NoGpu,
    TritonMissing,
)

__all__ = [
    "ArgumentError",
    "BwsimError",
    "CompileError",
    "Deadlock",
    "GpuMismatch",
    "HazardError",
    "KernelFault",
    "LimitReached",
    "NoGpu",
    "TritonMissing",
    "binary",
]
