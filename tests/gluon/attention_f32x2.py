"""Blackwell attention forward whose softmax computes on pairs of f32 values held in 64-bit
registers, as Triton's Blackwell attention tutorial does: two columns of S are paired into one
i64 (`mov.b64 $0, {lo, hi}` in inline PTX), scaled and shifted with `mul.f32x2` and
`fma.rn.f32x2`, exponentiated lane by lane with `ex2.approx.ftz.f32`, and the row sums of P are
a `gl.reduce` over the pairs whose combiner is an `add.f32x2`. Otherwise attention.py, whose
pieces it calls (buffers, load and MMA partitions, correction, P store, epilogue): a 1-warp load
partition, a 1-warp MMA partition (S = Q @ K^T, O += P @ V with P over S in tensor memory), the
4-warp default partition doing the softmax, the correction and the epilogue.

attention_f32x2_causal_kernel is the same kernel with a causal mask (key j of query i only for
j <= i), applied to the paired values' halves. BUG plants a hand-off bug of the softmax
partition (empty: the correct kernel): 'no_s_wait' reads S without waiting for its MMA,
'p_ready_early' tells the MMA partition P is ready before storing it.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier

from attention import attention_buffers, attention_epilogue, correct_o, p_view, store_p
from attention import attention_load_partition, attention_mma_partition


@gluon.jit
def pair(lo, hi):
    # Two f32 tensors as one i64 tensor: lo in the low word, hi in the high word.
    return gl.inline_asm_elementwise("mov.b64 $0, { $1, $2 };", "=l,r,r", [lo, hi], dtype=gl.int64,
                                     is_pure=True, pack=1)


@gluon.jit
def unpair(x):
    # The two f32 words of an i64 tensor.
    return gl.inline_asm_elementwise("mov.b64 { $0, $1 }, $2;", "=r,=r,l", [x], dtype=[gl.float32, gl.float32],
                                     is_pure=True, pack=1)


@gluon.jit
def mul_pairs(a, b):
    return gl.inline_asm_elementwise("mul.f32x2 $0, $1, $2;", "=l,l,l", [a, b], dtype=gl.int64, is_pure=True,
                                     pack=1)


@gluon.jit
def add_pairs(a, b):
    return gl.inline_asm_elementwise("add.f32x2 $0, $1, $2;", "=l,l,l", [a, b], dtype=gl.int64, is_pure=True,
                                     pack=1)


@gluon.jit
def fma_pairs(a, b, c):
    return gl.inline_asm_elementwise("fma.rn.f32x2 $0, $1, $2, $3;", "=l,l,l,l", [a, b, c], dtype=gl.int64,
                                     is_pure=True, pack=1)


@gluon.jit
def exp2_pairs(x):
    # 2^x of both lanes, through 32-bit halves in a scope of its own.
    return gl.inline_asm_elementwise(
        """
        {
        .reg .f32 lo, hi;
        mov.b64 { lo, hi }, $1;
        ex2.approx.ftz.f32 lo, lo;
        ex2.approx.ftz.f32 hi, hi;
        mov.b64 $0, { lo, hi };
        }
        """, "=l,l", [x], dtype=gl.int64, is_pure=True, pack=1)


@gluon.jit
def split_columns(x, layout: gl.constexpr):
    # Columns 2k and 2k + 1 of x as two tensors of the given layout.
    M: gl.constexpr = x.shape[0]
    N: gl.constexpr = x.shape[1]
    even, odd = x.reshape([M, N // 2, 2]).split()
    return gl.convert_layout(even, layout), gl.convert_layout(odd, layout)


@gluon.jit
def join_columns(a, b):
    M: gl.constexpr = a.shape[0]
    N: gl.constexpr = a.shape[1]
    return gl.join(a, b).reshape([M, 2 * N])


@gluon.jit
def attention_softmax_partition(o_desc, s_tmem, o_tmem, s_ready, p_ready, o_ready, o_smem, qk_scale,
                                N_CTX: gl.constexpr, CAUSAL: gl.constexpr, BUG: gl.constexpr):
    BLOCK_M: gl.constexpr = s_tmem.shape[1]
    BLOCK_N: gl.constexpr = s_tmem.shape[2]
    s_layout: gl.constexpr = s_tmem.index(0).get_reg_layout()
    p_layout: gl.constexpr = p_view(s_tmem.index(0)).get_reg_layout()
    # One row per thread, as the tensor-memory load gives it, for the paired columns.
    pair_layout: gl.constexpr = gl.BlockedLayout([1, BLOCK_N // 2], [32, 1], [gl.num_warps(), 1], [1, 0])
    m_i = gl.full([BLOCK_M], -float("inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.full([BLOCK_M], 0.0, gl.float32, gl.SliceLayout(1, s_layout))
    for j in range(N_CTX // BLOCK_N):
        if BUG != "no_s_wait":
            mbarrier.wait(s_ready.index(j % 2), (j // 2) & 1)
        # BUG: no_s_wait (without the wait above, S is read while its MMA may still write it)
        s_even, s_odd = split_columns(s_tmem.index(j % 2).load(s_layout), pair_layout)
        s2 = pair(s_even, s_odd)
        scale = gl.full(s_even.shape, qk_scale, gl.float32, s_even.type.layout)
        s2 = mul_pairs(s2, pair(scale, scale))
        e_scaled, o_scaled = unpair(s2)
        if CAUSAL:
            # Key columns 2k and 2k + 1 of this block against each query row: masked to -inf
            # beyond the diagonal, then paired again.
            q_idx = gl.program_id(0) * BLOCK_M + gl.arange(0, BLOCK_M, gl.SliceLayout(1, pair_layout))
            k_even = j * BLOCK_N + 2 * gl.arange(0, BLOCK_N // 2, gl.SliceLayout(0, pair_layout))
            e_scaled = gl.where(k_even[None, :] <= q_idx[:, None], e_scaled, -float("inf"))
            o_scaled = gl.where(k_even[None, :] + 1 <= q_idx[:, None], o_scaled, -float("inf"))
            s2 = pair(e_scaled, o_scaled)
        row_max = gl.maximum(gl.max(e_scaled, axis=1), gl.max(o_scaled, axis=1))
        m_new = gl.maximum(m_i, gl.convert_layout(row_max, m_i.type.layout))
        alpha = gl.exp2(m_i - m_new)
        ones = gl.full(s_even.shape, 1.0, gl.float32, s_even.type.layout)
        neg_m = gl.convert_layout(-m_new, gl.SliceLayout(1, s_even.type.layout))[:, None] * ones
        p2 = exp2_pairs(fma_pairs(s2, pair(ones, ones), pair(neg_m, neg_m)))
        sums_lo, sums_hi = unpair(gl.reduce(p2, 1, add_pairs))
        l_i = l_i * alpha + gl.convert_layout(sums_lo + sums_hi, l_i.type.layout)
        if j > 0:
            correct_o(o_tmem, alpha, o_ready, j, True)
        p_even, p_odd = unpair(p2)
        p = join_columns(p_even, p_odd)
        # BUG: p_ready_early (P is stored after the MMA partition was told it is ready)
        store_p(s_tmem, j, p, p_layout, p_ready, BUG == "p_ready_early")
        m_i = m_new
    attention_epilogue(o_desc, o_tmem, o_smem, o_ready, l_i, N_CTX, BLOCK_N)


@gluon.jit
def attention_f32x2_kernel(q_desc, k_desc, v_desc, o_desc, qk_scale, N_CTX: gl.constexpr,
                           NUM_BUFFERS: gl.constexpr, BUG: gl.constexpr = ''):
    attention_f32x2(q_desc, k_desc, v_desc, o_desc, qk_scale, N_CTX, NUM_BUFFERS, False, BUG)


@gluon.jit
def attention_f32x2_causal_kernel(q_desc, k_desc, v_desc, o_desc, qk_scale, N_CTX: gl.constexpr,
                                  NUM_BUFFERS: gl.constexpr, BUG: gl.constexpr = ''):
    attention_f32x2(q_desc, k_desc, v_desc, o_desc, qk_scale, N_CTX, NUM_BUFFERS, True, BUG)


@gluon.jit
def attention_f32x2(q_desc, k_desc, v_desc, o_desc, qk_scale, N_CTX: gl.constexpr, NUM_BUFFERS: gl.constexpr,
                    CAUSAL: gl.constexpr, BUG: gl.constexpr):
    q_smem, k_bufs, v_bufs, o_smem, q_bar, kv_empty, kv_ready, s_ready, p_ready, o_ready, s_tmem, o_tmem = \
        attention_buffers(q_desc, k_desc, v_desc, o_desc, NUM_BUFFERS)
    gl.warp_specialize([
        (attention_softmax_partition, (o_desc, s_tmem, o_tmem, s_ready, p_ready, o_ready, o_smem, qk_scale, N_CTX,
                                       CAUSAL, BUG)),
        (attention_load_partition, (q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bar, kv_empty, kv_ready,
                                    N_CTX)),
        (attention_mma_partition, (q_smem, k_bufs, v_bufs, q_bar, kv_empty, kv_ready, s_tmem, o_tmem, s_ready,
                                   p_ready, o_ready, N_CTX)),
    ], [1, 1], [24, 24])
