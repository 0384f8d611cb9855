#include "harness/metrics/protocol.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace perfgate::metrics {
namespace {

using json = nlohmann::json;

// Python's json.dumps writes NaN, Infinity and -Infinity, which JSON lacks.
// Losses do go NaN, and that must be recorded, so map the bare tokens (outside
// strings) to marker strings and parse again. Only runs for lines that failed.
std::string replace_nonfinite(std::string_view s, bool& changed) {
  std::string out;
  out.reserve(s.size() + 16);
  bool in_str = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (in_str) {
      out += c;
      if (c == '\\' && i + 1 < s.size())
        out += s[++i];
      else if (c == '"')
        in_str = false;
      continue;
    }
    if (c == '"') in_str = true;
    auto rest = s.substr(i);
    if (rest.starts_with("NaN")) {
      out += "\"__nan__\"";
      i += 2;
      changed = true;
    } else if (rest.starts_with("-Infinity")) {
      out += "\"__-inf__\"";
      i += 8;
      changed = true;
    } else if (rest.starts_with("Infinity")) {
      out += "\"__inf__\"";
      i += 7;
      changed = true;
    } else {
      out += c;
    }
  }
  return out;
}

// A number, or one of the markers above; nullopt for anything else.
std::optional<double> number_of(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "__nan__") return std::numeric_limits<double>::quiet_NaN();
    if (s == "__inf__") return std::numeric_limits<double>::infinity();
    if (s == "__-inf__") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

// Fast path for the common line, a flat step record of numbers: reads it with
// nlohmann's SAX interface, so no DOM is built. Anything else (nested objects,
// arrays, non-finite tokens, errors) makes it give up, and the line takes the
// general DOM path below; that is rare (summary and meta records, bad lines).
class FlatRecordSax {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  std::vector<std::pair<std::string, double>>& fields;  // reused buffers: key text is overwritten in place
  std::size_t count = 0;
  int depth = 0;
  bool pending_key = false;

  explicit FlatRecordSax(std::vector<std::pair<std::string, double>>& f) : fields(f) {}

  bool null() { return value_skip(); }
  bool boolean(bool) { return value_skip(); }
  bool number_integer(number_integer_t v) { return value(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) { return value(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) { return value(v); }
  bool string(string_t&) { return value_skip(); }
  bool binary(binary_t&) { return false; }
  bool start_object(std::size_t) { return ++depth == 1; }
  bool end_object() {
    --depth;
    return true;
  }
  bool start_array(std::size_t) { return false; }
  bool end_array() { return false; }
  bool key(string_t& k) {
    // Summary and meta records, whatever their values, take the general path.
    if (depth == 1 && (k == "summary" || k == "meta")) return false;
    if (count == fields.size()) fields.emplace_back();
    fields[count].first.assign(k);
    pending_key = true;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  bool value(double v) {
    if (depth != 1 || !pending_key) return false;
    fields[count++].second = v;
    pending_key = false;
    return true;
  }
  bool value_skip() {  // strings, booleans, null: annotations, not metrics
    if (depth != 1) return false;
    // A "step" that is not a number is an error the general path reports.
    if (pending_key && fields[count].first == "step") return false;
    pending_key = false;
    return true;
  }
};

}  // namespace

void ProtocolParser::bad(LineSource src, long long line_no, std::string reason, std::string_view text) {
  m_malformed.add(src, line_no, std::move(reason), text);
}

void ProtocolParser::feed_file_line(std::string_view line, bool oversized, double arrival_t_s) {
  ++m_file_lines;
  if (line.empty() && !oversized) return;
  parse(line, LineSource::File, m_file_lines, oversized, arrival_t_s);
}

void ProtocolParser::feed_stdout_line(std::string_view line, bool oversized, double arrival_t_s) {
  ++m_stdout_lines;
  if (!line.starts_with(k_stdout_prefix)) return;
  parse(line.substr(k_stdout_prefix.size()), LineSource::Stdout, m_stdout_lines, oversized, arrival_t_s);
}

void ProtocolParser::parse(std::string_view text, LineSource src, long long line_no, bool oversized,
                           double arrival_t_s) {
  if (oversized) return bad(src, line_no, "line longer than 1 MiB", text);
  {
    FlatRecordSax sax(m_flat);
    if (json::sax_parse(text, &sax) && sax.depth == 0) {
      ++m_records;
      return step_record(m_flat, sax.count, src, line_no, arrival_t_s, text);
    }
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    bool changed = false;
    auto fixed = replace_nonfinite(text, changed);
    if (changed) j = json::parse(fixed, nullptr, false);
    if (j.is_discarded()) return bad(src, line_no, "not valid JSON", text);
  }
  if (!j.is_object()) return bad(src, line_no, "not a JSON object", text);
  ++m_records;

  if (auto it = j.find("summary"); it != j.end()) {
    if (!it->is_object()) return bad(src, line_no, "\"summary\" must be an object of numbers", text);
    for (auto s = it->begin(); s != it->end(); ++s) {
      auto v = number_of(s.value());
      int id = metric_id(s.key());
      if (!v || id < 0) {
        bad(src, line_no, fmt::format("summary value '{}' is not a number under a valid name", s.key()), text);
        continue;
      }
      m_sink.on_summary(id, *v);
    }
    return;
  }
  if (auto it = j.find("meta"); it != j.end()) {
    if (!it->is_object()) return bad(src, line_no, "\"meta\" must be an object", text);
    if (auto u = it->find("units"); u != it->end() && u->is_object())
      for (auto e = u->begin(); e != u->end(); ++e)
        if (int id = metric_id(e.key()); id >= 0 && e.value().is_string())
          m_sink.on_meta_unit(id, e.value().get_ref<const std::string&>());
    if (auto b = it->find("better"); b != it->end() && b->is_object())
      for (auto e = b->begin(); e != b->end(); ++e) {
        auto dir =
            e.value().is_string() ? model::better_from_string(e.value().get_ref<const std::string&>()) : std::nullopt;
        int id = metric_id(e.key());
        if (!dir || id < 0) {
          bad(src, line_no, fmt::format("meta.better.{} must be \"lower\", \"higher\" or \"none\"", e.key()), text);
          continue;
        }
        m_sink.on_meta_better(id, *dir);
      }
    if (auto k = it->find("kind"); k != it->end()) {
      if (!k->is_object())
        return bad(src, line_no, "meta.kind must be an object of metric -> \"fact\" or \"measurement\"", text);
      for (auto e = k->begin(); e != k->end(); ++e) {
        const std::string kind = e.value().is_string() ? e.value().get<std::string>() : "";
        int id = metric_id(e.key());
        if (id < 0 || (kind != "fact" && kind != "measurement")) {
          bad(src, line_no,
              fmt::format("meta.kind.{} must be \"fact\" or \"measurement\", found {}", e.key(), e.value().dump()),
              text);
          continue;
        }
        if (kind == "fact") m_sink.on_meta_fact(id);
      }
    }
    return;
  }

  if (auto st = j.find("step"); st != j.end() && !st->is_number())
    return bad(src, line_no, "\"step\" must be a non-negative number", text);
  std::size_t n = 0;
  for (auto it = j.begin(); it != j.end(); ++it) {
    auto v = number_of(it.value());
    if (!v) continue;  // strings, booleans, objects: annotations, not metrics
    if (n == m_flat.size()) m_flat.emplace_back();
    m_flat[n].first = it.key();
    m_flat[n].second = *v;
    ++n;
  }
  step_record(m_flat, n, src, line_no, arrival_t_s, text);
}

void ProtocolParser::step_record(const std::vector<std::pair<std::string, double>>& fields, std::size_t count,
                                 LineSource src, long long line_no, double arrival_t_s, std::string_view text) {
  // A step record. "step" may be left out (then steps count up from the last one).
  long long step = m_last_step + 1;
  double t_s = arrival_t_s;
  m_values.clear();
  for (std::size_t i = 0; i < count; ++i) {
    const std::string& key = fields[i].first;
    std::optional<double> v = fields[i].second;
    if (key == "step") {
      // Below 9e18: a long long holds it (1e30 was undefined behaviour, found by the fuzzer).
      if (!v || !std::isfinite(*v) || *v < 0 || *v > 9e18)
        return bad(src, line_no, "\"step\" must be a non-negative number below 9e18", text);
      step = static_cast<long long>(*v);
      continue;
    }
    if (key == "t_s") {
      if (v && std::isfinite(*v)) t_s = *v;
      continue;
    }
    // Records usually repeat their keys in the same order: try the id seen at this position first.
    int id = -1;
    if (i < m_position_ids.size() && m_position_ids[i].first == key) {
      id = m_position_ids[i].second;
    } else {
      id = metric_id(key);
      if (i >= m_position_ids.size()) m_position_ids.resize(i + 1);
      m_position_ids[i] = {key, id};
    }
    if (id < 0) {
      bad(src, line_no, fmt::format("metric name '{}' is invalid or one too many", excerpt_of(key)), text);
      continue;
    }
    // A key given twice in one record: the last value wins, as in a JSON object.
    auto dup = std::find_if(m_values.begin(), m_values.end(), [&](const auto& e) { return e.first == id; });
    if (dup != m_values.end())
      dup->second = *v;
    else
      m_values.emplace_back(id, *v);
  }
  if (m_values.empty()) return bad(src, line_no, "a step record with no numeric metric", text);
  m_last_step = step;
  m_sink.on_step(step, t_s, m_values);
}

}  // namespace perfgate::metrics
