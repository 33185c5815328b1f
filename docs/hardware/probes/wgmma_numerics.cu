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
// A second set (`ext`) measures the other forms of the dtype matrix the same way, one
// instruction each: f16 x f16 into an f16 accumulator, e4m3 and e5m2 into f16, mixed e4m3 x e5m2
// into f32, and s8 x s8, u8 x u8, s8 x u8 into s32. Its files hold the accumulator elements
// as u32 words too: f16 bits in the low half, s32 as they are.
//
// Build and run:  nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o probe wgmma_numerics.cu
//                 ./probe OUTDIR [TESTS_PER_DTYPE] [f32|ext|all]      (default f32: the first set)
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

// Copies one test's operands (a: 64 rows x 32 bytes, b: 8 rows x 32 bytes) into shared memory,
// makes them visible to the asynchronous proxy and gives their descriptors (LBO, SBO bytes) and
// the indices in C/D [64, 8] of the four accumulator elements this thread holds, in register
// order (m64n8 fragment: rows r0 and r0 + 8, columns c0 and c0 + 1).
__device__ __forceinline__ void stage(const uint8_t* a, const uint8_t* b, uint32_t lbo, uint32_t sbo,
                                      uint64_t* da, uint64_t* db, int at[4]) {
  __shared__ __align__(1024) uint8_t sa[2048];
  __shared__ __align__(1024) uint8_t sb[256];
  for (int i = threadIdx.x; i < 2048; i += 128) sa[i] = a[i];
  for (int i = threadIdx.x; i < 256; i += 128) sb[i] = b[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  *da = desc((uint32_t)__cvta_generic_to_shared(sa), lbo, sbo);
  *db = desc((uint32_t)__cvta_generic_to_shared(sb), lbo, sbo);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int r0 = warp * 16 + lane / 4, c0 = (lane % 4) * 2;
  at[0] = r0 * 8 + c0;
  at[1] = at[0] + 1;
  at[2] = at[0] + 64;
  at[3] = at[2] + 1;
}

// Commits the warpgroup's wgmma and waits for it.
__device__ __forceinline__ void commit_wait() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

// a: 64 rows x 32 bytes, b: 8 rows (n) x 32 bytes (B transposed, K-major), c/d: [T][64*8] f32.
template <int DT>
__global__ void probe(const uint8_t* a, const uint8_t* b, const float* c, float* d,
                      const uint32_t* use_acc, int variant) {
  int t = blockIdx.x, at[4];
  uint64_t da, db;
  stage(a + t * 2048, b + t * 256, variant ? 256 : 128, variant ? 128 : 256, &da, &db, at);
  const float* ct = c + t * 512;
  float* dt = d + t * 512;
  float d0 = ct[at[0]], d1 = ct[at[1]], d2 = ct[at[2]], d3 = ct[at[3]];
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
  commit_wait();
  dt[at[0]] = d0; dt[at[1]] = d1; dt[at[2]] = d2; dt[at[3]] = d3;
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

// The shared-memory images of T tests' A [64, K] and B [K, 8] (elements of eb bytes, low bytes of
// each u32 word), in the layout of cm_off.
static void smem_images(const std::vector<uint32_t>& A, const std::vector<uint32_t>& B, int T, int K, int eb,
                        std::vector<uint8_t>& ia, std::vector<uint8_t>& ib) {
  ia.assign(T * 2048, 0);
  ib.assign(T * 256, 0);
  for (int t = 0; t < T; t++) {
    for (int r = 0; r < 64; r++)
      for (int k = 0; k < K; k++) memcpy(&ia[t * 2048 + cm_off(r, k * eb)], &A[t * 64 * K + r * K + k], eb);
    for (int n = 0; n < 8; n++)
      for (int k = 0; k < K; k++) memcpy(&ib[t * 256 + cm_off(n, k * eb)], &B[t * K * 8 + k * 8 + n], eb);
  }
}

// A device copy of a host vector.
template <typename T>
static T* upload(const std::vector<T>& v) {
  T* d;
  CK(cudaMalloc(&d, v.size() * sizeof(T)));
  CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// Waits for the launch and copies the device results `d` into `v`.
template <typename W>
static void download(std::vector<W>& v, const W* d) {
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(v.data(), d, v.size() * sizeof(W), cudaMemcpyDeviceToHost));
}

// Writes the file of T tests (the format of the header comment); C and D hold 4-byte words.
template <typename W>
static void write_tests(const char* out, const char* name, int T, int K, const std::vector<uint32_t>& U,
                        const std::vector<uint32_t>& A, const std::vector<uint32_t>& B, const std::vector<W>& C,
                        const std::vector<W>& D, char* path, size_t path_len) {
  snprintf(path, path_len, "%s/wgmma_%s.bin", out, name);
  FILE* fo = fopen(path, "wb");
  for (int t = 0; t < T; t++) {
    fwrite(&U[t], 4, 1, fo);
    fwrite(&A[t * 64 * K], 4, 64 * K, fo);
    fwrite(&B[t * K * 8], 4, K * 8, fo);
    fwrite(&C[t * 512], 4, 512, fo);
    fwrite(&D[t * 512], 4, 512, fo);
  }
  fclose(fo);
}

static void run_f32(const char* out, int T) {
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
    std::vector<uint8_t> ia, ib;
    smem_images(A, B, T, K, eb, ia, ib);
    uint8_t *da = upload(ia), *db = upload(ib);
    float *dc = upload(C), *dd = upload(D);
    uint32_t* du = upload(U);
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
      download(D, dd);
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
    write_tests(out, NAMES[dt], T, K, U, A, B, C, D, path, sizeof path);
    printf("%s: K=%d, %d tests, variant %d, wrote %s\n", NAMES[dt], K, T, chosen, path);
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dd); cudaFree(du);
  }
  }

// ---------------------------------------------------------------------------------------------
// The `ext` set: the other accumulator types and operand mixes.

enum Acc { ACC_F32 = 0, ACC_F16 = 1, ACC_S32 = 2 };
enum IntDt { S8 = 5, U8 = 6 };
struct Ext { const char* name; int at, bt, acc; };
static const Ext EXTS[] = {
  {"f16_f16acc", F16, F16, ACC_F16},   {"e4m3_f16acc", E4M3, E4M3, ACC_F16},
  {"e5m2_f16acc", E5M2, E5M2, ACC_F16}, {"e4m3_e5m2", E4M3, E5M2, ACC_F32},
  {"s8", S8, S8, ACC_S32},             {"u8", U8, U8, ACC_S32},
  {"s8_u8", S8, U8, ACC_S32},
};
// EXTS[x].acc, for device code.
__host__ __device__ constexpr int ext_acc_of(int x) { return x < 3 ? ACC_F16 : x == 3 ? ACC_F32 : ACC_S32; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

// One instruction of kind X on A [64, K], B [K, 8] (K-major, no swizzle), C/D [64, 8] as u32
// words (f16 bits in the low half).
template <int X>
__global__ void probe_ext(const uint8_t* a, const uint8_t* b, const uint32_t* c, uint32_t* d,
                          const uint32_t* use_acc) {
  int t = blockIdx.x, at[4];
  uint64_t da, db;
  stage(a + t * 2048, b + t * 256, 128, 256, &da, &db, at);
  const uint32_t* ct = c + t * 512;
  uint32_t* dt = d + t * 512;
  uint32_t ua = use_acc[t];
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  if (ext_acc_of(X) == ACC_F16) {
    // Two .f16x2 registers: (r0, c0 | c0+1) and (r0 + 8, c0 | c0+1), the first element low.
    uint32_t h0 = (ct[at[0]] & 0xffff) | (ct[at[1]] << 16);
    uint32_t h1 = (ct[at[2]] & 0xffff) | (ct[at[3]] << 16);
#define WH(SHAPE, TY, TAIL) \
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %4, 0;\n" \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f16." TY " {%0,%1}, %2, %3, p, 1, 1" TAIL ";}\n" \
                 : "+r"(h0), "+r"(h1) : "l"(da), "l"(db), "r"(ua) : "memory")
    if (X == 0) WH("m64n8k16", "f16.f16", ", 0, 0");
    if (X == 1) WH("m64n8k32", "e4m3.e4m3", "");
    if (X == 2) WH("m64n8k32", "e5m2.e5m2", "");
    commit_wait();
    dt[at[0]] = h0 & 0xffff; dt[at[1]] = h0 >> 16; dt[at[2]] = h1 & 0xffff; dt[at[3]] = h1 >> 16;
    return;
  }
  uint32_t d0 = ct[at[0]], d1 = ct[at[1]], d2 = ct[at[2]], d3 = ct[at[3]];
  if (X == 3) {
    float f0 = __uint_as_float(d0), f1 = __uint_as_float(d1), f2 = __uint_as_float(d2), f3 = __uint_as_float(d3);
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e5m2 {%0,%1,%2,%3}, %4, %5, p, 1, 1;}\n"
                 : "+f"(f0), "+f"(f1), "+f"(f2), "+f"(f3) : "l"(da), "l"(db), "r"(ua) : "memory");
    d0 = __float_as_uint(f0); d1 = __float_as_uint(f1); d2 = __float_as_uint(f2); d3 = __float_as_uint(f3);
  } else {
#define WI(TY) \
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %6, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n8k32.s32." TY " {%0,%1,%2,%3}, %4, %5, p;}\n" \
                 : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3) : "l"(da), "l"(db), "r"(ua) : "memory")
    if (X == 4) WI("s8.s8");
    if (X == 5) WI("u8.u8");
    if (X == 6) WI("s8.u8");
  }
  commit_wait();
  dt[at[0]] = d0; dt[at[1]] = d1; dt[at[2]] = d2; dt[at[3]] = d3;
}

// An f16 with a random fraction, sign s and unbiased exponent e (-24..15; below -14 the
// subnormal of that magnitude).
static uint32_t f16_bits(int s, int e) {
  uint32_t m = (uint32_t)(rnd() & 0x3ff);
  if (e < -14) {
    int sh = -14 - e;  // 1..10: the leading bit at position 10 - sh
    if (sh > 10) sh = 10;
    m = (m | 0x400) >> sh;
    return ((uint32_t)s << 15) | m;
  }
  if (e > 15) e = 15;
  return ((uint32_t)s << 15) | ((uint32_t)(e + 15) << 10) | m;
}
static float f16_value(uint32_t h) {
  int e = (h >> 10) & 0x1f; uint32_t m = h & 0x3ff;
  float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 0x400), e - 25);
  return (h >> 15) ? -v : v;
}

// An operand element of type dt for test category cat (-1: small integers).
static uint32_t ext_elem(int dt, int cat, int i, int t, int K, bool is_a) {
  if (dt == S8 || dt == U8) {
    int lo = dt == S8 ? -128 : 0, hi = dt == S8 ? 127 : 255;
    if (cat == -1) { lo = dt == S8 ? -4 : 0; hi = 4; }
    else if (cat == 1) { lo = dt == S8 ? -8 : 0; hi = 8; }
    return (uint32_t)(ri(lo, hi) & 0xff);
  }
  Fmt f = fmt(dt);
  int s = rnd() & 1;
  if (cat == -1) {
    int v = ri(-4, 4);
    if (v == 0) return 0;
    int e = (int)floor(log2(abs(v)));
    return enc(dt, v < 0, e, (uint32_t)((abs(v) << f.mb) >> e));
  }
  int e;
  int spread = (f.emax - f.emin) / 2;
  switch (cat) {
    case 0: e = ri(-spread / 2, spread / 2); break;                        // wide spread
    case 1: case 5: e = ri(-2, 2); break;                                  // similar, cancelling
    case 2: e = is_a && (i % K == t % K) ? ri(4, 7) : ri(-10, 0); break;   // one large product
    case 3: e = ri(-3, 3); break;                                          // large accumulator
    case 4: e = ri(-8, -2); break;                                         // small results
    case 6: e = ri(2, 4); s = 0; break;                                    // near f16 overflow
    default: e = ri(-12, -6); break;                                       // tiny products
  }
  return enc(dt, s, e, (uint32_t)rnd());
}

// An accumulator element for category cat.
static uint32_t ext_acc(int acc, int cat) {
  if (acc == ACC_S32) {
    if (cat == -1) return (uint32_t)ri(-8, 8);
    if (cat == 2) return (uint32_t)(0x7fffffffu - (uint32_t)(rnd() % 100000));   // near INT_MAX: wraps
    if (cat == 3) return (uint32_t)(0x80000000u + (uint32_t)(rnd() % 100000));   // near INT_MIN
    return (uint32_t)rnd();
  }
  if (acc == ACC_F16) {
    int s = rnd() & 1;
    switch (cat) {
      case -1: { int v = ri(-8, 8); if (v == 0) return 0; int e = (int)floor(log2(abs(v)));
                 return ((uint32_t)(v < 0) << 15) | ((uint32_t)(e + 15) << 10) | (uint32_t)(((abs(v) << 10) >> e) & 0x3ff); }
      case 3: return f16_bits(s, ri(6, 14));                       // far above the products
      case 4: return rnd() % 4 == 0 ? 0 : f16_bits(s, ri(-24, 2)); // subnormal to small
      case 5: return rnd() % 2 ? 0 : f16_bits(s, ri(-4, 6));
      case 6: return f16_bits(0, ri(14, 15));                      // near 65504
      case 7: return rnd() % 3 == 0 ? 0 : f16_bits(s, ri(-24, -14));
      default: return rnd() % 3 == 0 ? 0 : f16_bits(s, ri(-10, 10));
    }
  }
  float v;
  if (cat == -1) v = (float)ri(-8, 8);
  else if (cat == 3) v = rf32(10, 30);
  else if (cat == 4) v = rnd() % 4 == 0 ? 0.0f : rf32(-30, 12);
  else v = rnd() % 3 == 0 ? 0.0f : rf32(-10, 10);
  uint32_t u; memcpy(&u, &v, 4); return u;
}

static double ext_value(int dt, uint32_t bits) {
  if (dt == S8) return (double)(int8_t)(uint8_t)bits;
  if (dt == U8) return (double)(uint8_t)bits;
  if (bits == 0) return 0.0;
  Fmt f = fmt(dt);
  int w = 1 + f.ebits + f.mb; int s = bits >> (w - 1);
  int e = (int)((bits >> f.mb) & ((1u << f.ebits) - 1)) - f.bias;
  double m = 1.0 + (double)(bits & ((1u << f.mb) - 1)) / (1 << f.mb);
  return (s ? -1 : 1) * ldexp(m, e);
}

// A test built around rounding ties of an f16 accumulator (category 8): c[i, j] has exponent e0,
// the product a[i, 0] b[0, j] is half of c's f16 ulp (either sign), a[i, 1] b[1, j] a much
// smaller term (either sign, 2^-1 to 2^-20 of that), all other products zero. Round to nearest
// from the exact sum, from a sum first cut to 24 or 14 bits, and the alignment width each round
// these differently.
static void tie_test(int dt, uint32_t* A, uint32_t* B, uint32_t* C, int K) {
  Fmt f = fmt(dt);
  // e0 such that half an ulp of c (2^(e0 - 11)) is a product of two normal numbers; the
  // scale b[0, j] = 2^b0 keeps a[i, 0] normal.
  int e0 = dt == E4M3 ? 4 : dt == E5M2 ? 0 : 2;
  int b0 = dt == E4M3 ? -1 : 0;
  for (int i = 0; i < 64 * K; i++) A[i] = 0;
  for (int i = 0; i < K * 8; i++) B[i] = 0;
  for (int j = 0; j < 8; j++) {
    B[0 * 8 + j] = enc(dt, 0, b0, 0);
    B[1 * 8 + j] = enc(dt, rnd() & 1, ri(f.emin, (e0 - 12) / 2 > f.emin ? (e0 - 12) / 2 : f.emin), (uint32_t)rnd());
  }
  for (int i = 0; i < 64; i++) {
    A[i * K + 0] = enc(dt, rnd() & 1, e0 - 11 - b0, 0);
    A[i * K + 1] = enc(dt, rnd() & 1, ri(f.emin, (e0 - 12) / 2 > f.emin ? (e0 - 12) / 2 : f.emin), (uint32_t)rnd());
  }
  for (int i = 0; i < 512; i++) C[i] = f16_bits(rnd() & 1, e0);
}

static void run_ext(const char* out, int T) {
  rs = 0x5851f42d4c957f2dull;  // its own sequence, whatever ran before
  for (int x = 0; x < (int)(sizeof EXTS / sizeof EXTS[0]); x++) {
    const Ext& X = EXTS[x];
    int K = 32;
    if (X.at == F16) K = 16;
    std::vector<uint32_t> A(T * 64 * K), B(T * K * 8), U(T), C(T * 512), D(T * 512);
    for (int t = 0; t < T; t++) {
      int cat = t < 2 ? -1 : t % 9;
      U[t] = (t % 7 == 6) ? 0 : 1;
      if (cat == 8 && X.acc == ACC_F16) {
        tie_test(X.at, &A[t * 64 * K], &B[t * K * 8], &C[t * 512], K);
        continue;
      }
      for (int i = 0; i < 64 * K; i++) A[t * 64 * K + i] = ext_elem(X.at, cat, i, t, K, true);
      for (int i = 0; i < K * 8; i++) B[t * K * 8 + i] = ext_elem(X.bt, cat, i, t, K, false);
      for (int i = 0; i < 512; i++) C[t * 512 + i] = ext_acc(X.acc, cat);
    }
    int eb = K == 16 ? 2 : 1;
    std::vector<uint8_t> ia, ib;
    smem_images(A, B, T, K, eb, ia, ib);
    uint8_t *da = upload(ia), *db = upload(ib);
    uint32_t *dc = upload(C), *dd = upload(D), *du = upload(U);
    CK(cudaMemset(dd, 0, D.size() * 4));
    switch (x) {
      case 0: probe_ext<0><<<T, 128>>>(da, db, dc, dd, du); break;
      case 1: probe_ext<1><<<T, 128>>>(da, db, dc, dd, du); break;
      case 2: probe_ext<2><<<T, 128>>>(da, db, dc, dd, du); break;
      case 3: probe_ext<3><<<T, 128>>>(da, db, dc, dd, du); break;
      case 4: probe_ext<4><<<T, 128>>>(da, db, dc, dd, du); break;
      case 5: probe_ext<5><<<T, 128>>>(da, db, dc, dd, du); break;
      default: probe_ext<6><<<T, 128>>>(da, db, dc, dd, du); break;
    }
    download(D, dd);
    // Layout check on tests 0 and 1 (small integers: exact in any arithmetic).
    int bad = 0;
    for (int t = 0; t < 2; t++)
      for (int i = 0; i < 64; i++)
        for (int j = 0; j < 8; j++) {
          double c = 0.0;
          uint32_t cb = C[t * 512 + i * 8 + j], db_ = D[t * 512 + i * 8 + j];
          if (U[t]) c = X.acc == ACC_S32 ? (double)(int32_t)cb : X.acc == ACC_F16 ? f16_value(cb) : (double)u2f(cb);
          for (int k = 0; k < K; k++) c += ext_value(X.at, A[t * 64 * K + i * K + k]) * ext_value(X.bt, B[t * K * 8 + k * 8 + j]);
          double got = X.acc == ACC_S32 ? (double)(int32_t)db_ : X.acc == ACC_F16 ? f16_value(db_) : (double)u2f(db_);
          if (got != c) bad++;
        }
    // Integer wrap-around: results of the near-INT_MAX tests whose exact sum passed 2^31.
    long wraps = 0, exact = 0;
    if (X.acc == ACC_S32)
      for (int t = 2; t < T; t++)
        for (int i = 0; i < 64; i++)
          for (int j = 0; j < 8; j++) {
            long long s = U[t] ? (long long)(int32_t)C[t * 512 + i * 8 + j] : 0;
            for (int k = 0; k < K; k++) s += (long long)ext_value(X.at, A[t * 64 * K + i * K + k]) * (long long)ext_value(X.bt, B[t * K * 8 + k * 8 + j]);
            int32_t got = (int32_t)D[t * 512 + i * 8 + j];
            if (got == (int32_t)(uint32_t)(unsigned long long)s) { exact++; if (s != got) wraps++; }
          }
    char path[512];
    write_tests(out, X.name, T, K, U, A, B, C, D, path, sizeof path);
    printf("%s: K=%d, %d tests, %d of 1024 layout-check outputs wrong", X.name, K, T, bad);
    if (X.acc == ACC_S32) printf("; %ld of %d results the exact sum mod 2^32 (%ld wrapped)", exact, (T - 2) * 512, wraps);
    printf(", wrote %s\n", path);
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dd); cudaFree(du);
  }
}

int main(int argc, char** argv) {
  const char* out = argc > 1 ? argv[1] : ".";
  int T = argc > 2 ? atoi(argv[2]) : 256;
  const char* set = argc > 3 ? argv[3] : "f32";
  if (!strcmp(set, "f32") || !strcmp(set, "all")) run_f32(out, T);
  if (!strcmp(set, "ext") || !strcmp(set, "all")) run_ext(out, T);
  return 0;
}
