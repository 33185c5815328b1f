"""Block-scaled matmul with tcgen05_mma_scaled (Gluon tutorial 11's first kernel), written for bwsim's
tests against its hand-written twin kernels/tiles/mma_scaled.tile (same parameters, same order).

C = (A * A_scale) @ (B * B_scale)^T: A is [M, K] and B is [N, K] (K-major) in fp8 e4m3, with one
ue8m0 factor per VEC_SIZE = 32 elements of K (A_scale [M, K / 32], B_scale [N, K / 32], row-major in
global memory). One program computes one [BLOCK_M, BLOCK_N] tile of C: per K block it brings the A
and B tiles by TMA, loads the factors into registers, stores them into `TensorMemoryScalesLayout`
tensor memory, issues one block-scaled MMA into the f32 accumulator and waits for it; the epilogue
reads the accumulator, rounds it to f16 and TMA-stores it.

BUG='acc_before_wait' plants a bug: the last K step's MMA is not waited for, so the epilogue reads
the accumulator while the MMA may still write it.

The same kernel runs on mxfp4 operands (uint8 descriptors, two e2m1 values a byte, the even one in
the low nibble). `mma_scaled_contig_kernel` is the tutorial's second form (each block of factors one
contiguous load). The later forms bring the factors by TMA in the packed-block layout (a
[1, M / 128, SCALE_K / 4, 2, 256] tensor: factor (m, kb) at byte 16 (m % 32) + 4 (m / 32 % 4) + kb % 4
of the 512-byte block [0, m / 128, kb / 4]): `mma_scaled_packed_kernel`
unswizzles them in registers, `mma_scaled_copy_kernel` copies them to tensor memory with
tcgen05_copy from a reshaped, permuted view of their shared buffer; `mma_scaled_ws_kernel` (load, MMA and epilogue
partitions) and `mma_scaled_pipelined_kernel` (one partition) do the same in persistent pipelines.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    TensorMemoryScalesLayout,
    allocate_tensor_memory,
    fence_async_shared,
    tcgen05_commit,
    tcgen05_copy,
    tcgen05_mma_scaled,
    mbarrier,
    tma,
)

from tcgen05_steps import allocate_f32_acc, allocate_step_barriers, read_acc, store_tile, wait_mma


@gluon.jit
def allocate_scale_tmem(a_dtype: gl.constexpr, b_dtype: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                        SCALE_K: gl.constexpr):
    # The factors of one K block, in the tensor-memory layout the scaled MMA reads.
    scales_tmem_layout: gl.constexpr = TensorMemoryScalesLayout()
    a_scale_tmem = allocate_tensor_memory(a_dtype, [BLOCK_M, SCALE_K], scales_tmem_layout)
    b_scale_tmem = allocate_tensor_memory(b_dtype, [BLOCK_N, SCALE_K], scales_tmem_layout)
    return a_scale_tmem, b_scale_tmem


@gluon.jit
def mma_scaled_kernel(a_desc, b_desc, c_desc, a_scale_ptr, b_scale_ptr, scale_stride_m, scale_stride_k,
                      VEC_SIZE: gl.constexpr, BUG: gl.constexpr = ""):
    # fp4 operands come packed two per uint8 along K (their format is e2m1), the fp8 ones are e4m3.
    A_PER_BYTE: gl.constexpr = 2 if a_desc.dtype == gl.uint8 else 1
    B_PER_BYTE: gl.constexpr = 2 if b_desc.dtype == gl.uint8 else 1
    A_FORMAT: gl.constexpr = "e2m1" if a_desc.dtype == gl.uint8 else "e4m3"
    B_FORMAT: gl.constexpr = "e2m1" if b_desc.dtype == gl.uint8 else "e4m3"
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1] * A_PER_BYTE
    SCALE_K: gl.constexpr = BLOCK_K // VEC_SIZE
    K = a_desc.shape[1] * A_PER_BYTE

    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
    a_scale_tmem, b_scale_tmem = allocate_scale_tmem(a_scale_ptr.dtype.element_ty, b_scale_ptr.dtype.element_ty,
                                                     BLOCK_M, BLOCK_N, SCALE_K)
    acc_tmem = allocate_f32_acc(BLOCK_M, BLOCK_N)
    load_bar, mma_bar = allocate_step_barriers()

    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    rows: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    # The factors' register layouts: those of the tensor memory they are stored to.
    a_sf_layout: gl.constexpr = a_scale_tmem.get_reg_layout()
    b_sf_layout: gl.constexpr = b_scale_tmem.get_reg_layout()

    phase = 0
    use_acc = False
    for k in range(0, K, BLOCK_K):
        mbarrier.expect(load_bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [off_m, k // A_PER_BYTE], load_bar, a_smem)
        tma.async_load(b_desc, [off_n, k // B_PER_BYTE], load_bar, b_smem)

        # The factors of rows off_m.. and off_n.., K blocks k / VEC_SIZE.., while the tiles load.
        sf_k = k // VEC_SIZE + gl.arange(0, SCALE_K, gl.SliceLayout(0, rows))
        sf_m = off_m + gl.arange(0, BLOCK_M, gl.SliceLayout(1, rows))
        sf_n = off_n + gl.arange(0, BLOCK_N, gl.SliceLayout(1, rows))
        a_sf = gl.load(a_scale_ptr + sf_m[:, None] * scale_stride_m + sf_k[None, :] * scale_stride_k)
        b_sf = gl.load(b_scale_ptr + sf_n[:, None] * scale_stride_m + sf_k[None, :] * scale_stride_k)
        a_scale_tmem.store(gl.convert_layout(a_sf, a_sf_layout))
        b_scale_tmem.store(gl.convert_layout(b_sf, b_sf_layout))

        mbarrier.wait(load_bar, phase)
        # B is stored [BLOCK_N, BLOCK_K]; the MMA reads it as [BLOCK_K, BLOCK_N].
        tcgen05_mma_scaled(a_smem, b_smem.permute((1, 0)), acc_tmem, a_scale_tmem, b_scale_tmem, A_FORMAT, B_FORMAT,
                           use_acc=use_acc)
        tcgen05_commit(mma_bar)
        if BUG == "acc_before_wait":
            # BUG: the last MMA is not waited for before the epilogue reads the accumulator.
            if k + BLOCK_K < K:
                mbarrier.wait(mma_bar, phase)
        else:
            mbarrier.wait(mma_bar, phase)
        use_acc = True
        phase ^= 1

    mbarrier.invalidate(load_bar)
    mbarrier.invalidate(mma_bar)

    acc = acc_tmem.load(acc_tmem.get_reg_layout())
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit
def mma_scaled_contig_kernel(a_desc, b_desc, c_desc, a_scale_ptr, b_scale_ptr, VEC_SIZE: gl.constexpr):
    """Tutorial 11's second form: the factors of each [BLOCK_M, BLOCK_K / VEC_SIZE] block lie contiguous in
    global memory (scales reshaped to [M / BLOCK_M, SCALE_K / (BLOCK_K / VEC_SIZE), BLOCK_M, BLOCK_K / VEC_SIZE]),
    so each is one 1-D load reshaped to 2-D. With K = BLOCK_K that layout is the row-major one."""
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    SCALE_BLOCK_K: gl.constexpr = BLOCK_K // VEC_SIZE
    K = a_desc.shape[1]

    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
    a_scale_tmem, b_scale_tmem = allocate_scale_tmem(gl.uint8, gl.uint8, BLOCK_M, BLOCK_N, SCALE_BLOCK_K)
    acc_tmem = allocate_f32_acc(BLOCK_M, BLOCK_N)
    load_bar, mma_bar = allocate_step_barriers()

    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    flat: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    # Elements of one block of factors, and of one row of blocks (all K blocks of a tile row).
    a_block: gl.constexpr = BLOCK_M * SCALE_BLOCK_K
    b_block: gl.constexpr = BLOCK_N * SCALE_BLOCK_K
    blocks_per_row = K // BLOCK_K
    phase = 0
    use_acc = False
    for k in range(0, K, BLOCK_K):
        mbarrier.expect(load_bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [off_m, k], load_bar, a_smem)
        tma.async_load(b_desc, [off_n, k], load_bar, b_smem)
        kb = k // BLOCK_K
        a_sf = gl.load(a_scale_ptr + (pid_m * blocks_per_row + kb) * a_block + gl.arange(0, a_block, flat))
        b_sf = gl.load(b_scale_ptr + (pid_n * blocks_per_row + kb) * b_block + gl.arange(0, b_block, flat))
        a_sf = a_sf.reshape(BLOCK_M, SCALE_BLOCK_K)
        b_sf = b_sf.reshape(BLOCK_N, SCALE_BLOCK_K)
        a_scale_tmem.store(gl.convert_layout(a_sf, a_scale_tmem.get_reg_layout()))
        b_scale_tmem.store(gl.convert_layout(b_sf, b_scale_tmem.get_reg_layout()))
        mbarrier.wait(load_bar, phase)
        tcgen05_mma_scaled(a_smem, b_smem.permute((1, 0)), acc_tmem, a_scale_tmem, b_scale_tmem, "e4m3", "e4m3",
                           use_acc=use_acc)
        phase = wait_mma(mma_bar, phase)
        use_acc = True

    acc = read_acc(acc_tmem, load_bar, mma_bar)
    store_tile(c_desc, acc, off_m, off_n)


@gluon.jit
def scales_as_tmem_rows(smem, BLOCK_MN: gl.constexpr, SCALE_K: gl.constexpr):
    # A [1, BLOCK_MN / 128, SCALE_K / 4, 2, 256] block of factors stored 32 x 4 x 4 (row % 32, row / 32 % 4,
    # K block) per 128 rows and 4 K blocks, viewed as the [BLOCK_MN, SCALE_K] matrix tcgen05_copy takes.
    smem = smem.reshape((smem.shape[1], smem.shape[2], 32, 4, 4))
    smem = smem.permute((0, 3, 2, 1, 4))
    return smem.reshape((BLOCK_MN, SCALE_K))


@gluon.jit
def allocate_packed_operands(a_desc, b_desc, a_scale_desc, b_scale_desc):
    # One shared buffer for each operand tile and for each packed block of factors.
    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
    a_sf_smem = gl.allocate_shared_memory(a_scale_desc.dtype, a_scale_desc.block_type.shape, a_scale_desc.layout)
    b_sf_smem = gl.allocate_shared_memory(b_scale_desc.dtype, b_scale_desc.block_type.shape, b_scale_desc.layout)
    return a_smem, b_smem, a_sf_smem, b_sf_smem


@gluon.jit
def allocate_packed_ring(a_desc, b_desc, a_scale_desc, b_scale_desc, NUM_BUFFERS: gl.constexpr):
    # A ring of NUM_BUFFERS slots, each with allocate_packed_operands' buffers, and per slot a barrier
    # its loads complete (ready) and one its MMA's commit completes (free).
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [NUM_BUFFERS] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [NUM_BUFFERS] + b_desc.block_type.shape, b_desc.layout)
    a_sf_bufs = gl.allocate_shared_memory(a_scale_desc.dtype, [NUM_BUFFERS] + a_scale_desc.block_type.shape,
                                          a_scale_desc.layout)
    b_sf_bufs = gl.allocate_shared_memory(b_scale_desc.dtype, [NUM_BUFFERS] + b_scale_desc.block_type.shape,
                                          b_scale_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    free = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_BUFFERS):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(free.index(i), count=1)
    return a_bufs, b_bufs, a_sf_bufs, b_sf_bufs, ready, free


@gluon.jit
def load_packed_step(a_desc, b_desc, a_scale_desc, b_scale_desc, pid_m, pid_n, k, bar, a_dst, b_dst, a_sf_dst,
                     b_sf_dst):
    # K step k of tile (pid_m, pid_n) on one barrier: the operand tiles and their packed blocks of factors
    # (block [0, pid_m or pid_n, K block, 0, 0] of the packed-block tensor).
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    kb = k // BLOCK_K
    mbarrier.expect(
        bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes + a_scale_desc.block_type.nbytes +
        b_scale_desc.block_type.nbytes)
    tma.async_load(a_desc, [pid_m * BLOCK_M, k], bar, a_dst)
    tma.async_load(b_desc, [pid_n * BLOCK_N, k], bar, b_dst)
    tma.async_load(a_scale_desc, [0, pid_m * a_scale_desc.block_type.shape[1],
                                                   kb * a_scale_desc.block_type.shape[2], 0, 0], bar,
                                    a_sf_dst)
    tma.async_load(b_scale_desc, [0, pid_n * b_scale_desc.block_type.shape[1],
                                                   kb * b_scale_desc.block_type.shape[2], 0, 0], bar,
                                    b_sf_dst)


@gluon.jit
def copy_scales_and_mma(a, b, a_sf, b_sf, a_scale_tmem, b_scale_tmem, acc, use_acc):
    # One K step from packed blocks of factors in shared memory: tcgen05_copy them to tensor memory
    # (ordered before the MMA on the tensor pipe: no wait between them), then the block-scaled MMA.
    BLOCK_M: gl.constexpr = a.shape[0]
    BLOCK_N: gl.constexpr = b.shape[0]
    SCALE_K: gl.constexpr = a_scale_tmem.shape[1]
    tcgen05_copy(scales_as_tmem_rows(a_sf, BLOCK_M, SCALE_K), a_scale_tmem)
    tcgen05_copy(scales_as_tmem_rows(b_sf, BLOCK_N, SCALE_K), b_scale_tmem)
    tcgen05_mma_scaled(a, b.permute((1, 0)), acc, a_scale_tmem, b_scale_tmem, "e4m3", "e4m3", use_acc=use_acc)


@gluon.jit
def scales_from_packed_registers(sf, BLOCK_MN: gl.constexpr, SCALE_K: gl.constexpr):
    # The same unswizzle as scales_as_tmem_rows, on a register tensor.
    sf = sf.reshape(sf.shape[1], sf.shape[2], 32, 4, 4)
    sf = sf.permute(0, 3, 2, 1, 4)
    return sf.reshape(BLOCK_MN, SCALE_K)


@gluon.jit
def packed_scaled_matmul(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, VEC_SIZE: gl.constexpr,
                         VIA: gl.constexpr, BUG: gl.constexpr):
    # The one-buffer matmul of the packed-block forms, the factors brought to tensor memory by
    # tcgen05_copy (VIA='copy') or through registers (VIA='registers').
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    SCALE_K: gl.constexpr = BLOCK_K // VEC_SIZE
    K = a_desc.shape[1]

    a_smem, b_smem, a_sf_smem, b_sf_smem = allocate_packed_operands(a_desc, b_desc, a_scale_desc, b_scale_desc)
    a_scale_tmem, b_scale_tmem = allocate_scale_tmem(a_scale_desc.dtype, b_scale_desc.dtype, BLOCK_M, BLOCK_N,
                                                     SCALE_K)
    acc_tmem = allocate_f32_acc(BLOCK_M, BLOCK_N)
    load_bar, mma_bar = allocate_step_barriers()

    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    phase = 0
    use_acc = False
    for k in range(0, K, BLOCK_K):
        load_packed_step(a_desc, b_desc, a_scale_desc, b_scale_desc, pid_m, pid_n, k, load_bar, a_smem, b_smem,
                         a_sf_smem, b_sf_smem)
        mbarrier.wait(load_bar, phase)
        if VIA == "copy":
            copy_scales_and_mma(a_smem, b_smem, a_sf_smem, b_sf_smem, a_scale_tmem, b_scale_tmem, acc_tmem, use_acc)
        else:
            a_sf = scales_from_packed_registers(a_sf_smem.load(gl.AutoLayout()), BLOCK_M, SCALE_K)
            b_sf = scales_from_packed_registers(b_sf_smem.load(gl.AutoLayout()), BLOCK_N, SCALE_K)
            if BUG != "no_fence":
                fence_async_shared()
            a_scale_tmem.store(gl.set_auto_layout(a_sf, a_scale_tmem.get_reg_layout()))
            b_scale_tmem.store(gl.set_auto_layout(b_sf, b_scale_tmem.get_reg_layout()))
            tcgen05_mma_scaled(a_smem, b_smem.permute((1, 0)), acc_tmem, a_scale_tmem, b_scale_tmem, "e4m3", "e4m3",
                               use_acc=use_acc)
        phase = wait_mma(mma_bar, phase)
        use_acc = True

    acc = read_acc(acc_tmem, load_bar, mma_bar)
    store_tile(c_desc, acc, pid_m * BLOCK_M, pid_n * BLOCK_N)


@gluon.jit
def mma_scaled_copy_kernel(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, VEC_SIZE: gl.constexpr):
    """Tutorial 11's later form: the factors arrive by TMA in the packed-block layout and go to tensor
    memory with tcgen05_copy from a reshaped and permuted view of their shared buffer (a
    `shared_linear` view)."""
    packed_scaled_matmul(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, VEC_SIZE, "copy", "")


@gluon.jit
def mma_scaled_packed_kernel(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, VEC_SIZE: gl.constexpr,
                             BUG: gl.constexpr):
    """Tutorial 11's packed-block form through registers: the factors arrive by TMA in the
    packed-block layout, are read from shared memory with an automatic layout, unswizzled by a
    register reshape and permute, and stored to tensor memory.

    The next K step's TMA overwrites the factors' buffers that these generic-proxy loads read, so
    a proxy fence follows the loads. BUG='no_fence' leaves it out, as the tutorial's kernel does."""
    packed_scaled_matmul(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, VEC_SIZE, "registers", BUG)


@gluon.jit
def mma_from_slot(i, a_bufs, b_bufs, a_sf_bufs, b_sf_bufs, ready, free, a_scale_tmem, b_scale_tmem, acc, use_acc):
    # The K step of load number i, once its ring slot is filled; the slot's free barrier completes when
    # the copies and the MMA have read it.
    NUM_BUFFERS: gl.constexpr = a_bufs.shape[0]
    s = i % NUM_BUFFERS
    mbarrier.wait(ready.index(s), (i // NUM_BUFFERS) & 1)
    copy_scales_and_mma(a_bufs.index(s), b_bufs.index(s), a_sf_bufs.index(s), b_sf_bufs.index(s), a_scale_tmem,
                        b_scale_tmem, acc, use_acc)
    tcgen05_commit(free.index(s))


@gluon.jit
def store_tile_async(c_desc, c_smem, acc, t, tiles_n):
    # Output tile t of a persistent program (tiles_n tiles a row) through c_smem, once the previous
    # store from c_smem has read it; the store is left in flight.
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    tma.store_wait(0)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [t // tiles_n * BLOCK_M, t % tiles_n * BLOCK_N], c_smem)


@gluon.jit
def ws_load_partition(a_desc, b_desc, a_scale_desc, b_scale_desc, a_bufs, b_bufs, a_sf_bufs, b_sf_bufs, load_ready,
                      load_empty, num_tiles, tiles_n, K):
    # Fills the ring: per K step the two operand tiles and their two blocks of factors on one barrier.
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    NUM_BUFFERS: gl.constexpr = a_bufs.shape[0]
    i = 0
    for t in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
        for k in range(0, K, BLOCK_K):
            s = i % NUM_BUFFERS
            # The first pass over the ring finds every slot free.
            mbarrier.wait(load_empty.index(s), (i // NUM_BUFFERS) & 1 ^ 1)
            load_packed_step(a_desc, b_desc, a_scale_desc, b_scale_desc, t // tiles_n, t % tiles_n, k,
                             load_ready.index(s), a_bufs.index(s), b_bufs.index(s), a_sf_bufs.index(s),
                             b_sf_bufs.index(s))
            i += 1


@gluon.jit
def ws_mma_partition(a_bufs, b_bufs, a_sf_bufs, b_sf_bufs, a_scale_tmem, b_scale_tmem, acc_bufs, load_ready,
                     load_empty, acc_empty, acc_ready, num_tiles, K):
    # Per K step: copy the factors to tensor memory, then the block-scaled MMA; the commit frees the
    # ring slot once both have read it. The accumulator alternates between two TMEM buffers.
    BLOCK_K: gl.constexpr = a_bufs.shape[2]
    NUM_ACC: gl.constexpr = acc_bufs.shape[0]
    i = 0
    n = 0
    for t in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
        a = n % NUM_ACC
        mbarrier.wait(acc_empty.index(a), (n // NUM_ACC) & 1 ^ 1)
        acc = acc_bufs.index(a)
        use_acc = False
        for k in range(0, K, BLOCK_K):
            mma_from_slot(i, a_bufs, b_bufs, a_sf_bufs, b_sf_bufs, load_ready, load_empty, a_scale_tmem,
                          b_scale_tmem, acc, use_acc)
            use_acc = True
            i += 1
        tcgen05_commit(acc_ready.index(a))
        n += 1


@gluon.jit
def ws_epilogue_partition(c_desc, acc_bufs, acc_empty, acc_ready, num_tiles, tiles_n):
    # Reads each finished accumulator, frees its buffer, and stores the tile through one shared buffer.
    NUM_ACC: gl.constexpr = acc_bufs.shape[0]
    acc_reg: gl.constexpr = acc_bufs.index(0).get_reg_layout()
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    n = 0
    for t in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
        a = n % NUM_ACC
        mbarrier.wait(acc_ready.index(a), (n // NUM_ACC) & 1)
        acc = acc_bufs.index(a).load(acc_reg)
        mbarrier.arrive(acc_empty.index(a), count=1)
        store_tile_async(c_desc, c_smem, acc, t, tiles_n)
        n += 1
    tma.store_wait(0)


@gluon.jit
def mma_scaled_ws_kernel(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, VEC_SIZE: gl.constexpr,
                         NUM_BUFFERS: gl.constexpr):
    """Tutorial 11's warp-specialized form: persistent programs walk the output tiles; a load
    partition fills a NUM_BUFFERS ring with operand tiles and packed-block factors, an MMA partition
    copies the factors to tensor memory with tcgen05_copy and issues the block-scaled MMAs into one of
    two accumulators, and the default partition stores finished tiles."""
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    K = a_desc.shape[1]
    tiles_n = gl.cdiv(c_desc.shape[1], BLOCK_N)
    num_tiles = gl.cdiv(c_desc.shape[0], BLOCK_M) * tiles_n

    a_bufs, b_bufs, a_sf_bufs, b_sf_bufs, load_ready, load_empty = allocate_packed_ring(
        a_desc, b_desc, a_scale_desc, b_scale_desc, NUM_BUFFERS)
    acc_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    acc_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for a in gl.static_range(2):
        mbarrier.init(acc_empty.index(a), count=1)
        mbarrier.init(acc_ready.index(a), count=1)

    acc_layout: gl.constexpr = TensorMemoryLayout([BLOCK_M, BLOCK_N], col_stride=1)
    acc_bufs = allocate_tensor_memory(gl.float32, [2, BLOCK_M, BLOCK_N], acc_layout)
    a_scale_tmem, b_scale_tmem = allocate_scale_tmem(a_scale_desc.dtype, b_scale_desc.dtype, BLOCK_M, BLOCK_N,
                                                     BLOCK_K // VEC_SIZE)

    gl.warp_specialize([
        (ws_epilogue_partition, (c_desc, acc_bufs, acc_empty, acc_ready, num_tiles, tiles_n)),
        (ws_mma_partition, (a_bufs, b_bufs, a_sf_bufs, b_sf_bufs, a_scale_tmem, b_scale_tmem, acc_bufs, load_ready,
                            load_empty, acc_empty, acc_ready, num_tiles, K)),
        (ws_load_partition, (a_desc, b_desc, a_scale_desc, b_scale_desc, a_bufs, b_bufs, a_sf_bufs, b_sf_bufs,
                             load_ready, load_empty, num_tiles, tiles_n, K)),
    ], [1, 1], [24, 24])


@gluon.jit
def pipelined_load(loads, t, k, a_desc, b_desc, a_scale_desc, b_scale_desc, a_bufs, b_bufs, a_sf_bufs, b_sf_bufs,
                   ready, free, tiles_n):
    # Load number `loads` (K step k of tile t) into ring slot loads % NUM_BUFFERS, once the MMA that
    # read that slot last has completed (its commit frees it); the number of the next load.
    NUM_BUFFERS: gl.constexpr = a_bufs.shape[0]
    s = loads % NUM_BUFFERS
    if loads >= NUM_BUFFERS:
        mbarrier.wait(free.index(s), (loads // NUM_BUFFERS - 1) & 1)
    load_packed_step(a_desc, b_desc, a_scale_desc, b_scale_desc, t // tiles_n, t % tiles_n, k, ready.index(s),
                     a_bufs.index(s), b_bufs.index(s), a_sf_bufs.index(s), b_sf_bufs.index(s))
    return loads + 1


@gluon.jit
def mma_scaled_pipelined_kernel(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, VEC_SIZE: gl.constexpr,
                                NUM_BUFFERS: gl.constexpr):
    """Tutorial 11's software-pipelined form in one partition: persistent programs walk the output
    tiles; loads run NUM_BUFFERS - 1 K steps ahead of the MMAs through a ring (a slot is reloaded
    once the MMA that read it has completed, tracked by a per-slot commit barrier); each K step
    copies its packed-block factors to tensor memory with tcgen05_copy and issues the block-scaled
    MMA; the epilogue waits for the tile's last MMA and stores through shared memory."""
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    K = a_desc.shape[1]
    k_steps = gl.cdiv(K, BLOCK_K)
    tiles_n = gl.cdiv(c_desc.shape[1], BLOCK_N)
    num_tiles = gl.cdiv(c_desc.shape[0], BLOCK_M) * tiles_n

    a_bufs, b_bufs, a_sf_bufs, b_sf_bufs, ready, free = allocate_packed_ring(a_desc, b_desc, a_scale_desc,
                                                                             b_scale_desc, NUM_BUFFERS)
    acc_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(acc_bar, count=1)

    acc_tmem = allocate_f32_acc(BLOCK_M, BLOCK_N)
    a_scale_tmem, b_scale_tmem = allocate_scale_tmem(a_scale_desc.dtype, b_scale_desc.dtype, BLOCK_M, BLOCK_N,
                                                     BLOCK_K // VEC_SIZE)
    acc_reg: gl.constexpr = acc_tmem.get_reg_layout()
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)

    loads = 0  # loads issued so far (over every tile of this program)
    mmas = 0  # K steps consumed so far
    n = 0  # tiles finished by this program
    for t in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
        # Prologue: the first NUM_BUFFERS - 1 K steps of this tile.
        for p in gl.static_range(NUM_BUFFERS - 1):
            if p < k_steps:
                loads = pipelined_load(loads, t, p * BLOCK_K, a_desc, b_desc, a_scale_desc, b_scale_desc, a_bufs,
                                       b_bufs, a_sf_bufs, b_sf_bufs, ready, free, tiles_n)
        use_acc = False
        for ki in range(k_steps):
            mma_from_slot(mmas, a_bufs, b_bufs, a_sf_bufs, b_sf_bufs, ready, free, a_scale_tmem, b_scale_tmem,
                          acc_tmem, use_acc)
            use_acc = True
            mmas += 1
            # Keep NUM_BUFFERS - 1 loads in flight: the next one reuses the slot of an MMA
            # issued earlier.
            kn = ki + NUM_BUFFERS - 1
            if kn < k_steps:
                loads = pipelined_load(loads, t, kn * BLOCK_K, a_desc, b_desc, a_scale_desc, b_scale_desc, a_bufs,
                                       b_bufs, a_sf_bufs, b_sf_bufs, ready, free, tiles_n)
        tcgen05_commit(acc_bar)
        mbarrier.wait(acc_bar, n & 1)
        store_tile_async(c_desc, c_smem, acc_tmem.load(acc_reg), t, tiles_n)
        n += 1
    tma.store_wait(0)
