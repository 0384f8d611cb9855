#include "harness/suite/policy_loader.hpp"

#include <cmath>

#include <fmt/format.h>

#include "harness/suite/yaml_helpers.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/units.hpp"

namespace perfgate::suite {
using namespace yaml;

namespace {

const std::vector<std::string> k_policy_keys = {
    "description",           "fdr",        "correction", "min_trials",   "screening_p", "power",       "confidence",
    "baseline_outlier_mads", "thresholds", "metrics",    "underpowered", "failures",    "history_runs"};
const std::vector<std::string> k_underpowered_values = {"adaptive", "fail", "warn"};
const std::vector<std::string> k_failures_values = {"strict", "test"};
const std::vector<std::string> k_threshold_keys = {"throughput", "latency", "memory", "peak_rss_floor"};
const std::vector<std::string> k_rule_keys = {"name", "better", "threshold", "min_trials", "ignore"};

Expected<model::MetricRule> read_rule(const Ctx& c, const YAML::Node& n) {
  model::MetricRule r;
  r.source = loc_of(c, n).str();
  if (n.IsScalar()) {
    r.pattern = n.Scalar();
    return r;
  }
  if (auto st = check_map(c, n, "a metric rule", k_rule_keys); !st) return st.error();
  if (!n["name"]) return err_at(c, n, "a metric rule needs 'name' (a metric name or a glob such as '*_ms')");
  auto name = get_string(c, n["name"], "name");
  if (!name) return name.error();
  r.pattern = *name;
  if (n["better"]) {
    auto b = get_string(c, n["better"], "better");
    if (!b) return b.error();
    auto v = model::better_from_string(*b);
    if (!v || *v == model::Better::None)
      return err_at(c, n["better"], fmt::format("better must be 'higher' or 'lower', found '{}'", *b));
    r.better = *v;
  }
  if (n["threshold"]) {
    auto t = get_fraction(c, n["threshold"], "threshold", 10.0);
    if (!t) return t.error();
    if (*t <= 0) return err_at(c, n["threshold"], "threshold must be above 0");
    r.threshold_rel = *t;
  }
  if (n["min_trials"]) {
    auto m = get_int(c, n["min_trials"], "min_trials", 2);
    if (!m) return m.error();
    r.min_trials = static_cast<int>(*m);
  }
  if (n["ignore"]) {
    auto ig = get_bool(c, n["ignore"], "ignore");
    if (!ig) return ig.error();
    r.gate = !*ig;
  }
  return r;
}

}  // namespace

Expected<model::GatePolicy> load_gate_policy_text(const std::string& text, const std::string& display_path) {
  auto root = parse_yaml(text, display_path);
  if (!root) return root.error();
  Ctx c{display_path, ""};
  if (root->IsNull()) return Error::input(fmt::format("{}: the gate policy is empty", display_path));
  if (auto st = check_map(c, *root, "a gate policy", k_policy_keys); !st) return st.error();
  model::GatePolicy p = model::default_gate_policy();
  p.path = display_path;
  const auto& r = *root;
  auto fraction = [&](const char* key, double& out, double lo_excl, double hi) -> Status {
    if (!r[key]) return Ok{};
    auto v = get_fraction(c, r[key], key, hi);
    if (!v) return v.error();
    if (*v <= lo_excl) return err_at(c, r[key], fmt::format("{} must be above {}", key, lo_excl));
    out = *v;
    return Ok{};
  };
  if (auto st = fraction("fdr", p.fdr, 0, 0.5); !st) return st.error();
  if (auto st = fraction("screening_p", p.screening_p, 0, 1); !st) return st.error();
  if (auto st = fraction("power", p.power, 0.5, 0.999); !st) return st.error();
  if (auto st = fraction("confidence", p.confidence, 0.5, 0.999); !st) return st.error();
  if (r["correction"]) {
    auto s = get_string(c, r["correction"], "correction");
    if (!s) return s.error();
    if (*s == "benjamini-hochberg" || *s == "bh")
      p.correction = model::Correction::BenjaminiHochberg;
    else if (*s == "holm")
      p.correction = model::Correction::Holm;
    else
      return err_at(c, r["correction"],
                    fmt::format("correction must be 'benjamini-hochberg' (or 'bh') or 'holm', found '{}'", *s));
  }
  if (r["baseline_outlier_mads"]) {
    // A number of MADs, 0 to keep every baseline trial; below 3 would cut
    // into ordinary noise.
    const auto& n = r["baseline_outlier_mads"];
    auto v = get_number(c, n, "baseline_outlier_mads");
    if (!v) return v.error();
    if (!std::isfinite(*v) || (*v != 0 && *v < 3))
      return err_at(c, n, fmt::format("baseline_outlier_mads must be 0 (off) or at least 3, found {}", n.Scalar()));
    p.baseline_outlier_mads = *v;
  }
  if (r["underpowered"]) {
    auto v = get_string(c, r["underpowered"], "underpowered");
    if (!v) return v.error();
    if (*v == "adaptive")
      p.underpowered = model::Underpowered::Adaptive;
    else if (*v == "fail")
      p.underpowered = model::Underpowered::Fail;
    else if (*v == "warn")
      p.underpowered = model::Underpowered::Warn;
    else
      return err_at(c, r["underpowered"],
                    fmt::format("underpowered must be adaptive, fail or warn, found '{}'{}", *v,
                                util::did_you_mean(*v, k_underpowered_values)));
  }
  if (r["failures"]) {
    auto v = get_string(c, r["failures"], "failures");
    if (!v) return v.error();
    if (*v == "strict")
      p.failures = model::FailurePolicy::Strict;
    else if (*v == "test")
      p.failures = model::FailurePolicy::Test;
    else
      return err_at(
          c, r["failures"],
          fmt::format("failures must be strict or test, found '{}'{}", *v, util::did_you_mean(*v, k_failures_values)));
  }
  if (r["history_runs"]) {
    auto m = get_int(c, r["history_runs"], "history_runs", 0);
    if (!m) return m.error();
    p.history_runs = static_cast<int>(*m);
  }
  if (r["min_trials"]) {
    auto m = get_int(c, r["min_trials"], "min_trials", 2);
    if (!m) return m.error();
    p.min_trials = static_cast<int>(*m);
  }
  if (r["thresholds"]) {
    const auto& t = r["thresholds"];
    if (auto st = check_map(c, t, "thresholds", k_threshold_keys); !st) return st.error();
    for (auto [key, out] : {std::pair{"throughput", &p.throughput_threshold},
                            std::pair{"latency", &p.latency_threshold}, std::pair{"memory", &p.memory_threshold}}) {
      if (!t[key]) continue;
      auto v = get_fraction(c, t[key], fmt::format("thresholds.{}", key), 10.0);
      if (!v) return v.error();
      if (*v <= 0) return err_at(c, t[key], fmt::format("thresholds.{} must be above 0", key));
      *out = *v;
    }
    if (const auto& f = t["peak_rss_floor"]) {
      auto b = f.IsScalar() ? util::parse_bytes(f.Scalar()) : Expected<std::uint64_t>(Error::input(""));
      if (!b)
        return err_at(c, f,
                      fmt::format("thresholds.peak_rss_floor must be a size such as 32MB (0: no floor), found {}",
                                  f.IsScalar() ? "'" + f.Scalar() + "'" : type_name(f)));
      p.peak_rss_floor_mb = static_cast<double>(*b) / (1024.0 * 1024.0);
    }
  }
  if (r["metrics"]) {
    const auto& m = r["metrics"];
    if (!m.IsSequence() || m.size() == 0)
      return err_at(c, m, fmt::format("metrics must be a non-empty list of metric rules, found {}", type_name(m)));
    p.rules.clear();
    for (const auto& item : m) {
      auto rule = read_rule(c, item);
      if (!rule) return rule.error();
      p.rules.push_back(std::move(*rule));
    }
  }
  return p;
}

Expected<model::GatePolicy> load_gate_policy(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return load_gate_policy_text(*text, path);
}

}  // namespace perfgate::suite
