// The metric protocol: each line as a stdout line (PERFGATE prefix) and as a
// metrics-file line, with and without the reader's "cut" flag.
#include "harness/metrics/protocol.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace perfgate;
  fuzz::NullSink sink;
  metrics::ProtocolParser parser(sink);
  auto text = fuzz::text_of(data, size);
  double t = 0;
  for (auto line : fuzz::lines_of(text)) {
    parser.feed_stdout_line(line, false, t);
    parser.feed_file_line(line, line.size() > 64, t);
    t += 0.001;
  }
  return 0;
}
