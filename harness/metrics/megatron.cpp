// Megatron-LM / MindSpeed training logs: one step record per iteration line,
// per-rank memory summaries from the "[Rank N] ... memory (MB)" lines.
//
//   [2024-05-01 10:00:00] iteration 10/ 1000 | consumed samples: 640 | elapsed time per iteration (ms): 1234.5 | ...
//   [Rank 0] (after 10 iterations) memory (MB) | allocated: 1234.5 | max allocated: 2345.6 | reserved: ... | ...
//
// Lines are scanned as string_views, no regex: this runs on every output line of a training job.

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "harness/metrics/output_parser.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::metrics {
namespace {

using model::Better;
constexpr auto npos = std::string_view::npos;

constexpr std::string_view k_iteration_word = "iteration";
constexpr std::string_view k_elapsed_key = "elapsed time per iteration (ms)";
constexpr std::string_view k_batch_key = "global batch size";
constexpr std::string_view k_memory_marker = "memory (MB)";
constexpr std::string_view k_rank_marker = "[Rank ";

// Fields Megatron prints that get a name of our own; any other "key: number" becomes snake_case(key), Better::None.
struct KnownField {
  std::string_view key;
  std::string_view metric;
  std::string_view unit;
  Better better;
};
constexpr std::array<KnownField, 10> k_known_fields = {{
    {k_elapsed_key, "step_time_ms", "ms", Better::Lower},
    {"throughput per GPU (TFLOP/s/GPU)", "tflops_per_gpu", "TFLOP/s", Better::Higher},
    {"consumed samples", "consumed_samples", "", Better::None},
    {k_batch_key, "global_batch_size", "", Better::None},
    {"learning rate", "learning_rate", "", Better::None},
    {"lm loss", "loss", "", Better::None},
    {"loss scale", "loss_scale", "", Better::None},
    {"grad norm", "grad_norm", "", Better::None},
    {"number of skipped iterations", "skipped_iterations", "", Better::None},
    {"number of nan iterations", "nan_iterations", "", Better::None},
}};

// The four values of a memory line, in the order Megatron prints them.
constexpr std::array<std::string_view, 4> k_memory_keys = {"allocated", "max allocated", "reserved", "max reserved"};
constexpr std::size_t k_max_allocated = 1;
// Memory lines come from one rank per model-parallel group; this only guards against garbage rank numbers.
constexpr std::size_t k_max_ranks = 4096;
// Field positions whose key -> metric id is remembered; iteration lines have about a dozen.
constexpr std::size_t k_max_cached_positions = 64;

// A non-negative integer and nothing else.
std::optional<long long> parse_count(std::string_view text) {
  auto t = util::trim(text);
  long long v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < 0) return std::nullopt;
  return v;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// The text of N in an "iteration N/ M" field (the first field also carries the line's prefix), unchecked; nullopt
// when the field is not one.
std::optional<std::string_view> iteration_number_text(std::string_view field) {
  auto at = field.rfind(k_iteration_word);
  if (at == npos) return std::nullopt;
  if (at > 0 && is_letter(field[at - 1])) return std::nullopt;  // "...iteration" inside another word
  auto rest = field.substr(at + k_iteration_word.size());
  // "iterations: 0" and "iteration (ms): 12" are other fields; the iteration field is "iteration N/ M".
  if (rest.empty() || !is_space(rest.front()) || rest.find(':') != npos) return std::nullopt;
  auto slash = rest.find('/');
  if (slash == npos) return std::nullopt;
  // N and M are single tokens: "saving checkpoint at iteration 50 to /ckpt" is not an iteration field.
  auto n = util::trim(rest.substr(0, slash));
  auto m = util::trim(rest.substr(slash + 1));
  auto blank = [](std::string_view t) { return t.find_first_of(" \t") != npos; };
  if (n.empty() || m.empty() || blank(n) || blank(m)) return std::nullopt;
  return n;
}

class MegatronParser final : public OutputParser {
 public:
  explicit MegatronParser(MetricRegistry& registry) : OutputParser(registry) {}

  void line(std::string_view text, LineSource src, long long line_no, double t_s) override {
    if (text.find(k_memory_marker) != npos) return memory_line(text, src, line_no);
    // Cheap pre-filter: every iteration line mentions the word; most other lines do not.
    if (text.find(k_iteration_word) == npos) return;
    iteration_line(text, src, line_no, t_s);
  }

  // Memory summaries: the last line of each rank, and the largest "max allocated" over ranks.
  void finish(double /*t_s*/) override {
    if (m_ranks.empty()) return;
    std::optional<double> max_allocated_mb;
    for (const auto& [rank, mb] : m_ranks) {
      double v = mb[k_max_allocated];
      if (!std::isnan(v) && (!max_allocated_mb || v > *max_allocated_mb)) max_allocated_mb = v;
    }
    // The job-wide number first: it is the one gates use, and must not be the one past the metric limit.
    if (max_allocated_mb) summary(metric("mem_max_allocated_mb", "MB", Better::Lower), *max_allocated_mb);
    for (const auto& [rank, mb] : m_ranks)
      for (std::size_t k = 0; k < k_memory_keys.size(); ++k) {
        if (std::isnan(mb[k])) continue;
        auto name = fmt::format("rank{}.mem_{}_mb", rank, snake_case(k_memory_keys[k]));
        summary(metric(name, "MB", Better::Lower), mb[k]);
      }
    m_ranks.clear();  // a second finish() must not repeat them
  }

 private:
  struct Field {
    std::string_view key;  // points into the current line
    double value;
    std::size_t position;  // index among the line's fields, for the id cache
  };
  struct CachedId {
    std::string key;
    int id = -1;
    int known = -1;  // index into k_known_fields, or -1
  };

  void iteration_line(std::string_view text, LineSource src, long long line_no, double t_s) {
    // Megatron ends the line with " |"; a line without it whose last field cannot be read was cut short.
    auto trimmed = util::trim(text);
    bool terminated = !trimmed.empty() && trimmed.back() == '|';

    m_fields.clear();
    std::optional<std::string_view> step_text;
    std::optional<double> elapsed_ms;
    bool elapsed_seen = false;
    std::string_view elapsed_raw, cut_field;
    std::size_t position = 0;
    for (std::size_t pos = 0; pos <= text.size(); ++position) {
      auto bar = text.find('|', pos);
      bool last = bar == npos;
      auto field = util::trim(text.substr(pos, last ? npos : bar - pos));
      pos = last ? text.size() + 1 : bar + 1;
      if (field.empty()) continue;
      bool unterminated = last && !terminated;
      if (!step_text) {
        if (auto n = iteration_number_text(field)) {
          step_text = *n;
          continue;
        }
      }
      // Values never hold ':', keys might after a prefix: split at the last one.
      auto colon = field.rfind(':');
      if (colon == npos) {
        if (unterminated) cut_field = field;
        continue;
      }
      auto key = util::trim(field.substr(0, colon));
      auto raw = field.substr(colon + 1);
      auto v = parse_number(raw);
      if (key == k_elapsed_key) {
        elapsed_seen = true;
        elapsed_ms = v;
        elapsed_raw = util::trim(raw);
      }
      if (!v) {
        // Optional fields that are not numbers are skipped, unless the line stops inside them.
        if (unterminated) cut_field = field;
        continue;
      }
      if (!key.empty()) m_fields.push_back({key, *v, position});
    }

    // Recognised: an "iteration N/ M" field and the elapsed-time field. A line that starts as an iteration line but
    // stops before the elapsed time was cut short; a complete one without it is some other report.
    if (!step_text) return;
    if (!elapsed_seen) {
      if (!terminated) bad(src, line_no, fmt::format("iteration line cut short before '{}'", k_elapsed_key), text);
      return;
    }
    auto step_no = parse_count(*step_text);
    if (!step_no)
      return bad(src, line_no, fmt::format("iteration number '{}' is not a non-negative integer", *step_text), text);
    if (!elapsed_ms)
      return bad(src, line_no, fmt::format("'{}' value '{}' is not a number", k_elapsed_key, elapsed_raw), text);
    if (!cut_field.empty())
      return bad(src, line_no, fmt::format("line cut short in field '{}'", excerpt_of(cut_field)), text);

    m_values.clear();
    std::optional<double> batch;
    for (const auto& f : m_fields) {
      const auto& c = cached_id(f.key, f.position);
      if (c.id < 0) continue;  // not a valid metric name, or past the registry's limit
      m_values.emplace_back(c.id, f.value);
      if (c.known >= 0 && k_known_fields[static_cast<std::size_t>(c.known)].key == k_batch_key) batch = f.value;
    }
    // Samples per second of the whole job, from the global batch; a zero or non-finite step time says nothing.
    if (batch && *elapsed_ms > 0 && std::isfinite(*elapsed_ms)) {
      if (m_throughput_id == k_unresolved) m_throughput_id = metric("throughput", "samples/s", Better::Higher);
      if (m_throughput_id >= 0) m_values.emplace_back(m_throughput_id, *batch / (*elapsed_ms / 1000.0));
    }
    step(*step_no, t_s, m_values);
  }

  // Lines repeat their fields in the same order: the id found at a position is tried first next time.
  const CachedId& cached_id(std::string_view key, std::size_t position) {
    // Keys are never empty, so a fresh (resized) slot never matches.
    if (position < m_cache.size() && m_cache[position].key == key) return m_cache[position];
    CachedId c;
    c.key = std::string(key);
    for (std::size_t i = 0; i < k_known_fields.size() && c.known < 0; ++i)
      if (k_known_fields[i].key == key) c.known = static_cast<int>(i);
    if (c.known >= 0) {
      const auto& k = k_known_fields[static_cast<std::size_t>(c.known)];
      // The global batch size is a setting the log repeats: a fact, not a measurement.
      c.id = metric(k.metric, k.unit, k.better, k.key == k_batch_key);
    } else {
      c.id = metric(snake_case(key), {}, Better::None);
    }
    if (position >= k_max_cached_positions) {
      m_overflow = std::move(c);
      return m_overflow;
    }
    if (position >= m_cache.size()) m_cache.resize(position + 1);
    m_cache[position] = std::move(c);
    return m_cache[position];
  }

  void memory_line(std::string_view text, LineSource src, long long line_no) {
    auto rank_at = text.find(k_rank_marker);
    if (rank_at == npos) return;  // recognised only with its "[Rank N]"
    auto rank_text = text.substr(rank_at + k_rank_marker.size());
    auto close = rank_text.find(']');
    rank_text = rank_text.substr(0, close);
    auto rank = close == npos ? std::nullopt : parse_count(rank_text);
    if (!rank)
      return bad(src, line_no, fmt::format("rank '{}' in '[Rank N]' is not a number", excerpt_of(rank_text)), text);

    std::array<double, 4> mb;
    mb.fill(std::numeric_limits<double>::quiet_NaN());
    bool any = false;
    auto rest = text.substr(text.find(k_memory_marker) + k_memory_marker.size());
    for (std::size_t pos = 0; pos <= rest.size();) {
      auto bar = rest.find('|', pos);
      auto field = util::trim(rest.substr(pos, bar == npos ? npos : bar - pos));
      pos = bar == npos ? rest.size() + 1 : bar + 1;
      if (field.empty()) continue;
      // Every field of a memory line is "key: value"; one without ':' is what is left of a cut line.
      auto colon = field.find(':');
      if (colon == npos)
        return bad(src, line_no, fmt::format("memory field '{}' has no value (line cut short?)", excerpt_of(field)),
                   text);
      auto key = util::trim(field.substr(0, colon));
      for (std::size_t k = 0; k < k_memory_keys.size(); ++k) {
        if (key != k_memory_keys[k]) continue;
        auto v = parse_number(field.substr(colon + 1));
        if (!v)
          return bad(src, line_no,
                     fmt::format("memory value '{}' is not a number: '{}'", key,
                                 excerpt_of(util::trim(field.substr(colon + 1)))),
                     text);
        mb[k] = *v;
        any = true;
      }
    }
    if (!any) return bad(src, line_no, "memory line without allocated/reserved values", text);
    if (m_ranks.size() >= k_max_ranks && !m_ranks.contains(*rank))
      return bad(src, line_no, fmt::format("memory line of more than {} ranks", k_max_ranks), text);
    m_ranks[*rank] = mb;  // the last line of a rank wins
  }

  static constexpr int k_unresolved = -2;
  std::vector<Field> m_fields;                   // reused per line
  std::vector<std::pair<int, double>> m_values;  // reused per line
  std::vector<CachedId> m_cache;                 // by field position
  CachedId m_overflow;
  int m_throughput_id = k_unresolved;
  std::map<long long, std::array<double, 4>> m_ranks;  // MB by k_memory_keys, NaN where the line had none
};

}  // namespace

std::unique_ptr<OutputParser> make_megatron_parser(MetricRegistry& registry) {
  return std::make_unique<MegatronParser>(registry);
}

}  // namespace perfgate::metrics
