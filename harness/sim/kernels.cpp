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

// Leaky ReLU: one compare and one multiply, so a pass costs what moving its
// bytes costs, as element-wise kernels do on accelerators.
inline float act(float x) { return std::max(x, 0.1f * x); }
inline float dact(float x) { return 0.55f + 0.45f * std::copysign(1.0f, x); }  // 1 or 0.1, branch-free

// 16-bit storage is worked on in blocks widened into float scratch and narrowed
// back: simple loops that vectorise, where one mixed loop does not.
constexpr std::size_t k_block = 512;

// For bf16 on AVX2, sixteen values at a time: interleaving with zeros puts each
// bf16 in the top half of a 32-bit lane, which is its float; two lane shuffles
// restore the order. A handful of instructions per sixteen values instead of a
// conversion per value: the conversions must cost well below the bytes they save,
// as in an accelerator's vector unit, or the gain of 16-bit storage drowns in the
// launch-to-launch spread of this machine's memory speed (docs/perfgate-sim.md).
template <typename P>
void widen(const typename P::T* src, float* dst, std::size_t len) {
  std::size_t i = 0;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<P, BF16>) {
    const __m256i zero = _mm256_setzero_si256();
    for (; i + 16 <= len; i += 16) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
      const __m256i lo = _mm256_unpacklo_epi16(zero, h);  // values 0-3 | 8-11
      const __m256i hi = _mm256_unpackhi_epi16(zero, h);  // values 4-7 | 12-15
      _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_permute2x128_si256(lo, hi, 0x20)));
      _mm256_storeu_ps(dst + i + 8, _mm256_castsi256_ps(_mm256_permute2x128_si256(lo, hi, 0x31)));
    }
  }
#endif
  for (; i < len; ++i) dst[i] = P::load(src[i]);
}

template <typename P>
void narrow(const float* src, typename P::T* dst, std::size_t len) {
  std::size_t i = 0;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<P, BF16>) {
    // Round to nearest, ties to even, as f32_to_bf16 does.
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7FFF);
    auto round = [&](__m256 f) {
      const __m256i b = _mm256_castps_si256(f);
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), one);
      return _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(lsb, half)), 16);
    };
    for (; i + 16 <= len; i += 16) {
      // Packing works per 128-bit lane (values 0-3, 8-11 | 4-7, 12-15); the
      // permute puts the four groups back in order.
      const __m256i packed = _mm256_packus_epi32(round(_mm256_loadu_ps(src + i)), round(_mm256_loadu_ps(src + i + 8)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_permute4x64_epi64(packed, 0xD8));
    }
  }
#endif
  for (; i < len; ++i) dst[i] = P::store(src[i]);
}

// Visits a row-major tensor (rows of w values) block by block: fn(o, x, len, col)
// sees `len` values of `out` from column `col` on, and the same values of `in` when
// given (x is null otherwise), as floats. 16-bit storage is widened into scratch,
// and narrowed back when `write`; fp32 is worked on in place.
template <typename P, typename Fn>
void blocks(typename P::T* out, const typename P::T* in, std::size_t n, std::size_t w, bool write, Fn&& fn) {
  alignas(64) float o[k_block];
  alignas(64) float x[k_block];
  for (std::size_t row = 0; row < n; row += w)
    for (std::size_t col = 0; col < w && row + col < n; col += k_block) {
      const std::size_t len = std::min({k_block, w - col, n - row - col});
      typename P::T* po = out + row + col;
      const typename P::T* px = in != nullptr ? in + row + col : nullptr;
      if constexpr (std::is_same_v<typename P::T, float>) {
        fn(po, px, len, col);
      } else {
        widen<P>(po, o, len);
        if (px != nullptr) widen<P>(px, x, len);
        fn(o, px != nullptr ? x : nullptr, len, col);
        if (write) narrow<P>(o, po, len);
      }
    }
}

template <typename P>
void forward(typename P::T* a, std::size_t n, bool fused, std::span<const float> bias, float scale,
             const typename P::T* r) {
  const std::size_t w = bias.size();
  if (fused) {
    blocks<P>(a, r, n, w, true, [&](float* o, const float* res, std::size_t len, std::size_t col) {
      for (std::size_t i = 0; i < len; ++i) o[i] = act(o[i] + bias[col + i]) * scale + res[i];
    });
    return;
  }
  blocks<P>(a, nullptr, n, w, true, [&](float* o, const float*, std::size_t len, std::size_t col) {
    for (std::size_t i = 0; i < len; ++i) o[i] += bias[col + i];
  });
  blocks<P>(a, nullptr, n, w, true, [](float* o, const float*, std::size_t len, std::size_t) {
    for (std::size_t i = 0; i < len; ++i) o[i] = act(o[i]);
  });
  blocks<P>(a, nullptr, n, w, true, [scale](float* o, const float*, std::size_t len, std::size_t) {
    for (std::size_t i = 0; i < len; ++i) o[i] *= scale;
  });
  blocks<P>(a, r, n, w, true, [](float* o, const float* res, std::size_t len, std::size_t) {
    for (std::size_t i = 0; i < len; ++i) o[i] += res[i];
  });
}

template <typename P>
void backward(const typename P::T* a, typename P::T* g, std::size_t n, bool fused, float scale, std::size_t w) {
  // The bias gradient sums the activation gradient over rows, one sum per column.
  std::vector<float> bias_grad(w, 0.0f);
  if (fused) {
    blocks<P>(g, a, n, w, true, [&](float* o, const float* x, std::size_t len, std::size_t col) {
      for (std::size_t i = 0; i < len; ++i) {
        o[i] *= scale * dact(x[i]);
        bias_grad[col + i] += o[i];
      }
    });
  } else {
    blocks<P>(g, nullptr, n, w, true, [scale](float* o, const float*, std::size_t len, std::size_t) {
      for (std::size_t i = 0; i < len; ++i) o[i] *= scale;
    });
    blocks<P>(g, a, n, w, true, [](float* o, const float* x, std::size_t len, std::size_t) {
      for (std::size_t i = 0; i < len; ++i) o[i] *= dact(x[i]);
    });
    blocks<P>(g, nullptr, n, w, false, [&](float* o, const float*, std::size_t len, std::size_t col) {
      for (std::size_t i = 0; i < len; ++i) bias_grad[col + i] += o[i];
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
    case Storage::F32: return reinterpret_cast<const float*>(m_data.data())[i];
    case Storage::BF16: return bf16_to_f32(reinterpret_cast<const std::uint16_t*>(m_data.data())[i]);
    case Storage::F16: return f16_to_f32(reinterpret_cast<const std::uint16_t*>(m_data.data())[i]);
  }
  return 0;
}

void Activation::fill_from(std::span<const float> src) {
  auto fill = [&]<typename P>(P) {
    auto* a = reinterpret_cast<typename P::T*>(m_data.data());
    for (std::size_t i = 0; i < m_n; i += src.size()) narrow<P>(src.data(), a + i, std::min(src.size(), m_n - i));
  };
  switch (m_storage) {
    case Storage::F32: fill(F32{}); break;
    case Storage::BF16: fill(BF16{}); break;
    case Storage::F16: fill(F16{}); break;
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
