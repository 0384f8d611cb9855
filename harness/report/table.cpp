#include "harness/report/table.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "harness/util/strings.hpp"

namespace perfgate::report {

namespace {
// Display width in code points, so UTF-8 text lines up.
std::size_t width(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}
}  // namespace

void TextTable::columns(std::vector<std::string> headers, std::vector<Align> align) {
  m_headers = std::move(headers);
  m_align = std::move(align);
  m_align.resize(m_headers.size(), Align::Left);
}

void TextTable::row(std::vector<std::string> cells) {
  cells.resize(m_headers.size());
  m_rows.push_back(std::move(cells));
}

void TextTable::separator() { m_rows.emplace_back(); }

std::string TextTable::render() const {
  std::vector<std::size_t> w(m_headers.size(), 0);
  for (std::size_t i = 0; i < m_headers.size(); ++i) w[i] = width(m_headers[i]);
  for (const auto& r : m_rows)
    for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      std::size_t pad = w[i] - width(cells[i]);
      bool last = i + 1 == cells.size();
      if (m_align[i] == Align::Right)
        out += std::string(pad, ' ') + cells[i];
      else
        out += cells[i] + (last ? "" : std::string(pad, ' '));
      if (!last) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(m_headers);
  for (const auto& r : m_rows) out += r.empty() ? "\n" : line(r);
  return out;
}

std::string TextTable::render_markdown() const {
  std::string out = "|";
  for (const auto& h : m_headers) out += " " + markdown_escape(h) + " |";
  out += "\n|";
  for (auto a : m_align) out += a == Align::Right ? "---:|" : "---|";
  out += "\n";
  for (const auto& r : m_rows) {
    if (r.empty()) continue;
    out += "|";
    for (const auto& c : r) out += " " + markdown_escape(c) + " |";
    out += "\n";
  }
  return out;
}

std::string markdown_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '|':
        out += "\\|";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\n':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_value(double v) { return util::format_value(v); }

std::string format_with_unit(double v, std::string_view unit) {
  return unit.empty() ? format_value(v) : fmt::format("{} {}", format_value(v), unit);
}

std::string format_percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }

std::string format_utc(double unix_s) {
  if (unix_s <= 0) return "-";
  auto t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02} UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min);
}

}  // namespace perfgate::report
