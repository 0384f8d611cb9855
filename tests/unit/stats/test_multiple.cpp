#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/stats/multiple.hpp"
#include "tests/unit/support/paths.hpp"

using namespace perfgate::stats;

// References: R's p.adjust formulas (stats package, R 4.x) evaluated with NumPy
// by tests/data/stats/gen_reference.py into p_adjust_reference.json, plus
// hand-computed families below.

namespace {
constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

void check_equal(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("index " << i);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else
      CHECK(got[i] == Approx(want[i]).epsilon(1e-14).margin(1e-300));
  }
}
}  // namespace

TEST_CASE("Benjamini-Hochberg and Holm against R's p.adjust", "[stats]") {
  std::ifstream in(perfgate::test::data_dir() + "/stats/p_adjust_reference.json");
  REQUIRE(in.good());
  const auto ref = nlohmann::json::parse(in);
  REQUIRE(ref.at("p_adjust").size() >= 10);
  for (const auto& c : ref.at("p_adjust")) {
    const auto p = c.at("p").get<std::vector<double>>();
    INFO("family of " << p.size());
    check_equal(benjamini_hochberg(p), c.at("bh").get<std::vector<double>>());
    check_equal(holm(p), c.at("holm").get<std::vector<double>>());
  }
}

TEST_CASE("Benjamini-Hochberg and Holm by hand", "[stats]") {
  // p.adjust(c(.01, .02, .03, .04, .05), "BH"): n/i * p = .05 for every i.
  const std::vector<double> p = {0.01, 0.02, 0.03, 0.04, 0.05};
  check_equal(benjamini_hochberg(p), {0.05, 0.05, 0.05, 0.05, 0.05});
  // Holm: (n - i + 1) p_(i) = .05, .08, .09, .08, .05, running maximum .05 .08 .09 .09 .09.
  check_equal(holm(p), {0.05, 0.08, 0.09, 0.09, 0.09});
  // Input order is kept.
  const std::vector<double> q = {0.04, 0.01, 0.05, 0.03, 0.02};
  check_equal(holm(q), {0.09, 0.05, 0.09, 0.09, 0.08});
  // Capped at 1.
  const std::vector<double> big = {0.6, 0.7, 0.01};
  check_equal(holm(big), {1.0, 1.0, 0.03});
  check_equal(benjamini_hochberg(big), {0.7, 0.7, 0.03});
  // Holm is never below BH (FWER control is stricter than FDR control).
  const auto bh = benjamini_hochberg(q);
  const auto hm = holm(q);
  for (std::size_t i = 0; i < q.size(); ++i) CHECK(hm[i] >= bh[i]);
}

TEST_CASE("p-value adjustment of degenerate families", "[stats]") {
  const std::vector<double> empty;
  CHECK(benjamini_hochberg(empty).empty());
  CHECK(holm(empty).empty());
  const std::vector<double> one = {0.03};
  check_equal(benjamini_hochberg(one), {0.03});
  check_equal(holm(one), {0.03});
  // NaN (R's NA) stays NaN and does not count in n: as p.adjust(c(.01, NA, .04)).
  const std::vector<double> with_nan = {0.01, k_nan, 0.04};
  check_equal(benjamini_hochberg(with_nan), {0.02, k_nan, 0.04});
  check_equal(holm(with_nan), {0.02, k_nan, 0.04});
  const std::vector<double> all_nan = {k_nan, k_nan};
  check_equal(holm(all_nan), {k_nan, k_nan});
  // Ties get equal adjusted values.
  const std::vector<double> tied = {0.02, 0.02, 0.02, 0.5};
  const auto bh = benjamini_hochberg(tied);
  CHECK(bh[0] == bh[1]);
  CHECK(bh[1] == bh[2]);
  CHECK(bh[0] == Approx(4.0 / 3 * 0.02));
}
