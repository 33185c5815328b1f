// wgmma arithmetic probe for the H100 (sm_90a).
//
// One warpgroup per block runs ONE wgmma.mma_async.m64n8kK (K = one instruction's K: 16 for
// f16/bf16, 32 for e4m3/e5m2, 8 for tf32) on A [64, K] and B [K, 8] from shared memory (both
// K-major, no swizzle) and C [64, 8] f32 in registers, with use_acc given per test. The host
// makes the inputs (seeded xorshift: wide exponent spreads, cancellations, one large product
// among small ones, a large accumulator, low tf32 bits set) and writes, per dtype, a file of
// u32 words: per test use_acc, A [64*K] element bits, B [K*8] element bits (row-major [k][n]),
// C [512] f32 bits, D [512] f32 bits. The simulator's model is fitted to and checked against
// these files offline.
//
// Build and run:  nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o probe wgmma_numerics.cu
//                 ./probe OUTDIR [TESTS_PER_DTYPE]
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

enum Dt { F16 = 0, BF16 = 1, E4M3 = 2, E5M2 = 3, TF32 = 4 };
static const char* NAMES[] = {"f16", "bf16", "e4m3", "e5m2", "tf32"};
static const int BYTES[] = {2, 2, 1, 1, 4};

__device__ __forceinline__ uint64_t desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((saddr >> 4) & 0x3fff) | ((uint64_t)((lbo >> 4) & 0x3fff) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3fff) << 32);
}

// Byte offset of element (row, k) in a K-major no-swizzle operand with 32-byte rows:
// core matrices of 8 rows x 16 bytes; the K-direction neighbour at +128 bytes, the next 8 rows at +256.
__host__ __device__ inline int cm_off(int row, int kbyte) {
  return (row / 8) * 256 + (kbyte / 16) * 128 + (row % 8) * 16 + (kbyte % 16);
}

// a: 64 rows x 32 bytes, b: 8 rows (n) x 32 bytes (B transposed, K-major), c/d: [T][64*8] f32.
template <int DT>
__global__ void probe(const uint8_t* a, const uint8_t* b, const float* c, float* d,
                      const uint32_t* use_acc, int variant) {
  __shared__ __align__(1024) uint8_t sa[2048];
  __shared__ __align__(1024) uint8_t sb[256];
  int t = blockIdx.x, tid = threadIdx.x;
  for (int i = tid; i < 2048; i += 128) sa[i] = a[t * 2048 + i];
  for (int i = tid; i < 256; i += 128) sb[i] = b[t * 256 + i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  int warp = tid / 32, lane = tid % 32;
  int r0 = warp * 16 + lane / 4, c0 = (lane % 4) * 2;
  float d0 = c[t * 512 + r0 * 8 + c0], d1 = c[t * 512 + r0 * 8 + c0 + 1];
  float d2 = c[t * 512 + (r0 + 8) * 8 + c0], d3 = c[t * 512 + (r0 + 8) * 8 + c0 + 1];
  uint32_t lbo = variant ? 256 : 128, sbo = variant ? 128 : 256;
  uint64_t da = desc((uint32_t)__cvta_generic_to_shared(sa), lbo, sbo);
  uint64_t db = desc((uint32_t)__cvta_generic_to_shared(sb), lbo, sbo);
  uint32_t ua = use_acc[t];
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#define WG(SHAPE, TY, TAIL) \
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %6, 0;\n" \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." TY "." TY " {%0,%1,%2,%3}, %4, %5, p, 1, 1" TAIL ";}\n" \
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(da), "l"(db), "r"(ua) : "memory")
  if (DT == F16) WG("m64n8k16", "f16", ", 0, 0");
  if (DT == BF16) WG("m64n8k16", "bf16", ", 0, 0");
  if (DT == E4M3) WG("m64n8k32", "e4m3", "");
  if (DT == E5M2) WG("m64n8k32", "e5m2", "");
  if (DT == TF32) WG("m64n8k8", "tf32", "");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  d[t * 512 + r0 * 8 + c0] = d0;
  d[t * 512 + r0 * 8 + c0 + 1] = d1;
  d[t * 512 + (r0 + 8) * 8 + c0] = d2;
  d[t * 512 + (r0 + 8) * 8 + c0 + 1] = d3;
}

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd() { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static int ri(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); }

// Format parameters: mantissa bits, exponent bias, min/max normal exponent.
struct Fmt { int mb, bias, emin, emax, ebits; };
static Fmt fmt(int dt) {
  switch (dt) {
    case F16: return {10, 15, -14, 15, 5};
    case BF16: return {7, 127, -126, 127, 8};
    case E4M3: return {3, 7, -6, 8, 4};
    case E5M2: return {2, 15, -14, 15, 5};
    default: return {10, 127, -126, 127, 8};
  }
}
// Encode sign/exponent/mantissa (normal numbers; e clamped to the format's range; e4m3 max 448).
static uint32_t enc(int dt, int s, int e, uint32_t m) {
  Fmt f = fmt(dt);
  if (e < f.emin) e = f.emin;
  if (e > f.emax) e = f.emax;
  m &= (1u << f.mb) - 1;
  if (dt == E4M3 && e == 8 && m == 7) m = 6;  // 0x7f is NaN
  if (dt == TF32) {
    uint32_t bits = ((uint32_t)s << 31) | ((uint32_t)(e + 127) << 23) | (m << 13);
    return bits | (uint32_t)(rnd() & 0x1fff);  // low bits the tensor core must ignore
  }
  uint32_t width = 1 + f.ebits + f.mb;
  return ((uint32_t)s << (width - 1)) | ((uint32_t)(e + f.bias) << f.mb) | m;
}
static float rf32(int elo, int ehi) {
  uint32_t s = rnd() & 1, e = (uint32_t)(ri(elo, ehi) + 127), m = (uint32_t)(rnd() & 0x7fffff);
  uint32_t bits = (s << 31) | (e << 23) | m;
  float f; memcpy(&f, &bits, 4); return f;
}

int main(int argc, char** argv) {
  const char* out = argc > 1 ? argv[1] : ".";
  int T = argc > 2 ? atoi(argv[2]) : 256;
  for (int dt = 0; dt < 5; dt++) {
    int eb = BYTES[dt], K = 32 / eb;
    Fmt f = fmt(dt);
    std::vector<uint32_t> A(T * 64 * K), B(T * K * 8), U(T);
    std::vector<float> C(T * 512), D(T * 512);
    for (int t = 0; t < T; t++) {
      int cat = t < 2 ? -1 : t % 6;
      U[t] = (t % 7 == 6) ? 0 : 1;
      // Exponent ranges per category (clamped to the format).
      int spread = (f.emax - f.emin) / 2;
      for (int i = 0; i < 64 * K; i++) {
        int e, s = rnd() & 1; uint32_t m = (uint32_t)rnd();
        if (cat == -1) { int v = ri(-4, 4); A[t * 64 * K + i] = v == 0 ? 0 : enc(dt, v < 0, (int)floor(log2(abs(v))), (uint32_t)((abs(v) << f.mb) >> (int)floor(log2(abs(v))))); continue; }
        if (cat == 0) e = ri(-spread / 2, spread / 2);
        else if (cat == 1 || cat == 5) e = ri(-2, 2);
        else if (cat == 2) e = (i % K == t % K) ? ri(4, 8) : ri(-12, 0);
        else if (cat == 3) e = ri(-3, 3);
        else e = ri(-6, 6);
        A[t * 64 * K + i] = enc(dt, s, e, m);
      }
      for (int i = 0; i < K * 8; i++) {
        int e, s = rnd() & 1; uint32_t m = (uint32_t)rnd();
        if (cat == -1) { int v = ri(-4, 4); B[t * K * 8 + i] = v == 0 ? 0 : enc(dt, v < 0, (int)floor(log2(abs(v))), (uint32_t)((abs(v) << f.mb) >> (int)floor(log2(abs(v))))); continue; }
        if (cat == 0) e = ri(-spread / 2, spread / 2);
        else if (cat == 1 || cat == 5) e = ri(-2, 2);
        else if (cat == 2) e = ri(-2, 2);
        else if (cat == 3) e = ri(-3, 3);
        else e = ri(-6, 6);
        B[t * K * 8 + i] = enc(dt, s, e, m);
      }
      for (int i = 0; i < 512; i++) {
        float v;
        if (cat == -1) v = (float)ri(-8, 8);
        else if (cat == 3) v = rf32(10, 30);          // accumulator far above the products
        else if (cat == 4) v = rnd() % 4 == 0 ? 0.0f : rf32(-30, 12);
        else if (cat == 5) v = rnd() % 2 ? 0.0f : rf32(-4, 6);
        else v = rnd() % 3 == 0 ? 0.0f : rf32(-10, 10);
        C[t * 512 + i] = v;
      }
    }
    // Device buffers in the shared-memory image layout.
    std::vector<uint8_t> ia(T * 2048, 0), ib(T * 256, 0);
    for (int t = 0; t < T; t++) {
      for (int r = 0; r < 64; r++)
        for (int k = 0; k < K; k++) {
          uint32_t v = A[t * 64 * K + r * K + k];
          memcpy(&ia[t * 2048 + cm_off(r, k * eb)], &v, eb);
        }
      for (int n = 0; n < 8; n++)
        for (int k = 0; k < K; k++) {
          uint32_t v = B[t * K * 8 + k * 8 + n];
          memcpy(&ib[t * 256 + cm_off(n, k * eb)], &v, eb);
        }
    }
    uint8_t *da, *db; float *dc, *dd; uint32_t* du;
    CK(cudaMalloc(&da, ia.size())); CK(cudaMalloc(&db, ib.size()));
    CK(cudaMalloc(&dc, C.size() * 4)); CK(cudaMalloc(&dd, D.size() * 4)); CK(cudaMalloc(&du, T * 4));
    CK(cudaMemcpy(da, ia.data(), ia.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, ib.data(), ib.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc, C.data(), C.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(du, U.data(), T * 4, cudaMemcpyHostToDevice));
    // The layout check (tests 0 and 1: small integers, exact in any arithmetic) picks the
    // descriptor convention.
    int chosen = -1;
    for (int variant = 0; variant < 2 && chosen < 0; variant++) {
      CK(cudaMemset(dd, 0, D.size() * 4));
      switch (dt) {
        case F16: probe<F16><<<T, 128>>>(da, db, dc, dd, du, variant); break;
        case BF16: probe<BF16><<<T, 128>>>(da, db, dc, dd, du, variant); break;
        case E4M3: probe<E4M3><<<T, 128>>>(da, db, dc, dd, du, variant); break;
        case E5M2: probe<E5M2><<<T, 128>>>(da, db, dc, dd, du, variant); break;
        default: probe<TF32><<<T, 128>>>(da, db, dc, dd, du, variant); break;
      }
      CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(D.data(), dd, D.size() * 4, cudaMemcpyDeviceToHost));
      int bad = 0;
      for (int t = 0; t < 2; t++)
        for (int i = 0; i < 64; i++)
          for (int j = 0; j < 8; j++) {
            // Small-integer elements decode to themselves (value = sign * 1.m * 2^e).
            auto val = [&](uint32_t bits) -> double {
              if (dt == TF32) { uint32_t x = bits & ~0x1fffu; float fl; memcpy(&fl, &x, 4); return fl; }
              if (bits == 0) return 0.0;
              int w = 1 + f.ebits + f.mb; int s = bits >> (w - 1);
              int e = (int)((bits >> f.mb) & ((1u << f.ebits) - 1)) - f.bias;
              double m = 1.0 + (double)(bits & ((1u << f.mb) - 1)) / (1 << f.mb);
              return (s ? -1 : 1) * ldexp(m, e);
            };
            double s = U[t] ? C[t * 512 + i * 8 + j] : 0.0;
            for (int k = 0; k < K; k++) s += val(A[t * 64 * K + i * K + k]) * val(B[t * K * 8 + k * 8 + j]);
            if (s != D[t * 512 + i * 8 + j]) bad++;
          }
      printf("%s: descriptor variant %d (LBO=%d SBO=%d): %d of 1024 layout-check outputs wrong\n",
             NAMES[dt], variant, variant ? 256 : 128, variant ? 128 : 256, bad);
      if (bad == 0) chosen = variant;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/wgmma_%s.bin", out, NAMES[dt]);
    FILE* fo = fopen(path, "wb");
    for (int t = 0; t < T; t++) {
      fwrite(&U[t], 4, 1, fo);
      fwrite(&A[t * 64 * K], 4, 64 * K, fo);
      fwrite(&B[t * K * 8], 4, K * 8, fo);
      fwrite(&C[t * 512], 4, 512, fo);
      fwrite(&D[t * 512], 4, 512, fo);
    }
    fclose(fo);
    printf("%s: K=%d, %d tests, variant %d, wrote %s\n", NAMES[dt], K, T, chosen, path);
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dd); cudaFree(du);
  }
  return 0;
}
