"""A pipelined tcgen05 matmul whose accumulator barrier is committed once, by a predicated commit,
in Triton 3.7's Gluon API, written for bwsim's tests.

C = A @ B for one [BLOCK_M, BLOCK_N] tile per program, K walked BLOCK_K at a time through a ring of
NUM_BUFFERS shared stages. Each MMA frees its stage through its completion barrier; the
accumulator's barrier gets one `tcgen05_commit(acc_bar, pred=...)` per K step, predicated on the
step being the last, so it completes once, when every MMA issued before it has. New in 3.7 and used
here: `mbarrier.allocate_mbarrier(batch=N)` (a ring of barriers) and the commit's `pred`.

BUG plants a wrong commit predicate (empty: the correct kernel):
  'commit_first'  the commit is taken on the first K step, so the accumulator barrier completes after
                  the first MMA (bwsim: `read-before-complete` at `acc_tmem.load`, and
                  `write-while-in-flight` at `c_smem.store`, over operand tiles later MMAs still read)
  'commit_never'  the predicate is never true: nothing commits to the accumulator barrier (bwsim:
                  `deadlock` at the epilogue's `mbarrier.wait(acc_bar, 0)`)
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import fence_async_shared, mbarrier, tcgen05_commit
from triton.experimental.gluon.language.nvidia.blackwell import tcgen05_mma, tma


@gluon.jit
def commit_pred_kernel(a_desc, b_desc, c_desc, K, NUM_BUFFERS: gl.constexpr, BUG: gl.constexpr):
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [NUM_BUFFERS] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [NUM_BUFFERS] + b_desc.block_type.shape, b_desc.layout)
    ready = mbarrier.allocate_mbarrier(batch=NUM_BUFFERS)
    free = mbarrier.allocate_mbarrier(batch=NUM_BUFFERS)
    acc_bar = mbarrier.allocate_mbarrier()
    for i in gl.static_range(NUM_BUFFERS):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(free.index(i), count=1)
    mbarrier.init(acc_bar, count=1)
    acc_layout: gl.constexpr = TensorMemoryLayout((BLOCK_M, BLOCK_N), col_stride=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], acc_layout)

    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    num_k = gl.cdiv(K, BLOCK_K)
    # Prologue: the first step's tiles.
    mbarrier.expect(ready.index(0), a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
    tma.async_copy_global_to_shared(a_desc, [off_m, 0], ready.index(0), a_bufs.index(0))
    tma.async_copy_global_to_shared(b_desc, [0, off_n], ready.index(0), b_bufs.index(0))
    for i in range(num_k):
        # Load step i + 1 into its stage once the MMA that last read the stage has completed.
        j = i + 1
        js = j % NUM_BUFFERS
        mbarrier.wait(free.index(js), (j // NUM_BUFFERS - 1) & 1, pred=(j < num_k) & (j >= NUM_BUFFERS))
        mbarrier.expect(ready.index(js), a_desc.nbytes_per_cta + b_desc.nbytes_per_cta, pred=j < num_k)
        tma.async_copy_global_to_shared(a_desc, [off_m, j * BLOCK_K], ready.index(js), a_bufs.index(js),
                                        pred=j < num_k)
        tma.async_copy_global_to_shared(b_desc, [j * BLOCK_K, off_n], ready.index(js), b_bufs.index(js),
                                        pred=j < num_k)

        s = i % NUM_BUFFERS
        mbarrier.wait(ready.index(s), (i // NUM_BUFFERS) & 1)
        tcgen05_mma(a_bufs.index(s), b_bufs.index(s), acc_tmem, use_acc=i > 0, mbarriers=[free.index(s)])
        if BUG == "commit_first":
            # BUG: commit_first (the accumulator is announced after the first MMA)
            tcgen05_commit(acc_bar, pred=i == 0)
        elif BUG == "commit_never":
            # BUG: commit_never (a step index the loop never reaches)
            tcgen05_commit(acc_bar, pred=i == num_k)
        else:
            tcgen05_commit(acc_bar, pred=i == num_k - 1)

    mbarrier.wait(acc_bar, 0)
    # One accumulator row a thread, the rows of a warp's 32 lanes: the register layout of a 32x32b
    # tcgen05.ld (get_tmem_reg_layout's, spelled as a BlockedLayout; 3.8 removed get_tmem_reg_layout).
    reg_layout: gl.constexpr = gl.BlockedLayout([1, BLOCK_N], [32, 1], [gl.num_warps(), 1], [0, 1])
    acc = acc_tmem.load(reg_layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)
