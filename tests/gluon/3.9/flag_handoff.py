"""A hand-off between programs through a flag in global memory, with Triton 3.9's `gl.atomic_store`
and `gl.atomic_poll`, written for bwsim's tests.

The grid is pairs of programs: in pair p, program 2p (the producer) writes BLOCK values
`data[p] = 2 * x[p] + 1` and then publishes them by storing 1 into `flags[p]` with release
semantics; program 2p + 1 (the consumer) polls `flags[p]` with acquire semantics until it reads 1,
then reads `data[p]` and writes `out[p] = data[p] + x[p]`. New in 3.9 and used here:
`gl.atomic_store` and `gl.atomic_poll` (the spin-wait as one operation).

BUG='relaxed_flag' publishes the flag with relaxed semantics: nothing orders the producer's writes of
data before the flag, so the consumer may read data the producer has not written (bwsim: `global-race` at
the consumer's `gl.load(data_ptr ...)`, with the producer's `gl.store(data_ptr ...)` as the other
access).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def flag_handoff_kernel(x_ptr, data_ptr, out_ptr, flags_ptr, BLOCK: gl.constexpr, BUG: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    pair = gl.program_id(0) // 2
    offs = pair * BLOCK + gl.arange(0, BLOCK, layout)
    flag = flags_ptr + pair + gl.arange(0, 1, layout)
    x = gl.load(x_ptr + offs)
    if gl.program_id(0) % 2 == 0:
        gl.store(data_ptr + offs, 2 * x + 1)
        if BUG == "relaxed_flag":
            # BUG: relaxed_flag (the flag may become visible before the data)
            gl.atomic_store(flag, gl.full([1], 1, gl.int32, layout), sem="relaxed")
        else:
            gl.atomic_store(flag, gl.full([1], 1, gl.int32, layout), sem="release")
    else:
        gl.atomic_poll(flag, 1, sem="acquire")
        d = gl.load(data_ptr + offs)
        gl.store(out_ptr + offs, d + x)
