#pragma once
// Splits a byte stream into lines without ever holding more than one line
// (capped at max_line_bytes) in memory, whatever the producer writes.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace perfgate::util {

class LineSplitter {
 public:
  // on_line(line, oversized): line without its '\n' (and a trailing '\r');
  // oversized lines are cut to max_line_bytes and flagged.
  using Callback = std::function<void(std::string_view line, bool oversized)>;

  explicit LineSplitter(std::size_t max_line_bytes = 1 << 20) : m_max(max_line_bytes) {}

  void feed(std::string_view chunk, const Callback& on_line);
  // Emits a final line that had no '\n'.
  void finish(const Callback& on_line);

 private:
  void emit(std::string_view line, const Callback& on_line);
  std::string m_partial;
  std::size_t m_max;
  bool m_oversized = false;
};

}  // namespace perfgate::util
