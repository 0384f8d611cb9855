#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "harness/analysis/sweep.hpp"

using namespace perfgate;

namespace {

model::MetricSummary value_of(const std::string& name, double v) {
  model::MetricSummary m;
  m.metric = name;
  m.n_total = 20;
  m.n_steady = 17;
  m.mean = m.median = m.value = v;
  return m;
}

// A bucket sweep: exposed all-reduce time per bucket size and loader setting,
// `trials` trials each around the given levels (1 % noise, seeded).
analysis::RunSummary sweep_run(const std::vector<std::pair<std::string, double>>& levels, int trials) {
  store::RunData d;
  d.run.id = 7;
  d.metrics = {{"allreduce_ms", "ms", model::Better::Lower}, {"buckets", "", model::Better::None, true}};
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 0.01);
  long long id = 1, config = 1;
  int seq = 0;
  for (const auto& [params, level] : levels) {
    d.configs.push_back({config, "train", params});
    for (int r = 0; r < trials; ++r) {
      model::TrialRecord t;
      t.id = id++;
      t.run_id = 7;
      t.config_id = config;
      t.repeat = r;
      t.seq = seq++;
      t.status = model::TrialStatus::Ok;
      t.summaries = {value_of("allreduce_ms", level * (1 + noise(rng))), value_of("buckets", 4)};
      t.summaries.back().is_scalar = true;
      d.trials.push_back(std::move(t));
    }
    ++config;
  }
  return analysis::summarise_run(d);
}

analysis::SweepResult rank_sweep_with(const analysis::RunSummary& rs) {
  analysis::SweepOptions o;
  o.metric = "allreduce_ms";
  auto r = analysis::rank_sweep(rs, o);
  REQUIRE(r);
  return *r;
}

}  // namespace

TEST_CASE("a sweep ranks by the metric and names a clear winner", "[analysis]") {
  auto rs = sweep_run({{R"({"bucket_mb":5,"workers":2})", 8.7},
                       {R"({"bucket_mb":25,"workers":2})", 3.3},
                       {R"({"bucket_mb":50,"workers":2})", 5.1},
                       {R"({"bucket_mb":100,"workers":2})", 7.2}},
                      6);
  analysis::SweepOptions o;
  o.metric = "allreduce_ms";
  auto r = analysis::rank_sweep(rs, o);
  REQUIRE(r);
  REQUIRE(r->entries.size() == 4);
  CHECK(r->entries[0].label == "train bucket_mb=25 workers=2");
  CHECK(r->entries[1].label == "train bucket_mb=50 workers=2");
  CHECK(r->entries[3].label == "train bucket_mb=5 workers=2");
  CHECK(r->clear_winner);
  CHECK(r->tied_with_best.empty());
  // 6 against 6 without ties: every exact two-sided p is 2 / C(12, 6) = 0.00216; Holm over 3: 0.0065.
  CHECK(r->entries[1].p_adjusted == Approx(3 * 2.0 / 924).epsilon(1e-9));
  CHECK(r->entries[1].beaten);
  CHECK(r->entries[1].advantage_rel == Approx((5.1 - 3.3) / 5.1).epsilon(0.03));
  CHECK_FALSE(r->entries[0].min_max);  // 6 trials: a 95 % interval exists
}

TEST_CASE("a lead within the threshold or without significance is a tie, with the repeats that would separate",
          "[analysis]") {
  // 3.3 against 3.35: 1.5 % apart, inside the 5 % latency threshold.
  auto rs = sweep_run({{R"({"bucket_mb":25})", 3.3}, {R"({"bucket_mb":50})", 3.35}, {R"({"bucket_mb":5})", 8.7}}, 3);
  analysis::SweepOptions o;
  o.metric = "allreduce_ms";
  auto r = analysis::rank_sweep(rs, o);
  REQUIRE(r);
  CHECK_FALSE(r->clear_winner);
  REQUIRE(r->tied_with_best.size() == 2);  // 3 against 3 cannot be significant after Holm: min p is 0.1
  CHECK(r->entries[1].repeats_to_separate > 3);
  CHECK(r->entries[0].min_max);  // 3 trials: [min, max]
  // 5 MB leads by 62 %, yet 3 against 3 cannot reach 0.05: the smallest p is 2/C(6,3) = 0.1, x2 by Holm.
  const auto& far = r->entries[2];
  CHECK(far.underpowered);
  CHECK(far.min_p_adjusted == Approx(0.2));
  CHECK(r->entries[1].underpowered);
  // Never fewer repeats than the test needs to reach alpha / 2 at all: 2/C(10,5) = 0.0079 < 0.025 at 5 a side.
  CHECK(far.repeats_to_separate >= 5);
  auto enough = rank_sweep_with(sweep_run({{R"({"bucket_mb":25})", 3.3}, {R"({"bucket_mb":5})", 8.7}}, 6));
  CHECK_FALSE(enough.entries[1].underpowered);
  CHECK(enough.entries[1].beaten);
}

TEST_CASE("sweep errors: one configuration, an unknown metric, a fact, axes that do not vary", "[analysis]") {
  auto one = sweep_run({{R"({"bucket_mb":25})", 3.3}}, 3);
  auto e1 = analysis::rank_sweep(one, {});
  REQUIRE_FALSE(e1);
  CHECK_THAT(e1.error().message, Catch::Contains("1 configuration"));

  auto rs = sweep_run({{R"({"bucket_mb":25,"workers":2})", 3.3}, {R"({"bucket_mb":50,"workers":2})", 5.0}}, 3);
  analysis::SweepOptions o;
  o.metric = "allreduce_mz";
  auto e2 = analysis::rank_sweep(rs, o);
  REQUIRE_FALSE(e2);
  CHECK_THAT(e2.error().message, Catch::Contains("did you mean 'allreduce_ms'"));
  o.metric = "buckets";  // a fact
  REQUIRE_FALSE(analysis::rank_sweep(rs, o));
  o.metric = "allreduce_ms";
  o.axes = {"bucket_mb", "workers"};
  auto e3 = analysis::rank_sweep(rs, o);
  REQUIRE_FALSE(e3);
  CHECK_THAT(e3.error().message, Catch::Contains("'workers' does not vary"));
}

TEST_CASE("a two-axis table shows each cell's configuration", "[analysis]") {
  auto rs = sweep_run({{R"({"bucket_mb":5,"workers":2})", 8.7},
                       {R"({"bucket_mb":25,"workers":2})", 3.3},
                       {R"({"bucket_mb":5,"workers":4})", 8.0},
                       {R"({"bucket_mb":25,"workers":4})", 3.1}},
                      3);
  analysis::SweepOptions o;
  o.metric = "allreduce_ms";
  o.axes = {"bucket_mb", "workers"};
  auto r = analysis::rank_sweep(rs, o);
  REQUIRE(r);
  CHECK(r->rows == std::vector<std::string>{"5", "25"});  // numbers in numeric order
  CHECK(r->columns == std::vector<std::string>{"2", "4"});
  REQUIRE(r->cells.size() == 4);
  const auto& best_cell = r->cells[3];  // bucket 25, 4 workers
  CHECK(best_cell.row == "25");
  CHECK(best_cell.column == "4");
  CHECK(r->entries[static_cast<std::size_t>(best_cell.entry)].rank == 1);
}
