#include "harness/model/suite.hpp"

#include <fmt/format.h>

namespace perfgate::model {

std::string SourceLoc::str() const {
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

std::string Warmup::str() const {
  switch (kind) {
    case Kind::Steps:
      return fmt::format("{} steps", amount);
    case Kind::Seconds:
      return fmt::format("{} s", amount);
    case Kind::Auto:
      return "auto";
    case Kind::None:
      break;
  }
  return "none";
}

}  // namespace perfgate::model
