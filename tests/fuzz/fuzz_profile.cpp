// Machine profiles: the input is a profile applied to a small fixed suite.
#include "harness/suite/loader.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {
const char* k_suite = R"(suite: fuzz
defaults: {repeats: 1}
workloads:
  - name: w
    command: [/bin/true, "{x}"]
    matrix: {x: [1, 2]}
)";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  perfgate::fuzz::MemFile profile(data, size);
  perfgate::suite::LoadOptions opt;
  opt.profiles = {profile.path()};
  (void)perfgate::suite::load_suite_text(k_suite, "fuzz.yaml", "/tmp", opt);
  return 0;
}
