"""Compare-and-swap in Gluon, written for bwsim's tests: every program tries to claim every slot
of a flag array (`gl.atomic_cas(flag, 0, program + 1)`); exactly one claim per free slot
succeeds, whatever the order the programs run in, and each program adds its successes to a
per-slot count (`gl.atomic_add`). counts[k] ends 1 where flags[k] started at 0, else 0.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def claims_kernel(flags_ptr, counts_ptr, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    k = gl.arange(0, N, layout)
    me = gl.program_id(0) + 1
    old = gl.atomic_cas(flags_ptr + k, gl.zeros_like(k), gl.zeros_like(k) + me)
    gl.atomic_add(counts_ptr + k, (old == 0).to(gl.int32))
