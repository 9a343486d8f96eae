#include "engine/formats/gguf_quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/formats/gguf_k_scales.h"
#include "engine/formats/mxfp4.h"
#include "engine/util/dtype.h"
#include "engine/util/half_float.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SPECSCOPE_GGUF_X86 1
#endif

namespace specscope {
namespace {

constexpr int64_t QK = 32;    // Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 block
constexpr int64_t QK_K = 256; // K-quant super-block

// Block sizes and byte sizes as ggml defines them (ggml-common.h); the test checks them against the
// gguf package's GGML_QUANT_SIZES.
constexpr GgmlTypeInfo kTypes[] = {
    {GgmlType::F32, "F32", 1, 4, true},
    {GgmlType::F16, "F16", 1, 2, true},
    {GgmlType::Q4_0, "Q4_0", 32, 18, true},
    {GgmlType::Q4_1, "Q4_1", 32, 20, true},
    {GgmlType::Q5_0, "Q5_0", 32, 22, true},
    {GgmlType::Q5_1, "Q5_1", 32, 24, true},
    {GgmlType::Q8_0, "Q8_0", 32, 34, true},
    {GgmlType::Q8_1, "Q8_1", 32, 36, false},  // f16 d, f16 s, 32 x int8 (the package still says 40)
    {GgmlType::Q2_K, "Q2_K", 256, 84, false},
    {GgmlType::Q3_K, "Q3_K", 256, 110, false},
    {GgmlType::Q4_K, "Q4_K", 256, 144, true},
    {GgmlType::Q5_K, "Q5_K", 256, 176, true},
    {GgmlType::Q6_K, "Q6_K", 256, 210, true},
    {GgmlType::Q8_K, "Q8_K", 256, 292, false},
    {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66, false},
    {GgmlType::IQ2_XS, "IQ2_XS", 256, 74, false},
    {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98, false},
    {GgmlType::IQ1_S, "IQ1_S", 256, 50, false},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 18, false},
    {GgmlType::IQ3_S, "IQ3_S", 256, 110, false},
    {GgmlType::IQ2_S, "IQ2_S", 256, 82, false},
    {GgmlType::IQ4_XS, "IQ4_XS", 256, 136, false},
    {GgmlType::I8, "I8", 1, 1, false},
    {GgmlType::I16, "I16", 1, 2, false},
    {GgmlType::I32, "I32", 1, 4, false},
    {GgmlType::I64, "I64", 1, 8, false},
    {GgmlType::F64, "F64", 1, 8, false},
    {GgmlType::IQ1_M, "IQ1_M", 256, 56, false},
    {GgmlType::BF16, "BF16", 1, 2, true},
    {GgmlType::TQ1_0, "TQ1_0", 256, 54, false},
    {GgmlType::TQ2_0, "TQ2_0", 256, 66, false},
    {GgmlType::MXFP4, "MXFP4", 32, 17, true},  // engine/formats/mxfp4.h
    {GgmlType::NVFP4, "NVFP4", 64, 36, false},
    {GgmlType::Q1_0, "Q1_0", 128, 18, false},
};

inline void store_f16(uint8_t* p, float f) {
  uint16_t h = f32_to_f16(f);
  std::memcpy(p, &h, 2);
}

[[noreturn]] void bad_call(const std::string& what) { throw std::invalid_argument("gguf_quant: " + what); }

void check_n(GgmlType t, int64_t n, const char* fn) {
  const GgmlTypeInfo* info = ggml_type_info(uint32_t(t));
  if (!info) bad_call(std::string(fn) + ": unknown ggml type " + std::to_string(uint32_t(t)));
  if (n < 0 || n % info->block_size != 0)
    bad_call(std::string(fn) + ": " + std::to_string(n) + " elements is not a multiple of the " + info->name +
             " block size " + std::to_string(info->block_size));
}

// ---- dequantization: one block at a time, in the order and precision of ggml's reference code ----
//
// Compiled three times (AVX-512, AVX2, baseline) and picked at load time: the quantized linear layer dequantizes
// every weight row through these on every forward, and the baseline (SSE2) build ran at a third of the speed.
// The arithmetic is the same in every version (products exact, one rounding), so the results are identical.
#if defined(SPECSCOPE_GGUF_X86) && !defined(__clang__) && !defined(SPECSCOPE_NO_TARGET_CLONES)
#define SPEC_DEQUANT_CLONES __attribute__((target_clones("arch=skylake-avx512", "avx2,fma", "default")))
#else
#define SPEC_DEQUANT_CLONES
#endif


SPEC_DEQUANT_CLONES
void dequant_q8_0(const uint8_t* b, float* y) {
  const float d = load_half(b);
  for (int j = 0; j < QK; ++j) y[j] = float(int8_t(b[2 + j])) * d;
}

SPEC_DEQUANT_CLONES
void dequant_q4_0(const uint8_t* b, float* y) {
  const float d = load_half(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < QK / 2; ++j) {
    const int x0 = (qs[j] & 0x0F) - 8;
    const int x1 = (qs[j] >> 4) - 8;
    y[j] = float(x0) * d;
    y[j + QK / 2] = float(x1) * d;
  }
}

// The 32 fifth bits of a Q5_0/Q5_1 block: a little-endian uint32, bit j for element j (assembled byte by byte
// so that the host's byte order does not matter).
inline uint32_t load_qh(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Q4_1: x = q * d + m. q * d is exact (11 x 4 bits); the one rounding is the addition.
SPEC_DEQUANT_CLONES
void dequant_q4_1(const uint8_t* b, float* y) {
  const float d = load_half(b);
  const float m = load_half(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < QK / 2; ++j) {
    y[j] = float(qs[j] & 0x0F) * d + m;
    y[j + QK / 2] = float(qs[j] >> 4) * d + m;
  }
}

// Q5_0: x = (q - 16) * d with q = nibble | fifth bit << 4, one exact product.
SPEC_DEQUANT_CLONES
void dequant_q5_0(const uint8_t* b, float* y) {
  const float d = load_half(b);
  const uint32_t qh = load_qh(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < QK / 2; ++j) {
    const int x0 = int((qs[j] & 0x0F) | ((qh >> j) & 1u) << 4) - 16;
    const int x1 = int((qs[j] >> 4) | ((qh >> (j + QK / 2)) & 1u) << 4) - 16;
    y[j] = float(x0) * d;
    y[j + QK / 2] = float(x1) * d;
  }
}

// Q5_1: x = q * d + m, q as in Q5_0 (unsigned, no offset).
SPEC_DEQUANT_CLONES
void dequant_q5_1(const uint8_t* b, float* y) {
  const float d = load_half(b);
  const float m = load_half(b + 2);
  const uint32_t qh = load_qh(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < QK / 2; ++j) {
    const uint32_t x0 = (qs[j] & 0x0F) | ((qh >> j) & 1u) << 4;
    const uint32_t x1 = (qs[j] >> 4) | ((qh >> (j + QK / 2)) & 1u) << 4;
    y[j] = float(x0) * d + m;
    y[j + QK / 2] = float(x1) * d + m;
  }
}

SPEC_DEQUANT_CLONES
void dequant_q4_k(const uint8_t* b, float* y) {
  const float d = load_half(b);
  const float dmin = load_half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  int is = 0;
  for (int j = 0; j < QK_K; j += 64) {
    int sc, m;
    k4_scale_min(is + 0, scales, &sc, &m);
    const float d1 = d * float(sc);
    const float m1 = dmin * float(m);
    k4_scale_min(is + 1, scales, &sc, &m);
    const float d2 = d * float(sc);
    const float m2 = dmin * float(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0x0F) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}

SPEC_DEQUANT_CLONES
void dequant_q5_k(const uint8_t* b, float* y) {
  const float d = load_half(b);
  const float dmin = load_half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  int is = 0;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < QK_K; j += 64) {
    int sc, m;
    k4_scale_min(is + 0, scales, &sc, &m);
    const float d1 = d * float(sc);
    const float m1 = dmin * float(m);
    k4_scale_min(is + 1, scales, &sc, &m);
    const float d2 = d * float(sc);
    const float m2 = dmin * float(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * float((ql[l] & 0x0F) + ((qh[l] & u1) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * float((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
    ql += 32;
    is += 2;
    u1 = uint8_t(u1 << 2);
    u2 = uint8_t(u2 << 2);
  }
}

SPEC_DEQUANT_CLONES
void dequant_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = load_half(b + 208);
  for (int n = 0; n < QK_K; n += 128) {
    for (int is = 0; is < 2; ++is) {  // is = l / 16: two runs of 16 with fixed scales (so the loop vectorizes)
      for (int l = 16 * is; l < 16 * is + 16; ++l) {
        const int q1 = int((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = int((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * float(sc[is + 0]) * float(q1);
        y[l + 32] = d * float(sc[is + 2]) * float(q2);
        y[l + 64] = d * float(sc[is + 4]) * float(q3);
        y[l + 96] = d * float(sc[is + 6]) * float(q4);
      }
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

// ---- quantization (ggml's reference quantize_row_*_ref) ----

void quant_q8_0(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(b, d);
  for (int j = 0; j < QK; ++j) {
    const float v = std::round(x[j] * id);  // round half away from zero, like roundf
    // Finite inputs give |v| <= 127; the clamp only keeps NaN/inf from undefined conversions.
    const int q = v >= -127.0f && v <= 127.0f ? int(v) : (v > 0.0f ? 127 : (v < 0.0f ? -127 : 0));
    b[2 + j] = uint8_t(int8_t(q));
  }
}

// trunc(s) clamped to [0, hi], as ggml's MIN(hi, (int8_t)s) for the s a finite block gives (s >= 0 there: at
// least 0.5 above the lowest code); NaN and out-of-range values get a defined code instead of an undefined
// float->int conversion.
inline uint8_t trunc_code(float s, int hi) {
  if (!(s >= 0.0f)) return 0;
  if (s >= float(hi)) return uint8_t(hi);
  return uint8_t(int(s));
}

// The signed element of largest magnitude (the first one on ties): Q4_0's and Q5_0's scale is it / -8 or / -16,
// so that element gets code 0 exactly and the other side of zero gets the one extra code.
inline float signed_absmax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < QK; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  return max;
}

// x -> code for the centred types (Q4_0, Q5_0): trunc(x * id + offset), two f32 roundings (this file is not
// contracted).
inline uint8_t symmetric_code(float x, float id, float offset, int hi) {
  const float t = x * id;
  return trunc_code(t + offset, hi);
}

// (x - min) -> code for the types with a minimum: trunc((x - min) * id + 0.5), three f32 roundings as ggml.
inline uint8_t affine_code(float x, float min, float id, int hi) {
  const float t = (x - min) * id;
  return trunc_code(t + 0.5f, hi);
}

void quant_q4_0(const float* x, uint8_t* b) {
  const float d = signed_absmax(x) / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(b, d);
  for (int j = 0; j < QK / 2; ++j)
    b[2 + j] = uint8_t(symmetric_code(x[j], id, 8.5f, 15) | (symmetric_code(x[j + QK / 2], id, 8.5f, 15) << 4));
}

// Smallest and largest element of a block (ggml scans with < and > from +-FLT_MAX: the same for finite data).
inline void block_min_max(const float* x, float* min, float* max) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < QK; ++j) {
    if (x[j] < lo) lo = x[j];
    if (x[j] > hi) hi = x[j];
  }
  *min = lo;
  *max = hi;
}

void quant_q4_1(const float* x, uint8_t* b) {
  float min, max;
  block_min_max(x, &min, &max);
  const float d = (max - min) / 15.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(b, d);
  store_f16(b + 2, min);
  for (int j = 0; j < QK / 2; ++j)
    b[4 + j] = uint8_t(affine_code(x[j], min, id, 15) | (affine_code(x[j + QK / 2], min, id, 15) << 4));
}

// Packs 32 five-bit codes: low nibbles as Q4_0 into qs, the fifth bits into the little-endian uint32 qh.
void pack_q5(const uint8_t* q, uint8_t* qh, uint8_t* qs) {
  uint32_t h = 0;
  for (int j = 0; j < QK; ++j) h |= uint32_t(q[j] >> 4) << j;
  for (int i = 0; i < 4; ++i) qh[i] = uint8_t(h >> (8 * i));
  for (int j = 0; j < QK / 2; ++j) qs[j] = uint8_t((q[j] & 0x0F) | ((q[j + QK / 2] & 0x0F) << 4));
}

void quant_q5_0(const float* x, uint8_t* b) {
  const float d = signed_absmax(x) / -16.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(b, d);
  uint8_t q[QK];
  for (int j = 0; j < QK; ++j) q[j] = symmetric_code(x[j], id, 16.5f, 31);
  pack_q5(q, b + 2, b + 6);
}

void quant_q5_1(const float* x, uint8_t* b) {
  float min, max;
  block_min_max(x, &min, &max);
  const float d = (max - min) / 31.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(b, d);
  store_f16(b + 2, min);
  uint8_t q[QK];
  for (int j = 0; j < QK; ++j) q[j] = affine_code(x[j], min, id, 31);
  pack_q5(q, b + 4, b + 8);
}

// ---- dot products ----

// Sum of w[i]*x[i] over one chunk of at most 32, in f32, left to right.
inline float chunk_dot_scalar(const float* w, const float* x, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += w[i] * x[i];
  return s;
}

#ifdef SPECSCOPE_GGUF_X86
__attribute__((target("avx2,fma"))) float chunk_dot_avx2(const float* w, const float* x, int64_t n) {
  if (n != 32) return chunk_dot_scalar(w, x, n);
  __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(w), _mm256_loadu_ps(x));
  __m256 a1 = _mm256_mul_ps(_mm256_loadu_ps(w + 8), _mm256_loadu_ps(x + 8));
  a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + 16), _mm256_loadu_ps(x + 16), a0);
  a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + 24), _mm256_loadu_ps(x + 24), a1);
  const __m256 a = _mm256_add_ps(a0, a1);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

bool cpu_has_avx2_fma() {
#ifdef SPECSCOPE_GGUF_X86
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t id) {
  static const auto by_id = [] {
    std::array<const GgmlTypeInfo*, 64> a{};
    for (const auto& t : kTypes) a[uint32_t(t.type)] = &t;
    return a;
  }();
  return id < by_id.size() ? by_id[id] : nullptr;
}

const GgmlTypeInfo& ggml_type_info(GgmlType t) {
  const GgmlTypeInfo* info = ggml_type_info(uint32_t(t));
  if (!info) bad_call("unknown ggml type " + std::to_string(uint32_t(t)));
  return *info;
}

std::string_view ggml_type_name(GgmlType t) {
  const GgmlTypeInfo* info = ggml_type_info(uint32_t(t));
  return info ? info->name : "unknown";
}
int64_t ggml_block_size(GgmlType t) { return ggml_type_info(t).block_size; }
size_t ggml_type_size(GgmlType t) { return ggml_type_info(t).type_size; }

size_t ggml_row_size(GgmlType t, int64_t n) {
  check_n(t, n, "ggml_row_size");
  const GgmlTypeInfo& info = ggml_type_info(t);
  return size_t(n / info.block_size) * info.type_size;
}

bool ggml_can_dequantize(GgmlType t) {
  const GgmlTypeInfo* info = ggml_type_info(uint32_t(t));
  return info && info->computable;
}

bool ggml_can_quantize(GgmlType t) {
  return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16 || t == GgmlType::Q8_0 ||
         t == GgmlType::Q4_0 || t == GgmlType::Q4_1 || t == GgmlType::Q5_0 || t == GgmlType::Q5_1;
}

namespace {

// The block types: bytes and elements per block, the per-block reference dequantizer and, where we write the type,
// quantizer. One loop over blocks serves every type.
struct BlockCodec {
  GgmlType type;
  int bytes, elems;
  void (*dequant)(const uint8_t*, float*);
  void (*quant)(const float*, uint8_t*);  // null: read-only type
};

void dequant_mxfp4(const uint8_t* b, float* y) { mxfp4_ggml_to_f32(b, 1, y); }

const BlockCodec kCodecs[] = {
    {GgmlType::Q8_0, 34, QK, dequant_q8_0, quant_q8_0},   {GgmlType::Q4_0, 18, QK, dequant_q4_0, quant_q4_0},
    {GgmlType::Q4_1, 20, QK, dequant_q4_1, quant_q4_1},   {GgmlType::Q5_0, 22, QK, dequant_q5_0, quant_q5_0},
    {GgmlType::Q5_1, 24, QK, dequant_q5_1, quant_q5_1},   {GgmlType::Q4_K, 144, QK_K, dequant_q4_k, nullptr},
    {GgmlType::Q5_K, 176, QK_K, dequant_q5_k, nullptr},   {GgmlType::Q6_K, 210, QK_K, dequant_q6_k, nullptr},
    {GgmlType::MXFP4, 17, QK, dequant_mxfp4, nullptr},
};

const BlockCodec* codec_of(GgmlType t) {
  for (const auto& c : kCodecs)
    if (c.type == t) return &c;
  return nullptr;
}

}  // namespace

void dequantize_row(GgmlType t, const void* src_v, float* dst, int64_t n) {
  check_n(t, n, "dequantize_row");
  const uint8_t* src = static_cast<const uint8_t*>(src_v);
  switch (t) {
    case GgmlType::F32:
      std::memcpy(dst, src, size_t(n) * 4);
      return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) dst[i] = load_half(src + 2 * i);
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    default:
      if (const BlockCodec* c = codec_of(t)) {
        for (int64_t i = 0; i < n / c->elems; ++i) c->dequant(src + size_t(c->bytes) * size_t(i), dst + c->elems * i);
        return;
      }
      bad_call(std::string("dequantize_row: ") + std::string(ggml_type_name(t)) + " is not supported");
  }
}

void quantize_row(GgmlType t, const float* src, void* dst_v, int64_t n) {
  check_n(t, n, "quantize_row");
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  switch (t) {
    case GgmlType::F32:
      std::memcpy(dst, src, size_t(n) * 4);
      return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) store_f16(dst + 2 * i, src[i]);
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    default:
      if (const BlockCodec* c = codec_of(t); c && c->quant) {
        for (int64_t i = 0; i < n / c->elems; ++i) c->quant(src + c->elems * i, dst + size_t(c->bytes) * size_t(i));
        return;
      }
      bad_call(std::string("quantize_row: ") + std::string(ggml_type_name(t)) + " is not supported");
  }
}

bool vec_dot_avx2_available() { return cpu_has_avx2_fma(); }

float vec_dot_with(VecDotKernel k, GgmlType t, const void* row, const float* x, int64_t n) {
  check_n(t, n, "vec_dot");
  if (!ggml_can_dequantize(t))
    bad_call(std::string("vec_dot: ") + std::string(ggml_type_name(t)) + " is not supported");
  bool avx2 = false;
#ifdef SPECSCOPE_GGUF_X86
  avx2 = (k == VecDotKernel::Auto || k == VecDotKernel::Avx2) && cpu_has_avx2_fma();
#endif
  const GgmlTypeInfo& info = ggml_type_info(t);
  const uint8_t* src = static_cast<const uint8_t*>(row);
  constexpr int64_t kChunk = 256;  // a multiple of every supported block size
  alignas(32) float w[kChunk];
  double acc = 0.0;
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t c = std::min(kChunk, n - i);
    dequantize_row(t, src + size_t(i / info.block_size) * info.type_size, w, c);
    for (int64_t j = 0; j < c; j += 32) {
      const int64_t m = std::min<int64_t>(32, c - j);
#ifdef SPECSCOPE_GGUF_X86
      acc += avx2 ? chunk_dot_avx2(w + j, x + i + j, m) : chunk_dot_scalar(w + j, x + i + j, m);
#else
      acc += chunk_dot_scalar(w + j, x + i + j, m);
#endif
    }
  }
  (void)avx2;
  return float(acc);
}

float vec_dot(GgmlType t, const void* row, const float* x, int64_t n) {
  return vec_dot_with(VecDotKernel::Auto, t, row, x, n);
}

}  // namespace specscope
