// Suite files: YAML in, a suite or an error with file, line and key out.
#include "harness/suite/loader.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto s = perfgate::suite::load_suite_text(perfgate::fuzz::text_of(data, size), "fuzz.yaml", "/tmp");
  if (s) (void)s->workloads.size();
  return 0;
}
