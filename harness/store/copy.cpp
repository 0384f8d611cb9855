#include "harness/store/copy.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace perfgate::store {
namespace {

// What makes a run the same run in two databases: ids differ, these do not.
using RunKey = std::tuple<std::string, double, std::string, long long>;
RunKey key_of(const RunRecord& r) { return {r.suite, r.started_at, r.host, r.pid}; }

// Samples go over in batches: a soak's millions never sit in memory at once.
constexpr std::size_t k_sample_batch = 50'000;

}  // namespace

Expected<CopyCounts> copy_history(Store& from, Store& to, const std::function<void(long long, long long)>& on_run) {
  RunQuery all;
  all.completed_only = false;
  auto runs = from.find_runs(all);
  if (!runs) return runs.error();
  std::sort(runs->begin(), runs->end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });

  // What the target holds already, by the key ids cannot give.
  auto existing = to.find_runs(all);
  if (!existing) return existing.error();
  std::map<RunKey, RunRecord> there;
  for (const auto& r : *existing) there.emplace(key_of(r), r);

  CopyCounts counts;
  std::map<long long, long long> run_ids;  // source -> target
  std::set<std::string> fingerprints;      // of the fleet nodes the copied trials ran on
  for (const auto& src : *runs) {
    // Kept runs' nodes too: a copy cut off before the fingerprints left them out.
    auto nodes = from.trial_node_fingerprints(src.id);
    if (!nodes) return nodes.error();
    for (auto& hash : *nodes)
      if (!hash.empty()) fingerprints.insert(std::move(hash));
    if (auto it = there.find(key_of(src)); it != there.end()) {
      if (it->second.status != model::RunStatus::Running) {
        run_ids[src.id] = it->second.id;
        ++counts.kept;
        continue;
      }
      if (auto s = to.delete_run(it->second.id); !s) return s.error();
      ++counts.replaced;
    }
    auto data = from.load_run(src.id);
    if (!data) return data.error();
    RunRecord rec = data->run;
    const model::RunStatus status = rec.status;
    const double ended_at = rec.ended_at;
    rec.status = model::RunStatus::Running;
    auto new_run = to.begin_run(rec);
    if (!new_run) return new_run.error();
    run_ids[src.id] = *new_run;

    std::map<long long, long long> config_ids;
    for (const auto& c : data->configs) {
      auto id = to.config_id(c.workload, c.params_json);
      if (!id) return id.error();
      config_ids[c.id] = *id;
    }
    std::map<std::string, model::MetricInfo> infos;
    for (const auto& m : data->metrics) infos[m.name] = m;
    std::map<std::string, long long> metric_ids;
    auto target_metric = [&](const model::MetricInfo& info) -> Expected<long long> {
      if (auto it = metric_ids.find(info.name); it != metric_ids.end()) return it->second;
      auto id = to.metric_id(info);
      if (!id) return id.error();
      metric_ids[info.name] = *id;
      return *id;
    };

    std::vector<std::pair<long long, std::string>> primary;
    for (const auto& [config, metric] : data->primary_metrics)
      if (auto it = config_ids.find(config); it != config_ids.end()) primary.emplace_back(it->second, metric);
    if (!primary.empty())
      if (auto s = to.set_primary_metrics(*new_run, primary); !s) return s.error();

    for (auto trial : data->trials) {
      const long long src_trial = trial.id;
      trial.run_id = *new_run;
      trial.config_id = config_ids.at(trial.config_id);
      auto new_trial = to.begin_trial(trial);
      if (!new_trial) return new_trial.error();
      trial.id = *new_trial;
      // Raw samples, metric by metric, in batches that span metrics (a
      // trial of 100 short series is one write, not 100).
      auto sampled = from.sampled_metrics(src_trial);
      if (!sampled) return sampled.error();
      std::vector<SampleRow> batch;
      Status write = Ok{};
      auto flush = [&] {
        if (batch.empty() || !write) return;
        write = to.append_samples(trial.id, batch);
        counts.samples += static_cast<long long>(batch.size());
        batch.clear();
      };
      for (const auto& [info, src_metric] : *sampled) {
        auto dst_metric = target_metric(info);
        if (!dst_metric) return dst_metric.error();
        auto read = from.for_each_sample(src_trial, src_metric, [&](const SampleRow& r) {
          batch.push_back({*dst_metric, r.step, r.t_s, r.value});
          if (batch.size() >= k_sample_batch) flush();
        });
        if (!read) return read.error();
        if (!write) return write.error();
      }
      flush();
      if (!write) return write.error();
      std::vector<long long> summary_ids;
      for (const auto& m : trial.summaries) {
        auto it = infos.find(m.metric);
        auto id = target_metric(it != infos.end() ? it->second : model::MetricInfo::inferred(m.metric));
        if (!id) return id.error();
        summary_ids.push_back(*id);
      }
      if (auto s = to.finish_trial(trial, summary_ids); !s) return s.error();
      ++counts.trials;
    }
    if (auto s = to.finish_run(*new_run, status, ended_at); !s) return s.error();
    ++counts.runs;
    if (on_run) on_run(src.id, *new_run);
  }

  // The nodes' fingerprints, which their trials name by hash.
  for (const auto& hash : fingerprints) {
    auto json = from.node_fingerprint(hash);
    if (!json) return json.error();
    if (json->empty()) continue;
    if (auto s = to.save_node_fingerprint(hash, *json); !s) return s.error();
  }

  // Gates last: their baselines name runs, all of which now have target ids.
  // A gate the target holds (same run, same moment) is not saved again: a
  // copy cut off among the gates is finished by the next.
  for (const auto& src : *runs) {
    auto gates = from.load_gates(src.id);
    if (!gates) return gates.error();
    if (gates->empty()) continue;
    auto held = to.load_gates(run_ids.at(src.id));
    if (!held) return held.error();
    std::set<double> held_at;
    for (const auto& g : *held) held_at.insert(g.created_at);
    std::reverse(gates->begin(), gates->end());  // oldest first, as they were made
    for (auto g : *gates) {
      if (held_at.count(g.created_at)) continue;
      g.run_id = run_ids.at(g.run_id);
      for (auto& b : g.baseline_runs)
        if (auto it = run_ids.find(b); it != run_ids.end()) b = it->second;
      if (auto s = to.save_gate(g); !s) return s.error();
      ++counts.gates;
    }
  }
  return counts;
}

}  // namespace perfgate::store
