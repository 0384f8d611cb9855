#pragma once
// Gathers what one trial reports: reads the metric protocol from stdout
// lines and the tailed metrics file, streams raw samples to the store in
// batches (memory stays bounded by the per-metric steady values the summary
// needs), and builds the per-trial summaries when the trial ends.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/exec/launcher.hpp"
#include "harness/metrics/output_parser.hpp"
#include "harness/metrics/protocol.hpp"
#include "harness/model/suite.hpp"
#include "harness/model/trial.hpp"
#include "harness/runner/sample_writer.hpp"
#include "harness/sampling/session.hpp"
#include "harness/stats/running.hpp"
#include "harness/stats/step_series.hpp"
#include "harness/store/store.hpp"
#include "harness/util/line_splitter.hpp"

namespace perfgate::runner {

class TrialCollector final : public exec::TrialObserver, public metrics::ProtocolSink {
 public:
  static constexpr std::size_t k_flush_rows = 50'000;
  static constexpr double k_flush_interval_s = 2.0;
  static constexpr std::size_t k_min_drift_windows = 10;  // soak progress shows a drift from this many windows on

  TrialCollector(store::Store& store, long long trial_id, std::string metrics_path, model::Warmup warmup);
  ~TrialCollector() override;

  // Samplers to run while the trial lives (started when the process starts,
  // stopped at its end); their series are stored like step metrics.
  void attach_sampling(sampling::SamplingSession* session) { m_sampling = session; }

  // A reader of the workload's own output (a log preset, gbench, regex), for
  // parsers other than jsonl; `spec` has its placeholders substituted. Its
  // lines come from stdout and stderr, or from spec.file when one is named.
  // A whole file (gbench) is read only if the trial wrote it, unless
  // written_during_trial is false (import: the file is the input).
  Status attach_output_parser(const model::MetricsSpec& spec, bool written_during_trial = true);

  // The metric soak progress lines follow: the suite's `primary` when it
  // names one, else the parser's preference (metrics::primary_preference:
  // throughput, else step_time_ms), else the first metric reported. The
  // most preferred name reported so far wins, as the stored primary would.
  void set_primary(std::string name) { m_primary_names = {std::move(name)}; }
  void set_primary_preference(std::vector<std::string> names) { m_primary_names = std::move(names); }

  // Soak: end the trial as a hang when no step record arrives for this long.
  void set_hang_after(double seconds) { m_hang_after_s = seconds; }

  // Soak: what the trial reported so far, handed out at the end of every window.
  struct Progress {
    double t_s = 0;  // since the start
    long long steps = 0;
    double last_step_t_s = -1;
    std::string primary;                 // set_primary's, step_time_ms, or the first metric reported
    double window_value = std::nan("");  // median of the primary over the last window
    double first_window_value = std::nan("");
    double drift_pct_per_h = std::nan("");                // of the primary, Theil-Sen over window medians so far
    double throughput = std::nan("");                     // median `throughput` of the last window, when reported
    std::vector<std::pair<std::string, double>> sampled;  // latest sampler readings
  };
  void set_progress(double window_s, std::function<void(const Progress&)> callback) {
    m_window_s = window_s;
    m_progress = std::move(callback);
  }

  // exec::TrialObserver
  void on_start(int pid) override;
  std::string stop_request() override { return m_stop; }
  void on_stdout_line(std::string_view line, bool oversized, double t_s) override;
  void on_stderr_line(std::string_view line, bool oversized, double t_s) override;
  void on_tick(double t_s, bool final) override;

  // metrics::ProtocolSink
  void on_new_metric(int id, std::string_view name) override;
  void on_step(long long step, double t_s, const std::vector<std::pair<int, double>>& values) override;
  void on_summary(int metric_id, double value) override;
  void on_meta_unit(int metric_id, std::string_view unit) override;
  void on_meta_better(int metric_id, model::Better better) override;
  void on_meta_fact(int metric_id) override;

  // After the launch: summaries of every step metric and summary record, plus
  // notes (warm-up ate everything, non-finite values, malformed lines).
  struct Result {
    std::vector<model::MetricSummary> summaries;
    std::vector<long long> summary_metric_ids;
    std::vector<std::string> notes;
    long long steps = 0;
    double first_step_arrival_s = -1;  // seconds from launch to the first step record
    double last_step_arrival_s = -1;   // and to the last one
    // What the trial reported, in order of first appearance: measurements and facts.
    std::vector<std::string> measured, facts;
    // warmup: auto: the trial's step series classified (its step times, else the primary).
    std::string steady_class;
    long long steady_start = 0;
    long long compile_steps = 0;
  };
  Result finish();

  // The first store error, if any; later writes are skipped once one happens.
  const Status& store_status() const { return m_store_status; }
  // Lines the parsers recognised but could not read, over all of them.
  long long malformed_count() const;
  // Registers a harness-side metric (wall time, RSS) and returns its store id.
  long long harness_metric_id(std::string_view name, std::string_view unit);

 private:
  // Count, mean, spread and extremes without keeping the values: sampler series.
  using RunningStats = stats::RunningMoments;
  struct Series {
    model::MetricInfo info;
    long long store_id = -1;
    bool meta_changed = false;
    bool has_summary = false;
    double summary_value = 0;
    bool summary_varied = false;  // a fact's summary line repeated with another value
    bool first_value_seen = false;
    double first_value = 0;  // the series' first value (first_step_ms of the step times)
    // The step values: warm-up, steady reservoir and moments (stats/step_series.hpp).
    std::unique_ptr<stats::StepSeries> values;
  };
  // A file another process appends to, read as it grows.
  struct TailedFile {
    std::string path;
    std::FILE* f = nullptr;
    util::LineSplitter lines;
    unsigned long long inode = 0;
    ~TailedFile();
    // Starts at the file's current end: what an earlier trial left in a fixed
    // log path is not this trial's.
    void skip_existing();
    // Reads what was appended; follows a file that was truncated or replaced
    // (a log opened with "w", a rotated log) from its start.
    void poll(const std::function<void(std::string_view, bool)>& on_line);
  };
  void tail_files(double t_s);
  void flush();
  void drain_sampling();
  stats::StepSeries& values_of(Series& s);
  // warmup: auto: the series whose classification sets every other's cut.
  int auto_leader() const;
  void share_auto_cut(int lead);
  bool m_auto_cut_shared = false;
  std::optional<stats::SteadyState> m_auto_state;
  double m_last_step_arrival = -1;

  // A sampler series: stored as it arrives, summarised without keeping it.
  struct Sampled {
    model::MetricInfo info;
    long long store_id = -1;
    RunningStats moments;
  };

  store::Store& m_store;
  model::Warmup m_warmup;
  std::vector<std::string> m_primary_names = {"step_time_ms"};
  std::size_t m_primary_rank = static_cast<std::size_t>(-1);  // of the followed series in m_primary_names
  metrics::MetricRegistry m_registry;                         // shared by the protocol parser and the output parser
  metrics::ProtocolParser m_parser;
  TailedFile m_metrics_file;
  std::unique_ptr<metrics::OutputParser> m_output;
  TailedFile m_log_file;            // the output parser's log file, when the suite names one
  std::string m_whole_file;         // gbench: the file read at the end
  std::string m_whole_file_before;  // its size and time before the trial; "" when it did not exist
  std::string m_stale_note;
  std::vector<Series> m_series;  // indexed by parser metric id
  std::vector<store::SampleRow> m_pending;
  SampleWriter m_writer;
  double m_last_flush_t = 0;
  long long m_steps = 0;
  double m_first_step_arrival = -1;
  Status m_store_status = Ok{};
  sampling::SamplingSession* m_sampling = nullptr;
  double m_hang_after_s = 0;
  double m_last_step_t = 0;
  long long m_steps_seen = 0;
  long long m_last_step_no = 0;
  std::string m_stop;
  // Soak progress: per-window medians of the primary metric (a 72 h soak at
  // 60 s windows keeps 4,320 of them).
  double m_window_s = 0;
  std::function<void(const Progress&)> m_progress;
  static constexpr std::string_view k_auto_lead = "step_time_ms";  // the series that decides warmup: auto's cut
  int m_lead_id = -1;                                              // its id once it appears
  int m_primary_id = -1;  // step_time_ms once it appears, else the first metric
  int m_throughput_id = -1;
  double m_window_end = 0;
  std::vector<double> m_window_values;
  std::vector<double> m_window_throughput;
  std::vector<double> m_window_t, m_window_medians;
  std::map<std::string, double> m_latest_sampled;

  void close_window(double t_s);
  std::vector<Sampled> m_sampled;
  std::map<std::string, std::size_t, std::less<>> m_sampled_index;
};

}  // namespace perfgate::runner
