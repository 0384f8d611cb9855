#include "harness/analysis/run_summary.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "harness/model/trial.hpp"
#include "harness/stats/descriptive.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::analysis {
namespace {

bool is_harness_metric(std::string_view name) {
  using namespace model::harness_metric;
  return name == wall_time_s || name == cpu_time_s || name == peak_rss_mb || name == time_to_first_step_s;
}

}  // namespace

// "exited with code 1; last lines of stderr:\n...\nValueError: x" -> "exited with code 1: ValueError: x"
std::string brief_error(const std::string& error) {
  auto nl = error.find('\n');
  if (nl == std::string::npos) return error;
  std::string head = error.substr(0, error.find(';'));
  auto end = error.find_last_not_of(" \n");
  auto start = error.rfind('\n', end);
  return head + ": " + error.substr(start + 1, end - start);
}

const MetricRow* ConfigSummary::find(std::string_view metric) const {
  for (const auto& m : metrics)
    if (m.info.name == metric) return &m;
  return nullptr;
}

RunSummary summarise_run(const store::RunData& data, double ci_level) {
  RunSummary rs;
  rs.run = data.run;
  rs.trials = data.trials;
  std::map<std::string, model::MetricInfo> infos;
  for (const auto& m : data.metrics) infos[m.name] = m;

  std::map<long long, std::size_t> index;
  for (const auto& c : data.configs) {
    ConfigSummary cs;
    cs.config_id = c.id;
    cs.workload = c.workload;
    cs.params_json = c.params_json;
    cs.params = model::params_from_json(c.params_json);
    cs.label = model::params_label(cs.params);
    if (auto p = data.primary_metrics.find(c.id); p != data.primary_metrics.end()) cs.primary_metric = p->second;
    index[c.id] = rs.configs.size();
    rs.configs.push_back(std::move(cs));
  }

  // metric name -> values, per config, only from trials that succeeded.
  std::vector<std::map<std::string, std::vector<TrialValue>>> values(rs.configs.size());
  for (const auto& t : data.trials) {
    auto it = index.find(t.config_id);
    if (it == index.end()) continue;
    auto& cs = rs.configs[it->second];
    switch (t.status) {
      case model::TrialStatus::Ok:
        ++cs.trials_ok;
        ++rs.trials_ok;
        break;
      case model::TrialStatus::Interrupted:
      case model::TrialStatus::Running:
        ++rs.trials_interrupted;
        break;
      case model::TrialStatus::Lost:
        ++rs.trials_lost;
        break;  // its worker went away; the queue ran it again
      default:
        ++cs.trials_failed;
        ++rs.trials_failed;
        cs.failures.push_back(fmt::format("repeat {}: {}", t.repeat + 1, brief_error(t.error)));
    }
    if (t.status != model::TrialStatus::Ok) continue;
    if (!t.steady_class.empty()) ++cs.steady_classes[t.steady_class];
    for (const auto& m : t.summaries) {
      // A 0 MB peak RSS is a trial the launcher could not measure, as runs
      // stored before it said so hold it (it now stores none): no value, not
      // the smallest one, for every reader (show, gate, sweep, dashboard).
      if (m.metric == model::harness_metric::peak_rss_mb && m.value == 0) continue;
      values[it->second][m.metric].push_back({t.id, t.repeat, m.value, m});
    }
  }

  for (std::size_t i = 0; i < rs.configs.size(); ++i) {
    auto& cs = rs.configs[i];
    for (auto& [name, tv] : values[i]) {
      MetricRow row;
      auto inf = infos.find(name);
      row.info = inf != infos.end() ? inf->second : model::MetricInfo::inferred(name);
      row.harness_metric = is_harness_metric(name);
      std::sort(tv.begin(), tv.end(), [](const auto& a, const auto& b) { return a.repeat < b.repeat; });
      std::vector<double> x;
      for (const auto& v : tv) x.push_back(v.value);
      row.n = static_cast<int>(x.size());
      row.median = stats::median(x);
      row.mean = stats::mean(x);
      row.min = *std::min_element(x.begin(), x.end());
      row.max = *std::max_element(x.begin(), x.end());
      row.cv = stats::cv(x);
      auto ci = stats::median_ci(x, ci_level);
      row.ci_low = ci.low;
      row.ci_high = ci.high;
      row.ci_coverage = ci.coverage;
      // A fact by declaration, or a per-trial number without a direction that never varied across at least two
      // trials (one trial's final loss is no evidence that it is a setting).
      const bool scalar = !tv.empty() && tv.front().summary.is_scalar;
      row.fact = row.info.fact || (scalar && !row.harness_metric && row.info.better == model::Better::None &&
                                   row.n >= 2 && row.min == row.max);
      if (row.fact && row.min != row.max) {
        // "matmul_tile: 32 in 2 trials, 64 in 1": trials of one configuration ran different settings.
        std::map<double, int> counts;
        for (double v : x) ++counts[v];
        std::vector<std::string> parts;
        for (const auto& [v, k] : counts)
          parts.push_back(fmt::format("{} in {} trial{}", util::format_number(v), k, k == 1 ? "" : "s"));
        cs.notes.push_back(fmt::format("{}: {}", name, util::join(parts, ", ")));
      }
      row.trials = std::move(tv);
      cs.metrics.push_back(std::move(row));
    }
    // Workload step metrics first, then per-trial scalars, then the harness's own.
    std::stable_sort(cs.metrics.begin(), cs.metrics.end(), [](const MetricRow& a, const MetricRow& b) {
      auto rank = [](const MetricRow& m) {
        return m.harness_metric ? 2 : (m.trials.front().summary.is_scalar ? 1 : 0);
      };
      return rank(a) < rank(b);
    });
  }
  rs.slow_devices = find_slow_devices(rs);
  return rs;
}

}  // namespace perfgate::analysis

namespace perfgate::analysis {

std::string SlowDevice::text() const {
  return fmt::format(
      "{} {}{}: its {} trials were all slower than the same configurations on the other devices "
      "(median {:.1f} % worse on each configuration's primary metric); a slow card is a finding, "
      "not noise: check it (npu-smi / nvidia-smi health, clocks, temperature) before trusting it",
      device_kind, devices, host.empty() ? "" : " on " + host, trials, 100 * median_worse);
}

std::vector<SlowDevice> find_slow_devices(const RunSummary& rs, double min_worse, int min_trials) {
  // Where each trial ran, by "host/kind/devices".
  std::map<long long, std::string> place;
  std::map<std::string, SlowDevice> devices;
  for (const auto& t : rs.trials) {
    if (t.devices.empty()) continue;
    std::string key = fmt::format("{}/{}/{}", t.host, t.device_kind, util::join_ints(t.devices));
    place[t.id] = key;
    auto& d = devices[key];
    d.host = t.host;
    d.device_kind = t.device_kind;
    d.devices = util::join_ints(t.devices);
  }
  if (devices.size() < 2) return {};
  // Per device: how much worse each of its trials was than the median of the
  // configuration's trials elsewhere (negative: better).
  std::map<std::string, std::vector<double>> worse;
  for (const auto& c : rs.configs) {
    const MetricRow* row = c.primary_metric.empty() ? nullptr : c.find(c.primary_metric);
    if (!row || row->fact || row->info.better == model::Better::None) continue;
    for (const auto& tv : row->trials) {
      auto at = place.find(tv.trial_id);
      if (at == place.end()) continue;
      std::vector<double> elsewhere;
      for (const auto& other : row->trials) {
        auto o = place.find(other.trial_id);
        if (o != place.end() && o->second != at->second) elsewhere.push_back(other.value);
      }
      if (elsewhere.empty()) continue;
      const double ref = stats::median(elsewhere);
      if (!(std::abs(ref) > 0)) continue;
      const double rel = (tv.value - ref) / std::abs(ref);
      worse[at->second].push_back(row->info.better == model::Better::Lower ? rel : -rel);
    }
  }
  std::vector<SlowDevice> out;
  for (auto& [key, w] : worse) {
    if (static_cast<int>(w.size()) < min_trials) continue;
    if (!std::all_of(w.begin(), w.end(), [](double x) { return x > 0; })) continue;
    const double med = stats::median(w);
    if (med < min_worse) continue;
    SlowDevice d = devices[key];
    d.trials = static_cast<int>(w.size());
    d.median_worse = med;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace perfgate::analysis
