#include "harness/util/line_splitter.hpp"

namespace perfgate::util {

void LineSplitter::emit(std::string_view line, const Callback& on_line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  on_line(line, m_oversized);
  m_oversized = false;
}

void LineSplitter::feed(std::string_view chunk, const Callback& on_line) {
  while (!chunk.empty()) {
    auto nl = chunk.find('\n');
    std::string_view piece = chunk.substr(0, nl);
    if (nl != std::string_view::npos && m_partial.empty() && piece.size() <= m_max) {
      emit(piece, on_line);  // fast path: whole line in this chunk, no copy
    } else {
      std::size_t room = m_max > m_partial.size() ? m_max - m_partial.size() : 0;
      if (piece.size() > room) m_oversized = true;
      m_partial.append(piece.substr(0, room));
      if (nl != std::string_view::npos) {
        emit(m_partial, on_line);
        m_partial.clear();
      }
    }
    if (nl == std::string_view::npos) break;
    chunk.remove_prefix(nl + 1);
  }
}

void LineSplitter::finish(const Callback& on_line) {
  if (!m_partial.empty() || m_oversized) emit(m_partial, on_line);
  m_partial.clear();
}

}  // namespace perfgate::util
