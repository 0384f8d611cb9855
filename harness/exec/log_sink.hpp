#pragma once
// A capped log file: the first `limit` bytes go to the file as they come;
// past the limit only a rolling tail is kept, written at close after a note
// saying how much was dropped. Memory stays bounded whatever the producer does.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace perfgate::exec {

class LogSink {
 public:
  LogSink(const std::string& path, std::uint64_t limit_bytes, std::size_t tail_bytes = 64 << 10);
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  bool ok() const { return m_file != nullptr; }
  void write(std::string_view data);
  void close();  // flushes the tail and the truncation note

  std::uint64_t total_bytes() const { return m_total; }
  bool truncated() const { return m_total > m_limit; }
  // The last `max_lines` lines seen, from the rolling tail (or the head if short).
  std::string last_lines(std::size_t max_lines) const;

 private:
  void remember_tail(std::string_view data);
  std::FILE* m_file = nullptr;
  std::uint64_t m_limit;
  std::uint64_t m_total = 0;
  std::size_t m_tail_cap;
  std::string m_tail;  // ring of the most recent bytes (linearised on demand)
  std::size_t m_tail_pos = 0;
  bool m_tail_full = false;
};

}  // namespace perfgate::exec
