// Does the L1 that the shared-memory carve-out leaves beside shared memory set the cost of
// a spilled wgmma accumulator on the H100? (docs/hardware/h100-calibration.md, "What
// separates the spilling 4-warp rows").
//
// The spilling 4-warp 128 x 256 matmuls keep one 64-row half of their accumulator in local
// memory: per 64-deep K step each thread loads its 64 8-byte values (LDL.LU.64) and stores
// 14 others before that half's 4 HGMMAs, and stores the 64 and reloads the 14 after them
// (ptxas 13 on the backend's PTX: 78 STL.64 and 78 LDL.64 per step), 128 threads, one CTA
// per SM, beside 147,584 bytes (3 buffers) or 196,736 (4 buffers) of shared memory. This program reproduces that
// traffic without the matmul and measures two things, each under a chosen dynamic
// shared-memory size, carve-out hint and grid:
//
//   l1   the L1 capacity in force: one thread chases a pointer ring of W bytes (one 128-byte
//        line per hop, `ld.global.ca`) and reports SM cycles per hop; the knee where hops
//        leave the L1 (tens of cycles) for the L2 (hundreds) is the L1 size.
//   swap the spill traffic: per step the same 78 + 78 accesses to a 1568-byte local frame,
//        in the same order, each half followed by DELAY / 2 SM cycles of waiting (the
//        HGMMAs' time: 8 x m64n256k16, about 1140 cycles at 1830 MHz, per 64-deep step). Reports SM cycles per step (clock64
//        on CTA 0, thread 0) and the launch's time per step in 1830-MHz cycles.
//
// Build and run: docs/hardware/probes/spill-carveout.sh (nvcc -arch=sm_90a). No bwsim needed.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                      \
    do {                                                                              \
        cudaError_t e_ = (x);                                                         \
        if (e_ != cudaSuccess) {                                                      \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,            \
                         cudaGetErrorString(e_));                                     \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

// 8-byte values spilled per thread: the 64 of the accumulator half that lives in local
// memory (loaded before its HGMMAs, stored after) and 14 others (the reverse).
constexpr int HALF = 64;
constexpr int OTHER = 14;
// The frame in 8-byte slots: 196 (1568 bytes per thread), as ptxas reports for
// matmul_pipelined at 4 warps; the script also builds 132 (1056 bytes, persistent_matmul's
// frame) with -DPROBE_FRAME=132, the one other difference between rows 5 and 11 it can test.
#ifndef PROBE_FRAME
#define PROBE_FRAME 196
#endif
constexpr int FRAME = PROBE_FRAME;

// Touches the first and last byte of the dynamic shared memory so that it is really asked
// for, as the matmul's buffers are.
__device__ void touch_smem(unsigned smem_bytes) {
    extern __shared__ unsigned char smem[];
    if (smem_bytes > 0 && threadIdx.x == 0) {
        smem[0] = 1;
        smem[smem_bytes - 1] = 1;
    }
    __syncthreads();
}

__global__ void __launch_bounds__(128, 1)
    l1_chase(const unsigned* __restrict__ ring, unsigned hops, unsigned smem_bytes,
             unsigned long long* cycles_out, unsigned* sink) {
    touch_smem(smem_bytes);
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    unsigned i = 0;
    // Warm the ring into whatever holds it.
    for (unsigned h = 0; h < hops; ++h) {
        asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(i) : "l"(ring + i));
    }
    long long t0 = clock64();
    for (unsigned h = 0; h < hops; ++h) {
        asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(i) : "l"(ring + i));
    }
    long long t1 = clock64();
    *cycles_out = (unsigned long long)(t1 - t0);
    *sink = i;
}

__global__ void __launch_bounds__(128, 1)
    spill_swap(unsigned steps, unsigned delay, unsigned off, unsigned smem_bytes,
               unsigned long long* cycles_out, unsigned long long* sink) {
    touch_smem(smem_bytes);
    // A volatile local array: every access below is a real STL.64 / LDL.64 (dynamic index
    // through `off`, which the host passes as 0). Slots 0..HALF hold the spilled half of the
    // accumulator, HALF..HALF + OTHER the other spilled values.
    volatile unsigned long long frame[FRAME];
    unsigned long long h[HALF], x[OTHER];
#pragma unroll
    for (int i = 0; i < HALF; ++i) h[i] = threadIdx.x * 131 + i;
#pragma unroll
    for (int i = 0; i < OTHER; ++i) x[i] = threadIdx.x * 7 + i;
    for (int i = 0; i < FRAME; ++i) frame[(i + off) % FRAME] = i;
    const unsigned hb = off, xb = HALF + off;
    long long t0 = clock64();
    for (unsigned s = 0; s < steps; ++s) {
        // Before the second half's HGMMAs: the other values out, the half in.
#pragma unroll
        for (int i = 0; i < OTHER; ++i) frame[xb + i] = x[i];
#pragma unroll
        for (int i = 0; i < HALF; ++i) h[i] = frame[hb + i];
        // The HGMMAs read every accumulator register of the half, then take their time.
        unsigned long long acc = 0;
#pragma unroll
        for (int i = 0; i < HALF; ++i) acc ^= h[i];
        h[0] ^= acc & 1;
        long long w = clock64();
        while (clock64() - w < (long long)(delay / 2)) {
        }
        // After them: the half out, the other values back, then the first half's HGMMAs.
#pragma unroll
        for (int i = 0; i < HALF; ++i) frame[hb + i] = h[i];
#pragma unroll
        for (int i = 0; i < OTHER; ++i) x[i] = frame[xb + i];
        acc = 0;
#pragma unroll
        for (int i = 0; i < OTHER; ++i) acc ^= x[i];
        x[0] ^= acc & 1;
        w = clock64();
        while (clock64() - w < (long long)(delay / 2)) {
        }
    }
    long long t1 = clock64();
    unsigned long long acc = 0;
#pragma unroll
    for (int i = 0; i < HALF; ++i) acc += h[i];
#pragma unroll
    for (int i = 0; i < OTHER; ++i) acc += x[i];
    if (blockIdx.x == 0 && threadIdx.x == 0) *cycles_out = (unsigned long long)(t1 - t0);
    if (acc == 0x5eed) *sink = acc;  // never true; keeps the values live
}

static void set_attrs(const void* f, int smem_bytes, int carveout) {
    CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    CHECK(cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
}

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr,
                     "usage: %s l1 SMEM_BYTES CARVEOUT_PCT KB...\n"
                     "       %s swap SMEM_BYTES CARVEOUT_PCT GRID STEPS DELAY\n"
                     "CARVEOUT_PCT -1 = no preference (the GPU runner's launches)\n",
                     argv[0], argv[0]);
        return 2;
    }
    const int smem = std::atoi(argv[2]);
    const int carve = std::atoi(argv[3]);
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    const double clk_ghz = 1.83;  // the chip table's clock, for the host-timed figure
    unsigned long long* d_cycles;
    unsigned long long* d_sink;
    CHECK(cudaMalloc(&d_cycles, sizeof(unsigned long long)));
    CHECK(cudaMalloc(&d_sink, sizeof(unsigned long long)));
    if (std::strcmp(argv[1], "l1") == 0) {
        set_attrs((const void*)l1_chase, smem, carve);
        for (int a = 4; a < argc; ++a) {
            const int kb = std::atoi(argv[a]);
            const unsigned lines = (unsigned)kb * 1024 / 128, stride = 32;  // u32 per line
            std::vector<unsigned> ring((size_t)lines * stride, 0);
            // A random cyclic order of the lines (Sattolo), so no stride predictor helps.
            std::vector<unsigned> order(lines);
            for (unsigned i = 0; i < lines; ++i) order[i] = i;
            srand(7);
            for (unsigned i = lines - 1; i > 0; --i) {
                unsigned j = (unsigned)rand() % i;
                std::swap(order[i], order[j]);
            }
            for (unsigned i = 0; i < lines; ++i)
                ring[(size_t)order[i] * stride] = order[(i + 1) % lines] * stride;
            unsigned* d_ring;
            CHECK(cudaMalloc(&d_ring, ring.size() * 4));
            CHECK(cudaMemcpy(d_ring, ring.data(), ring.size() * 4, cudaMemcpyHostToDevice));
            const unsigned hops = lines * 4 < 4096 ? 4096 : lines * 4;
            l1_chase<<<1, 128, smem>>>(d_ring, hops, (unsigned)smem, d_cycles,
                                       (unsigned*)d_sink);
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
            unsigned long long c;
            CHECK(cudaMemcpy(&c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
            std::printf(
                "{\"probe\":\"l1\",\"smem\":%d,\"carveout\":%d,\"kb\":%d,\"cycles_per_hop\":%.1f}\n",
                smem, carve, kb, (double)c / hops);
            CHECK(cudaFree(d_ring));
        }
    } else if (std::strcmp(argv[1], "swap") == 0 && argc >= 7) {
        const int grid = std::atoi(argv[4]);
        const unsigned steps = (unsigned)std::atoi(argv[5]), delay = (unsigned)std::atoi(argv[6]);
        set_attrs((const void*)spill_swap, smem, carve);
        int per_sm = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spill_swap, 128, smem));
        if (per_sm < 1) {
            std::fprintf(stderr, "swap: no CTA fits with %d bytes of shared memory\n", smem);
            return 1;
        }
        cudaFuncAttributes fa;
        CHECK(cudaFuncGetAttributes(&fa, spill_swap));
        spill_swap<<<grid, 128, smem>>>(steps / 8 + 1, delay, 0, (unsigned)smem, d_cycles,
                                        d_sink);  // warm-up
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        cudaEvent_t e0, e1;
        CHECK(cudaEventCreate(&e0));
        CHECK(cudaEventCreate(&e1));
        float best = 1e30f;
        unsigned long long c = 0;
        for (int rep = 0; rep < 5; ++rep) {
            CHECK(cudaEventRecord(e0));
            spill_swap<<<grid, 128, smem>>>(steps, delay, 0, (unsigned)smem, d_cycles, d_sink);
            CHECK(cudaEventRecord(e1));
            CHECK(cudaEventSynchronize(e1));
            CHECK(cudaGetLastError());
            float ms;
            CHECK(cudaEventElapsedTime(&ms, e0, e1));
            if (ms < best) best = ms;
            CHECK(cudaMemcpy(&c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
        }
        const double waves = (double)((grid + p.multiProcessorCount * per_sm - 1) /
                                      (p.multiProcessorCount * per_sm));
        std::printf(
            "{\"probe\":\"swap\",\"smem\":%d,\"carveout\":%d,\"grid\":%d,\"steps\":%u,"
            "\"delay\":%u,\"ctas_per_sm\":%d,\"regs\":%d,\"local_bytes\":%zu,\"best_ms\":%.4f,"
            "\"sm_cycles_per_step\":%.1f,\"host_cycles_per_step_1830\":%.1f}\n",
            smem, carve, grid, steps, delay, per_sm, fa.numRegs, fa.localSizeBytes, best,
            (double)c / steps, best * 1e-3 * clk_ghz * 1e9 / (steps * waves));
    } else {
        std::fprintf(stderr, "unknown probe %s\n", argv[1]);
        return 2;
    }
    return 0;
}
