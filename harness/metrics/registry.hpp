#pragma once
// What every reader of workload output shares: the events it hands on
// (ProtocolSink), the metric ids (one MetricRegistry per trial, so the
// protocol parser and a log preset reading the same trial never collide), and
// the bookkeeping of lines that were recognised but could not be read.

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "harness/model/metric.hpp"

namespace perfgate::metrics {

enum class LineSource { File, Stdout, Stderr };
std::string_view to_string(LineSource s);

// What a parser hands on. Metric ids are small integers, dense from 0, stable within one registry.
class ProtocolSink {
 public:
  virtual ~ProtocolSink() = default;
  virtual void on_new_metric(int id, std::string_view name) = 0;
  // One step: (metric id, value) pairs; t_s is the workload's "t_s" if given, else the arrival time.
  virtual void on_step(long long step, double t_s, const std::vector<std::pair<int, double>>& values) = 0;
  virtual void on_summary(int metric_id, double value) = 0;
  virtual void on_meta_unit(int metric_id, std::string_view unit) = 0;
  virtual void on_meta_better(int metric_id, model::Better better) = 0;
  // A metric the workload says is a fact (a setting: world size, buckets),
  // not a measurement.
  virtual void on_meta_fact(int metric_id) = 0;
};

// Letters, digits and _ . - / : ; at most 128 characters.
bool valid_metric_name(std::string_view name);
bool valid_metric_char(char c);

class MetricRegistry {
 public:
  static constexpr std::size_t k_default_max_metrics = 512;  // distinct names per trial; guards against garbage keys

  explicit MetricRegistry(ProtocolSink& sink, std::size_t max_metrics = k_default_max_metrics)
      : m_sink(sink), m_max(max_metrics) {}

  // The id of `name`, announced to the sink the first time; -1 for an invalid
  // name or one past the limit.
  int id(std::string_view name);
  std::size_t size() const { return m_ids.size(); }
  // Google Benchmark binaries hold hundreds of benchmarks of several metrics each.
  void raise_limit(std::size_t max_metrics) { m_max = std::max(m_max, max_metrics); }
  ProtocolSink& sink() { return m_sink; }

 private:
  ProtocolSink& m_sink;
  std::size_t m_max;
  std::unordered_map<std::string, int> m_ids;
};

struct MalformedLine {
  LineSource source;
  long long line_no;  // 1-based within its source
  std::string reason;
  std::string excerpt;  // at most 80 bytes, non-printable bytes shown as '?'
};

// Counts every malformed line and keeps the first few for messages.
class MalformedLines {
 public:
  static constexpr std::size_t k_max_kept = 20;
  void add(LineSource src, long long line_no, std::string reason, std::string_view text);
  long long count() const { return m_count; }
  const std::vector<MalformedLine>& kept() const { return m_kept; }

 private:
  long long m_count = 0;
  std::vector<MalformedLine> m_kept;
};

// At most 80 bytes of `text`, non-printable bytes as '?'.
std::string excerpt_of(std::string_view text);

}  // namespace perfgate::metrics
