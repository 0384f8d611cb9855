#pragma once
// Readers of workload output that is not the metric protocol, for workloads
// that cannot be changed (docs/metric-protocol.md, "Reading logs"): the log
// presets megatron, mindspore, modelzoo and ais_bench, Google Benchmark JSON
// (gbench) and suite-declared regexes. Each turns what it reads into the same
// events as the protocol. Lines a parser does not recognise are ignored;
// lines it recognises but cannot read are counted with their line number.
// Line parsers keep no lines: memory does not grow with the length of a log.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/metrics/registry.hpp"
#include "harness/model/suite.hpp"
#include "harness/util/error.hpp"

namespace perfgate::metrics {

class OutputParser {
 public:
  virtual ~OutputParser() = default;

  // One line of the workload's stdout or stderr, or of the log file the suite
  // names; lines are numbered per source here. A trailing '\r' is dropped.
  void feed_line(std::string_view line, LineSource src, bool oversized, double t_s);
  // The trial ended: hand on anything pending; whole-file formats (gbench) read their file now.
  virtual void finish(double t_s) { (void)t_s; }
  // Whether this parser reads the lines of stdout/stderr/a log file at all (gbench reads one JSON file at the end).
  virtual bool reads_lines() const { return true; }

  long long malformed_count() const { return m_malformed.count(); }
  const std::vector<MalformedLine>& malformed() const { return m_malformed.kept(); }
  long long records() const { return m_records; }
  // Notes for the trial beyond malformed lines (gbench: a debug build of the
  // library; lines too long to read, counted).
  std::vector<std::string> notes() const;

 protected:
  explicit OutputParser(MetricRegistry& registry) : m_registry(registry) {}
  virtual void line(std::string_view text, LineSource src, long long line_no, double t_s) = 0;

  // The id of a metric, announcing its unit and direction the first time it
  // is seen (an empty unit or no direction leaves what the name implies); -1
  // when the name is invalid or one too many.
  int metric(std::string_view name, std::string_view unit = {}, std::optional<model::Better> better = std::nullopt,
             bool fact = false);
  // A step record (values: metric id, value) and a per-trial number.
  void step(long long step_no, double t_s, const std::vector<std::pair<int, double>>& values);
  void summary(int id, double value);
  void bad(LineSource src, long long line_no, std::string reason, std::string_view text);
  void note(std::string text) { m_notes.push_back(std::move(text)); }

  MetricRegistry& m_registry;

 private:
  MalformedLines m_malformed;
  long long m_records = 0;
  long long m_lines[3] = {0, 0, 0};  // per LineSource
  long long m_oversized = 0;         // lines cut by the reader (over its 1 MiB), not read
  std::string m_first_oversized;     // "stdout line 12"
  std::vector<bool> m_announced;     // by metric id
  std::vector<std::string> m_notes;
};

// A number as logs print it: surrounding blanks allowed, "nan", "inf",
// exponents ("1.000000E-04"); nullopt for anything else, or trailing text.
// The metric a trial is headlined and ranked by when the suite names none:
// the parser's own choice among what the trial reported (gbench: the first
// benchmark's real time; ais_bench: the device time per inference; the
// protocol, megatron and mindspore: throughput, else step time), else the
// first measurement reported. `reported` is in order of first appearance,
// facts left out; "" when it is empty.
std::string default_primary(std::string_view parser, const std::vector<std::string>& reported);

// The names default_primary prefers for a parser, most preferred first,
// for use while a trial runs and the reported set is still growing (empty
// for gbench, whose names come from the benchmarks: the first one counts).
std::vector<std::string> primary_preference(std::string_view parser);

std::optional<double> parse_number(std::string_view text);
// Drops leading "[...]" groups ("[INFO]", a time stamp, "[rank0]:", each
// optionally followed by ':') and the blanks around them.
std::string_view skip_bracket_prefix(std::string_view line);
// "Elapsed Time Per Iteration (ms)" -> "elapsed_time_per_iteration_ms".
std::string snake_case(std::string_view text);

// The parser a suite's `metrics` asks for, with placeholders already
// substituted in `file` and `batch_size`. Not for "jsonl" (ProtocolParser).
Expected<std::unique_ptr<OutputParser>> make_output_parser(const model::MetricsSpec& spec, MetricRegistry& registry);

// Names the suite loader accepts for `metrics.parser`.
const std::vector<std::string>& parser_names();

// One per file, each behind OutputParser.
std::unique_ptr<OutputParser> make_megatron_parser(MetricRegistry& registry);
std::unique_ptr<OutputParser> make_mindspore_parser(MetricRegistry& registry, double batch_size);
std::unique_ptr<OutputParser> make_modelzoo_parser(MetricRegistry& registry);
std::unique_ptr<OutputParser> make_ais_bench_parser(MetricRegistry& registry);
std::unique_ptr<OutputParser> make_gbench_parser(MetricRegistry& registry, std::string json_path);
Expected<std::unique_ptr<OutputParser>> make_regex_parser(MetricRegistry& registry,
                                                          const std::vector<model::LogPattern>& patterns);

}  // namespace perfgate::metrics
