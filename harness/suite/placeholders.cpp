#include "harness/suite/placeholders.hpp"

#include <fmt/format.h>

namespace perfgate::suite {
namespace {

// Walks text, calling on_literal for plain runs and on_name for placeholders.
template <typename Lit, typename Name>
Status scan(std::string_view text, Lit&& on_literal, Name&& on_name) {
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      on_literal(std::string_view("{"));
      i += 2;
    } else if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      on_literal(std::string_view("}"));
      i += 2;
    } else if (c == '{') {
      auto close = text.find('}', i + 1);
      if (close == std::string_view::npos)
        return Error::input(
            fmt::format("unclosed '{{' at offset {} in '{}' (write '{{{{' for a literal brace)", i, text));
      auto name = text.substr(i + 1, close - i - 1);
      if (name.empty() || name.find_first_of("{ \t") != std::string_view::npos)
        return Error::input(fmt::format("'{{{}}}' in '{}' is not a placeholder name", name, text));
      if (auto st = on_name(name, i); !st) return st;
      i = close + 1;
    } else {
      auto next = text.find_first_of("{}", i + 1);
      if (next == std::string_view::npos) next = text.size();
      on_literal(text.substr(i, next - i));
      i = next;
    }
  }
  return Ok{};
}

}  // namespace

Expected<std::vector<PlaceholderRef>> find_placeholders(std::string_view text) {
  std::vector<PlaceholderRef> refs;
  auto st = scan(
      text, [](std::string_view) {},
      [&](std::string_view name, std::size_t off) -> Status {
        refs.push_back({std::string(name), off});
        return Ok{};
      });
  if (!st) return st.error();
  return refs;
}

Expected<std::string> substitute(std::string_view text,
                                 const std::function<std::optional<std::string>(std::string_view)>& lookup) {
  std::string out;
  out.reserve(text.size());
  auto st = scan(
      text, [&](std::string_view lit) { out += lit; },
      [&](std::string_view name, std::size_t) -> Status {
        auto v = lookup(name);
        if (!v) return Error::input(fmt::format("unknown placeholder '{{{}}}' in '{}'", name, text));
        out += *v;
        return Ok{};
      });
  if (!st) return st.error();
  return out;
}

}  // namespace perfgate::suite
