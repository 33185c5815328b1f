"""Consumers spinning on a flag with Triton 3.9's `gl.atomic_load`, written for bwsim's tests.

Program 0 (the producer) writes BLOCK values `data = 3 * x - 1` and publishes them by storing 1
into `flags[0]` with release semantics (`gl.atomic_store`). Every other program p (a consumer)
reads the flags with acquire loads (`gl.atomic_load`, its default ordering; the second flag is
masked off, so it reads as nothing) until it sees 1, then reads `data` and writes
`out[p - 1] = data + p`. New in 3.9 and used here: `gl.atomic_load` (`tt.atomic_load`) with
its `sem=`, `scope=` and `mask=`.

BUG='relaxed_read' spins with relaxed loads: seeing the flag does not order the consumer's
read of `data` after the producer's write (bwsim: `global-race` at the consumer's
`gl.load(data_ptr ...)`, with the producer's `gl.store(data_ptr ...)` as the other access).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def flag_acquire_kernel(x_ptr, data_ptr, out_ptr, flags_ptr, BLOCK: gl.constexpr, BUG: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    pid = gl.program_id(0)
    offs = gl.arange(0, BLOCK, layout)
    two = gl.arange(0, 2, layout)
    if pid == 0:
        x = gl.load(x_ptr + offs)
        gl.store(data_ptr + offs, 3 * x - 1)
        gl.atomic_store(flags_ptr + two, gl.full([2], 1, gl.int32, layout), mask=two == 0, sem="release")
    else:
        if BUG == "relaxed_read":
            # BUG: relaxed_read (seeing the flag orders nothing)
            seen = gl.atomic_load(flags_ptr + two, mask=two == 0, sem="relaxed")
            while gl.max(seen, 0) == 0:
                seen = gl.atomic_load(flags_ptr + two, mask=two == 0, sem="relaxed")
        else:
            seen = gl.atomic_load(flags_ptr + two, mask=two == 0)
            while gl.max(seen, 0) == 0:
                seen = gl.atomic_load(flags_ptr + two, mask=two == 0, sem="acquire", scope="gpu")
        d = gl.load(data_ptr + offs)
        gl.store(out_ptr + (pid - 1) * BLOCK + offs, d + pid)
