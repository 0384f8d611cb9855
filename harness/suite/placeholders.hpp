#pragma once
// `{name}` placeholders in argv and env values. `{{` and `}}` stand for
// literal braces. Substitution is textual and never involves a shell.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/util/error.hpp"

namespace perfgate::suite {

struct PlaceholderRef {
  std::string name;
  std::size_t offset = 0;  // of the opening brace in the text
};

// Every placeholder in `text`, or an error for an unclosed brace.
Expected<std::vector<PlaceholderRef>> find_placeholders(std::string_view text);

// Replaces each placeholder by lookup(name); a name lookup() does not know is an error.
Expected<std::string> substitute(std::string_view text,
                                 const std::function<std::optional<std::string>(std::string_view)>& lookup);

}  // namespace perfgate::suite
