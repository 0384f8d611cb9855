#include "harness/metrics/registry.hpp"

#include <algorithm>

namespace perfgate::metrics {

std::string_view to_string(LineSource s) {
  switch (s) {
    case LineSource::File:
      return "metrics file";
    case LineSource::Stdout:
      return "stdout";
    case LineSource::Stderr:
      return "stderr";
  }
  return "?";
}

bool valid_metric_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-' || c == '/' || c == ':';
}

bool valid_metric_name(std::string_view n) {
  if (n.empty() || n.size() > 128) return false;
  return std::all_of(n.begin(), n.end(), valid_metric_char);
}

int MetricRegistry::id(std::string_view name) {
  auto it = m_ids.find(std::string(name));
  if (it != m_ids.end()) return it->second;
  if (m_ids.size() >= m_max || !valid_metric_name(name)) return -1;
  int id = static_cast<int>(m_ids.size());
  m_ids.emplace(std::string(name), id);
  m_sink.on_new_metric(id, name);
  return id;
}

std::string excerpt_of(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) {
    auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (text.size() > 80) out += "...";
  return out;
}

void MalformedLines::add(LineSource src, long long line_no, std::string reason, std::string_view text) {
  ++m_count;
  if (m_kept.size() < k_max_kept) m_kept.push_back({src, line_no, std::move(reason), excerpt_of(text)});
}

}  // namespace perfgate::metrics
