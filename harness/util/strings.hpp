#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfgate::util {

std::string_view trim(std::string_view s);
// A whole non-negative integer (surrounding white space allowed): an id, an index.
std::optional<long> parse_non_negative(std::string_view s);
std::vector<std::string> split(std::string_view s, char sep);
// Fields separated by runs of spaces and tabs; no empty fields.
std::vector<std::string> split_whitespace(std::string_view s);
std::string join(std::span<const std::string> parts, std::string_view sep);
// FNV-1a 64 in 16 hex digits: a stable, dependency-free digest (fingerprints,
// build cache keys); collisions are not a security matter here.
std::string fnv1a_hex(std::string_view s);
// "0,2,3": numbers joined by commas, as device lists are written.
std::string join_ints(std::span<const int> values);
bool starts_with(std::string_view s, std::string_view prefix);
std::string to_upper_identifier(std::string_view s);  // "dataloader.num_workers" -> "DATALOADER_NUM_WORKERS"

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The closest candidate within a distance that scales with the word, or nothing.
std::optional<std::string> closest(std::string_view word, std::span<const std::string> candidates);
// " (did you mean 'x'?)" or "".
std::string did_you_mean(std::string_view word, std::span<const std::string> candidates);

// True for environment variable names that look like they hold credentials;
// their values are never stored or shown.
bool looks_secret(std::string_view env_name);
// The value to store for an environment variable: "<redacted>" for secret
// names, and credentials inside URLs ("http://user:pass@host") masked for the rest.
std::string redact_env_value(std::string_view env_name, std::string_view value);

// About four significant digits without exponents: "930.1", "12345", "0.0123".
std::string format_value(double v);

// Byte offset of the first byte that is not part of valid UTF-8, or npos.
std::size_t first_invalid_utf8(std::string_view s);
// Valid UTF-8: every invalid byte becomes U+FFFD. Workload output is bytes, reports are text.
std::string sanitize_utf8(std::string_view s);

// For display and the record: an argument quoted the way a POSIX shell reads it back.
std::string shell_quote(const std::string& a);

// Shortest round-trip text for a double, "nan"/"inf" as such.
std::string format_number(double v);

}  // namespace perfgate::util
