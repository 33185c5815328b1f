"""A persistent cluster kernel that claims clusters with cluster launch control and stores booleans,
in Triton 3.8's Gluon API, written for bwsim's tests.

One program (a cluster of two or four CTAs) per BLOCK elements of x; the program's elements are split
over the cluster's CTAs by a 1-D CGA layout. A running program processes its own block, then cancels
a cluster not yet launched (`clc.try_cancel`: in a cluster kernel the response is multicast into every
CTA's copy of the result buffer, whose CGA layout gives each CTA the whole of it) and processes that
cluster's block, until no launch is left to cancel. Each block stores `x > 0` into the bool tensor
`pos` and `True` into the bool `done[block]`: Triton stores a bool (a tensor or a scalar) as a byte,
through its pointer cast to an `i8` pointer. Whichever programs run, every block is processed once.

BUG='read_early' reads the response before waiting for its barrier, as the concurrency sanitizer's
test of a CLC result's visibility does (bwsim: `read-before-complete` at `clc.load_result`, naming the
`clc.try_cancel` in flight; the CTAs of a cluster may then read different responses and part ways:
`race`, `deadlock`, `tx-mismatch`, `barrier-misuse`).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import clc, mbarrier
from triton.experimental.gluon.language.nvidia.hopper import cluster


@gluon.jit
def clc_cluster_flags_kernel(x_ptr, pos_ptr, done_ptr, BLOCK: gl.constexpr, CGA: gl.constexpr, WHOLE: gl.constexpr,
                             BUG: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0], cga_layout=CGA)
    clc_bar = mbarrier.allocate_mbarrier()
    mbarrier.init(clc_bar, count=1)
    # The 16-byte response, as two int64, whole in every CTA of the cluster (WHOLE: every rank bit 0).
    clc_result = gl.allocate_shared_memory(gl.int64, [2], gl.SwizzledSharedLayout(1, 1, 1, [0], cga_layout=WHOLE))

    block = gl.program_id(0)
    has_work = gl.to_tensor(True)
    phase = 0
    while has_work:
        mbarrier.expect(clc_bar, 16)
        clc.try_cancel(clc_result, clc_bar)

        offs = block * BLOCK + gl.arange(0, BLOCK, layout)
        gl.store(pos_ptr + offs, gl.load(x_ptr + offs) > 0.0)
        gl.store(done_ptr + block, True)

        if BUG != "read_early":
            mbarrier.wait(clc_bar, phase)
        result = clc.load_result(clc_result)
        if BUG == "read_early":
            mbarrier.wait(clc_bar, phase)  # BUG: read_early (the response is read before this)
        has_work = result.is_canceled()
        block = result.program_id(0)
        phase ^= 1
        # Every CTA has read the response before the next request overwrites it.
        cluster.barrier()
    mbarrier.invalidate(clc_bar)
