#pragma once
// The compute of one layer: matrix products and the element-wise chain
// (bias, activation, scale, residual), with activations stored in 32 or 16
// bits. Plain loops the compiler vectorises; no BLAS, so the work is the
// same on every machine that builds perfgate.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace perfgate::sim {

enum class Storage { F32, BF16, F16 };

// C (m x n) = A (m x k) * B (k x n), row-major, blocked over k and n by `tile`.
void matmul(const float* a, const float* b, float* c, int m, int k, int n, int tile);
// C (m x n) = A^T * B with A (k x m), B (k x n): the weight gradient X^T dY.
void matmul_at_b(const float* a, const float* b, float* c, int m, int k, int n);
// C (m x n) = A * B^T with A (m x k), B (n x k): the input gradient dY W^T.
void matmul_a_bt(const float* a, const float* b, float* c, int m, int k, int n);

// Activation memory in one of the storage formats: element-wise passes read
// and write it in that format (16-bit halves the bytes moved).
class Activation {
 public:
  Activation(std::size_t n, Storage s);
  std::size_t size() const { return m_n; }
  Storage storage() const { return m_storage; }
  float get(std::size_t i) const;
  // Fills from a smaller source tensor, repeating it.
  void fill_from(std::span<const float> src);
  void* raw() { return m_data.data(); }

  // The element-wise chain. Unfused: four passes over memory (bias, activation,
  // scale, residual), each reading and writing the whole tensor. Fused: one
  // pass doing all four. Same arithmetic, same result.
  void chain_forward(bool fused, std::span<const float> bias, float scale, const Activation& residual);
  void chain_backward(bool fused, float scale, Activation& grad, std::size_t width);

 private:
  std::size_t m_n;
  Storage m_storage;
  std::vector<std::uint8_t> m_data;
};

// Conversions are inline: the element-wise loops must vectorise through them.
inline float bf16_to_f32(std::uint16_t v) {
  std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest, ties to even
  return static_cast<std::uint16_t>(bits >> 16);
}

// IEEE half precision without relying on hardware conversion instructions
// (x86-64's baseline has none): branch-free so loops vectorise. Subnormal
// halves are flushed to zero, as accelerators' fast paths do.
inline float f16_to_f32(std::uint16_t h) {
  // Masks instead of branches, so the compiler vectorises loops that call this.
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t is_zero = 0u - static_cast<std::uint32_t>(exp == 0);
  std::uint32_t is_special = 0u - static_cast<std::uint32_t>(exp == 31);
  std::uint32_t normal = ((exp + 112) << 23) | (mant << 13);
  std::uint32_t special = 0x7F800000u | (mant << 13);
  std::uint32_t bits = sign | (normal & ~is_zero & ~is_special) | (special & is_special);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline std::uint16_t f32_to_f16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  std::uint32_t sign = (bits >> 16) & 0x8000u;
  std::uint32_t e = (bits >> 23) & 0xFFu;
  std::uint32_t mant = bits & 0x7FFFFFu;
  std::uint32_t rounded = mant + 0xFFFu + ((mant >> 13) & 1u);  // to nearest, ties to even
  std::int32_t exp = static_cast<std::int32_t>(e) - 112 + static_cast<std::int32_t>(rounded >> 23);
  rounded &= 0x7FFFFFu;
  std::uint32_t under = 0u - static_cast<std::uint32_t>(exp <= 0);
  std::uint32_t over = 0u - static_cast<std::uint32_t>(exp >= 31);
  std::uint32_t nan = 0u - (static_cast<std::uint32_t>(e == 0xFFu) & static_cast<std::uint32_t>(mant != 0));
  std::uint32_t normal = (static_cast<std::uint32_t>(exp) << 10) | (rounded >> 13);
  std::uint32_t out = (normal & ~under & ~over) | (0x7C00u & over);
  out = (out & ~nan) | (0x7E00u & nan);
  return static_cast<std::uint16_t>(sign | (out & 0x7FFFu));
}

}  // namespace perfgate::sim
