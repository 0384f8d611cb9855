// Gate policies.
#include "harness/suite/policy_loader.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)perfgate::suite::load_gate_policy_text(perfgate::fuzz::text_of(data, size), "gate.yaml");
  return 0;
}
