#pragma once
// The perfgate metric protocol (docs/metric-protocol.md): JSON objects, one
// per line, from the PERFGATE_METRICS file or from stdout lines prefixed
// "PERFGATE ". Step records become samples, summary records per-trial
// numbers, meta records units and better-directions. A bad line is counted
// with its line number and skipped; it never aborts the trial.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "harness/model/metric.hpp"

namespace perfgate::metrics {

enum class LineSource { File, Stdout };

struct MalformedLine {
  LineSource source;
  long long line_no;      // 1-based within its source
  std::string reason;
  std::string excerpt;    // at most 80 bytes, non-printable bytes shown as '?'
};

// What the parser hands on. Metric ids are small integers, stable within one parser.
class ProtocolSink {
 public:
  virtual ~ProtocolSink() = default;
  virtual void on_new_metric(int id, std::string_view name) = 0;
  // One step: (metric id, value) pairs; t_s is the workload's "t_s" if given, else the arrival time.
  virtual void on_step(long long step, double t_s, const std::vector<std::pair<int, double>>& values) = 0;
  virtual void on_summary(int metric_id, double value) = 0;
  virtual void on_meta_unit(int metric_id, std::string_view unit) = 0;
  virtual void on_meta_better(int metric_id, model::Better better) = 0;
};

class ProtocolParser {
 public:
  static constexpr std::string_view k_stdout_prefix = "PERFGATE ";
  static constexpr std::size_t k_max_metrics = 512;     // distinct names per trial; guards against garbage keys
  static constexpr std::size_t k_max_kept_malformed = 20;

  explicit ProtocolParser(ProtocolSink& sink) : m_sink(sink) {}

  // A line of the metrics file.
  void feed_file_line(std::string_view line, bool oversized, double arrival_t_s);
  // A stdout line; lines without the prefix are the workload's own output and ignored.
  void feed_stdout_line(std::string_view line, bool oversized, double arrival_t_s);

  long long malformed_count() const { return m_malformed_count; }
  const std::vector<MalformedLine>& malformed() const { return m_malformed; }
  long long records() const { return m_records; }

 private:
  void parse(std::string_view text, LineSource src, long long line_no, bool oversized, double arrival_t_s);
  void step_record(const std::vector<std::pair<std::string, double>>& fields, std::size_t count, LineSource src,
                   long long line_no, double arrival_t_s, std::string_view text);
  void bad(LineSource src, long long line_no, std::string reason, std::string_view text);
  int metric_id(std::string_view name);

  ProtocolSink& m_sink;
  std::unordered_map<std::string, int> m_ids;
  std::vector<std::pair<int, double>> m_values;  // reused per step
  std::vector<std::pair<std::string, int>> m_position_ids;  // key and metric id last seen at each field position
  std::vector<std::pair<std::string, double>> m_flat;  // reused per line: the record's numeric fields
  long long m_file_lines = 0, m_stdout_lines = 0;
  long long m_last_step = -1;
  long long m_records = 0;
  long long m_malformed_count = 0;
  std::vector<MalformedLine> m_malformed;
};

std::string_view to_string(LineSource s);

}  // namespace perfgate::metrics
