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

#include <memory>

#include "harness/metrics/registry.hpp"
#include "harness/model/metric.hpp"

namespace perfgate::metrics {

class ProtocolParser {
 public:
  static constexpr std::string_view k_stdout_prefix = "PERFGATE ";
  static constexpr std::size_t k_max_metrics = MetricRegistry::k_default_max_metrics;
  static constexpr std::size_t k_max_kept_malformed = MalformedLines::k_max_kept;

  // With its own metric ids...
  explicit ProtocolParser(ProtocolSink& sink)
      : m_own_registry(std::make_unique<MetricRegistry>(sink)), m_registry(*m_own_registry), m_sink(sink) {}
  // ...or with ids shared with another reader of the same trial (a log preset).
  explicit ProtocolParser(MetricRegistry& registry) : m_registry(registry), m_sink(registry.sink()) {}

  // A line of the metrics file.
  void feed_file_line(std::string_view line, bool oversized, double arrival_t_s);
  // A stdout line; lines without the prefix are the workload's own output and ignored.
  void feed_stdout_line(std::string_view line, bool oversized, double arrival_t_s);

  long long malformed_count() const { return m_malformed.count(); }
  const std::vector<MalformedLine>& malformed() const { return m_malformed.kept(); }
  long long records() const { return m_records; }

 private:
  void parse(std::string_view text, LineSource src, long long line_no, bool oversized, double arrival_t_s);
  void step_record(const std::vector<std::pair<std::string, double>>& fields, std::size_t count, LineSource src,
                   long long line_no, double arrival_t_s, std::string_view text);
  void bad(LineSource src, long long line_no, std::string reason, std::string_view text);
  int metric_id(std::string_view name) { return m_registry.id(name); }

  std::unique_ptr<MetricRegistry> m_own_registry;
  MetricRegistry& m_registry;
  ProtocolSink& m_sink;
  std::vector<std::pair<int, double>> m_values;             // reused per step
  std::vector<std::pair<std::string, int>> m_position_ids;  // key and metric id last seen at each field position
  std::vector<std::pair<std::string, double>> m_flat;       // reused per line: the record's numeric fields
  long long m_file_lines = 0, m_stdout_lines = 0;
  long long m_last_step = -1;
  long long m_records = 0;
  MalformedLines m_malformed;
};

}  // namespace perfgate::metrics
