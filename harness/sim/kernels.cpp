#include "harness/sim/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

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

template <typename P, typename Fn>
void pass(typename P::T* a, std::size_t n, Fn&& fn) {
  if constexpr (std::is_same_v<typename P::T, float>) {
    for (std::size_t i = 0; i < n; ++i) a[i] = fn(a[i], i);
  } else {
    // 16-bit storage: widen a block into registers-sized float scratch, work,
    // narrow it back; three simple loops vectorise where one mixed loop does not.
    constexpr std::size_t k_block = 512;
    alignas(64) float buf[k_block];
    for (std::size_t base = 0; base < n; base += k_block) {
      const std::size_t len = std::min(k_block, n - base);
      for (std::size_t i = 0; i < len; ++i) buf[i] = P::load(a[base + i]);
      for (std::size_t i = 0; i < len; ++i) buf[i] = fn(buf[i], base + i);
      for (std::size_t i = 0; i < len; ++i) a[base + i] = P::store(buf[i]);
    }
  }
}

// A pass that also reads a second tensor: out[i] = fn(out[i], in[i]), both
// widened blockwise for 16-bit storage like pass().
template <typename P, typename Fn>
void pass2(typename P::T* out, const typename P::T* in, std::size_t n, Fn&& fn) {
  if constexpr (std::is_same_v<typename P::T, float>) {
    for (std::size_t i = 0; i < n; ++i) out[i] = fn(out[i], in[i]);
  } else {
    constexpr std::size_t k_block = 512;
    alignas(64) float a[k_block];
    alignas(64) float b[k_block];
    for (std::size_t base = 0; base < n; base += k_block) {
      const std::size_t len = std::min(k_block, n - base);
      for (std::size_t i = 0; i < len; ++i) a[i] = P::load(out[base + i]);
      for (std::size_t i = 0; i < len; ++i) b[i] = P::load(in[base + i]);
      for (std::size_t i = 0; i < len; ++i) a[i] = fn(a[i], b[i]);
      for (std::size_t i = 0; i < len; ++i) out[base + i] = P::store(a[i]);
    }
  }
}

template <typename P>
void forward(typename P::T* a, std::size_t n, bool fused, std::span<const float> bias, float scale,
             const typename P::T* r) {
  const std::size_t w = bias.size();
  if (fused) {
    for (std::size_t row = 0; row < n; row += w) {
      std::size_t end = std::min(n, row + w);
      for (std::size_t i = row; i < end; ++i)
        a[i] = P::store(act(P::load(a[i]) + bias[i - row]) * scale + P::load(r[i]));
    }
    return;
  }
  for (std::size_t row = 0; row < n; row += w) {
    std::size_t end = std::min(n, row + w);
    for (std::size_t i = row; i < end; ++i) a[i] = P::store(P::load(a[i]) + bias[i - row]);
  }
  pass<P>(a, n, [](float v, std::size_t) { return act(v); });
  pass<P>(a, n, [scale](float v, std::size_t) { return v * scale; });
  pass2<P>(a, r, n, [](float v, float res) { return v + res; });
}

template <typename P>
void backward(const typename P::T* a, typename P::T* g, std::size_t n, bool fused, float scale, std::size_t w) {
  // The bias gradient sums the activation gradient over rows, one sum per column.
  std::vector<float> bias_grad(w, 0.0f);
  if (fused) {
    for (std::size_t row = 0; row < n; row += w) {
      std::size_t cols = std::min(w, n - row);
      for (std::size_t j = 0; j < cols; ++j) {
        float v = P::load(g[row + j]) * scale * dact(P::load(a[row + j]));
        g[row + j] = P::store(v);
        bias_grad[j] += v;
      }
    }
  } else {
    pass<P>(g, n, [scale](float v, std::size_t) { return v * scale; });
    pass2<P>(g, a, n, [](float v, float x) { return v * dact(x); });
    for (std::size_t row = 0; row < n; row += w) {
      std::size_t cols = std::min(w, n - row);
      for (std::size_t j = 0; j < cols; ++j) bias_grad[j] += P::load(g[row + j]);
    }
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
    for (std::size_t i = 0; i < m_n; i += src.size()) {
      std::size_t end = std::min(m_n, i + src.size());
      for (std::size_t j = i; j < end; ++j) a[j] = P::store(src[j - i]);
    }
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
