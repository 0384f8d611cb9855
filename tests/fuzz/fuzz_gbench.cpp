// Google Benchmark JSON, read from its file at the trial's end.
#include "harness/metrics/output_parser.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace perfgate;
  fuzz::MemFile file(data, size);
  fuzz::NullSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_gbench_parser(reg, file.path());
  p->finish(1);
  (void)p->notes();
  return 0;
}
