#include "harness/exec/log_sink.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "harness/util/units.hpp"

namespace perfgate::exec {

LogSink::LogSink(const std::string& path, std::uint64_t limit_bytes, std::size_t tail_bytes)
    : m_limit(limit_bytes), m_tail_cap(tail_bytes) {
  if (!path.empty()) m_file = std::fopen(path.c_str(), "wb");
  m_tail.resize(m_tail_cap);
}

LogSink::~LogSink() { close(); }

void LogSink::remember_tail(std::string_view data) {
  if (m_tail_cap == 0) return;
  if (data.size() >= m_tail_cap) {
    data = data.substr(data.size() - m_tail_cap);
    std::copy(data.begin(), data.end(), m_tail.begin());
    m_tail_pos = 0;
    m_tail_full = true;
    return;
  }
  std::size_t first = std::min(data.size(), m_tail_cap - m_tail_pos);
  std::copy_n(data.begin(), first, m_tail.begin() + static_cast<std::ptrdiff_t>(m_tail_pos));
  std::copy(data.begin() + static_cast<std::ptrdiff_t>(first), data.end(), m_tail.begin());
  if (m_tail_pos + data.size() >= m_tail_cap) m_tail_full = true;
  m_tail_pos = (m_tail_pos + data.size()) % m_tail_cap;
}

void LogSink::write(std::string_view data) {
  if (m_file && m_total < m_limit) {
    auto room = static_cast<std::size_t>(std::min<std::uint64_t>(m_limit - m_total, data.size()));
    std::fwrite(data.data(), 1, room, m_file);
  }
  m_total += data.size();
  remember_tail(data);
}

std::string LogSink::last_lines(std::size_t max_lines) const {
  std::string lin =
      m_tail_full ? m_tail.substr(m_tail_pos) + m_tail.substr(0, m_tail_pos) : m_tail.substr(0, m_tail_pos);
  while (!lin.empty() && lin.back() == '\n') lin.pop_back();
  std::size_t pos = lin.size();
  for (std::size_t n = 0; n < max_lines && pos != std::string::npos && pos > 0; ++n) pos = lin.rfind('\n', pos - 1);
  return pos == std::string::npos || pos == 0 ? lin : lin.substr(pos + 1);
}

void LogSink::close() {
  if (!m_file) return;
  if (truncated()) {
    std::uint64_t kept_tail = std::min<std::uint64_t>(m_total - m_limit, m_tail_full ? m_tail_cap : m_tail_pos);
    std::string note =
        fmt::format("\n[perfgate: output truncated at {}; {} dropped of {} in all; the last {} follow]\n",
                    util::format_bytes(m_limit), util::format_bytes(m_total - m_limit - kept_tail),
                    util::format_bytes(m_total), util::format_bytes(kept_tail));
    std::fwrite(note.data(), 1, note.size(), m_file);
    std::string lin =
        m_tail_full ? m_tail.substr(m_tail_pos) + m_tail.substr(0, m_tail_pos) : m_tail.substr(0, m_tail_pos);
    lin = lin.substr(lin.size() - static_cast<std::size_t>(kept_tail));
    std::fwrite(lin.data(), 1, lin.size(), m_file);
  }
  std::fclose(m_file);
  m_file = nullptr;
}

}  // namespace perfgate::exec
