#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "harness/analysis/gate.hpp"

using namespace perfgate;
using analysis::GateItem;
using model::Better;
using model::VerdictKind;

namespace {

// Values around `center` with relative spread `cv`, from a fixed seed.
std::vector<double> noisy(double center, double cv, int n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(center, center * cv);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(d(rng));
  return v;
}

GateItem item(const std::string& label, const std::string& metric, Better better, std::vector<double> base,
              std::vector<double> cand) {
  GateItem it;
  it.workload = "w";
  it.params_json = "{\"c\":\"" + label + "\"}";
  it.label = "c=" + label;
  it.metric = model::MetricInfo{metric, metric == "throughput" ? "samples/s" : "ms", better};
  it.base.present = it.cand.present = true;
  it.base.values = std::move(base);
  it.cand.values = std::move(cand);
  return it;
}

model::Comparison one(const GateItem& it, const model::GatePolicy& p = model::default_gate_policy()) {
  auto cs = analysis::evaluate({it}, p);
  REQUIRE(cs.size() == 1);
  return cs[0];
}

}  // namespace

TEST_CASE("a clear slowdown is a regression, a clear speed-up an improvement", "[gate]") {
  auto slow = one(item("a", "step_time_ms", Better::Lower, noisy(100, 0.01, 15, 1), noisy(110, 0.01, 10, 2)));
  CHECK(slow.verdict == VerdictKind::Regression);
  CHECK(slow.change_rel == Approx(0.10).margin(0.01));
  CHECK(slow.change_low_rel < slow.change_rel);
  CHECK(slow.change_high_rel > slow.change_rel);
  CHECK(slow.p_adjusted < 0.001);
  CHECK(slow.n_base == 15);
  CHECK(slow.n_cand == 10);
  CHECK(slow.threshold_rel == Approx(0.05));

  // The same numbers on a higher-is-better metric are an improvement.
  auto fast = one(item("a", "throughput", Better::Higher, noisy(100, 0.01, 15, 1), noisy(110, 0.01, 10, 2)));
  CHECK(fast.verdict == VerdictKind::Improvement);
  CHECK(fast.threshold_rel == Approx(0.03));
}

TEST_CASE("a significant change smaller than the threshold is unchanged", "[gate]") {
  auto c = one(item("a", "step_time_ms", Better::Lower, noisy(100, 0.002, 15, 3), noisy(101, 0.002, 15, 4)));
  CHECK(c.p_value < 0.001);  // real, but +1 % is below the 5 % that matters
  CHECK(c.verdict == VerdictKind::Unchanged);
  CHECK(c.change_high_rel < 0.05);
}

TEST_CASE("noisy data is inconclusive and says how many trials would decide", "[gate]") {
  auto c = one(item("a", "step_time_ms", Better::Lower, noisy(100, 0.08, 15, 5), noisy(104, 0.08, 5, 6)));
  CHECK(c.verdict == VerdictKind::Inconclusive);
  CHECK(c.tested);
  CHECK(c.extra_trials != 0);
}

TEST_CASE("missing, failed and too-small sides get their own verdicts", "[gate]") {
  auto it = item("a", "step_time_ms", Better::Lower, noisy(100, 0.01, 5, 7), {});
  it.cand.failed = 3;
  auto failed = one(it);
  CHECK(failed.verdict == VerdictKind::Failed);
  CHECK_THAT(failed.note, Catch::Contains("every candidate trial failed"));

  auto base_failed = item("a", "step_time_ms", Better::Lower, {}, noisy(100, 0.01, 5, 7));
  base_failed.base.failed = 2;
  auto m = one(base_failed);
  CHECK(m.verdict == VerdictKind::Missing);
  CHECK_THAT(m.note, Catch::Contains("baseline"));

  auto absent = item("a", "step_time_ms", Better::Lower, noisy(100, 0.01, 5, 7), {});
  absent.cand.present = false;
  CHECK(one(absent).verdict == VerdictKind::Missing);

  auto unreported = item("a", "step_time_ms", Better::Lower, noisy(100, 0.01, 5, 7), {});
  auto u = one(unreported);
  CHECK(u.verdict == VerdictKind::Missing);
  CHECK_THAT(u.note, Catch::Contains("not reported by the candidate"));

  auto nan_only = item("a", "step_time_ms", Better::Lower, noisy(100, 0.01, 5, 7), {});
  nan_only.cand.non_finite = 4;
  auto nn = one(nan_only);
  CHECK(nn.verdict == VerdictKind::Failed);
  CHECK_THAT(nn.note, Catch::Contains("NaN"));

  auto single = one(item("a", "step_time_ms", Better::Lower, {100}, {150}));
  CHECK(single.verdict == VerdictKind::Inconclusive);
  CHECK_FALSE(single.tested);
  CHECK(single.change_rel == Approx(0.5));
  CHECK(single.extra_trials == -1);  // the baseline is short: candidate trials cannot fix that
}

TEST_CASE("zero variance: equal constants are unchanged, different constants decided", "[gate]") {
  std::vector<double> ten(10, 10.0), eleven(10, 11.0);
  auto same = one(item("a", "step_time_ms", Better::Lower, ten, ten));
  CHECK(same.verdict == VerdictKind::Unchanged);
  CHECK(same.change_rel == 0);
  auto slower = one(item("a", "step_time_ms", Better::Lower, ten, eleven));
  CHECK(slower.verdict == VerdictKind::Regression);
  CHECK(slower.change_rel == Approx(0.10));
}

TEST_CASE("a zero baseline median does not divide by zero", "[gate]") {
  std::vector<double> zeros(6, 0.0);
  auto c = one(item("a", "step_time_ms", Better::Lower, zeros, noisy(5, 0.1, 6, 8)));
  CHECK(std::isfinite(c.change_rel));
  CHECK_THAT(c.note, Catch::Contains("baseline median is 0"));
}

TEST_CASE("the correction spans every comparison of the gate", "[gate]") {
  // One +6 % slowdown among 60 unchanged configurations: its raw p stays the
  // same, its adjusted p grows with the family, and only it may regress.
  std::vector<GateItem> items;
  for (int i = 0; i < 60; ++i)
    items.push_back(item(std::to_string(i), "step_time_ms", Better::Lower, noisy(100, 0.01, 15, 100 + i),
                         noisy(i == 17 ? 106 : 100, 0.01, 15, 300 + i)));
  auto cs = analysis::evaluate(items, model::default_gate_policy());
  auto solo = one(items[17]);
  CHECK(cs[17].p_value == Approx(solo.p_value));
  CHECK(cs[17].p_adjusted > solo.p_adjusted);
  CHECK(cs[17].verdict == VerdictKind::Regression);
  int regressions = 0;
  for (const auto& c : cs) regressions += c.verdict == VerdictKind::Regression;
  CHECK(regressions == 1);

  auto holm = model::default_gate_policy();
  holm.correction = model::Correction::Holm;
  auto hs = analysis::evaluate(items, holm);
  CHECK(hs[17].p_adjusted >= cs[17].p_adjusted);
}

TEST_CASE("a metric without a direction is never a regression", "[gate]") {
  auto c = one(item("a", "loss", Better::None, noisy(1, 0.001, 10, 9), noisy(2, 0.001, 10, 10)));
  CHECK(c.verdict == VerdictKind::Inconclusive);
  CHECK_THAT(c.note, Catch::Contains("no better direction"));
}

namespace {

// Draws candidate values on request, like a workload rerun would.
class FakeSource final : public analysis::TrialSource {
 public:
  FakeSource(double shift, unsigned seed) : m_rng(seed), m_shift(shift) {
    for (int i = 0; i < 10; ++i) {
      std::string label = std::to_string(i);
      m_items.push_back(item(label, "throughput", Better::Higher, draw(100, 15), draw(i == 3 ? 100 * (1 - m_shift) : 100, 5)));
    }
  }
  Expected<std::vector<GateItem>> items() override { return m_items; }
  Status add_trials(const std::vector<analysis::TrialRequest>& req) override {
    for (const auto& r : req) {
      for (auto& it : m_items)
        if (it.params_json == r.params_json) {
          bool slow = it.label == "c=3";
          for (double v : draw(slow ? 100 * (1 - m_shift) : 100, r.count)) it.cand.values.push_back(v);
        }
      requested += r.count;
    }
    return Ok{};
  }
  int requested = 0;

 private:
  std::vector<double> draw(double center, int n) {
    std::normal_distribution<double> d(center, center * 0.02);
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(d(m_rng));
    return v;
  }
  std::mt19937_64 m_rng;
  double m_shift;
  std::vector<GateItem> m_items;
};

}  // namespace

TEST_CASE("the adaptive gate adds trials until a real drop is confirmed", "[gate]") {
  FakeSource src(0.08, 42);
  analysis::AdaptiveOptions ao;
  ao.max_trials = 20;
  auto g = analysis::adaptive_gate(src, model::default_gate_policy(), ao);
  REQUIRE(g);
  CHECK(g->trials_added == src.requested);
  CHECK(g->rounds >= 1);
  int regressions = 0;
  for (const auto& c : g->comparisons) {
    regressions += c.verdict == VerdictKind::Regression;
    CHECK(c.n_cand <= ao.max_trials);
    if (c.label == "c=3") {
      CHECK(c.verdict == VerdictKind::Regression);
    }
  }
  CHECK(regressions == 1);
}

TEST_CASE("the adaptive gate stops at max_trials when nothing decides", "[gate]") {
  FakeSource src(0.03, 7);  // right at the 3 % threshold: hard to decide
  analysis::AdaptiveOptions ao;
  ao.max_trials = 9;
  auto g = analysis::adaptive_gate(src, model::default_gate_policy(), ao);
  REQUIRE(g);
  for (const auto& c : g->comparisons) CHECK(c.n_cand <= 9);
}

TEST_CASE("collect_items pools baseline runs and matches configurations", "[gate]") {
  auto make = [](long long id, std::vector<std::pair<std::string, std::vector<double>>> configs, int failed = 0) {
    analysis::RunSummary rs;
    rs.run.id = id;
    for (auto& [label, values] : configs) {
      analysis::ConfigSummary cs;
      cs.workload = "w";
      cs.params_json = label;
      cs.label = label;
      cs.trials_failed = failed;
      analysis::MetricRow row;
      row.info = model::MetricInfo::inferred("step_time_ms");
      for (double v : values) row.trials.push_back({0, 0, v, {}});
      analysis::MetricRow other;
      other.info = model::MetricInfo::inferred("forward_ms");  // not gated by the default policy
      other.trials.push_back({0, 0, 1.0, {}});
      cs.metrics = {row, other};
      rs.configs.push_back(cs);
    }
    return rs;
  };
  auto cand = make(3, {{"A", {1, 2, std::nan("")}}, {"C", {5}}});
  std::vector<analysis::RunSummary> base = {make(2, {{"A", {3, 4}}, {"B", {9}}}), make(1, {{"A", {5}}}, 1)};
  auto items = analysis::collect_items(cand, base, model::default_gate_policy());
  REQUIRE(items.size() == 3);  // A, C (candidate only), B (baseline only); forward_ms not gated
  std::map<std::string, const GateItem*> by;
  for (const auto& it : items) by[it.params_json] = &it;
  CHECK(by["A"]->base.values.size() == 3);
  CHECK(by["A"]->base.failed == 1);
  CHECK(by["A"]->cand.values.size() == 2);
  CHECK(by["A"]->cand.non_finite == 1);
  CHECK_FALSE(by["C"]->base.present);
  CHECK_FALSE(by["B"]->cand.present);

  auto only = analysis::collect_items(cand, base, model::default_gate_policy(), {"forward_*"});
  CHECK(only.size() == 3);
  CHECK(only[0].metric.name == "forward_ms");
}

TEST_CASE("policy thresholds by kind and glob rules", "[gate]") {
  auto p = model::default_gate_policy();
  CHECK(p.match("throughput") != nullptr);
  CHECK(p.match("latency_p99_ms_bs8") != nullptr);
  CHECK(p.match("forward_ms") == nullptr);
  CHECK(p.threshold_for(model::MetricInfo::inferred("throughput"), p.match("throughput")) == Approx(0.03));
  CHECK(p.threshold_for(model::MetricInfo::inferred("peak_rss_mb"), p.match("peak_rss_mb")) == Approx(0.10));
  CHECK(p.threshold_for(model::MetricInfo::inferred("first_step_ms"), p.match("first_step_ms")) == Approx(0.10));
  CHECK(model::glob_match("*_ms", "step_time_ms"));
  CHECK(model::glob_match("a?c*", "abcdef"));
  CHECK_FALSE(model::glob_match("*_ms", "step_time_s"));
  CHECK(model::glob_match("*", ""));
}

TEST_CASE("a bootstrap interval of the median ratio only when asked, reproducibly", "[gate]") {
  auto it = item("a", "step_time_ms", Better::Lower, noisy(100, 0.02, 15, 21), noisy(110, 0.02, 10, 22));
  auto plain = one(it);
  CHECK(std::isnan(plain.ratio));
  auto p = model::default_gate_policy();
  p.bootstrap_resamples = 2000;
  p.bootstrap_seed = 5;
  auto a = one(it, p), b = one(it, p);
  CHECK(a.ratio == Approx(plain.cand_median / plain.base_median));
  CHECK(a.ratio_low <= a.ratio);
  CHECK(a.ratio_high >= a.ratio);
  CHECK(a.ratio_low > 1.0);  // a 10 % slowdown at 2 % noise: the whole interval is above 1
  CHECK(a.ratio_low == b.ratio_low);
  CHECK(a.ratio_high == b.ratio_high);
  p.bootstrap_seed = 6;
  CHECK(one(it, p).ratio_low != a.ratio_low);
}

TEST_CASE("a rare hiccup in the pooled baseline is left out, the candidate's are kept", "[gate]") {
  // 14 steady baseline trials and one 25 % slower (a past run on a busy host):
  // throughput, so the hiccup is low and every candidate trial of a real 5 %
  // drop ranks above it.
  auto base = noisy(1000, 0.01, 14, 11);
  base.push_back(750);
  auto cand = noisy(950, 0.01, 12, 12);
  auto c = one(item("a", "throughput", Better::Higher, base, cand));
  CHECK(c.base_left_out == 1);
  CHECK(c.n_base == 14);
  CHECK(c.verdict == VerdictKind::Regression);
  CHECK(c.note.find("1 baseline trial(s) left out as hiccups") != std::string::npos);

  // With the exclusion off, the hiccup stays and costs the test 12 pairs.
  auto keep = model::default_gate_policy();
  keep.baseline_outlier_mads = 0;
  auto kept = one(item("a", "throughput", Better::Higher, base, cand), keep);
  CHECK(kept.base_left_out == 0);
  CHECK(kept.n_base == 15);
  CHECK(kept.p_value > c.p_value);

  // The same hiccup in the candidate is kept: it may be the regression.
  auto cand_hiccup = noisy(1000, 0.01, 11, 13);
  cand_hiccup.push_back(750);
  auto h = one(item("a", "throughput", Better::Higher, noisy(1000, 0.01, 15, 14), cand_hiccup));
  CHECK(h.n_cand == 12);
  CHECK(h.base_left_out == 0);
}

TEST_CASE("a slow mode of the baseline is not a hiccup", "[gate]") {
  // A fifth of the trials 20 % slower (another NUMA node) is part of the
  // machine's behaviour: more than the rare fraction, so nothing is left out.
  auto base = noisy(1000, 0.01, 11, 15);
  for (double v : noisy(800, 0.01, 4, 16)) base.push_back(v);
  auto c = one(item("a", "throughput", Better::Higher, base, noisy(1000, 0.01, 10, 17)));
  CHECK(c.base_left_out == 0);
  CHECK(c.n_base == 15);
}
