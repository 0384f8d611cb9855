#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "harness/stats/downsample.hpp"

using perfgate::stats::Point;

namespace {

std::vector<Point> sine(std::size_t n) {
  std::vector<Point> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = {static_cast<double>(i), std::sin(static_cast<double>(i) / 50.0)};
  return p;
}

}  // namespace

TEST_CASE("lttb keeps the ends, the count and the order", "[stats]") {
  auto pts = sine(10'000);
  auto out = perfgate::stats::lttb(pts, 500);
  REQUIRE(out.size() == 500);
  CHECK(out.front().t == 0);
  CHECK(out.back().t == 9'999);
  for (std::size_t i = 1; i < out.size(); ++i) CHECK(out[i].t > out[i - 1].t);
  // The shape survives: the extremes of the sine are among the picks.
  double lo = 1, hi = -1;
  for (const auto& p : out) lo = std::min(lo, p.v), hi = std::max(hi, p.v);
  CHECK(lo < -0.99);
  CHECK(hi > 0.99);
}

TEST_CASE("lttb returns short series as they are", "[stats]") {
  auto pts = sine(10);
  CHECK(perfgate::stats::lttb(pts, 20).size() == 10);
  CHECK(perfgate::stats::lttb(pts, 2).size() == 10);
}

TEST_CASE("the streaming reducer bounds memory and keeps a lone spike", "[stats]") {
  perfgate::stats::StreamingReducer r(256);
  const long long n = 1'000'000;
  for (long long i = 0; i < n; ++i) {
    double v = 10.0 + 0.001 * static_cast<double>(i % 7);
    if (i == 654'321) v = 500.0;  // one stall among a million steps
    r.add(static_cast<double>(i), v);
  }
  r.add(1e9, std::nan(""));  // skipped
  CHECK(r.count() == n);
  auto kept = r.points();
  CHECK(kept.size() <= 4 * 256);
  CHECK(kept.size() > 256);
  bool spike = false;
  for (const auto& p : kept) spike = spike || (p.v == 500.0 && p.t == 654'321);
  CHECK(spike);
  CHECK(kept.front().t == 0);
  CHECK(kept.back().t == static_cast<double>(n - 1));
  auto drawn = perfgate::stats::lttb(kept, 200);
  CHECK(drawn.size() == 200);
  bool spike_drawn = false;
  for (const auto& p : drawn) spike_drawn = spike_drawn || p.v == 500.0;
  CHECK(spike_drawn);  // the largest triangle around it is the spike itself
}
