#pragma once
// Where a value came from in a suite, profile, policy or checklist file, so
// every error can name the file, line and column.

#include <string>

namespace perfgate::model {

struct SourceLoc {
  std::string file;
  int line = 0;             // 1-based; 0 when unknown (values from the command line)
  int column = 0;           // 1-based
  std::string str() const;  // "suites/x.yaml:12:5", or the file alone
};

}  // namespace perfgate::model
