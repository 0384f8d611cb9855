#pragma once
// Where the unit tests find their data and the repository. The paths are
// compiled into one translation unit (paths.cpp) only: as -D definitions on
// every test file they would key each file's ccache entry by the folder the
// checkout sits in, and a clean clone elsewhere would rebuild them all.

#include <string>

namespace perfgate::test {

// tests/data of this checkout, without a trailing slash.
const std::string& data_dir();
// The repository root.
const std::string& source_dir();

}  // namespace perfgate::test
