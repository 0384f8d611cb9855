#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/stats/two_level.hpp"
#include "tests/unit/support/paths.hpp"

using namespace perfgate::stats;

// References: tests/data/stats/gen_gate_reference.py (SciPy): the classical
// prediction test of a new run against k runs of equal size, and
// trigamma_inverse against SciPy's polygamma solved by brentq.

TEST_CASE("with equal runs and no prior the two-level test is the prediction test", "[stats]") {
  std::ifstream in(perfgate::test::data_dir() + "/stats/gate_reference.json");
  REQUIRE(in.good());
  const auto ref = nlohmann::json::parse(in);
  REQUIRE(ref.at("prediction").size() >= 3);
  for (const auto& c : ref.at("prediction")) {
    std::vector<std::vector<double>> runs;
    for (const auto& r : c.at("runs")) runs.push_back(r.get<std::vector<double>>());
    const auto cand = c.at("cand").get<std::vector<double>>();
    INFO(runs.size() << " runs");
    auto spread = run_spread(runs, cand);
    CHECK(spread.runs == static_cast<int>(runs.size()));
    auto t = two_level_test(runs, cand, spread, VariancePrior{});
    CHECK(t.spread_known);
    CHECK(t.diff == Approx(c.at("diff").get<double>()).epsilon(1e-12));
    CHECK(t.t == Approx(c.at("t").get<double>()).epsilon(1e-9));
    // Satterthwaite over the run and trial parts: at least the prediction test's k - 1,
    // so p at most its p.
    CHECK(t.df >= c.at("df").get<double>() - 1e-9);
    CHECK(t.p_two_sided <= c.at("p").get<double>() * (1 + 1e-9));
    CHECK(t.low < t.diff);
    CHECK(t.high > t.diff);
  }
}

TEST_CASE("trigamma_inverse against SciPy", "[stats]") {
  std::ifstream in(perfgate::test::data_dir() + "/stats/gate_reference.json");
  REQUIRE(in.good());
  const auto ref = nlohmann::json::parse(in);
  for (const auto& c : ref.at("trigamma_inverse")) {
    INFO("y = " << c.at("y").get<double>());
    CHECK(trigamma_inverse(c.at("y").get<double>()) == Approx(c.at("x").get<double>()).epsilon(1e-7));
  }
  CHECK(std::isnan(trigamma_inverse(0)));
}

TEST_CASE("run spread: between and within variance by hand", "[stats]") {
  // Runs {1, 3} and {5, 7}: means 2 and 6, between variance 8 on 1 df;
  // within: (1 + 1 + 1 + 1) / 2 = 2 on 2 df; the candidate {4, 6} adds 2 on 1 df.
  std::vector<std::vector<double>> runs = {{1, 3}, {5, 7}};
  std::vector<double> cand = {4, 6};
  auto s = run_spread(runs, cand);
  CHECK(s.runs == 2);
  CHECK(s.between_var == Approx(8));
  CHECK(s.between_df == 1);
  CHECK(s.within_var == Approx(2));
  CHECK(s.within_df == 3);
  CHECK(s.mean_inv_n == Approx(0.5));
  // The test by hand: tau^2 = 8 - 2 * 0.5 = 7; run part 7 (1 + 1/2) = 10.5;
  // trial part 2 (1/2 + (1/2 + 1/2) / 4) = 1.5; df = 12^2 / (10.5^2 / 1 + 1.5^2 / 3).
  auto t = two_level_test(runs, cand, s, VariancePrior{});
  CHECK(t.diff == Approx(1.0));
  CHECK(t.tau2 == Approx(7.0));
  CHECK(t.se == Approx(std::sqrt(12.0)));
  CHECK(t.df == Approx(144.0 / (110.25 + 0.75)));
  // One run: no between variance.
  auto one = run_spread(std::vector<std::vector<double>>{{1, 3}}, cand);
  CHECK(one.between_df == 0);
  CHECK(std::isnan(one.between_var));
}

TEST_CASE("one baseline run and no prior: the run level is unknown", "[stats]") {
  std::vector<std::vector<double>> runs = {{10, 11, 12}};
  std::vector<double> cand = {13, 14, 15};
  auto s = run_spread(runs, cand);
  auto t = two_level_test(runs, cand, s, VariancePrior{});
  CHECK_FALSE(t.spread_known);
  // Trial noise only: sigma^2 = 1, var D = 1/3 + 1/3, df = 4.
  CHECK(t.diff == Approx(3));
  CHECK(t.se == Approx(std::sqrt(2.0 / 3.0)));
  CHECK(t.df == Approx(4));
  // With a prior the run level is known from the other comparisons.
  auto p = two_level_test(runs, cand, s, VariancePrior{4.0, 10});
  CHECK(p.spread_known);
  CHECK(p.se > t.se);
}

TEST_CASE("the prior: equal variances give infinite prior df, spread ones a finite prior", "[stats]") {
  // Sample variances on 2 df of one true variance agree as chance allows:
  // Smyth's estimator finds no excess spread on most draws of a large family.
  std::mt19937_64 rng(7);
  std::chi_squared_distribution<double> chi2(2.0);
  std::vector<double> var, df;
  for (int i = 0; i < 400; ++i) {
    var.push_back(3.0 * chi2(rng) / 2.0);
    df.push_back(2);
  }
  auto prior = squeeze_prior(var, df);
  CHECK(prior.var == Approx(3.0).epsilon(0.15));
  CHECK(prior.df > 20);
  // Variances spread far beyond chance: a small prior df.
  std::vector<double> wide;
  std::lognormal_distribution<double> ln(0.0, 2.0);
  for (int i = 0; i < 400; ++i) wide.push_back(ln(rng) * chi2(rng) / 2.0);
  auto loose = squeeze_prior(wide, df);
  CHECK(loose.df < 3);
  // Fewer than three usable entries: no prior.
  std::vector<double> two = {1, 2}, two_df = {2, 2};
  CHECK(squeeze_prior(two, two_df).df == 0);
}

TEST_CASE("detectable shift: normal quantiles at infinite df", "[stats]") {
  // (1.959964 + 0.841621) * 1 at alpha 0.05 and power 0.8.
  CHECK(detectable_shift(1.0, std::numeric_limits<double>::infinity(), 0.05, 0.8) == Approx(2.801585).epsilon(1e-6));
  // qt(0.975, 4) + qt(0.8, 4) = 2.776445 + 0.940965.
  CHECK(detectable_shift(2.0, 4, 0.05, 0.8) == Approx(2 * (2.776445 + 0.940965)).epsilon(1e-5));
}
