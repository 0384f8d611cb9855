// ModelZoo-PyTorch performance scripts end with "Key = value" lines, one summary each:
//
//   Network = ResNet50_ID0058_for_PyTorch
//   ActualFPS = 2345.67
//   TrainingTime = 109.12
//
// The whole line must be "<Identifier> = <value>" (after leading "[...]" groups such as a time stamp, "[INFO]" or
// "[rank0]:"), so that prose containing '=' is not mistaken for a result.

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "harness/metrics/output_parser.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::metrics {
namespace {

using model::Better;
constexpr auto npos = std::string_view::npos;

struct KnownKey {
  std::string_view key;
  std::string_view metric;
  std::string_view unit;
  Better better;
  bool fact = false;  // a setting the script echoes (batch size, rank count), not a measurement
};
// The keys the scripts compute; their value must be a number. TrainingTime is BatchSize*1000/FPS: ms per step.
constexpr std::array<KnownKey, 6> k_known_keys = {{
    {"ActualFPS", "throughput", "samples/s", Better::Higher},
    {"TrainingTime", "step_time_ms", "ms", Better::Lower},
    {"E2ETrainingTime", "e2e_time_s", "s", Better::Lower},
    {"ActualLoss", "loss", "", Better::None},
    {"BatchSize", "batch_size", "", Better::None, true},
    {"RankSize", "rank_size", "", Better::None, true},
}};

bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_identifier(std::string_view s) {
  if (s.empty() || !(is_upper(s.front()) || is_lower(s.front()))) return false;
  for (char c : s)
    if (!(is_upper(c) || is_lower(c) || is_digit(c) || c == '_')) return false;
  return true;
}

// The keys are CamelCase, which snake_case alone would run together ("TrainAccuracy" -> "trainaccuracy"): a word
// starts at an upper-case letter after a lower-case one, or at the last capital of an acronym before a lower-case
// letter ("ActualFPS" -> actual_fps, "E2ETrainingTime" -> e2e_training_time, "Top1Acc" -> top1_acc).
std::string metric_name_of(std::string_view key) {
  std::string spaced;
  spaced.reserve(key.size() + 8);
  for (std::size_t i = 0; i < key.size(); ++i) {
    char c = key[i];
    if (i > 0 && is_upper(c)) {
      char prev = key[i - 1];
      bool next_lower = i + 1 < key.size() && is_lower(key[i + 1]);
      if (is_lower(prev) || ((is_upper(prev) || is_digit(prev)) && next_lower)) spaced += ' ';
    }
    spaced += c;
  }
  return snake_case(spaced);
}

class ModelzooParser final : public OutputParser {
 public:
  explicit ModelzooParser(MetricRegistry& registry) : OutputParser(registry) {}

  void line(std::string_view text, LineSource src, long long line_no, double /*t_s*/) override {
    auto eq = text.find('=');
    if (eq == npos) return;  // most lines: nothing more to look at
    auto s = skip_bracket_prefix(text);
    eq = s.find('=');
    if (eq == npos) return;
    auto key = util::trim(s.substr(0, eq));
    if (!is_identifier(key)) return;
    auto raw = util::trim(s.substr(eq + 1));
    auto v = parse_number(raw);

    for (const auto& k : k_known_keys) {
      if (k.key != key) continue;
      if (!v) return bad(src, line_no, fmt::format("{} value '{}' is not a number", key, excerpt_of(raw)), text);
      return summary(metric(k.metric, k.unit, k.better, k.fact), *v);
    }
    // Other keys: numbers become summaries, text (Network, DeviceType, CaseName) describes the run.
    if (v) summary(metric(metric_name_of(key), {}, Better::None), *v);
  }
};

}  // namespace

std::unique_ptr<OutputParser> make_modelzoo_parser(MetricRegistry& registry) {
  return std::make_unique<ModelzooParser>(registry);
}

}  // namespace perfgate::metrics
