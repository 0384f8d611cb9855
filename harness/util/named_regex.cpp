#include "harness/util/named_regex.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace perfgate::util {

// Escapes and bracket expressions are skipped so "\(" and "[(]" are not
// groups; "(?:", "(?=", "(?!" are not capturing.
Expected<NamedPattern> rewrite_named_groups(std::string_view re) {
  NamedPattern p;
  bool in_class = false;
  for (std::size_t i = 0; i < re.size(); ++i) {
    char c = re[i];
    if (c == '\\') {
      if (!in_class && i + 1 < re.size() && re[i + 1] == 'k' && re.substr(i + 2, 1) == "<")
        return Error::input("named back-references (\\k<name>) are not supported; use the group number (\\1)");
      p.ecmascript += re.substr(i, 2);
      ++i;
      continue;
    }
    if (in_class) {
      p.ecmascript += c;
      if (c == ']') in_class = false;
      continue;
    }
    if (c == '[') {
      in_class = true;
      p.ecmascript += c;
      continue;
    }
    if (c != '(') {
      p.ecmascript += c;
      continue;
    }
    auto rest = re.substr(i);
    std::size_t name_at = 0;
    if (rest.starts_with("(?P<"))
      name_at = 4;
    else if (rest.starts_with("(?<") && !rest.starts_with("(?<=") && !rest.starts_with("(?<!"))
      name_at = 3;
    if (rest.starts_with("(?P=")) return Error::input("named back-references ((?P=name)) are not supported; use \\1");
    if (name_at == 0) {
      if (!rest.starts_with("(?")) p.group_names.emplace_back();
      p.ecmascript += c;
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
    p.group_names.push_back(std::move(name));
    p.ecmascript += '(';
    i += close;
  }
  return p;
}

}  // namespace perfgate::util
