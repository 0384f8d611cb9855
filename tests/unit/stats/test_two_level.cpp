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
// trigamma_inverse against SciPy's polygamma solved by brentq, Bartlett's
// test against scipy.stats.bartlett.

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
  // trial part 2 (1/2 + (1/2 + 1/2) / 4) = 1.5; Var(D) = 12. As a s2 + b sigma^2:
  // a = 3/2, b = 1/2 + 1/4 - 3/2 * 1/2 = 0 (the candidate has as many trials as
  // a run), so Var(D) is 3/2 of the spread of run means and carries its 1 df.
  auto t = two_level_test(runs, cand, s, VariancePrior{});
  CHECK(t.diff == Approx(1.0));
  CHECK(t.tau2 == Approx(7.0));
  CHECK(t.se == Approx(std::sqrt(12.0)));
  CHECK(t.df == Approx(1.0));
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
  // Bartlett's test takes them for one variance: the prior is their pooled
  // variance on all 800 degrees of freedom, not Smyth's geometric estimate.
  auto b = bartlett(var, df);
  REQUIRE(b.p_value > 0.01);
  CHECK(prior.df == Approx(800));
  CHECK(prior.var == Approx(b.pooled_var).epsilon(1e-12));
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

TEST_CASE("Bartlett's test against SciPy", "[stats]") {
  std::ifstream in(perfgate::test::data_dir() + "/stats/gate_reference.json");
  REQUIRE(in.good());
  const auto ref = nlohmann::json::parse(in);
  REQUIRE(ref.at("bartlett").size() >= 5);
  for (const auto& c : ref.at("bartlett")) {
    const auto var = c.at("var").get<std::vector<double>>();
    const auto df = c.at("df").get<std::vector<double>>();
    INFO(var.size() << " groups");
    auto b = bartlett(var, df);
    CHECK(b.statistic == Approx(c.at("statistic").get<double>()).epsilon(1e-9));
    CHECK(b.p_value == Approx(c.at("p").get<double>()).epsilon(1e-8));
    double sum_df = 0;
    for (double d : df) sum_df += d;
    CHECK(b.pooled_df == Approx(sum_df));
  }
  // One group: nothing to compare, p 1.
  std::vector<double> one = {2.0}, one_df = {4};
  CHECK(bartlett(one, one_df).p_value == 1);
  CHECK(bartlett(one, one_df).pooled_var == Approx(2.0));
}

TEST_CASE("run hiccups: a far trial of a run is left out on both sides, a mode is kept", "[stats]") {
  // Five runs of five trials around 1.0 (spread about 0.01), one hiccup 20 %
  // slow in the second baseline run and one in the candidate.
  std::vector<std::vector<double>> runs = {{1.00, 1.01, 0.99, 1.005, 0.995},
                                           {1.00, 0.80, 1.01, 0.99, 1.002},
                                           {0.99, 1.00, 1.01, 0.996, 1.004},
                                           {1.02, 1.01, 1.00, 1.015, 1.005},
                                           {1.00, 0.99, 0.81, 1.01, 0.997}};
  auto r = leave_out_run_hiccups(runs, 5, 0.06, 0.45);
  REQUIRE(r.runs.size() == 5);
  CHECK(r.left_out == std::vector<int>{0, 1, 0, 0, 1});
  CHECK(r.runs[1] == std::vector<double>{1.00, 1.01, 0.99, 1.002});
  CHECK(r.runs[4] == std::vector<double>{1.00, 0.99, 1.01, 0.997});
  CHECK(r.runs[0] == runs[0]);
  // Within min_distance nothing goes, however many scales away.
  auto wide = leave_out_run_hiccups(runs, 5, 0.25, 0.45);
  CHECK(wide.left_out == std::vector<int>{0, 0, 0, 0, 0});
  // Half a run slow is a mode of that run, not hiccups: kept.
  std::vector<std::vector<double>> mode = runs;
  mode[4] = {0.80, 0.81, 1.00, 1.01};
  auto m = leave_out_run_hiccups(mode, 5, 0.06, 0.45);
  CHECK(m.left_out[4] == 0);
  CHECK(m.runs[4] == mode[4]);
  // Off (mads 0), or too few deviations to scale: unchanged.
  CHECK(leave_out_run_hiccups(runs, 0, 0.06, 0.45).left_out == std::vector<int>{0, 0, 0, 0, 0});
  std::vector<std::vector<double>> short_runs = {{1.0, 1.01, 0.7}, {1.0, 1.0}};
  CHECK(leave_out_run_hiccups(short_runs, 5, 0.06, 0.45).left_out == std::vector<int>{0, 0});
}

TEST_CASE("a baseline close together by chance does not rule out a run effect", "[stats]") {
  // Three baseline runs whose means nearly coincide, a spread known only on
  // a few degrees of freedom: the run effect estimate is 0, and D is judged on
  // the trial noise with the spread's degrees of freedom, not the trials'.
  std::vector<std::vector<double>> runs = {
      {1.00, 1.02, 0.98, 1.01, 0.99}, {1.001, 1.021, 0.981, 1.011, 0.991}, {0.999, 1.019, 0.979, 1.009, 0.989}};
  std::vector<double> cand = {0.96, 0.97, 0.95, 0.965, 0.955};
  auto s = run_spread(runs, cand);
  auto few = two_level_test(runs, cand, s, VariancePrior{s.between_var, 4});
  CHECK(few.tau2 == 0);
  CHECK(few.df == Approx(4 + s.between_df));
  auto many = two_level_test(runs, cand, s, VariancePrior{s.between_var, 1000});
  CHECK(many.tau2 == 0);
  CHECK(many.df == Approx(s.within_df));
  CHECK(few.p_two_sided > many.p_two_sided);
}

TEST_CASE("more candidate trials than the runs had: Satterthwaite over the spread and the trial noise", "[stats]") {
  // Var(D) = a s2 + b sigma^2 with a = 1 + 1/k, b = 1/n_c + sum(1/n_j)/k^2 - a/n.
  std::vector<std::vector<double>> runs = {
      {1.00, 1.02, 0.98, 1.01, 0.99}, {1.05, 1.07, 1.03, 1.06, 1.04}, {0.97, 0.99, 0.95, 0.98, 0.96}};
  std::vector<double> cand;
  for (int i = 0; i < 20; ++i) cand.push_back(1.0 + 0.01 * ((i % 5) - 2));
  auto s = run_spread(runs, cand);
  auto t = two_level_test(runs, cand, s, VariancePrior{});
  REQUIRE(t.tau2 > 0);
  const double a = 1 + 1.0 / 3, b = 1.0 / 20 + (3.0 / 5) / 9 - a / 5;
  const double var_d = a * s.between_var + b * s.within_var;
  CHECK(t.se == Approx(std::sqrt(var_d)).epsilon(1e-12));
  const double df = var_d * var_d / (std::pow(a * s.between_var, 2) / 2 + std::pow(b * s.within_var, 2) / s.within_df);
  CHECK(t.df == Approx(df).epsilon(1e-12));
}
