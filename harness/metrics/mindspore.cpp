// MindSpore training callbacks:
//
//   TimeMonitor  "epoch time: 12345.678 ms, per step time: 123.456 ms"   (2.x: "Train epoch time: ...",
//                optionally followed by " (data time: 1.234 ms)")
//   LossMonitor  "epoch: 1 step: 10, loss is 2.3456"   (the loss may also be "[2.3456]" or a tuple of Tensors)
//
// Each TimeMonitor line is one step record numbered by epoch (1-based); each LossMonitor line one step record
// numbered by a running count, since the printed step restarts every epoch. The two kinds count separately
// and a line recognised but unreadable still counts, so numbers stay aligned with the epochs and steps that ran.

#include <cmath>
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

constexpr std::string_view k_epoch_time = "epoch time:";
constexpr std::string_view k_step_time = "per step time:";
constexpr std::string_view k_data_time = "data time:";
constexpr std::string_view k_eval_prefix = "Eval ";  // TimeMonitor's "Eval epoch time" is evaluation, not training
constexpr std::string_view k_loss_is = "loss is";
constexpr std::string_view k_epoch_word = "epoch:";

// "123.456 ms" (cut at the next ',' or '(' by the caller). The unit is always printed, so a value without it is
// a line that stopped inside the number.
std::optional<double> ms_value(std::string_view text) {
  auto t = util::trim(text);
  if (!t.ends_with("ms")) return std::nullopt;
  t.remove_suffix(2);
  return parse_number(t);
}

// Inside of "[ ... ]" brackets, any depth ("[2.3]", "[[2.3]]", "[ 2.3e+00]").
std::string_view strip_brackets(std::string_view s) {
  s = util::trim(s);
  while (!s.empty() && s.front() == '[') s = util::trim(s.substr(1));
  while (!s.empty() && s.back() == ']') s = util::trim(s.substr(0, s.size() - 1));
  return s;
}

// The loss printed after "loss is": a bare number, "[x]", or "(Tensor(shape=[], dtype=Float32, value= x), ...)"
// whose first value is the loss. On failure `why` says what was wrong.
std::optional<double> loss_value(std::string_view text, std::string& why) {
  auto s = util::trim(text);
  if (s.empty()) {
    why = "loss value missing (line cut short?)";
    return std::nullopt;
  }
  std::string_view token;
  if (s.front() == '(' || s.starts_with("Tensor(")) {
    auto at = s.find("value=");
    if (at == npos) {
      why = "loss tensor without 'value=' (line cut short?)";
      return std::nullopt;
    }
    auto rest = s.substr(at + 6);
    auto end = rest.find_first_of(",)");
    if (end == npos) {
      why = "loss tensor cut short";
      return std::nullopt;
    }
    token = strip_brackets(rest.substr(0, end));
  } else if (s.front() == '[') {
    auto close = s.find(']');
    if (close == npos) {
      why = "loss cut short before ']'";
      return std::nullopt;
    }
    token = strip_brackets(s.substr(0, close + 1));
  } else {
    token = s.substr(0, s.find_first_of(" \t,;"));  // "loss is 2.3456, lr 0.1 ..." carries on after the number
  }
  auto v = parse_number(token);
  if (!v) why = fmt::format("loss '{}' is not a number", excerpt_of(token));
  return v;
}

class MindsporeParser final : public OutputParser {
 public:
  MindsporeParser(MetricRegistry& registry, double batch_size) : OutputParser(registry), m_batch_size(batch_size) {}

  void line(std::string_view text, LineSource src, long long line_no, double t_s) override {
    if (auto at = text.find(k_epoch_time); at != npos) return time_monitor(text, at, src, line_no, t_s);
    if (auto at = text.find(k_loss_is); at != npos) {
      // LossMonitor prints the epoch before the loss; "loss is" alone is too common a phrase.
      if (text.substr(0, at).find(k_epoch_word) == npos) return;
      loss_monitor(text, at, src, line_no, t_s);
    }
  }

 private:
  void time_monitor(std::string_view text, std::size_t at, LineSource src, long long line_no, double t_s) {
    if (text.substr(0, at).ends_with(k_eval_prefix)) return;
    long long epoch = ++m_epochs;
    auto rest = text.substr(at + k_epoch_time.size());
    auto epoch_text = until(rest, ",");
    auto epoch_ms = ms_value(epoch_text);
    if (!epoch_ms) {
      auto why = fmt::format("epoch time '{}' is not a number of ms", excerpt_of(util::trim(epoch_text)));
      return bad(src, line_no, std::move(why), text);
    }
    auto step_at = rest.find(k_step_time);
    if (step_at == npos) return bad(src, line_no, "TimeMonitor line cut short before 'per step time'", text);
    auto step_rest = rest.substr(step_at + k_step_time.size());
    auto step_text = until(step_rest, ",(");
    auto step_ms = ms_value(step_text);
    if (!step_ms) {
      auto why = fmt::format("per step time '{}' is not a number of ms", excerpt_of(util::trim(step_text)));
      return bad(src, line_no, std::move(why), text);
    }

    if (m_epoch_time_id == k_unresolved) {
      m_epoch_time_id = metric("epoch_time_ms", "ms", Better::Lower);
      m_step_time_id = metric("step_time_ms", "ms", Better::Lower);
    }
    m_values.clear();
    if (m_epoch_time_id >= 0) m_values.emplace_back(m_epoch_time_id, *epoch_ms);
    if (m_step_time_id >= 0) m_values.emplace_back(m_step_time_id, *step_ms);
    // TimeMonitor(data_time=True): host time spent fetching data per step; optional, so skipped when unreadable.
    if (auto data_at = step_rest.find(k_data_time); data_at != npos) {
      if (auto data_ms = ms_value(until(step_rest.substr(data_at + k_data_time.size()), ")"))) {
        if (m_data_time_id == k_unresolved) m_data_time_id = metric("data_time_ms", "ms", Better::Lower);
        if (m_data_time_id >= 0) m_values.emplace_back(m_data_time_id, *data_ms);
      }
    }
    // Samples per second on this device: the batch size is the suite's, the log does not print it.
    if (m_batch_size > 0 && *step_ms > 0 && std::isfinite(*step_ms)) {
      if (m_throughput_id == k_unresolved) m_throughput_id = metric("throughput", "samples/s", Better::Higher);
      if (m_throughput_id >= 0) m_values.emplace_back(m_throughput_id, m_batch_size / (*step_ms / 1000.0));
    }
    step(epoch, t_s, m_values);
  }

  void loss_monitor(std::string_view text, std::size_t at, LineSource src, long long line_no, double t_s) {
    long long n = ++m_loss_lines;
    std::string why;
    auto loss = loss_value(text.substr(at + k_loss_is.size()), why);
    if (!loss) return bad(src, line_no, why, text);
    if (m_loss_id == k_unresolved) m_loss_id = metric("loss", {}, Better::None);
    if (m_loss_id < 0) return;
    m_values.clear();
    m_values.emplace_back(m_loss_id, *loss);
    step(n, t_s, m_values);
  }

  // `s` up to the first of `stops`, or all of it.
  static std::string_view until(std::string_view s, std::string_view stops) {
    return s.substr(0, s.find_first_of(stops));
  }

  static constexpr int k_unresolved = -2;  // metric ids are looked up once, when first needed
  double m_batch_size;
  long long m_epochs = 0;
  long long m_loss_lines = 0;
  int m_epoch_time_id = k_unresolved, m_step_time_id = k_unresolved, m_data_time_id = k_unresolved;
  int m_throughput_id = k_unresolved, m_loss_id = k_unresolved;
  std::vector<std::pair<int, double>> m_values;  // reused per line
};

}  // namespace

std::unique_ptr<OutputParser> make_mindspore_parser(MetricRegistry& registry, double batch_size) {
  return std::make_unique<MindsporeParser>(registry, batch_size);
}

}  // namespace perfgate::metrics
