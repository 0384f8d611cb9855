// The regex log parser: the first line is the suite's pattern, the rest the log.
#include "harness/metrics/output_parser.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace perfgate;
  auto text = fuzz::text_of(data, size);
  auto lines = fuzz::lines_of(text);
  if (lines.empty()) return 0;
  model::LogPattern pat;
  pat.regex = std::string(lines[0]);
  pat.summary = !pat.regex.empty() && pat.regex.back() == ' ';
  fuzz::NullSink sink;
  metrics::MetricRegistry reg(sink);
  auto parser = metrics::make_regex_parser(reg, {pat});
  if (!parser) return 0;
  for (std::size_t i = 1; i < lines.size(); ++i) (*parser)->feed_line(lines[i], metrics::LineSource::Stdout, false, 0);
  (*parser)->finish(1);
  return 0;
}
