#include <catch2/catch.hpp>

#include <string>

#include "harness/suite/policy_loader.hpp"
#include "tests/unit/support/paths.hpp"

using namespace perfgate;

namespace {

std::string error_of(const std::string& yaml) {
  auto p = suite::load_gate_policy_text(yaml, "gate.yaml");
  REQUIRE_FALSE(p.has_value());
  return p.error().message;
}

}  // namespace

TEST_CASE("the shipped configs/gate.yaml is the built-in policy", "[policy]") {
  auto p = suite::load_gate_policy(perfgate::test::source_dir() + "/configs/gate.yaml");
  REQUIRE(p.has_value());
  auto d = model::default_gate_policy();
  CHECK(p->fdr == d.fdr);
  CHECK(p->correction == d.correction);
  CHECK(p->min_trials == d.min_trials);
  CHECK(p->screening_p == d.screening_p);
  CHECK(p->baseline_outlier_mads == d.baseline_outlier_mads);
  CHECK(p->throughput_threshold == Approx(d.throughput_threshold));
  CHECK(p->latency_threshold == Approx(d.latency_threshold));
  CHECK(p->memory_threshold == Approx(d.memory_threshold));
  CHECK(p->peak_rss_floor_mb == Approx(d.peak_rss_floor_mb));
  REQUIRE(p->rules.size() == d.rules.size());
  for (std::size_t i = 0; i < d.rules.size(); ++i) {
    CHECK(p->rules[i].pattern == d.rules[i].pattern);
    CHECK(p->rules[i].threshold_rel.value_or(-1) == Approx(d.rules[i].threshold_rel.value_or(-1)));
  }
  CHECK(p->path.ends_with("configs/gate.yaml"));
}

TEST_CASE("a policy sets levels, thresholds and rules", "[policy]") {
  auto p = suite::load_gate_policy_text(R"(
fdr: 0.05
correction: holm
min_trials: 4
baseline_outlier_mads: 0
thresholds: {throughput: 2%, latency: "7 %", memory: 0.2, peak_rss_floor: 1GB}
metrics:
  - throughput
  - {name: "*_ms", threshold: 8%, better: lower, min_trials: 5}
  - {name: data_wait_ms, ignore: true}
)",
                                        "gate.yaml");
  REQUIRE(p.has_value());
  CHECK(p->fdr == Approx(0.05));
  CHECK(p->correction == model::Correction::Holm);
  CHECK(p->min_trials == 4);
  CHECK(p->baseline_outlier_mads == 0);
  CHECK(p->throughput_threshold == Approx(0.02));
  CHECK(p->latency_threshold == Approx(0.07));
  CHECK(p->memory_threshold == Approx(0.2));
  CHECK(p->peak_rss_floor_mb == Approx(1024));
  REQUIRE(p->rules.size() == 3);
  CHECK(p->rules[1].threshold_rel.value() == Approx(0.08));
  CHECK(p->rules[1].min_trials.value() == 5);
  CHECK(p->rules[1].source == "gate.yaml:9:5");
  // First match wins: data_wait_ms is caught by "*_ms" before its ignore rule.
  CHECK(p->match("data_wait_ms") != nullptr);
  CHECK(p->match("forward_ms")->pattern == "*_ms");
  CHECK(p->match("loss") == nullptr);
}

TEST_CASE("an ignore rule stops a later glob", "[policy]") {
  auto p = suite::load_gate_policy_text("metrics: [{name: data_wait_ms, ignore: true}, \"*_ms\"]\n", "g.yaml");
  REQUIRE(p.has_value());
  CHECK(p->match("data_wait_ms") == nullptr);
  CHECK(p->match("step_time_ms") != nullptr);
}

TEST_CASE("bad policies name file, line and key", "[policy]") {
  CHECK_THAT(error_of("fdr: 0.01\nthreshold: 3%\n"), Catch::Contains("gate.yaml:2:1") &&
                                                         Catch::Contains("unknown key 'threshold'") &&
                                                         Catch::Contains("did you mean 'thresholds'"));
  CHECK_THAT(error_of("fdr: lots\n"), Catch::Contains("gate.yaml:1:6") && Catch::Contains("fdr"));
  CHECK_THAT(error_of("fdr: 0.9\n"), Catch::Contains("between 0 and 0.5"));
  CHECK_THAT(error_of("thresholds: {latency: -1%}\n"), Catch::Contains("thresholds.latency"));
  CHECK_THAT(error_of("correction: bonferroni\n"), Catch::Contains("holm"));
  CHECK_THAT(error_of("thresholds:\n  peak_rss_floor: lots\n"),
             Catch::Contains("gate.yaml:2:19") && Catch::Contains("thresholds.peak_rss_floor must be a size") &&
                 Catch::Contains("'lots'"));
  CHECK_THAT(error_of("thresholds: {peak_rss_floor: [1]}\n"), Catch::Contains("thresholds.peak_rss_floor"));
  CHECK_THAT(error_of("metrics: []\n"), Catch::Contains("non-empty list"));
  CHECK_THAT(error_of("metrics:\n  - {threshold: 3%}\n"),
             Catch::Contains("gate.yaml:2:5") && Catch::Contains("needs 'name'"));
  CHECK_THAT(error_of("metrics:\n  - {name: x, better: up}\n"), Catch::Contains("'higher' or 'lower'"));
  CHECK_THAT(error_of("min_trials: 1\n"), Catch::Contains("at least 2"));
  CHECK_THAT(error_of("baseline_outlier_mads: 2\n"),
             Catch::Contains("gate.yaml:1:24") && Catch::Contains("at least 3"));
  CHECK_THAT(error_of("baseline_outlier_mads: many\n"), Catch::Contains("baseline_outlier_mads must be a number"));
  CHECK_THAT(error_of("fdr: [0.01\n"), Catch::Contains("YAML syntax error"));
  CHECK_THAT(error_of(""), Catch::Contains("empty"));
  auto missing = suite::load_gate_policy("/nonexistent/gate.yaml");
  REQUIRE_FALSE(missing.has_value());
  CHECK_THAT(missing.error().message, Catch::Contains("/nonexistent/gate.yaml"));
}
