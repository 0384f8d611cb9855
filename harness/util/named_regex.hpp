#pragma once
// Named groups for std::regex. ECMAScript regexes have none, but suites write
// "(?<name>...)" (and Python's "(?P<name>...)") to say which number feeds
// which metric; the command sampler and the regex log parser both read them.

#include <string>
#include <string_view>
#include <vector>

#include "harness/util/error.hpp"

namespace perfgate::util {

struct NamedPattern {
  std::string ecmascript;                // the pattern with plain groups
  std::vector<std::string> group_names;  // [i] names group i+1; "" for an unnamed group
};

// Rewrites named groups to plain ones, recording the names by group number.
// Names are letters, digits, '_' and '.', not starting with a digit, each used once.
Expected<NamedPattern> rewrite_named_groups(std::string_view re);

}  // namespace perfgate::util
