#include "harness/util/user_regex.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <re2/re2.h>

namespace perfgate::util {
namespace {

struct NamedPattern {
  std::string plain;                     // the pattern with plain groups
  std::vector<std::string> group_names;  // [i] names group i+1; "" for an unnamed group
};

// Escapes and bracket expressions are skipped so "\(" and "[(]" are not
// groups; "(?:", "(?=", "(?!" are not capturing.
Expected<NamedPattern> rewrite_named_groups(std::string_view re) {
  NamedPattern p;
  bool in_class = false;
  for (std::size_t i = 0; i < re.size(); ++i) {
    char c = re[i];
    if (c == '\\') {
      if (!in_class && i + 1 < re.size() && re[i + 1] == 'k' && re.substr(i + 2, 1) == "<")
        return Error::input("back-references (\\k<name>) are not supported: patterns run in linear time (RE2)");
      p.plain += re.substr(i, 2);
      ++i;
      continue;
    }
    if (in_class) {
      p.plain += c;
      if (c == ']') in_class = false;
      continue;
    }
    if (c == '[') {
      in_class = true;
      p.plain += c;
      continue;
    }
    if (c != '(') {
      p.plain += c;
      continue;
    }
    auto rest = re.substr(i);
    std::size_t name_at = 0;
    if (rest.starts_with("(?P<"))
      name_at = 4;
    else if (rest.starts_with("(?<") && !rest.starts_with("(?<=") && !rest.starts_with("(?<!"))
      name_at = 3;
    if (rest.starts_with("(?P="))
      return Error::input("back-references ((?P=name)) are not supported: patterns run in linear time (RE2)");
    if (name_at == 0) {
      if (!rest.starts_with("(?")) p.group_names.emplace_back();
      p.plain += c;
      continue;
    }
    auto close = rest.find('>');
    if (close == std::string_view::npos)
      return Error::input(fmt::format("group name at offset {} is not closed by '>'", i));
    auto name = std::string(rest.substr(name_at, close - name_at));
    bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                 std::all_of(name.begin(), name.end(), [](char ch) {
                   return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.';
                 });
    if (!valid) return Error::input(fmt::format("'{}' is not a valid group name (letters, digits, _ and .)", name));
    if (std::find(p.group_names.begin(), p.group_names.end(), name) != p.group_names.end())
      return Error::input(fmt::format("group name '{}' is used twice", name));
    // "(?<x>?:a)" must not become "(?:a)": a named group's body cannot start
    // with an operator that would turn the plain '(' into another construct.
    if (close + 1 < rest.size() && std::string_view("?*+{").find(rest[close + 1]) != std::string_view::npos)
      return Error::input(fmt::format("group '{}' starts with '{}', which repeats nothing", name, rest[close + 1]));
    p.group_names.push_back(std::move(name));
    p.plain += '(';
    i += close;
  }
  return p;
}

}  // namespace

Expected<UserRegex> UserRegex::compile(std::string_view pattern) {
  auto named = rewrite_named_groups(pattern);
  if (!named) return named.error();
  RE2::Options opt;
  opt.set_log_errors(false);  // the error reaches the user through the caller, with the file and line
  auto re = std::make_shared<const RE2>(re2::StringPiece(named->plain.data(), named->plain.size()), opt);
  if (!re->ok()) {
    std::string why = re->error();
    if (re->error_code() == RE2::ErrorBadEscape && re->error_arg().size() == 2 &&
        std::isdigit(static_cast<unsigned char>(re->error_arg()[1])))
      why += " (back-references are not supported: patterns run in linear time, RE2 syntax)";
    if (named->plain.find("(?=") != std::string::npos || named->plain.find("(?!") != std::string::npos ||
        named->plain.find("(?<=") != std::string::npos || named->plain.find("(?<!") != std::string::npos)
      why += " (look-around is not supported: patterns run in linear time, RE2 syntax)";
    return Error::input(fmt::format("does not compile: {}", why));
  }
  // A pattern whose groups this rewrite counts otherwise than RE2 does cannot
  // feed metrics by name reliably: refused, never a crash (the fuzzer found one).
  if (static_cast<std::size_t>(re->NumberOfCapturingGroups()) != named->group_names.size())
    return Error::input(
        fmt::format("has {} capturing group(s) to RE2 but {} to perfgate's reading of it; write "
                    "groups as (...), (?:...), (?<name>...) or (?P<name>...)",
                    re->NumberOfCapturingGroups(), named->group_names.size()));
  UserRegex out;
  out.m_re = std::move(re);
  out.m_names = std::move(named->group_names);
  return out;
}

bool UserRegex::search(std::string_view text, std::vector<std::string_view>& subs) const {
  const std::size_t n = m_names.size() + 1;
  // Called for every log line: the pieces' buffer is kept, not allocated per call.
  thread_local std::vector<re2::StringPiece> pieces;
  pieces.assign(n, re2::StringPiece());
  if (!m_re->Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED, pieces.data(),
                   static_cast<int>(n)))
    return false;
  subs.assign(n, std::string_view());
  for (std::size_t i = 0; i < n; ++i)
    if (pieces[i].data() != nullptr) subs[i] = std::string_view(pieces[i].data(), pieces[i].size());
  return true;
}

}  // namespace perfgate::util
