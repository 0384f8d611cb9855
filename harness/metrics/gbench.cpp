// Google Benchmark's JSON output (--benchmark_out=<file> --benchmark_out_format=json), read once when the trial
// ends. Every repetition of a benchmark is one step record of its metrics (real and CPU time, items and bytes per
// second, user counters); aggregates stand in only for benchmarks the file holds no repetitions of.
//
// The file is streamed: nlohmann's parser callback hands over each element of "benchmarks" when its object ends,
// the entry is turned into a step record and dropped, so memory holds one entry plus a little per benchmark.

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <optional>
#include <streambuf>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/metrics/output_parser.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::metrics {
namespace {

using json = nlohmann::json;

constexpr std::size_t k_max_metrics = 8192;    // per trial, once a gbench parser reads it
constexpr std::size_t k_max_name_chars = 128;  // valid_metric_name()'s limit
// Room left for the benchmark part of a name: ".items_per_second" and ".bytes_per_second" (17) are the longest
// fixed suffixes, so every fixed metric of a benchmark shares the same (possibly cut) prefix.
constexpr std::size_t k_max_prefix_chars = k_max_name_chars - 17;
constexpr std::size_t k_hash_chars = 9;         // "_" and 8 hex digits
constexpr std::size_t k_max_listed = 10;        // benchmarks named in the aggregates note
constexpr std::size_t k_max_error_chars = 240;  // of nlohmann's message in a parse error's reason

// Google Benchmark writes non-finite doubles as the bare tokens NaN and Infinity (the cv aggregate of a counter
// that is always 0 is 0/0), which JSON and nlohmann reject. Each is rewritten, outside strings, into a string of
// the same length, so parse errors still give byte offsets into the real file. number_of() reads them back.
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> k_nonfinite = {{
    {"-Infinity", "\"-Inf___\""},
    {"-NaN", "\"-N\""},
    {"Infinity", "\"+Inf__\""},
    {"NaN", "\"N\""},
}};
constexpr std::size_t k_max_token_chars = 9;  // "-Infinity"

// The JSON parser holds a whole token (a string, a number) in memory and copies it into its error: a file cut
// inside a string of a gigabyte took five times that. Google Benchmark's tokens are names, labels and numbers;
// a longer one ends the input there, and the reader says why.
constexpr std::size_t k_max_token_bytes = 1 << 20;

// Both jobs in the one pass over the bytes the parser reads: the non-finite
// tokens rewritten, and a token past k_max_token_bytes ending the input.
class NonFiniteRewriter final : public std::streambuf {
 public:
  explicit NonFiniteRewriter(std::streambuf& src) : m_src(src) {}
  // The byte offset (from 1) where a token grew past k_max_token_bytes; 0 when none did.
  std::uint64_t long_token_at() const { return m_long_token_at; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    // Bytes held back last time (a token that may continue in the next chunk) move to the front.
    std::memmove(m_buf.data(), m_buf.data() + m_held_from, m_held);
    std::size_t n = m_held;
    m_held = 0;
    while (!m_eof && n < m_buf.size()) {
      auto got = m_src.sgetn(m_buf.data() + n, static_cast<std::streamsize>(m_buf.size() - n));
      if (got <= 0)
        m_eof = true;
      else
        n += static_cast<std::size_t>(got);
    }
    if (n == 0) return traits_type::eof();
    std::size_t i = 0;
    for (; i < n; ++i) {
      char c = m_buf[i];
      const bool separator = !m_in_string && (c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':' ||
                                              c == ' ' || c == '\n' || c == '\r' || c == '\t');
      m_token_bytes = separator ? 0 : m_token_bytes + 1;
      if (m_token_bytes > k_max_token_bytes) {
        // Everything before the token is read; the parser then meets the end of the input.
        m_long_token_at = m_delivered + i + 1;
        m_eof = true;
        m_held = 0;
        if (i == 0) return traits_type::eof();
        setg(m_buf.data(), m_buf.data(), m_buf.data() + i);
        m_delivered += i;
        return traits_type::to_int_type(m_buf[0]);
      }
      if (m_in_string) {
        if (m_escaped)
          m_escaped = false;
        else if (c == '\\')
          m_escaped = true;
        else if (c == '"')
          m_in_string = false;
        continue;
      }
      if (c == '"') {
        m_in_string = true;
        continue;
      }
      if (c != 'N' && c != 'I' && c != '-') continue;
      // The buffer is full unless at the end of the file, so i > 0 here and progress is made.
      if (!m_eof && n - i < k_max_token_chars) {
        --m_token_bytes;  // byte i is read again with the next chunk
        break;
      }
      std::string_view rest(m_buf.data() + i, n - i);
      for (auto [token, marker] : k_nonfinite) {
        if (!rest.starts_with(token)) continue;
        std::memcpy(m_buf.data() + i, marker.data(), marker.size());
        i += marker.size() - 1;
        break;
      }
    }
    m_held_from = i;
    m_held = n - i;
    setg(m_buf.data(), m_buf.data(), m_buf.data() + i);
    m_delivered += i;
    return traits_type::to_int_type(m_buf[0]);
  }

 private:
  std::streambuf& m_src;
  std::array<char, 64 * 1024> m_buf{};
  std::size_t m_held_from = 0, m_held = 0;
  bool m_eof = false, m_in_string = false, m_escaped = false;
  std::uint64_t m_delivered = 0;  // bytes handed to the parser before this chunk
  std::size_t m_token_bytes = 0;  // of the token being read so far
  std::uint64_t m_long_token_at = 0;
};

// A number, or a rewritten non-finite token; nullopt for anything else.
std::optional<double> number_of(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nullopt;
  const auto& s = v.get_ref<const std::string&>();
  if (s == "N" || s == "-N") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf__") return std::numeric_limits<double>::infinity();
  if (s == "-Inf___") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

std::string string_field(const json& entry, const char* key) {
  auto it = entry.find(key);
  return (it != entry.end() && it->is_string()) ? it->get<std::string>() : std::string();
}

// Fields Google Benchmark writes that are not measurements. The string ones are listed too, so a label that
// happens to read like a rewritten NaN is never taken for a number.
bool is_known_non_metric(std::string_view key) {
  static const std::unordered_set<std::string_view> keys = {
      "name",           "run_name",       "run_type",       "repetitions",   "repetition_index",
      "threads",        "iterations",     "time_unit",      "family_index",  "per_family_instance_index",
      "aggregate_name", "aggregate_unit", "error_occurred", "error_message", "label",
      "big_o"};
  return keys.contains(key);
}

// The library's own measurements; every other numeric field is a user counter.
bool is_fixed_metric(std::string_view key) {
  return key == "real_time" || key == "cpu_time" || key == "items_per_second" || key == "bytes_per_second";
}

std::string sanitized(std::string_view raw) {
  std::string out(raw);
  for (char& c : out)
    if (!valid_metric_char(c)) c = '_';
  return out;
}

// FNV-1a: the same text gives the same suffix in every run and on every host.
std::string hash_suffix(std::string_view raw) {
  std::uint32_t h = 2166136261u;
  for (char c : raw) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return fmt::format("_{:08x}", h);
}

// `raw` made a valid name of at most max_chars. A cut name always carries the hash of the whole name, never only
// when it collides: whether two names collide depends on which benchmarks a run has (a --benchmark_filter), and
// the same benchmark must get the same metric name in every run to be compared.
std::string fitted(std::string_view raw, std::size_t max_chars) {
  std::string s = sanitized(raw);
  if (s.size() <= max_chars) return s;
  s.resize(max_chars - k_hash_chars);
  return s + hash_suffix(raw);
}

struct Field {
  std::string key;   // in the entry, for messages
  std::string name;  // the full metric name
  std::string unit;
  std::optional<model::Better> better;
  double value;
};

struct Pending {  // the aggregate a benchmark without repetitions in the file is read from
  std::string bench;
  std::string aggregate;  // "median" or "mean"
  long long index;        // of its entry, for messages
  std::vector<Field> fields;
};

struct Bench {
  std::string prefix;  // metric names are <prefix>.<metric>
  bool has_iterations = false;
  long long iterations_seen = 0;       // step numbers when an entry has no repetition_index
  std::optional<std::size_t> pending;  // into GbenchParser::m_pending
};

class GbenchParser final : public OutputParser {
 public:
  GbenchParser(MetricRegistry& registry, std::string json_path) : OutputParser(registry), m_path(std::move(json_path)) {
    m_registry.raise_limit(k_max_metrics);
  }

  bool reads_lines() const override { return false; }

  void finish(double t_s) override {
    if (m_finished) return;
    m_finished = true;
    m_t_s = t_s;
    try {
      read_file();
    } catch (const std::exception& e) {  // out of memory and the like: report, never throw out of the trial
      bad(LineSource::File, 0,
          fmt::format("{}: cannot read: {}", m_path, std::string_view(e.what()).substr(0, k_max_error_chars)), m_path);
    }
    try {
      flush_aggregates();
    } catch (const std::exception& e) {
      bad(LineSource::File, 0,
          fmt::format("{}: cannot read: {}", m_path, std::string_view(e.what()).substr(0, k_max_error_chars)), m_path);
    }
  }

 protected:
  void line(std::string_view, LineSource, long long, double) override {}

 private:
  void read_file() {
    std::error_code ec;
    if (std::filesystem::is_directory(m_path, ec))
      return bad(LineSource::File, 0, fmt::format("{}: is a directory, not a Google Benchmark JSON file", m_path),
                 m_path);
    std::filebuf file;
    if (!file.open(m_path, std::ios::in | std::ios::binary))
      return bad(LineSource::File, 0,
                 fmt::format("{}: cannot open the Google Benchmark JSON file ({}); does the command pass "
                             "--benchmark_out={} --benchmark_out_format=json?",
                             m_path, std::strerror(errno), m_path),
                 m_path);
    NonFiniteRewriter rewriter(file);
    std::istream in(&rewriter);
    if (in.peek() == std::char_traits<char>::eof())
      return bad(
          LineSource::File, 0,
          fmt::format("{}: the Google Benchmark JSON file is empty (did the benchmark binary stop early?)", m_path),
          m_path);

    // Google Benchmark's JSON is four levels deep. A value nested far deeper
    // would be built whole and then printed recursively (a stack overflow
    // under ASan at 10,000 levels): parsing stops at this depth.
    constexpr int k_max_depth = 64;
    struct TooDeep {};
    json::parser_callback_t callback = [this](int depth, json::parse_event_t event, json& parsed) {
      if (depth > k_max_depth) throw TooDeep{};
      return on_event(depth, event, parsed);
    };
    try {
      // The root left over is tiny: every entry and the context were discarded as they were read.
      [[maybe_unused]] json root = json::parse(in, callback, /*allow_exceptions=*/true);
    } catch (const TooDeep&) {
      return bad(
          LineSource::File, 0,
          fmt::format("{}: values nested deeper than {} levels: not Google Benchmark JSON output", m_path, k_max_depth),
          m_path);
    } catch (const json::exception& e) {
      if (rewriter.long_token_at() != 0)
        return bad(LineSource::File, 0,
                   fmt::format("{}: a string or number longer than {} MiB at byte {}: not Google Benchmark JSON "
                               "output (what was read before it is kept)",
                               m_path, k_max_token_bytes >> 20, rewriter.long_token_at()),
                   m_path);
      const auto* parse_error = dynamic_cast<const json::parse_error*>(&e);
      if (parse_error == nullptr)  // a number too large for a double, and the like
        return bad(
            LineSource::File, 0,
            fmt::format("{}: not valid JSON: {}", m_path, std::string_view(e.what()).substr(0, k_max_error_chars)),
            m_path);
      // Entries read before the error have been handed on already; only the rest of the file is lost.
      std::string_view what = e.what();
      if (auto p = what.find("] "); p != std::string_view::npos) what.remove_prefix(p + 2);
      // nlohmann quotes the token it stopped in, which for a string cut by the end of the file can be long.
      std::string shown(what.substr(0, k_max_error_chars));
      if (what.size() > k_max_error_chars) shown += "...";
      // The parser stopped only after the last byte: the file is cut, not garbled.
      std::error_code size_ec;
      auto size_bytes = std::filesystem::file_size(m_path, size_ec);
      bool cut = !size_ec && parse_error->byte > size_bytes;
      return bad(LineSource::File, 0,
                 fmt::format("{}: not valid JSON at byte {}{}: {}", m_path, parse_error->byte,
                             cut ? " (the file ends early: was the benchmark binary stopped?)" : "", shown),
                 m_path);
    }
    if (!m_saw_benchmarks)
      return bad(LineSource::File, 0,
                 fmt::format("{}: no \"benchmarks\" array: not Google Benchmark JSON output", m_path), m_path);
    if (m_entries == 0) note(fmt::format("{}: the Google Benchmark JSON file lists no benchmarks", m_path));
  }

  // Keeps only what is needed: each benchmark entry and the context are read when they end and then dropped
  // (returning false discards a value), so the document never grows.
  bool on_event(int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (depth == 0) {
      if (event == E::object_start) m_root_is_object = true;
      return true;
    }
    if (depth == 1) {
      switch (event) {
        case E::key:
          if (m_root_is_object) m_top_key = parsed.get<std::string>();
          return true;
        case E::array_end:
          m_in_benchmarks = false;
          return false;
        case E::object_end:
          if (m_root_is_object && m_top_key == "context") context(parsed);
          return false;
        case E::object_start:
        case E::array_start:
          break;  // below
        case E::value:
          return false;
      }
      // Only the context and the benchmarks are read; anything else is skipped unbuilt (false at its start).
      if (event == E::array_start && m_top_key == "benchmarks") {
        m_in_benchmarks = m_saw_benchmarks = true;
        return true;
      }
      return event == E::object_start && m_top_key == "context";
    }
    if (depth == 2 && m_in_benchmarks && (event == E::object_end || event == E::array_end || event == E::value)) {
      entry(parsed, ++m_entries);
      return false;
    }
    return true;
  }

  void context(const json& ctx) {
    if (string_field(ctx, "library_build_type") == "debug")
      note("Google Benchmark library built as debug: timings may not be representative");
    if (auto it = ctx.find("cpu_scaling_enabled"); it != ctx.end() && it->is_boolean() && it->get<bool>())
      note("CPU frequency scaling was enabled while the benchmarks ran: timings may be noisy");
  }

  void entry(const json& e, long long index) {
    if (!e.is_object())
      return bad(LineSource::File, index, fmt::format("benchmark entry {} is not a JSON object", index), e.dump());
    std::string name = string_field(e, "name");
    std::string run_name = string_field(e, "run_name");
    if (name.empty() && run_name.empty())
      return bad(LineSource::File, index, fmt::format("benchmark entry {} has no name", index), e.dump());
    const std::string& shown = name.empty() ? run_name : name;
    if (auto it = e.find("error_occurred"); it != e.end() && it->is_boolean() && it->get<bool>()) {
      std::string message = string_field(e, "error_message");
      return bad(LineSource::File, index,
                 fmt::format("benchmark {} failed: {}", shown, message.empty() ? "(no error message)" : message),
                 shown);
    }

    bool aggregate = string_field(e, "run_type") == "aggregate";
    std::string aggregate_name = aggregate ? string_field(e, "aggregate_name") : std::string();
    std::string bench_name = run_name;
    if (bench_name.empty()) {
      // Versions before run_name: an aggregate's name is "<run name>_<aggregate>".
      bench_name = name;
      std::string tail = "_" + aggregate_name;
      if (aggregate && !aggregate_name.empty() && bench_name.ends_with(tail) && bench_name.size() > tail.size())
        bench_name.resize(bench_name.size() - tail.size());
    }
    Bench& b = bench(bench_name);

    if (aggregate) {
      // With repetitions in the file, the repetitions are the data; statistics of them add nothing.
      if (b.has_iterations || (aggregate_name != "median" && aggregate_name != "mean")) return;
      if (b.pending && m_pending[*b.pending].aggregate == "median") return;  // median wins over mean
      if (!b.pending) {
        b.pending = m_pending.size();
        m_pending.push_back({bench_name, {}, 0, {}});
      }
      Pending& p = m_pending[*b.pending];
      p.aggregate = aggregate_name;
      p.index = index;
      fields_of(e, b.prefix, p.fields);
      return;
    }

    b.has_iterations = true;
    if (b.pending) {
      // Repetitions after the aggregates (a reordered file): the aggregate is no longer needed.
      Pending& p = m_pending[*b.pending];
      p.fields.clear();
      p.fields.shrink_to_fit();
      p.aggregate.clear();
    }
    long long step_no = b.iterations_seen++;
    if (auto it = e.find("repetition_index"); it != e.end() && it->is_number_integer() && it->get<long long>() >= 0)
      step_no = it->get<long long>();
    fields_of(e, b.prefix, m_fields);
    record(m_fields, step_no, shown, index);
  }

  // The state of a benchmark, made the first time it is seen: its metric-name prefix is fixed then.
  Bench& bench(const std::string& bench_name) {
    auto it = m_benches.find(bench_name);
    if (it != m_benches.end()) return it->second;
    std::string prefix = fitted(bench_name, k_max_prefix_chars);
    // Two names that differ only in invalid characters ("BM a", "BM_a") must not share metrics.
    if (m_prefixes.contains(prefix)) {
      prefix.resize(std::min(prefix.size(), k_max_prefix_chars - k_hash_chars));
      prefix += hash_suffix(bench_name);
    }
    m_prefixes.insert(prefix);
    Bench& b = m_benches[bench_name];
    b.prefix = std::move(prefix);
    return b;
  }

  // The metrics of one entry, by full name: the library's own first, then user counters.
  void fields_of(const json& e, const std::string& prefix, std::vector<Field>& out) {
    out.clear();
    std::string unit = sanitized(string_field(e, "time_unit"));
    if (unit.empty()) unit = "ns";  // the library's default unit
    auto fixed = [&](const char* key, std::string name, std::string metric_unit, model::Better better) {
      auto it = e.find(key);
      if (it == e.end()) return;
      if (auto v = number_of(*it)) out.push_back({key, std::move(name), std::move(metric_unit), better, *v});
    };
    fixed("real_time", fmt::format("{}.real_time_{}", prefix, unit), unit, model::Better::Lower);
    fixed("cpu_time", fmt::format("{}.cpu_time_{}", prefix, unit), unit, model::Better::Lower);
    fixed("items_per_second", prefix + ".items_per_second", "items/s", model::Better::Higher);
    fixed("bytes_per_second", prefix + ".bytes_per_second", "B/s", model::Better::Higher);
    for (auto it = e.begin(); it != e.end(); ++it) {
      const std::string& key = it.key();
      if (key.empty() || is_known_non_metric(key) || is_fixed_metric(key)) continue;
      auto v = number_of(it.value());
      if (!v) continue;  // strings, booleans, objects: not measurements
      // A user counter: its name says what it is (throughput, time, memory) and which way is better.
      out.push_back({key, prefix + "." + fitted(key, k_max_name_chars - prefix.size() - 1), {}, std::nullopt, *v});
    }
  }

  void record(const std::vector<Field>& fields, long long step_no, const std::string& shown, long long index) {
    m_values.clear();
    long long dropped = 0;
    for (const auto& f : fields) {
      int id = metric(f.name, f.unit, f.better);
      if (id < 0) {
        ++dropped;
        continue;
      }
      // Two fields of one name: a counter named like a time metric ("real_time_ns"), or two counters that differ
      // only in invalid characters. The first (the library's own metric) is kept; a step has one value per metric.
      if (std::any_of(m_values.begin(), m_values.end(), [&](const auto& v) { return v.first == id; })) {
        bad(LineSource::File, index,
            fmt::format("benchmark {}: field '{}' not recorded: metric {} has a value already", shown, f.key, f.name),
            shown);
        continue;
      }
      m_values.emplace_back(id, f.value);
    }
    if (dropped > 0)
      bad(LineSource::File, index,
          fmt::format("benchmark {}: {} of its metrics not recorded: the trial already has {} metrics, the most it "
                      "may hold",
                      shown, dropped, m_registry.size()),
          shown);
    step(step_no, m_t_s, m_values);
  }

  // Benchmarks the file holds only aggregates of (--benchmark_report_aggregates_only): one step from the median.
  void flush_aggregates() {
    std::vector<std::string> listed;
    std::size_t used = 0;
    for (const auto& p : m_pending) {
      if (p.aggregate.empty() || m_benches.at(p.bench).has_iterations) continue;
      ++used;
      if (listed.size() < k_max_listed) listed.push_back(fmt::format("{} ({})", p.bench, p.aggregate));
      record(p.fields, 0, p.bench, p.index);
    }
    if (used == 0) return;
    std::string more = used > listed.size() ? fmt::format(" and {} more", used - listed.size()) : std::string();
    note(fmt::format("{}: {} benchmark{} read from aggregates, the file has no repetitions of them: {}{}", m_path, used,
                     used == 1 ? "" : "s", util::join(listed, ", "), more));
    m_pending.clear();
  }

  std::string m_path;
  double m_t_s = 0;
  bool m_finished = false;
  // Where the parser is in the document.
  bool m_root_is_object = false, m_in_benchmarks = false, m_saw_benchmarks = false;
  std::string m_top_key;
  long long m_entries = 0;  // elements of "benchmarks" so far, for 1-based entry numbers
  // Per benchmark, small: its name, prefix and, without repetitions, one aggregate.
  std::unordered_map<std::string, Bench> m_benches;
  std::unordered_set<std::string> m_prefixes;
  std::vector<Pending> m_pending;
  // Reused per entry.
  std::vector<Field> m_fields;
  std::vector<std::pair<int, double>> m_values;
};

}  // namespace

std::unique_ptr<OutputParser> make_gbench_parser(MetricRegistry& registry, std::string json_path) {
  return std::make_unique<GbenchParser>(registry, std::move(json_path));
}

}  // namespace perfgate::metrics
