#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/stats/fisher_exact.hpp"
#include "tests/unit/support/paths.hpp"

using namespace perfgate::stats;

// References: scipy.stats.fisher_exact (SciPy 1.10) via
// tests/data/stats/gen_gate_reference.py, and small tables by hand.

TEST_CASE("Fisher's exact test against SciPy", "[stats]") {
  std::ifstream in(perfgate::test::data_dir() + "/stats/gate_reference.json");
  REQUIRE(in.good());
  const auto ref = nlohmann::json::parse(in);
  REQUIRE(ref.at("fisher").size() >= 10);
  for (const auto& c : ref.at("fisher")) {
    const auto t = c.at("table").get<std::vector<long long>>();
    INFO("table " << t[0] << " " << t[1] << " / " << t[2] << " " << t[3]);
    auto f = fisher_exact(t[0], t[1], t[2], t[3]);
    CHECK(f.p_greater == Approx(c.at("greater").get<double>()).epsilon(1e-9));
    CHECK(f.p_less == Approx(c.at("less").get<double>()).epsilon(1e-9));
    CHECK(f.p_two_sided == Approx(c.at("two-sided").get<double>()).epsilon(1e-9));
    const auto& odds = c.at("odds_ratio");
    if (odds.is_null())
      CHECK(std::isnan(f.odds_ratio));
    else if (odds.is_string())
      CHECK(std::isinf(f.odds_ratio));
    else
      CHECK(f.odds_ratio == Approx(odds.get<double>()).epsilon(1e-12));
  }
}

TEST_CASE("Fisher's exact test by hand", "[stats]") {
  // 3 of 5 candidate trials failed, none of 10 baseline trials: the failed
  // trials could only be the candidate's 3 with probability C(5,3) / C(15,3).
  auto f = fisher_exact(3, 2, 0, 10);
  CHECK(f.p_greater == Approx(10.0 / 455.0).epsilon(1e-12));
  // Nothing failed on either side: one possible table, no evidence.
  auto none = fisher_exact(0, 5, 0, 10);
  CHECK(none.p_greater == 1);
  CHECK(none.p_two_sided == 1);
  // An empty table.
  CHECK(fisher_exact(0, 0, 0, 0).p_greater == 1);
  // Negative counts are not a table.
  CHECK(std::isnan(fisher_exact(-1, 2, 3, 4).p_greater));
}
