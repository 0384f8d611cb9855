#pragma once
// Patterns written by users (a suite's regex log parser, a command sampler)
// through RE2: matching takes time linear in the line, whatever the pattern,
// so a 1 MB line or a pathological pattern cannot hang or overflow a trial's
// reader (std::regex recursed per character). Suites name groups
// "(?<name>...)" or Python's "(?P<name>...)" to say which number feeds which
// metric; names may contain '.' (RE2's may not), so they are rewritten to
// plain groups and kept here by group number. RE2 has no back-references and
// no look-around; such patterns are refused with the reason.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "harness/util/error.hpp"

namespace re2 {
class RE2;
}

namespace perfgate::util {

class UserRegex {
 public:
  // Names are letters, digits, '_' and '.', not starting with a digit, each
  // used once. The error says what is wrong, without where (the caller knows).
  static Expected<UserRegex> compile(std::string_view pattern);

  std::size_t groups() const { return m_names.size(); }
  // [i] names group i+1; "" for an unnamed group.
  const std::vector<std::string>& group_names() const { return m_names; }
  // Looks for the pattern anywhere in `text`. On a match, subs[0] is the
  // match and subs[i] group i; a group that took no part has data() == nullptr.
  bool search(std::string_view text, std::vector<std::string_view>& subs) const;

 private:
  std::shared_ptr<const re2::RE2> m_re;
  std::vector<std::string> m_names;
};

}  // namespace perfgate::util
