#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "harness/model/metric.hpp"

namespace perfgate::model {

// Lost: the worker running it went away (killed, cancelled, its node down)
// and the fleet queue ran it again; not a failure of the workload.
enum class TrialStatus { Running, Ok, Failed, TimedOut, Interrupted, Lost };
enum class RunStatus { Running, Completed, Interrupted, Failed };
// What made a run: `perfgate run`, `soak`, `import`, or `bisect`.
enum class RunKind { Run, Soak, Import, Bisect };

std::string_view to_string(TrialStatus s);
std::string_view to_string(RunStatus s);
std::string_view to_string(RunKind k);
RunKind run_kind_from(std::string_view s);
TrialStatus trial_status_from(std::string_view s);
RunStatus run_status_from(std::string_view s);

// Everything known about one finished trial, as stored.
struct TrialRecord {
  long long id = 0;
  long long run_id = 0;
  long long config_id = 0;
  int repeat = 0;
  int seq = 0;
  TrialStatus status = TrialStatus::Running;
  int exit_code = -1;
  int signal = 0;
  std::string error;      // why it failed, with the last lines of stderr
  double started_at = 0;  // unix seconds
  double wall_s = 0;
  double cpu_s = 0;
  double peak_rss_mb = 0;
  long long steps = 0;  // step records received
  long long malformed_lines = 0;
  std::string notes;  // warnings: malformed lines, truncated logs, leftovers
  std::string log_dir;
  // warmup: auto: the class of the trial's step series and where its steady
  // state starts (a step index of the classified series; compile steps
  // before it). Empty class for fixed warm-ups.
  std::string steady_class;
  long long steady_start = 0;
  long long compile_steps = 0;
  double last_step_s = -1;  // when the last step record arrived (seconds since start); -1: none
  // Where it ran: the host, the node's slot and the devices it held (kind
  // npu / cuda / cpu / another; no devices: wherever the workload went).
  std::string host;
  int slot = -1;
  std::string device_kind;
  std::vector<int> devices;
  // The hash of the node's machine fingerprint (store::save_node_fingerprint)
  // for trials a fleet worker ran; empty for local runs (the run's own).
  std::string node_fingerprint;
  std::vector<MetricSummary> summaries;
};

// Names of the metrics the harness adds to every trial.
namespace harness_metric {
inline constexpr std::string_view wall_time_s = "wall_time_s";
inline constexpr std::string_view cpu_time_s = "cpu_time_s";
inline constexpr std::string_view peak_rss_mb = "peak_rss_mb";
inline constexpr std::string_view first_step_ms = "first_step_ms";
inline constexpr std::string_view time_to_first_step_s = "time_to_first_step_s";
inline constexpr std::string_view compile_steps = "compile_steps";
}  // namespace harness_metric

}  // namespace perfgate::model
