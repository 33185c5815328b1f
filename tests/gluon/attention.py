"""Blackwell attention forward in the FA4 style, written for bwsim's tests: a 1-warp load
partition (Q once, then K and V through a NUM_BUFFERS ring), a 1-warp MMA partition
(S = Q @ K^T into tensor memory, then O += P @ V with P read from tensor memory), and the
4-warp default partition doing the online softmax, the correction of O (rescaling it in tensor
memory by exp2(m_old - m_new) between two P @ V products) and the epilogue. As in FA4, P (f16)
is written over the S it was computed from: the same tensor-memory columns, reinterpreted. One program per
(BLOCK_M query rows, batch-head); Q, K, V, O are [BH * N_CTX, HEAD_D] f16, row-major.

BUG plants one of the hand-off bugs attention kernels get wrong (empty: the correct kernel):
  'p_before_store'   the softmax says P is ready before its tensor-memory store of P
  'correction_race'  the correction rescales O without waiting for the previous P @ V
  's_ready_phase'    the softmax waits on the S-ready barrier with the wrong phase
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory
from triton.experimental.gluon.language.nvidia.blackwell import fence_async_shared, mbarrier, tma
from triton.experimental.gluon.language.nvidia.blackwell import tcgen05_commit, tcgen05_mma


@gluon.jit
def p_view(s_buf):
    # P over S: the S buffer's columns as a packed f16 [BLOCK_M, 2 * BLOCK_N] matrix, of which P is the
    # first BLOCK_N columns (the first half of S's columns).
    BLOCK_M: gl.constexpr = s_buf.shape[0]
    BLOCK_N: gl.constexpr = s_buf.shape[1]
    s_as_f16 = s_buf.reinterpret(gl.float16, [BLOCK_M, 2 * BLOCK_N],
                                 TensorMemoryLayout([BLOCK_M, 2 * BLOCK_N], col_stride=1))
    return s_as_f16.slice(0, BLOCK_N)


@gluon.jit
def attention_load_partition(q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bar, kv_empty, kv_ready,
                             N_CTX: gl.constexpr):
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    NUM_BUFFERS: gl.constexpr = k_bufs.shape[0]
    row0 = gl.program_id(1) * N_CTX
    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    tma.async_load(q_desc, [row0 + gl.program_id(0) * BLOCK_M, 0], q_bar, q_smem)
    for j in range(N_CTX // BLOCK_N):
        index = j % NUM_BUFFERS
        phase = (j // NUM_BUFFERS) & 1
        mbarrier.wait(kv_empty.index(index), phase ^ 1)
        bar = kv_ready.index(index)
        mbarrier.expect(bar, k_desc.block_type.nbytes + v_desc.block_type.nbytes)
        tma.async_load(k_desc, [row0 + j * BLOCK_N, 0], bar, k_bufs.index(index))
        tma.async_load(v_desc, [row0 + j * BLOCK_N, 0], bar, v_bufs.index(index))


@gluon.jit
def attention_mma_partition(q_smem, k_bufs, v_bufs, q_bar, kv_empty, kv_ready, s_tmem, o_tmem, s_ready, p_ready,
                            o_ready, N_CTX: gl.constexpr):
    BLOCK_N: gl.constexpr = k_bufs.shape[1]
    NUM_BUFFERS: gl.constexpr = k_bufs.shape[0]
    NUM_KV: gl.constexpr = N_CTX // BLOCK_N
    mbarrier.wait(q_bar, 0)
    # S = Q @ K^T into one of two S buffers; K is stored [BLOCK_N, HEAD_D] and read through its
    # transposed view. S of the next block is issued before P @ V of this one, so the tensor
    # core computes it while the softmax works on this block.
    mbarrier.wait(kv_ready.index(0), 0)
    tcgen05_mma(q_smem, k_bufs.index(0).permute((1, 0)), s_tmem.index(0), use_acc=False)
    tcgen05_commit(s_ready.index(0))
    for j in range(NUM_KV):
        index = j % NUM_BUFFERS
        if j + 1 < NUM_KV:
            next_index = (j + 1) % NUM_BUFFERS
            mbarrier.wait(kv_ready.index(next_index), ((j + 1) // NUM_BUFFERS) & 1)
            tcgen05_mma(q_smem, k_bufs.index(next_index).permute((1, 0)), s_tmem.index((j + 1) % 2),
                        use_acc=False)
            tcgen05_commit(s_ready.index((j + 1) % 2))
        # O += P @ V, P read from tensor memory, once the softmax has written P and corrected O.
        mbarrier.wait(p_ready, j & 1)
        tcgen05_mma(p_view(s_tmem.index(j % 2)), v_bufs.index(index), o_tmem, use_acc=j > 0)
        tcgen05_commit(kv_empty.index(index))
        tcgen05_commit(o_ready)


@gluon.jit
def correct_o(o_tmem, alpha, o_ready, j, WAIT: gl.constexpr):
    # Correction: O *= alpha, after the previous P @ V has landed in O (S of this block was committed
    # before that product was issued, so its barrier does not cover it). WAIT=False drops that wait.
    o_layout: gl.constexpr = o_tmem.get_reg_layout()
    if WAIT:
        mbarrier.wait(o_ready, (j - 1) & 1)
    o = o_tmem.load(o_layout)
    alpha_o = gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))
    o_tmem.store(o * alpha_o[:, None])


@gluon.jit
def store_p(s_tmem, j, p, p_layout: gl.constexpr, p_ready, READY_FIRST: gl.constexpr):
    # P (f16) over S of key block j, then p_ready; READY_FIRST=True arrives on p_ready first.
    if READY_FIRST:
        mbarrier.arrive(p_ready, count=1)
        p_view(s_tmem.index(j % 2)).store(gl.convert_layout(p.to(gl.float16), p_layout))
    else:
        p_view(s_tmem.index(j % 2)).store(gl.convert_layout(p.to(gl.float16), p_layout))
        mbarrier.arrive(p_ready, count=1)


@gluon.jit
def attention_epilogue(o_desc, o_tmem, o_smem, o_ready, l_i, N_CTX: gl.constexpr, BLOCK_N: gl.constexpr):
    # The last P @ V, then O / l stored by TMA.
    BLOCK_M: gl.constexpr = o_tmem.shape[0]
    o_layout: gl.constexpr = o_tmem.get_reg_layout()
    mbarrier.wait(o_ready, (N_CTX // BLOCK_N - 1) & 1)
    o = o_tmem.load(o_layout)
    l_o = gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))
    o_smem.store((o / l_o[:, None]).to(gl.float16))
    fence_async_shared()
    tma.async_store(o_desc, [gl.program_id(1) * N_CTX + gl.program_id(0) * BLOCK_M, 0], o_smem)
    tma.store_wait(pendings=0)


@gluon.jit
def attention_softmax_partition(o_desc, s_tmem, o_tmem, s_ready, p_ready, o_ready, o_smem, qk_scale,
                                N_CTX: gl.constexpr, BUG: gl.constexpr):
    BLOCK_M: gl.constexpr = s_tmem.shape[1]
    BLOCK_N: gl.constexpr = s_tmem.shape[2]
    s_layout: gl.constexpr = s_tmem.index(0).get_reg_layout()
    # P's register layout: that of the f16 view of S it is stored to.
    p_layout: gl.constexpr = p_view(s_tmem.index(0)).get_reg_layout()
    m_i = gl.full([BLOCK_M], -float("inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.full([BLOCK_M], 0.0, gl.float32, gl.SliceLayout(1, s_layout))
    for j in range(N_CTX // BLOCK_N):
        if BUG == "s_ready_phase":
            # BUG: s_ready_phase (the phase of the block after this one)
            mbarrier.wait(s_ready.index(j % 2), (j // 2 + 1) & 1)
        else:
            mbarrier.wait(s_ready.index(j % 2), (j // 2) & 1)
        s = s_tmem.index(j % 2).load(s_layout) * qk_scale
        m_new = gl.maximum(m_i, gl.max(s, axis=1))
        alpha = gl.exp2(m_i - m_new)
        p = gl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + gl.sum(p, axis=1)
        if j > 0:
            # BUG: correction_race (without its wait, the correction reads O under the previous P @ V)
            correct_o(o_tmem, alpha, o_ready, j, BUG != "correction_race")
        # BUG: p_before_store (P is stored after the MMA partition was told it is ready)
        store_p(s_tmem, j, p, p_layout, p_ready, BUG == "p_before_store")
        m_i = m_new
    attention_epilogue(o_desc, o_tmem, o_smem, o_ready, l_i, N_CTX, BLOCK_N)


@gluon.jit
def attention_buffers(q_desc, k_desc, v_desc, o_desc, NUM_BUFFERS: gl.constexpr):
    # The shared buffers, barriers and tensor memory of the three partitions.
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    HEAD_D: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    q_smem = gl.allocate_shared_memory(gl.float16, q_desc.block_type.shape, q_desc.layout)
    k_bufs = gl.allocate_shared_memory(gl.float16, [NUM_BUFFERS] + k_desc.block_type.shape, k_desc.layout)
    v_bufs = gl.allocate_shared_memory(gl.float16, [NUM_BUFFERS] + v_desc.block_type.shape, v_desc.layout)
    o_smem = gl.allocate_shared_memory(gl.float16, o_desc.block_type.shape, o_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    kv_empty = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    kv_ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    s_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    p_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    o_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    mbarrier.init(p_ready, count=1)
    mbarrier.init(o_ready, count=1)
    for i in gl.static_range(2):
        mbarrier.init(s_ready.index(i), count=1)
    for i in gl.static_range(NUM_BUFFERS):
        mbarrier.init(kv_empty.index(i), count=1)
        mbarrier.init(kv_ready.index(i), count=1)
    # S (and P over it) double-buffered in tensor memory: key block j uses buffer j % 2.
    s_tmem = allocate_tensor_memory(gl.float32, [2, BLOCK_M, BLOCK_N], TensorMemoryLayout([BLOCK_M, BLOCK_N], col_stride=1))
    o_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, HEAD_D], TensorMemoryLayout([BLOCK_M, HEAD_D], col_stride=1))
    return q_smem, k_bufs, v_bufs, o_smem, q_bar, kv_empty, kv_ready, s_ready, p_ready, o_ready, s_tmem, o_tmem


@gluon.jit
def attention_kernel(q_desc, k_desc, v_desc, o_desc, qk_scale, N_CTX: gl.constexpr, NUM_BUFFERS: gl.constexpr,
                     BUG: gl.constexpr):
    q_smem, k_bufs, v_bufs, o_smem, q_bar, kv_empty, kv_ready, s_ready, p_ready, o_ready, s_tmem, o_tmem = \
        attention_buffers(q_desc, k_desc, v_desc, o_desc, NUM_BUFFERS)
    gl.warp_specialize([
        (attention_softmax_partition, (o_desc, s_tmem, o_tmem, s_ready, p_ready, o_ready, o_smem, qk_scale, N_CTX,
                                       BUG)),
        (attention_load_partition, (q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bar, kv_empty, kv_ready,
                                    N_CTX)),
        (attention_mma_partition, (q_smem, k_bufs, v_bufs, q_bar, kv_empty, kv_ready, s_tmem, o_tmem, s_ready,
                                   p_ready, o_ready, N_CTX)),
    ], [1, 1], [24, 24])
