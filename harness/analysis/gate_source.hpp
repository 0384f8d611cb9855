#pragma once
// The TrialSource of the CLI: the candidate run as recorded, against the
// baseline runs; more trials are real launches into the candidate run.

#include <memory>
#include <string>
#include <vector>

#include "harness/analysis/gate.hpp"
#include "harness/analysis/node_class.hpp"
#include "harness/exec/launcher.hpp"
#include "harness/model/suite.hpp"
#include "harness/runner/runner.hpp"
#include "harness/store/store.hpp"

namespace perfgate::analysis {

class StoreTrialSource final : public TrialSource {
 public:
  // `launcher` may be null when no trials will be added. `baseline` and
  // `history` are summarised by `classes` (NodeClassView::summarise), which
  // the candidate is summarised by too.
  StoreTrialSource(store::Store& st, long long candidate_run, std::vector<RunSummary> baseline,
                   const model::GatePolicy& policy, std::vector<std::string> metrics, exec::Launcher* launcher,
                   runner::RunOptions run_options, std::vector<RunSummary> history = {}, NodeClassView classes = {});

  Expected<std::vector<GateItem>> items() override;
  Status add_trials(const std::vector<TrialRequest>& requests) override;

 private:
  store::Store& m_store;
  long long m_run;
  std::vector<RunSummary> m_baseline;
  std::vector<RunSummary> m_history;
  NodeClassView m_classes;
  const model::GatePolicy& m_policy;
  std::vector<std::string> m_metrics;
  exec::Launcher* m_launcher;
  runner::RunOptions m_opts;
  std::unique_ptr<model::Suite> m_suite;  // loaded on the first add_trials
};

}  // namespace perfgate::analysis
