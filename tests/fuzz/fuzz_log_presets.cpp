// The log presets (megatron, mindspore, modelzoo, ais_bench) over the same
// lines, on stdout and stderr.
#include "harness/metrics/output_parser.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace perfgate;
  auto text = fuzz::text_of(data, size);
  auto lines = fuzz::lines_of(text);
  for (int which = 0; which < 4; ++which) {
    fuzz::NullSink sink;
    metrics::MetricRegistry reg(sink);
    std::unique_ptr<metrics::OutputParser> p;
    switch (which) {
      case 0:
        p = metrics::make_megatron_parser(reg);
        break;
      case 1:
        p = metrics::make_mindspore_parser(reg, 32);
        break;
      case 2:
        p = metrics::make_modelzoo_parser(reg);
        break;
      default:
        p = metrics::make_ais_bench_parser(reg);
        break;
    }
    double t = 0;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      p->feed_line(lines[i], i % 3 == 2 ? metrics::LineSource::Stderr : metrics::LineSource::Stdout, false, t);
      t += 0.01;
    }
    p->finish(t);
    (void)p->notes();
  }
  return 0;
}
