"""Two producers and two consumers in the partitions of a warp-specialized cluster kernel, in Triton
3.8's Gluon API, written for bwsim's tests.

One program (a cluster of two or four CTAs) owns 2 * BLOCK columns of a [ROWS, num_programs * 2 *
BLOCK] matrix, each half split over the cluster's CTAs by a 1-D CGA layout. The default partition
and the first worker each produce one half, row after row, through its own slot of a two-slot shared
buffer; the two other workers each consume one slot and add the rows up, then stage the column sums
in their slot and store them. The four barriers (a slot filled, a slot free, for each slot) are one
batch (`allocate_mbarrier(batch=4)`) captured by every partition; in the TTGIR the partitions' views
of the buffer and of the batch reuse each other's value names and those of the code around them
(each partition is isolated from it), so the batch is told from a data buffer by where each view
is defined.

BUG='no_free_wait' lets the second producer refill its slot without waiting for the consumer to free
it (bwsim: `race` on the slot, between the producer's store and the consumer's load, in each CTA;
the producer also gets two phases ahead of the consumer's wait: `phase-aliasing`, `deadlock`).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier


@gluon.jit
def _pairs_producer(x_ptr, slots, bars, half: gl.constexpr, ROWS: gl.constexpr, BLOCK: gl.constexpr,
                    layout: gl.constexpr, WAIT: gl.constexpr):
    cols = gl.program_id(0) * 2 * BLOCK + half * BLOCK + gl.arange(0, BLOCK, layout)
    for r in range(ROWS):
        if WAIT:
            mbarrier.wait(bars.index(2 + half), r & 1)
        slots.index(half).store(gl.load(x_ptr + r * gl.num_programs(0) * 2 * BLOCK + cols))
        mbarrier.arrive(bars.index(half), count=1)


@gluon.jit
def _pairs_consumer(out_ptr, slots, bars, half: gl.constexpr, ROWS: gl.constexpr, BLOCK: gl.constexpr,
                    layout: gl.constexpr):
    acc = gl.zeros([BLOCK], gl.float32, layout)
    for r in range(ROWS):
        mbarrier.wait(bars.index(half), r & 1)
        acc = acc + slots.index(half).load(layout)
        mbarrier.arrive(bars.index(2 + half), count=1)
    # The sums are staged in the slot, which the producer no longer writes (its last row was read).
    slots.index(half).store(acc)
    dst = out_ptr + gl.program_id(0) * 2 * BLOCK + half * BLOCK + gl.arange(0, BLOCK, layout)
    gl.store(dst, slots.index(half).load(layout))


@gluon.jit
def cluster_ws_pairs_kernel(x_ptr, out_ptr, ROWS: gl.constexpr, BLOCK: gl.constexpr, CGA: gl.constexpr,
                            BUG: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0], cga_layout=CGA)
    slots = gl.allocate_shared_memory(gl.float32, [2, BLOCK], gl.SwizzledSharedLayout(1, 1, 1, [0], cga_layout=CGA))
    # bars[0], bars[1]: slot filled; bars[2], bars[3]: slot free (both start free: phase 0 done).
    bars = mbarrier.allocate_mbarrier(batch=4)
    for i in range(4):
        mbarrier.init(bars.index(i), count=1)
    mbarrier.arrive(bars.index(2), count=1)
    mbarrier.arrive(bars.index(3), count=1)
    gl.warp_specialize([
        (_pairs_producer, (x_ptr, slots, bars, 0, ROWS, BLOCK, layout, True)),
        (_pairs_producer, (x_ptr, slots, bars, 1, ROWS, BLOCK, layout, BUG != "no_free_wait")),
        (_pairs_consumer, (out_ptr, slots, bars, 0, ROWS, BLOCK, layout)),
        (_pairs_consumer, (out_ptr, slots, bars, 1, ROWS, BLOCK, layout)),
    ], [4, 4, 4], [48, 48, 48])
