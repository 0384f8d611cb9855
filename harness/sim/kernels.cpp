#include "harness/sim/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace perfgate::sim {

void matmul(const float* a, const float* b, float* c, int m, int k, int n, int tile) {
  std::fill(c, c + static_cast<std::ptrdiff_t>(m) * n, 0.0f);
  for (int k0 = 0; k0 < k; k0 += tile)
    for (int j0 = 0; j0 < n; j0 += tile) {
      int k1 = std::min(k, k0 + tile), j1 = std::min(n, j0 + tile);
      for (int i = 0; i < m; ++i) {
        float* ci = c + static_cast<std::ptrdiff_t>(i) * n;
        const float* ai = a + static_cast<std::ptrdiff_t>(i) * k;
        for (int kk = k0; kk < k1; ++kk) {
          float av = ai[kk];
          const float* bk = b + static_cast<std::ptrdiff_t>(kk) * n;
          for (int j = j0; j < j1; ++j) ci[j] += av * bk[j];
        }
      }
    }
}

void matmul_at_b(const float* a, const float* b, float* c, int m, int k, int n) {
  std::fill(c, c + static_cast<std::ptrdiff_t>(m) * n, 0.0f);
  for (int kk = 0; kk < k; ++kk) {
    const float* ak = a + static_cast<std::ptrdiff_t>(kk) * m;
    const float* bk = b + static_cast<std::ptrdiff_t>(kk) * n;
    for (int i = 0; i < m; ++i) {
      float av = ak[i];
      float* ci = c + static_cast<std::ptrdiff_t>(i) * n;
      for (int j = 0; j < n; ++j) ci[j] += av * bk[j];
    }
  }
}

void matmul_a_bt(const float* a, const float* b, float* c, int m, int k, int n) {
  for (int i = 0; i < m; ++i) {
    const float* ai = a + static_cast<std::ptrdiff_t>(i) * k;
    for (int j = 0; j < n; ++j) {
      const float* bj = b + static_cast<std::ptrdiff_t>(j) * k;
      float s = 0;
      for (int kk = 0; kk < k; ++kk) s += ai[kk] * bj[kk];
      c[static_cast<std::ptrdiff_t>(i) * n + j] = s;
    }
  }
}

namespace {

// Storage formats as load/store policies, so each pass is one tight loop.
struct F32 {
  using T = float;
  static float load(T v) { return v; }
  static T store(float f) { return f; }
};
struct BF16 {
  using T = std::uint16_t;
  static float load(T v) { return bf16_to_f32(v); }
  static T store(float f) { return f32_to_bf16(f); }
};
struct F16 {
  using T = std::uint16_t;
  static float load(T v) { return f16_to_f32(v); }
  static T store(float f) { return f32_to_f16(f); }
};

// Eight floats in a vector register (GCC's vector extension: the same type as
// AVX's __m256, and plain SIMD code on other targets). Without AVX, GCC notes
// that passing it by value changes the ABI; every function taking one is
// internal to this file and inlined, so no ABI is crossed.
#pragma GCC diagnostic ignored "-Wpsabi"
using F8 = float __attribute__((vector_size(32)));

// Leaky ReLU: one compare and one multiply, so a pass costs what moving its
// bytes costs, as element-wise kernels do on accelerators.
inline float act(float x) { return std::max(x, 0.1f * x); }
inline F8 act(F8 x) {
  const F8 t = 0.1f * x;
  return x > t ? x : t;
}
inline float dact(float x) { return x >= 0 ? 1.0f : 0.1f; }  // a select, no branch
inline F8 dact(F8 x) {
  const F8 one = {1, 1, 1, 1, 1, 1, 1, 1}, tenth = one * 0.1f;
  return x >= 0 ? one : tenth;
}
// Eight consecutive floats at p[i], or the one.
inline float at(float, const float* p, std::size_t i) { return p[i]; }
inline F8 at(F8, const float* p, std::size_t i) {
  F8 v;
  std::memcpy(&v, p + i, sizeof v);
  return v;
}
inline void add_at(float v, float* p, std::size_t i) { p[i] += v; }
inline void add_at(F8 v, float* p, std::size_t i) {
  F8 acc = at(v, p, i) + v;
  std::memcpy(p + i, &acc, sizeof acc);
}

// Sixteen stored values to two registers of floats and back. Working in
// registers, with no scratch round trip, keeps a 16-bit pass's conversions
// well below the cost of the bytes they save, as in an accelerator's vector
// unit. Through a float scratch they made bf16 compute-bound, and its gain
// vanished whenever something else shared the core (docs/perfgate-sim.md).
template <typename P>
inline void load16(const typename P::T* src, F8& lo, F8& hi) {
  if constexpr (std::is_same_v<P, F32>) {
    std::memcpy(&lo, src, sizeof lo);
    std::memcpy(&hi, src + 8, sizeof hi);
#if defined(__AVX2__)
  } else if constexpr (std::is_same_v<P, BF16>) {
    // Interleaving with zeros puts each bf16 in the top half of a 32-bit lane,
    // which is its float; two lane shuffles restore the order.
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i zero = _mm256_setzero_si256();
    const __m256i a = _mm256_unpacklo_epi16(zero, h);  // values 0-3 | 8-11
    const __m256i b = _mm256_unpackhi_epi16(zero, h);  // values 4-7 | 12-15
    lo = reinterpret_cast<F8>(_mm256_permute2x128_si256(a, b, 0x20));
    hi = reinterpret_cast<F8>(_mm256_permute2x128_si256(a, b, 0x31));
#endif
  } else {
    float v[16];
    for (int k = 0; k < 16; ++k) v[k] = P::load(src[k]);
    std::memcpy(&lo, v, sizeof lo);
    std::memcpy(&hi, v + 8, sizeof hi);
  }
}

template <typename P>
inline void store16(typename P::T* dst, F8 lo, F8 hi) {
  if constexpr (std::is_same_v<P, F32>) {
    std::memcpy(dst, &lo, sizeof lo);
    std::memcpy(dst + 8, &hi, sizeof hi);
#if defined(__AVX512BF16__) && defined(__AVX512VL__)
  } else if constexpr (std::is_same_v<P, BF16>) {
    // The CPU's own conversion (VCVTNEPS2BF16): round to nearest, ties to
    // even, eight values per instruction, as an accelerator's vector unit
    // converts. It reads subnormal inputs as zero; activations never are.
    const __m128i a = reinterpret_cast<__m128i>(_mm256_cvtneps_pbh(reinterpret_cast<__m256>(lo)));
    const __m128i b = reinterpret_cast<__m128i>(_mm256_cvtneps_pbh(reinterpret_cast<__m256>(hi)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_set_m128i(b, a));
#elif defined(__AVX2__)
  } else if constexpr (std::is_same_v<P, BF16>) {
    // Round to nearest, ties to even, as f32_to_bf16 does; packing works per
    // 128-bit lane (values 0-3, 8-11 | 4-7, 12-15) and the permute puts the
    // four groups back in order.
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7FFF);
    auto round = [&](F8 f) {
      const __m256i b = reinterpret_cast<__m256i>(f);
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), one);
      return _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(lsb, half)), 16);
    };
    const __m256i packed = _mm256_packus_epi32(round(lo), round(hi));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permute4x64_epi64(packed, 0xD8));
#endif
  } else {
    for (int k = 0; k < 8; ++k) {
      dst[k] = P::store(lo[k]);
      dst[8 + k] = P::store(hi[k]);
    }
  }
}

template <typename P>
void narrow(const float* src, typename P::T* dst, std::size_t len) {
  std::size_t i = 0;
  for (; i + 16 <= len; i += 16) {
    F8 lo, hi;
    std::memcpy(&lo, src + i, sizeof lo);
    std::memcpy(&hi, src + i + 8, sizeof hi);
    store16<P>(dst + i, lo, hi);
  }
  for (; i < len; ++i) dst[i] = P::store(src[i]);
}

// Visits a row-major tensor (rows of w values) sixteen values at a time:
// o = fn(o, x, col) on eight floats of `out` and the same of `in` (or of `out`
// again when `in` is null) from column col on, stored back when `write`. The
// rest of each row goes through the same fn one float at a time.
template <typename P, typename Fn>
void elementwise(typename P::T* out, const typename P::T* in, std::size_t n, std::size_t w, bool write, Fn&& fn) {
  for (std::size_t row = 0; row < n; row += w) {
    const std::size_t len = std::min(w, n - row);
    typename P::T* o = out + row;
    const typename P::T* x = in != nullptr ? in + row : o;
    std::size_t col = 0;
    for (; col + 16 <= len; col += 16) {
      F8 o0, o1, x0, x1;
      load16<P>(o + col, o0, o1);
      if (in != nullptr)
        load16<P>(x + col, x0, x1);
      else
        x0 = o0, x1 = o1;
      o0 = fn(o0, x0, col);
      o1 = fn(o1, x1, col + 8);
      if (write) store16<P>(o + col, o0, o1);
    }
    for (; col < len; ++col) {
      float v = fn(P::load(o[col]), P::load(x[col]), col);
      if (write) o[col] = P::store(v);
    }
  }
}

template <typename P>
void forward(typename P::T* a, std::size_t n, bool fused, std::span<const float> bias, float scale,
             const typename P::T* r) {
  const std::size_t w = bias.size();
  const float* b = bias.data();
  if (fused) {
    elementwise<P>(a, r, n, w, true,
                   [&](auto o, auto res, std::size_t col) { return act(o + at(o, b, col)) * scale + res; });
    return;
  }
  elementwise<P>(a, nullptr, n, w, true, [&](auto o, auto, std::size_t col) { return o + at(o, b, col); });
  elementwise<P>(a, nullptr, n, w, true, [](auto o, auto, std::size_t) { return act(o); });
  elementwise<P>(a, nullptr, n, w, true, [scale](auto o, auto, std::size_t) { return o * scale; });
  elementwise<P>(a, r, n, w, true, [](auto o, auto res, std::size_t) { return o + res; });
}

template <typename P>
void backward(const typename P::T* a, typename P::T* g, std::size_t n, bool fused, float scale, std::size_t w) {
  // The bias gradient sums the activation gradient over rows, one sum per column.
  std::vector<float> bias_grad(w, 0.0f);
  float* bg = bias_grad.data();
  if (fused) {
    elementwise<P>(g, a, n, w, true, [&](auto o, auto x, std::size_t col) {
      auto v = o * scale * dact(x);
      add_at(v, bg, col);
      return v;
    });
  } else {
    elementwise<P>(g, nullptr, n, w, true, [scale](auto o, auto, std::size_t) { return o * scale; });
    elementwise<P>(g, a, n, w, true, [](auto o, auto x, std::size_t) { return o * dact(x); });
    elementwise<P>(g, nullptr, n, w, false, [&](auto o, auto, std::size_t col) {
      add_at(o, bg, col);
      return o;
    });
  }
  volatile float sink = bias_grad[0];
  (void)sink;
}

std::size_t bytes_per(Storage s) { return s == Storage::F32 ? 4 : 2; }

}  // namespace

Activation::Activation(std::size_t n, Storage s) : m_n(n), m_storage(s), m_data(n * bytes_per(s)) {}

float Activation::get(std::size_t i) const {
  switch (m_storage) {
    case Storage::F32:
      return reinterpret_cast<const float*>(m_data.data())[i];
    case Storage::BF16:
      return bf16_to_f32(reinterpret_cast<const std::uint16_t*>(m_data.data())[i]);
    case Storage::F16:
      return f16_to_f32(reinterpret_cast<const std::uint16_t*>(m_data.data())[i]);
  }
  return 0;
}

void Activation::fill_from(std::span<const float> src) {
  auto fill = [&]<typename P>(P) {
    auto* a = reinterpret_cast<typename P::T*>(m_data.data());
    for (std::size_t i = 0; i < m_n; i += src.size()) narrow<P>(src.data(), a + i, std::min(src.size(), m_n - i));
  };
  switch (m_storage) {
    case Storage::F32:
      fill(F32{});
      break;
    case Storage::BF16:
      fill(BF16{});
      break;
    case Storage::F16:
      fill(F16{});
      break;
  }
}

void Activation::chain_forward(bool fused, std::span<const float> bias, float scale, const Activation& residual) {
  switch (m_storage) {
    case Storage::F32:
      forward<F32>(reinterpret_cast<float*>(m_data.data()), m_n, fused, bias, scale,
                   reinterpret_cast<const float*>(residual.m_data.data()));
      break;
    case Storage::BF16:
      forward<BF16>(reinterpret_cast<std::uint16_t*>(m_data.data()), m_n, fused, bias, scale,
                    reinterpret_cast<const std::uint16_t*>(residual.m_data.data()));
      break;
    case Storage::F16:
      forward<F16>(reinterpret_cast<std::uint16_t*>(m_data.data()), m_n, fused, bias, scale,
                   reinterpret_cast<const std::uint16_t*>(residual.m_data.data()));
      break;
  }
}

void Activation::chain_backward(bool fused, float scale, Activation& grad, std::size_t width) {
  switch (m_storage) {
    case Storage::F32:
      backward<F32>(reinterpret_cast<const float*>(m_data.data()), reinterpret_cast<float*>(grad.m_data.data()), m_n,
                    fused, scale, width);
      break;
    case Storage::BF16:
      backward<BF16>(reinterpret_cast<const std::uint16_t*>(m_data.data()),
                     reinterpret_cast<std::uint16_t*>(grad.m_data.data()), m_n, fused, scale, width);
      break;
    case Storage::F16:
      backward<F16>(reinterpret_cast<const std::uint16_t*>(m_data.data()),
                    reinterpret_cast<std::uint16_t*>(grad.m_data.data()), m_n, fused, scale, width);
      break;
  }
}

}  // namespace perfgate::sim
