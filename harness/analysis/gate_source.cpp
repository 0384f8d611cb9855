#include "harness/analysis/gate_source.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/exec/capture.hpp"
#include "harness/runner/fleet.hpp"

namespace perfgate::analysis {

StoreTrialSource::StoreTrialSource(store::Store& st, long long candidate_run, std::vector<RunSummary> baseline,
                                   const model::GatePolicy& policy, std::vector<std::string> metrics,
                                   exec::Launcher* launcher, runner::RunOptions run_options,
                                   std::vector<RunSummary> history, NodeClassView classes)
    : m_store(st),
      m_run(candidate_run),
      m_baseline(std::move(baseline)),
      m_history(std::move(history)),
      m_classes(std::move(classes)),
      m_policy(policy),
      m_metrics(std::move(metrics)),
      m_launcher(launcher),
      m_opts(std::move(run_options)) {}

Expected<std::vector<GateItem>> StoreTrialSource::items() {
  auto data = m_store.load_run(m_run);
  if (!data) return data.error();
  return collect_items(m_classes.summarise(*data), m_baseline, m_policy, m_metrics, m_history);
}

Status StoreTrialSource::add_trials(const std::vector<TrialRequest>& requests) {
  if (!m_launcher) return Error::harness("no launcher: this gate cannot add trials");
  auto data = m_store.load_run(m_run);
  if (!data) return data.error();
  const auto& run = data->run;
  if (!m_suite) {
    // The suite as the candidate ran it: same file, profiles, --set values and slots.
    auto s = runner::load_suite_of_run(run);
    if (!s) return Error::input(fmt::format("cannot add trials to run {}: {}", m_run, s.error().message));
    m_suite = std::make_unique<model::Suite>(std::move(*s));
  }
  // Repeats and positions continue the run's.
  std::map<long long, int> repeats;
  int seq = 0;
  for (const auto& t : data->trials) {
    repeats[t.config_id] = std::max(repeats[t.config_id], t.repeat + 1);
    seq = std::max(seq, t.seq + 1);
  }
  model::Plan extra;
  extra.seed = run.seed;
  std::vector<long long> config_ids;
  for (const auto& r : requests) {
    auto w = std::find_if(m_suite->workloads.begin(), m_suite->workloads.end(),
                          [&](const model::Workload& x) { return x.name == r.workload; });
    if (w == m_suite->workloads.end())
      return Error::input(
          fmt::format("cannot add trials: workload '{}' is no longer in {}", r.workload, run.suite_path));
    auto cid = m_store.config_id(r.workload, r.params_json);
    if (!cid) return cid.error();
    model::Case c;
    c.workload_index = static_cast<std::size_t>(w - m_suite->workloads.begin());
    c.workload = r.workload;
    c.params = model::params_from_json(r.params_json);
    c.params_json = r.params_json;
    c.label = r.workload + (r.label.empty() ? "" : " " + r.label);
    extra.cases.push_back(std::move(c));
    config_ids.push_back(*cid);
  }
  // Round robin over the configurations, as a run interleaves them, so drift spreads over all.
  int most = 0;
  for (const auto& r : requests) most = std::max(most, r.count);
  for (int k = 0; k < most; ++k)
    for (std::size_t i = 0; i < requests.size(); ++i)
      if (k < requests[i].count) extra.trials.push_back({i, repeats[config_ids[i]]++, seq++});
  // A fleet run's extra trials go to Slurm the way the run did.
  Expected<runner::RunOutcome> out = runner::RunOutcome{};
  if (runner::fleet_settings_of_run(run)) {
    runner::FollowOptions fo;
    fo.progress = m_opts.progress;
    out = runner::extend_fleet_run(m_store, m_run, extra, m_opts.db_spec, fo,
                                   [](const std::vector<std::string>& argv) { return exec::run_tool(argv, 60); });
  } else {
    out = runner::extend_run(*m_suite, extra, m_store, *m_launcher, m_run, m_opts);
  }
  if (!out) return out.error();
  if (out->status == model::RunStatus::Interrupted)
    return Error::harness(
        fmt::format("interrupted while adding trials to run {}; the trials that finished are kept", m_run));
  return Ok{};
}

}  // namespace perfgate::analysis
