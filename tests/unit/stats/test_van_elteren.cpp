#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/stats/van_elteren.hpp"
#include "tests/unit/support/paths.hpp"

using namespace perfgate::stats;

// References: tests/data/stats/gen_gate_reference.py. One stratum equals
// scipy.stats.mannwhitneyu(y, x, method="asymptotic", use_continuity=False);
// several strata are van Elteren's weighted sum computed there from SciPy's
// ranks, with ties.

TEST_CASE("van Elteren's test against SciPy and its definition", "[stats]") {
  std::ifstream in(perfgate::test::data_dir() + "/stats/gate_reference.json");
  REQUIRE(in.good());
  const auto ref = nlohmann::json::parse(in);
  REQUIRE(ref.at("van_elteren").size() >= 6);
  int n = 0;
  for (const auto& c : ref.at("van_elteren")) {
    std::vector<std::vector<double>> xs, ys;
    for (const auto& s : c.at("strata")) {
      xs.push_back(s.at(0).get<std::vector<double>>());
      ys.push_back(s.at(1).get<std::vector<double>>());
    }
    std::vector<StratumSamples> strata;
    for (std::size_t i = 0; i < xs.size(); ++i) strata.push_back({xs[i], ys[i]});
    INFO("case " << n++ << ", " << strata.size() << " strata");
    auto r = van_elteren(strata);
    CHECK(r.z == Approx(c.at("z").get<double>()).epsilon(1e-10));
    CHECK(r.p_two_sided == Approx(c.at("p").get<double>()).epsilon(1e-9).margin(1e-300));
    CHECK(r.strata == static_cast<int>(strata.size()));
  }
}

TEST_CASE("a shift shared by twelve strata of 3 against 9 is overwhelming together", "[stats]") {
  // Each stratum alone: the exact two-sided p of the most extreme ordering is
  // 2 / C(12, 3) = 0.0091. Together every U is at its maximum: with
  // w = 1/13, E U = 13.5 and var U = 29.25, z = 12 w 13.5 / sqrt(12 w^2 29.25).
  std::vector<std::vector<double>> xs, ys;
  for (int i = 0; i < 12; ++i) {
    xs.push_back({10.0 + i, 10.1 + i, 10.2 + i, 10.3 + i, 10.4 + i, 10.5 + i, 10.6 + i, 10.7 + i, 10.8 + i});
    ys.push_back({20.0 + i, 20.1 + i, 20.2 + i});
  }
  std::vector<StratumSamples> strata;
  for (std::size_t i = 0; i < xs.size(); ++i) strata.push_back({xs[i], ys[i]});
  auto r = van_elteren(strata);
  CHECK(r.z == Approx(12 * 13.5 / std::sqrt(12 * 29.25)).epsilon(1e-12));
  CHECK(r.p_greater < 1e-10);
  CHECK(r.p_less > 0.999);
}

TEST_CASE("van Elteren leaves out strata that carry nothing", "[stats]") {
  std::vector<double> a = {1, 1, 1}, b = {1, 1}, empty;
  std::vector<StratumSamples> strata = {{a, b}, {a, empty}};
  auto r = van_elteren(strata);
  CHECK(r.strata == 0);
  CHECK(r.p_two_sided == 1);
}

TEST_CASE("Stouffer's combination and the normal deviate of a p", "[stats]") {
  std::vector<double> z = {1.0, 2.0, 3.0};
  auto s = stouffer(z);
  CHECK(s.z == Approx(6.0 / std::sqrt(3.0)));
  // 2 * (1 - Phi(3.4641)) = 0.000532 (R: 2 * pnorm(-6 / sqrt(3))).
  CHECK(s.p_two_sided == Approx(0.000532).epsilon(1e-3));
  CHECK(stouffer({}).p_two_sided == 1);
  // qnorm(1 - 0.05 / 2) = 1.959964.
  CHECK(normal_deviate(0.05, 1) == Approx(1.959964).epsilon(1e-6));
  CHECK(normal_deviate(0.05, -3) == Approx(-1.959964).epsilon(1e-6));
  CHECK(normal_deviate(1.0, 1) == 0);
  CHECK(normal_deviate(0.0, 1) == 40);
}
