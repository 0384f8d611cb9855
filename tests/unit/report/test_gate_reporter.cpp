#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "harness/report/gate_reporter.hpp"

using namespace perfgate;

namespace {

report::GateReport sample() {
  report::GateReport r;
  r.candidate.id = 12;
  r.candidate.suite = "nightly";
  r.candidate.git_commit = "0123456789abcdef";
  store::RunRecord b;
  b.id = 9;
  r.baseline_runs = {b};
  r.baseline_selector = "tag:nightly";
  r.policy = model::default_gate_policy();
  model::Comparison c;
  c.workload = "sim<&>";
  c.params_json = "{}";
  c.label = "mode=a|b \"q\"";
  c.metric = model::MetricInfo{"step_time_ms", "ms", model::Better::Lower};
  c.verdict = model::VerdictKind::Regression;
  c.threshold_rel = 0.05;
  c.n_base = 15;
  c.n_cand = 10;
  c.base_median = 20;
  c.cand_median = 22;
  c.change_rel = 0.1;
  c.change_low_rel = 0.08;
  c.change_high_rel = 0.12;
  c.tested = true;
  c.p_value = 1e-6;
  c.p_adjusted = 1e-5;
  c.note = std::string("bell\x07 here");
  model::Comparison u = c;
  u.verdict = model::VerdictKind::Unchanged;
  u.change_rel = 0.001;
  u.label = "mode=c";
  r.comparisons = {c, u};
  r.counts = analysis::count_verdicts(r.comparisons);
  r.outcome = report::gate_outcome(r.counts);
  return r;
}

}  // namespace

TEST_CASE("outcome and headline follow the verdict counts", "[report]") {
  auto r = sample();
  CHECK(r.outcome == "regression");
  CHECK_THAT(report::gate_headline(r), Catch::StartsWith("REGRESSION: 1 regression, 1 unchanged (run 12"));
  analysis::VerdictCounts n;
  n.unchanged = 3;
  CHECK(report::gate_outcome(n) == "pass");
  n.missing = 1;
  CHECK(report::gate_outcome(n) == "inconclusive");
  n.failed = 1;
  CHECK(report::gate_outcome(n) == "regression");
}

TEST_CASE("JUnit XML escapes names and fails regressions only", "[report]") {
  auto xml = report::gate_junit(sample());
  CHECK_THAT(xml, Catch::Contains("tests=\"2\" failures=\"1\""));
  CHECK_THAT(xml, Catch::Contains("classname=\"sim&lt;&amp;&gt; mode=a|b &quot;q&quot;\""));
  CHECK_THAT(xml, Catch::Contains("<failure message=\"regression +10.0%\""));
  CHECK_THAT(xml, !Catch::Contains("\x07"));
  CHECK(report::xml_escape("a\x01<b>") == "a?&lt;b&gt;");
}

TEST_CASE("Markdown starts with the verdict line and escapes cells", "[report]") {
  auto md = report::gate_markdown(sample());
  CHECK_THAT(md, Catch::StartsWith("❌ **perfgate gate** — REGRESSION"));
  CHECK_THAT(md, Catch::Contains("mode=a\\|b"));
  CHECK_THAT(md, Catch::Contains("**regression**"));
  CHECK_THAT(md, Catch::Contains("sim&lt;&amp;&gt;"));
}

TEST_CASE("the JSON report carries every number", "[report]") {
  auto j = nlohmann::json::parse(report::gate_json(sample()));
  CHECK(j["outcome"] == "regression");
  REQUIRE(j["comparisons"].size() == 2);
  const auto& c = j["comparisons"][0];
  CHECK(c["p_adjusted"].get<double>() == Approx(1e-5));
  CHECK(c["change_low"].get<double>() == Approx(0.08));
  CHECK(c["n_base"] == 15);
  CHECK(c["verdict"] == "regression");
  CHECK(j["baseline"]["runs"][0] == 9);
}

TEST_CASE("the terminal table has colour only when asked", "[report]") {
  auto r = sample();
  auto plain = report::gate_table(r, false);
  CHECK(plain.find('\x1b') == std::string::npos);
  auto coloured = report::gate_table(r, true);
  CHECK_THAT(coloured, Catch::Contains("\x1b[31mregression"));
  CHECK_THAT(coloured, Catch::Contains("+10.0%"));
}

TEST_CASE("a threshold set by the peak RSS floor reads in MB, and stays out of the headline's percentage", "[report]") {
  auto r = sample();
  for (auto& c : r.comparisons) {
    c.verdict = model::VerdictKind::Unchanged;
    c.detectable_rel = 0.07;
  }
  model::Comparison rss = r.comparisons[1];
  rss.metric = model::MetricInfo{"peak_rss_mb", "MB", model::Better::Lower};
  rss.base_median = 12.5;
  rss.threshold_floor = 32;
  rss.threshold_rel = rss.detectable_rel = 32 / 12.5;
  r.comparisons.push_back(rss);
  r.counts = analysis::count_verdicts(r.comparisons);
  r.outcome = report::gate_outcome(r.counts);
  CHECK(report::gate_headline(r) ==
        "PASS: 3 unchanged (run 12 of nightly against run 9; no change over 7.0 % could have been missed)");
  auto table = report::gate_table(r, false);
  CHECK_THAT(table, Catch::Contains("±32 MB"));
  CHECK_THAT(table, Catch::Contains("±5%"));
  CHECK_THAT(table, !Catch::Contains("256%"));
  auto j = nlohmann::json::parse(report::gate_json(r));
  CHECK(j["comparisons"][2]["threshold_floor"] == 32.0);
  CHECK(j["comparisons"][2]["resolution"] == "a change over 32.0 MB would have been seen");
  CHECK(j["comparisons"][0]["threshold_floor"].is_null());
  CHECK(j["comparisons"][0]["resolution"] == "a change over 7.0 % would have been seen");
}
