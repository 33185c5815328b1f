"""A warp-specialized cp.async pipeline whose copies signal their consumer through mbarriers
(`async_copy.mbarrier_arrive`), written for bwsim's tests in the style of the Gluon tutorials.

Each program owns XBLOCK rows of a row-major [n_rows, N_COLS] f32 matrix x and walks its columns
YBLOCK at a time through a ring of NUM_STAGES shared-memory stages. The worker partition (the
producer, 4 warps) copies a stage with `async_load` and asks the hardware to arrive on the stage's
`ready` barrier once its copies have landed; the default partition (the consumer, 4 warps) waits
on `ready`, reads the stage, hands it back through `empty` and writes y = 2 x + 1 and the sum of
each row of x.

NOINC picks the form of the arrival:
- NOINC=True: `mbarrier_arrive(bar, increment_count=False)` (`cp.async.mbarrier.arrive.noinc`):
  every producer thread's arrival counts, so `ready` expects 32 * 4 of them;
- NOINC=False: `mbarrier_arrive(bar)` first adds each thread's arrival to the pending count
  (no net change), so `ready` expects one arrival, made by `mbarrier.arrive` after the copies are
  issued, and completes only once the copies have landed as well.

BUG='arrive_early' (NOINC=True) asks for the arrival before issuing the stage's copy: it tracks only
the copies issued before it (the previous stages'), so `ready` completes while this stage's copy may
still be landing and the consumer reads it early. BUG='inc_count' (NOINC=True) uses the incrementing form while `ready` expects
the 128 arrivals of the non-incrementing one: the arrivals only undo the increments, the phase
never completes and the consumer waits forever.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import mbarrier


@gluon.jit
def _producer(x_ptr, bufs, ready, empty, n_rows, N_COLS: gl.constexpr, XBLOCK: gl.constexpr,
              YBLOCK: gl.constexpr, NUM_STAGES: gl.constexpr, NOINC: gl.constexpr, BUG: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, YBLOCK // 32], [1, 32], [4, 1], [1, 0])
    rows = gl.program_id(0) * XBLOCK + gl.arange(0, XBLOCK, gl.SliceLayout(1, layout))
    cols = gl.arange(0, YBLOCK, gl.SliceLayout(0, layout))
    row_ok = (rows < n_rows)[:, None]
    for k in range(N_COLS // YBLOCK):
        s = k % NUM_STAGES
        # A fresh barrier's parity-1 wait passes: the first round finds every stage free.
        mbarrier.wait(empty.index(s), ((k // NUM_STAGES) & 1) ^ 1)
        ptrs = x_ptr + rows[:, None] * N_COLS + (k * YBLOCK + cols)[None, :]
        if BUG == 'arrive_early':
            # BUG: arrive_early (the arrival tracks the copies issued before it, not this stage's)
            cp.mbarrier_arrive(ready.index(s), increment_count=False)
        cp.async_load(bufs.index(s), ptrs, mask=row_ok)
        if NOINC and BUG == '':
            cp.mbarrier_arrive(ready.index(s), increment_count=False)
        elif BUG == 'inc_count' or not NOINC:
            # BUG: inc_count (the increment cancels each arrival: `ready` waits for 128 more)
            cp.mbarrier_arrive(ready.index(s))
            if not NOINC:
                mbarrier.arrive(ready.index(s), count=1)


@gluon.jit
def _consumer(y_ptr, sums_ptr, bufs, ready, empty, n_rows, N_COLS: gl.constexpr, XBLOCK: gl.constexpr,
              YBLOCK: gl.constexpr, NUM_STAGES: gl.constexpr, BUG: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, YBLOCK // 32], [1, 32], [gl.num_warps(), 1], [1, 0])
    rows = gl.program_id(0) * XBLOCK + gl.arange(0, XBLOCK, gl.SliceLayout(1, layout))
    cols = gl.arange(0, YBLOCK, gl.SliceLayout(0, layout))
    row_ok = (rows < n_rows)[:, None]
    sums = gl.zeros([XBLOCK], gl.float32, gl.SliceLayout(1, layout))
    for k in range(N_COLS // YBLOCK):
        s = k % NUM_STAGES
        mbarrier.wait(ready.index(s), (k // NUM_STAGES) & 1)
        x = bufs.index(s).load(layout)
        mbarrier.arrive(empty.index(s), count=1)
        ptrs = y_ptr + rows[:, None] * N_COLS + (k * YBLOCK + cols)[None, :]
        gl.store(ptrs, 2.0 * x + 1.0, mask=row_ok)
        sums += gl.sum(x, axis=1)
    gl.store(sums_ptr + rows, sums, mask=rows < n_rows)


@gluon.jit
def cp_async_mbarrier_kernel(x_ptr, y_ptr, sums_ptr, n_rows, N_COLS: gl.constexpr, XBLOCK: gl.constexpr,
                             YBLOCK: gl.constexpr, NUM_STAGES: gl.constexpr, NOINC: gl.constexpr,
                             BUG: gl.constexpr):
    ring: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    bufs = gl.allocate_shared_memory(gl.float32, [NUM_STAGES, XBLOCK, YBLOCK], ring)
    ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(NUM_STAGES):
        # One arrival per producer thread (NOINC), or the producer's one `mbarrier.arrive`.
        mbarrier.init(ready.index(s), count=32 * 4 if NOINC else 1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (_consumer, (y_ptr, sums_ptr, bufs, ready, empty, n_rows, N_COLS, XBLOCK, YBLOCK, NUM_STAGES, BUG)),
        (_producer, (x_ptr, bufs, ready, empty, n_rows, N_COLS, XBLOCK, YBLOCK, NUM_STAGES, NOINC, BUG)),
    ], [4], [80])
    for s in gl.static_range(NUM_STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))
