// Values typed on the command line: --set, --only, --slots, --db (or
// $PERFGATE_DB), durations, sizes and failure limits; each line is tried as
// every kind.
#include "harness/store/store.hpp"
#include "harness/suite/loader.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/util/units.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace perfgate;
  auto text = fuzz::text_of(data, size);
  for (auto line : fuzz::lines_of(text)) {
    const std::string s(line);
    (void)suite::parse_override(s);
    (void)suite::parse_filter(s);
    (void)suite::parse_slots_option(s);
    (void)util::parse_duration_s(s);
    (void)util::parse_bytes(s);
    (void)util::parse_failure_limit(s);
    (void)store::backend_of(s);
    (void)store::display_name(s);
  }
  return 0;
}
