// perfgate-sim's element-wise kernels: 16-bit storage must do exactly the
// arithmetic the scalar definition does (widen, work in float, round to
// nearest even at every store), also where a vectorised path handles all but
// a tail of each row.
#include "harness/sim/kernels.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using perfgate::sim::Activation;
using perfgate::sim::bf16_to_f32;
using perfgate::sim::f32_to_bf16;
using perfgate::sim::Storage;

namespace {

float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }
float leaky(float x) { return std::max(x, 0.1f * x); }
float leaky_grad(float x) { return x >= 0 ? 1.0f : 0.1f; }

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace

TEST_CASE("bf16 stores round to nearest even, in the vector path and its tail") {
  // Ties in both directions, values just off a tie, and random values; 37 is
  // not a multiple of the sixteen values the vector path takes at once.
  std::vector<float> src = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, 1.0f + 1.0f / 256 + 1e-7f, -2.5f, 0.0f, -0.0f};
  auto more = random_values(31, 7);
  src.insert(src.end(), more.begin(), more.end());
  Activation a(src.size() * 3, Storage::BF16);
  a.fill_from(src);
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("index " << i);
    REQUIRE(a.get(i) == round_bf16(src[i % src.size()]));
  }
  // The two ties: 1 + 1/256 lies between 1 and 1 + 1/128 and goes to the even 1;
  // 1 + 3/256 goes to the even 1 + 1/64.
  CHECK(a.get(0) == 1.0f);
  CHECK(a.get(1) == 1.0f + 1.0f / 64);
  CHECK(a.get(2) == 1.0f + 1.0f / 128);
}

TEST_CASE("bf16 element-wise chain equals the scalar definition, pass by pass") {
  const std::size_t width = GENERATE(16u, 40u, 600u);  // whole vectors, a tail, more than one block per row
  const std::size_t rows = 5;
  const std::size_t n = width * rows;
  const auto y = random_values(n, 1), res = random_values(n, 2), bias = random_values(width, 3);
  const float scale = 0.5f;

  Activation residual(n, Storage::BF16);
  residual.fill_from(res);

  SECTION("forward, unfused: four rounded passes") {
    Activation a(n, Storage::BF16);
    a.fill_from(y);
    a.chain_forward(false, bias, scale, residual);
    for (std::size_t i = 0; i < n; ++i) {
      float v = round_bf16(round_bf16(y[i]) + bias[i % width]);
      v = round_bf16(leaky(v));
      v = round_bf16(v * scale);
      v = round_bf16(v + round_bf16(res[i]));
      INFO("width " << width << " index " << i);
      REQUIRE(a.get(i) == v);
    }
  }
  SECTION("forward, fused: one rounding") {
    Activation a(n, Storage::BF16);
    a.fill_from(y);
    a.chain_forward(true, bias, scale, residual);
    for (std::size_t i = 0; i < n; ++i) {
      const float v = round_bf16(leaky(round_bf16(y[i]) + bias[i % width]) * scale + round_bf16(res[i]));
      INFO("width " << width << " index " << i);
      REQUIRE(a.get(i) == v);
    }
  }
  SECTION("backward: gradient scaled and gated by the activation's sign") {
    for (bool fused : {false, true}) {
      Activation a(n, Storage::BF16), g(n, Storage::BF16);
      a.fill_from(y);
      const auto dy = random_values(n, 4);
      g.fill_from(dy);
      a.chain_backward(fused, scale, g, width);
      for (std::size_t i = 0; i < n; ++i) {
        const float x = round_bf16(y[i]), d = round_bf16(dy[i]);
        const float v =
            fused ? round_bf16(d * scale * leaky_grad(x)) : round_bf16(round_bf16(d * scale) * leaky_grad(x));
        INFO("fused " << fused << " width " << width << " index " << i);
        REQUIRE(g.get(i) == v);
      }
    }
  }
}

TEST_CASE("fp32 element-wise chain: fused and unfused agree") {
  const std::size_t width = 40, n = width * 7;
  const auto y = random_values(n, 5), res = random_values(n, 6), bias = random_values(width, 8);
  Activation residual(n, Storage::F32), unfused(n, Storage::F32), fused(n, Storage::F32);
  residual.fill_from(res);
  unfused.fill_from(y);
  fused.fill_from(y);
  unfused.chain_forward(false, bias, 0.5f, residual);
  fused.chain_forward(true, bias, 0.5f, residual);
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(unfused.get(i) == Approx(fused.get(i)).epsilon(1e-6));
    REQUIRE(unfused.get(i) == Approx(leaky(y[i] + bias[i % width]) * 0.5f + res[i]).epsilon(1e-6));
  }
}
