#include "tests/unit/support/paths.hpp"

namespace perfgate::test {

const std::string& data_dir() {
  static const std::string dir = PERFGATE_TEST_DATA;
  return dir;
}

const std::string& source_dir() {
  static const std::string dir = PERFGATE_SOURCE_DIR;
  return dir;
}

}  // namespace perfgate::test
