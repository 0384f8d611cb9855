// Release checklists.
#include "harness/suite/checklist_loader.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)perfgate::suite::load_checklist_text(perfgate::fuzz::text_of(data, size), "checklist.yaml");
  return 0;
}
