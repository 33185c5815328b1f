"""Blackwell attention forward with two softmax warpgroups in ping-pong, written for bwsim's
tests in the structure of Triton's Gluon tutorial 01-attention-forward:

- persistent programs: each program walks the (query block, batch-head) tiles
  pid, pid + NUM_SMS, ...; a query block of BLOCK_M rows is two SPLIT_M = BLOCK_M / 2 halves,
  each with its own S, O and softmax partition, so one half's softmax runs while the tensor
  core computes the other half's products;
- a 1-warp load partition (both Q halves, then K and V through one ring whose slots are freed
  by the two MMAs that read them: barrier count 2), a 1-warp MMA partition (S = Q @ K^T, then
  O += P @ V with P in tensor memory; every MMA signals several barriers when it completes), two
  4-warp softmax partitions and a 4-warp correction partition (the default one) that rescales
  O in tensor memory;
- P (f16) is written over the first half of S's columns and alpha = exp2(m_old - m_new), one
  f32 per row, travels from softmax to correction in the next column of S: the S accumulator
  is borrowed, so the MMA partition waits for P @ V before it overwrites S with the next Q @ K^T;
- the scaling of S uses paired f32 arithmetic (`mul.f32x2`, `add.f32x2` in inline PTX), so
  the compiler cannot fuse the multiply and the add;
- CAUSAL: the keys before the query block's diagonal band are visited unmasked, then the band
  with the mask `row >= key`; M receives each row's log2-sum-exp2 (m + log2 l).

Q, K, V and O are [Z_H * N_CTX, HEAD_D] f16, row-major; M is [Z_H * N_CTX] f32.

BUG plants a hand-off bug of this protocol (empty: the correct kernel):
  'alpha_early'   the softmax says alpha is ready before it stores alpha into tensor memory
  'no_p_wait'     the MMA partition issues P @ V without waiting for the softmax to store P
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory, tcgen05_mma
from triton.experimental.gluon.language.nvidia.blackwell import tcgen05_commit, tma, mbarrier, fence_async_shared
from persistence import allocate_mbarriers


@gluon.constexpr_function
def f32x2_asm(op):
    # `OP.f32x2` on a pair of f32 lanes (round to nearest, no contraction), in 32-bit registers.
    return f"""
        {{
        .reg .b64 x, y, z;
        mov.b64 x, {{ $2, $3 }};
        mov.b64 y, {{ $4, $5 }};
        {op}.f32x2 z, x, y;
        mov.b64 {{ $0, $1 }}, z;
        }}
        """


@gluon.jit
def f32x2(op: gl.constexpr, a, b):
    # a OP b (op 'mul' or 'add') on pairs of f32 lanes with one `mul.f32x2` or `add.f32x2`.
    return gl.inline_asm_elementwise(f32x2_asm(op), "=r,=r,r,r,r,r", [a, b], dtype=gl.float32, is_pure=True, pack=2)


@gluon.jit
def opaque_i32(x):
    # An identity the compiler cannot see through (keeps a value from being hoisted).
    return gl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=gl.int32, is_pure=True, pack=1)


@gluon.constexpr_function
def rows_32x32b(cols):
    # The register layout of a 32x32b tensor-memory access by 4 warps: thread t of warp w
    # holds row 32 w + t, `cols` columns of it.
    return gl.BlockedLayout([1, cols], [32, 1], [4, 1], [0, 1])


@gluon.jit
def ring(counter, NUM: gl.constexpr):
    # Slot and phase of the counter-th use of a ring of NUM slots.
    return counter % NUM, (counter // NUM) & 1


@gluon.jit
def tile_coords(tile, N_CTX, BLOCK_M: gl.constexpr):
    # tile -> (query block, batch-head): query blocks of one batch-head are adjacent.
    num_m = gl.cdiv(N_CTX, BLOCK_M)
    return tile % num_m, tile // num_m


@gluon.jit
def key_range(start_m, N_CTX, BLOCK_M: gl.constexpr, CAUSAL: gl.constexpr, PHASE: gl.constexpr):
    # Keys a query block visits. PHASE 0: everything the MMA and load partitions handle;
    # 1: the unmasked keys before the diagonal band; 2: the band (causal only).
    if CAUSAL:
        if PHASE == 0:
            return 0, (start_m + 1) * BLOCK_M
        elif PHASE == 1:
            return 0, start_m * BLOCK_M
        else:
            return start_m * BLOCK_M, (start_m + 1) * BLOCK_M
    else:
        if PHASE == 2:
            return 0, 0
        else:
            return 0, N_CTX


@gluon.jit
def s_of(s_tmem, h: gl.constexpr):
    return s_tmem.index(h)


@gluon.jit
def p_of(s_tmem, h: gl.constexpr):
    # P over the first half of S's columns: [SPLIT_M, BLOCK_N] f16, two per column.
    SPLIT_M: gl.constexpr = s_tmem.shape[1]
    BLOCK_N: gl.constexpr = s_tmem.shape[2]
    s_as_f16 = s_tmem.index(h).reinterpret(gl.float16, [SPLIT_M, 2 * BLOCK_N],
                                           TensorMemoryLayout([SPLIT_M, 2 * BLOCK_N], col_stride=1))
    return s_as_f16.slice(0, BLOCK_N)


@gluon.jit
def alpha_of(s_tmem, h: gl.constexpr):
    # alpha: the column after P.
    SPLIT_M: gl.constexpr = s_tmem.shape[1]
    BLOCK_N: gl.constexpr = s_tmem.shape[2]
    return s_tmem.index(h).slice(BLOCK_N // 2, 1)


@gluon.jit
def load_partition(desc_q, desc_k, desc_v, q_smem, kv_smem, q_ready, q_empty, kv_ready, kv_empty, N_CTX, Z_H,
                   NUM_SMS: gl.constexpr, CAUSAL: gl.constexpr, BUG: gl.constexpr):
    SPLIT_M: gl.constexpr = desc_q.block_type.shape[0]
    BLOCK_N: gl.constexpr = desc_k.block_type.shape[0]
    NUM_KV: gl.constexpr = kv_smem.shape[0]
    num_tiles = gl.cdiv(N_CTX, 2 * SPLIT_M) * Z_H
    kv_count = 0
    t = 0
    for tile in range(gl.program_id(0), num_tiles, NUM_SMS):
        start_m, bh = tile_coords(tile, N_CTX, 2 * SPLIT_M)
        row0 = bh * N_CTX
        for h in gl.static_range(2):
            # Q half h: its slot is free once the previous tile's MMAs on it have completed.
            mbarrier.wait(q_empty.index(h), (t & 1) ^ 1)
            mbarrier.expect(q_ready.index(h), desc_q.block_type.nbytes)
            tma.async_load(desc_q, [row0 + start_m * 2 * SPLIT_M + h * SPLIT_M, 0],
                                            q_ready.index(h), q_smem.index(h))
        lo, hi = key_range(start_m, N_CTX, 2 * SPLIT_M, CAUSAL, 0)
        for start_n in range(lo, hi, BLOCK_N):
            # K, then V, each in the next ring slot.
            slot, phase = ring(kv_count, NUM_KV)
            mbarrier.wait(kv_empty.index(slot), phase ^ 1)
            mbarrier.expect(kv_ready.index(slot), desc_k.block_type.nbytes)
            tma.async_load(desc_k, [row0 + start_n, 0], kv_ready.index(slot), kv_smem.index(slot))
            slot, phase = ring(kv_count + 1, NUM_KV)
            mbarrier.wait(kv_empty.index(slot), phase ^ 1)
            mbarrier.expect(kv_ready.index(slot), desc_v.block_type.nbytes)
            tma.async_load(desc_v, [row0 + start_n, 0], kv_ready.index(slot), kv_smem.index(slot))
            kv_count += 2
        t += 1


@gluon.jit
def mma_partition(desc_q, desc_k, desc_v, q_smem, kv_smem, s_tmem, o_tmem, q_ready, q_empty, kv_ready, kv_empty,
                  s_ready, s_empty, p_ready, p_empty, o_ready, o_empty, N_CTX, Z_H, NUM_SMS: gl.constexpr,
                  CAUSAL: gl.constexpr, BUG: gl.constexpr):
    SPLIT_M: gl.constexpr = q_smem.shape[1]
    BLOCK_N: gl.constexpr = kv_smem.shape[1]
    NUM_KV: gl.constexpr = kv_smem.shape[0]
    # P @ V of half h completes on pv_done: only then may Q @ K^T overwrite P (in S's columns).
    pv_done = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(pv_done, count=1)
    pv_phase = 0
    num_tiles = gl.cdiv(N_CTX, 2 * SPLIT_M) * Z_H
    kv_count = 0
    s_count = 0  # uses of each half's S (both halves move together)
    o_count = 0  # P @ V products per half
    t = 0
    for tile in range(gl.program_id(0), num_tiles, NUM_SMS):
        start_m, bh = tile_coords(tile, N_CTX, 2 * SPLIT_M)
        lo, hi = key_range(start_m, N_CTX, 2 * SPLIT_M, CAUSAL, 0)
        num_blocks = (hi - lo) // BLOCK_N
        mbarrier.wait(q_ready.index(0), t & 1)
        mbarrier.wait(q_ready.index(1), t & 1)
        # S of both halves for the first key block.
        k_slot, k_phase = ring(kv_count, NUM_KV)
        mbarrier.wait(kv_ready.index(k_slot), k_phase)
        for h in gl.static_range(2):
            mbarrier.wait(s_empty.index(h), (s_count & 1) ^ 1)
            tcgen05_mma(q_smem.index(h), kv_smem.index(k_slot).permute((1, 0)), s_of(s_tmem, h), use_acc=False,
                        mbarriers=[s_ready.index(h), kv_empty.index(k_slot)])
        s_count += 1
        for j in range(num_blocks):
            v_slot, v_phase = ring(kv_count + 1, NUM_KV)
            mbarrier.wait(kv_ready.index(v_slot), v_phase)
            if j + 1 < num_blocks:
                k_slot, k_phase = ring(kv_count + 2, NUM_KV)
                mbarrier.wait(kv_ready.index(k_slot), k_phase)
            for h in gl.static_range(2):
                # O_h += P_h @ V once the softmax wrote P_h and the correction rescaled O_h.
                if BUG != "no_p_wait":
                    mbarrier.wait(p_ready.index(h), o_count & 1)
                mbarrier.wait(o_empty.index(h), (o_count & 1) ^ 1)
                # BUG: no_p_wait (without the wait above, P @ V reads P before the softmax stored it)
                tcgen05_mma(p_of(s_tmem, h), kv_smem.index(v_slot), o_tmem.index(h), use_acc=j > 0,
                            mbarriers=[o_ready.index(h), kv_empty.index(v_slot), p_empty.index(h), pv_done],
                            mbarrier_preds=[True, True, True, j + 1 < num_blocks])
                if j + 1 < num_blocks:
                    mbarrier.wait(pv_done, pv_phase)
                    pv_phase ^= 1
                    mbarrier.wait(s_empty.index(h), (s_count & 1) ^ 1)
                    tcgen05_mma(q_smem.index(h), kv_smem.index(k_slot).permute((1, 0)), s_of(s_tmem, h),
                                use_acc=False, mbarriers=[s_ready.index(h), kv_empty.index(k_slot)])
            o_count += 1
            if j + 1 < num_blocks:
                s_count += 1
            kv_count += 2
        # Both Q halves are free once every MMA issued so far has completed.
        tcgen05_commit(q_empty.index(0))
        tcgen05_commit(q_empty.index(1))
        t += 1
    mbarrier.invalidate(pv_done)


@gluon.jit
def softmax_partition(h: gl.constexpr, desc_o, m_ptr, s_tmem, o_tmem, o_smem, s_ready, s_empty, p_ready, p_empty,
                      a_ready, a_empty, e_ready, e_empty, qk_scale, N_CTX, Z_H, NUM_SMS: gl.constexpr,
                      CAUSAL: gl.constexpr, BUG: gl.constexpr):
    SPLIT_M: gl.constexpr = s_tmem.shape[1]
    BLOCK_N: gl.constexpr = s_tmem.shape[2]
    s_layout: gl.constexpr = s_of(s_tmem, h).get_reg_layout()
    o_layout: gl.constexpr = o_tmem.index(h).get_reg_layout()
    p_layout: gl.constexpr = rows_32x32b(BLOCK_N // 2)
    a_layout: gl.constexpr = gl.BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])
    rows_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
    offs_n = gl.arange(0, BLOCK_N, gl.SliceLayout(0, s_layout))
    num_tiles = gl.cdiv(N_CTX, 2 * SPLIT_M) * Z_H
    s_count = 0
    t = 0
    for tile in range(gl.program_id(0), num_tiles, NUM_SMS):
        start_m, bh = tile_coords(tile, N_CTX, 2 * SPLIT_M)
        offs_m = start_m * 2 * SPLIT_M + h * SPLIT_M + gl.arange(0, SPLIT_M, rows_layout)
        m_i = gl.full([SPLIT_M], -float("inf"), gl.float32, rows_layout)
        l_i = gl.full([SPLIT_M], 0.0, gl.float32, rows_layout)
        for phase_id in gl.static_range(1, 3):
            lo, hi = key_range(start_m, N_CTX, 2 * SPLIT_M, CAUSAL, phase_id)
            for start_n in range(lo, hi, BLOCK_N):
                ph = s_count & 1
                mbarrier.wait(s_ready.index(h), ph)
                s = s_of(s_tmem, h).load(s_layout)
                mbarrier.arrive(s_empty.index(h), count=1)
                if phase_id == 2:
                    cols = opaque_i32(offs_n)
                    s = gl.map_elementwise(causal_mask, s, offs_m[:, None] - (start_n + cols[None, :]))
                m_new = gl.maximum(m_i, gl.max(s, 1) * qk_scale)
                alpha = gl.exp2(m_i - m_new)
                # alpha for the correction partition, in the column after P.
                mbarrier.wait(a_empty.index(h), ph ^ 1)
                if BUG == "alpha_early":
                    mbarrier.arrive(a_ready.index(h), count=1)
                    # BUG: alpha_early (alpha is stored after the correction was told it is ready)
                    alpha_of(s_tmem, h).store(gl.convert_layout(alpha.expand_dims(1), a_layout))
                else:
                    alpha_of(s_tmem, h).store(gl.convert_layout(alpha.expand_dims(1), a_layout))
                    mbarrier.arrive(a_ready.index(h), count=1)
                s = f32x2("mul", s, gl.full([SPLIT_M, BLOCK_N], qk_scale, gl.float32, s_layout))
                s = f32x2("add", s, -m_new[:, None])
                # P in two column halves, each stored as soon as it is computed.
                s0, s1 = s.reshape([SPLIT_M, 2, BLOCK_N // 2]).permute(0, 2, 1).split()
                mbarrier.wait(p_empty.index(h), ph ^ 1)
                p0 = gl.exp2(s0)
                p_of(s_tmem, h).slice(0, BLOCK_N // 2).store(gl.convert_layout(p0.to(gl.float16), p_layout))
                p1 = gl.exp2(s1)
                p_of(s_tmem, h).slice(BLOCK_N // 2, BLOCK_N // 2).store(gl.convert_layout(p1.to(gl.float16), p_layout))
                mbarrier.arrive(p_ready.index(h), count=1)
                p = gl.convert_layout(gl.join(p0, p1).permute(0, 2, 1).reshape([SPLIT_M, BLOCK_N]), s_layout)
                l_i = l_i * alpha + gl.sum(p, 1)
                m_i = m_new
                s_count += 1
        # Epilogue: once the correction says O_h is final, O / l to shared memory, then TMA.
        mbarrier.wait(e_ready.index(h), t & 1)
        o = o_tmem.index(h).load(o_layout)
        mbarrier.arrive(e_empty.index(h), count=1)
        o = o / gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))[:, None]
        m_layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        rows = start_m * 2 * SPLIT_M + h * SPLIT_M + gl.arange(0, SPLIT_M, m_layout)
        gl.store(m_ptr + bh * N_CTX + rows, gl.convert_layout(m_i + gl.log2(l_i), m_layout))
        tma.store_wait(0)
        o_smem.index(h).store(o.to(gl.float16))
        fence_async_shared()
        tma.async_store(desc_o, [bh * N_CTX + start_m * 2 * SPLIT_M + h * SPLIT_M, 0], o_smem.index(h))
        t += 1
    tma.store_wait(0)


@gluon.jit
def correction_partition(s_tmem, o_tmem, o_ready, o_empty, a_ready, a_empty, e_ready, e_empty, N_CTX, Z_H,
                         NUM_SMS: gl.constexpr, CAUSAL: gl.constexpr, SPLIT_D: gl.constexpr):
    SPLIT_M: gl.constexpr = s_tmem.shape[1]
    BLOCK_N: gl.constexpr = s_tmem.shape[2]
    HEAD_D: gl.constexpr = o_tmem.shape[2]
    a_layout: gl.constexpr = gl.BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])
    part_layout: gl.constexpr = rows_32x32b(HEAD_D // SPLIT_D)
    num_tiles = gl.cdiv(N_CTX, 2 * SPLIT_M) * Z_H
    a_count = 0
    o_count = 0
    t = 0
    for tile in range(gl.program_id(0), num_tiles, NUM_SMS):
        start_m, bh = tile_coords(tile, N_CTX, 2 * SPLIT_M)
        lo, hi = key_range(start_m, N_CTX, 2 * SPLIT_M, CAUSAL, 0)
        num_blocks = (hi - lo) // BLOCK_N
        # The first alpha of a tile multiplies nothing: O starts from zero.
        for h in gl.static_range(2):
            mbarrier.wait(a_ready.index(h), a_count & 1)
            mbarrier.arrive(a_empty.index(h), count=1)
        a_count += 1
        for j in range(1, num_blocks):
            for h in gl.static_range(2):
                mbarrier.wait(a_ready.index(h), a_count & 1)
                alpha = alpha_of(s_tmem, h).load(a_layout)
                mbarrier.arrive(a_empty.index(h), count=1)
                alpha = gl.convert_layout(alpha.reshape([SPLIT_M]), gl.SliceLayout(1, part_layout))
                # O_h *= alpha after the previous P @ V has landed, a column block at a time.
                mbarrier.wait(o_ready.index(h), o_count & 1)
                for d in gl.static_range(SPLIT_D):
                    part = o_tmem.index(h).slice(d * (HEAD_D // SPLIT_D), HEAD_D // SPLIT_D)
                    o = part.load(part_layout)
                    part.store(f32x2("mul", o, alpha[:, None]))
                mbarrier.arrive(o_empty.index(h), count=1)
            a_count += 1
            o_count += 1
        # The last P @ V: O_h is final; the softmax partition stores it, then O_h is free.
        for h in gl.static_range(2):
            mbarrier.wait(o_ready.index(h), o_count & 1)
            mbarrier.arrive(e_ready.index(h), count=1)
        for h in gl.static_range(2):
            mbarrier.wait(e_empty.index(h), t & 1)
            mbarrier.arrive(o_empty.index(h), count=1)
        o_count += 1
        t += 1


@gluon.jit(do_not_specialize=["Z_H"])
def attention_pingpong_kernel(sm_scale, m_ptr, Z_H, N_CTX, desc_q, desc_k, desc_v, desc_o, NUM_SMS: gl.constexpr,
                              CAUSAL: gl.constexpr, NUM_KV: gl.constexpr, BUG: gl.constexpr):
    SPLIT_M: gl.constexpr = desc_q.block_type.shape[0]
    HEAD_D: gl.constexpr = desc_q.block_type.shape[1]
    BLOCK_N: gl.constexpr = desc_k.block_type.shape[0]
    qk_scale = sm_scale * 1.44269504
    q_smem = gl.allocate_shared_memory(gl.float16, [2, SPLIT_M, HEAD_D], desc_q.layout)
    kv_smem = gl.allocate_shared_memory(gl.float16, [NUM_KV, BLOCK_N, HEAD_D], desc_k.layout)
    o_smem = gl.allocate_shared_memory(gl.float16, [2, SPLIT_M, HEAD_D], desc_o.layout)
    q_ready = allocate_mbarriers(2)
    q_empty = allocate_mbarriers(2)
    kv_ready = allocate_mbarriers(NUM_KV)
    kv_empty = gl.allocate_shared_memory(gl.int64, [NUM_KV, 1], mbarrier.MBarrierLayout())
    s_ready = allocate_mbarriers(2)
    s_empty = allocate_mbarriers(2)
    p_ready = allocate_mbarriers(2)
    p_empty = allocate_mbarriers(2)
    o_ready = allocate_mbarriers(2)
    o_empty = allocate_mbarriers(2)
    a_ready = allocate_mbarriers(2)
    a_empty = allocate_mbarriers(2)
    e_ready = allocate_mbarriers(2)
    e_empty = allocate_mbarriers(2)
    for i in gl.static_range(NUM_KV):
        # A K or V slot is read by the MMAs of both halves.
        mbarrier.init(kv_empty.index(i), count=2)
    s_tmem = allocate_tensor_memory(gl.float32, [2, SPLIT_M, BLOCK_N], TensorMemoryLayout([SPLIT_M, BLOCK_N],
                                                                                          col_stride=1))
    o_tmem = allocate_tensor_memory(gl.float32, [2, SPLIT_M, HEAD_D], TensorMemoryLayout([SPLIT_M, HEAD_D],
                                                                                         col_stride=1))
    gl.warp_specialize([
        (correction_partition, (s_tmem, o_tmem, o_ready, o_empty, a_ready, a_empty, e_ready, e_empty, N_CTX, Z_H,
                                NUM_SMS, CAUSAL, 2)),
        (softmax_partition, (0, desc_o, m_ptr, s_tmem, o_tmem, o_smem, s_ready, s_empty, p_ready, p_empty, a_ready,
                             a_empty, e_ready, e_empty, qk_scale, N_CTX, Z_H, NUM_SMS, CAUSAL, BUG)),
        (softmax_partition, (1, desc_o, m_ptr, s_tmem, o_tmem, o_smem, s_ready, s_empty, p_ready, p_empty, a_ready,
                             a_empty, e_ready, e_empty, qk_scale, N_CTX, Z_H, NUM_SMS, CAUSAL, BUG)),
        (mma_partition, (desc_q, desc_k, desc_v, q_smem, kv_smem, s_tmem, o_tmem, q_ready, q_empty, kv_ready,
                         kv_empty, s_ready, s_empty, p_ready, p_empty, o_ready, o_empty, N_CTX, Z_H, NUM_SMS, CAUSAL,
                         BUG)),
        (load_partition, (desc_q, desc_k, desc_v, q_smem, kv_smem, q_ready, q_empty, kv_ready, kv_empty, N_CTX, Z_H,
                          NUM_SMS, CAUSAL, BUG)),
    ], [4, 4, 1, 1], [192, 192, 32, 32])


@gluon.jit
def causal_mask(s, row_minus_key):
    # The band's mask, one element at a time (tutorial 01-attention-forward's mask helper is a
    # gl.map_elementwise function too): a key after the query row is -1e8 before the softmax.
    return gl.where(row_minus_key > -1, s, -1.0e8)
