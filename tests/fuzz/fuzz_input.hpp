#pragma once
// What the fuzz targets share: the input as text and lines, a metrics sink
// that keeps nothing, and the input as a file path (a memfd) for readers that
// take a path. Each target is one file defining LLVMFuzzerTestOneInput; the
// same file links against libFuzzer (scripts/fuzz.sh) or against replay.cpp,
// which runs the checked-in corpus in the default tests.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/metrics/registry.hpp"

namespace perfgate::fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

inline std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

// Accepts everything, keeps nothing: the parsers' own limits are what is fuzzed.
class NullSink final : public metrics::ProtocolSink {
 public:
  void on_new_metric(int, std::string_view) override {}
  void on_step(long long, double, const std::vector<std::pair<int, double>>&) override {}
  void on_summary(int, double) override {}
  void on_meta_unit(int, std::string_view) override {}
  void on_meta_better(int, model::Better) override {}
  void on_meta_fact(int) override {}
};

// The input as a file only this process sees: /proc/self/fd/N of a memfd.
class MemFile {
 public:
  MemFile(const std::uint8_t* data, std::size_t size) : m_fd(::memfd_create("fuzz", MFD_CLOEXEC)) {
    std::size_t done = 0;
    while (m_fd >= 0 && done < size) {
      auto n = ::write(m_fd, data + done, size - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
  }
  ~MemFile() {
    if (m_fd >= 0) ::close(m_fd);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(m_fd); }

 private:
  int m_fd;
};

}  // namespace perfgate::fuzz
