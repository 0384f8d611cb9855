#include "harness/model/trial.hpp"

namespace perfgate::model {

std::string_view to_string(TrialStatus s) {
  switch (s) {
    case TrialStatus::Running:
      return "running";
    case TrialStatus::Ok:
      return "ok";
    case TrialStatus::Failed:
      return "failed";
    case TrialStatus::TimedOut:
      return "timed_out";
    case TrialStatus::Interrupted:
      return "interrupted";
    case TrialStatus::Lost:
      return "lost";
  }
  return "?";
}

std::string_view to_string(RunStatus s) {
  switch (s) {
    case RunStatus::Running:
      return "running";
    case RunStatus::Completed:
      return "completed";
    case RunStatus::Interrupted:
      return "interrupted";
    case RunStatus::Failed:
      return "failed";
  }
  return "?";
}

std::string_view to_string(RunKind k) {
  switch (k) {
    case RunKind::Run:
      return "run";
    case RunKind::Soak:
      return "soak";
    case RunKind::Import:
      return "import";
    case RunKind::Bisect:
      return "bisect";
  }
  return "run";
}

RunKind run_kind_from(std::string_view s) {
  for (auto k : {RunKind::Run, RunKind::Soak, RunKind::Import, RunKind::Bisect})
    if (to_string(k) == s) return k;
  return RunKind::Run;
}

TrialStatus trial_status_from(std::string_view s) {
  for (auto t : {TrialStatus::Running, TrialStatus::Ok, TrialStatus::Failed, TrialStatus::TimedOut,
                 TrialStatus::Interrupted, TrialStatus::Lost})
    if (to_string(t) == s) return t;
  return TrialStatus::Failed;
}

RunStatus run_status_from(std::string_view s) {
  for (auto r : {RunStatus::Running, RunStatus::Completed, RunStatus::Interrupted, RunStatus::Failed})
    if (to_string(r) == s) return r;
  return RunStatus::Failed;
}

}  // namespace perfgate::model
