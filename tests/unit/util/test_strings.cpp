#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "harness/util/strings.hpp"

using namespace perfgate::util;

TEST_CASE("did_you_mean suggests the closest known word", "[util]") {
  std::vector<std::string> keys = {"repeats", "warmup", "timeout"};
  CHECK(did_you_mean("repeat", keys) == " (did you mean 'repeats'?)");
  CHECK(did_you_mean("zzzzzzzz", keys).empty());
}

TEST_CASE("secret-looking environment names are recognised", "[util]") {
  CHECK(looks_secret("HF_TOKEN"));
  CHECK(looks_secret("AWS_SECRET_ACCESS_KEY"));
  CHECK(looks_secret("db_password"));
  CHECK_FALSE(looks_secret("TASK_QUEUE_ENABLE"));
  CHECK_FALSE(looks_secret("KEYBOARD_LAYOUT"));
}

TEST_CASE("edit_distance is the Levenshtein distance", "[util]") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("abc", "abc") == 0);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("flaw", "lawn") == 2);
  CHECK(edit_distance("repeat", "repeats") == 1);
  CHECK(edit_distance("bukcet_mb", "bucket_mb") == 2);  // a transposition costs two edits
  CHECK(edit_distance("sitting", "kitten") == edit_distance("kitten", "sitting"));
}

TEST_CASE("closest picks the nearest candidate within a length-scaled limit", "[util]") {
  std::vector<std::string> keys = {"repeats", "warmup", "timeout", "bucket_mb", "graph_mode"};
  CHECK(closest("repeat", keys) == std::optional<std::string>("repeats"));
  CHECK(closest("bukcet_mb", keys) == std::optional<std::string>("bucket_mb"));
  CHECK(closest("timeuot", keys) == std::optional<std::string>("timeout"));
  CHECK(closest("graphmode", keys) == std::optional<std::string>("graph_mode"));
  CHECK_FALSE(closest("zzzzzzzz", keys).has_value());
  CHECK_FALSE(closest("repeat", std::vector<std::string>{}).has_value());
  // Short words still allow two edits, but not more.
  CHECK(closest("ab", std::vector<std::string>{"abcd"}) == std::optional<std::string>("abcd"));
  CHECK_FALSE(closest("ab", std::vector<std::string>{"abcde"}).has_value());
  // The first of equally close candidates wins, so suggestions are stable.
  CHECK(closest("ab", std::vector<std::string>{"ax", "ay"}) == std::optional<std::string>("ax"));
}

TEST_CASE("to_upper_identifier maps dotted keys to environment names", "[util]") {
  CHECK(to_upper_identifier("dataloader.num_workers") == "DATALOADER_NUM_WORKERS");
  CHECK(to_upper_identifier("bucket_mb") == "BUCKET_MB");
  CHECK(to_upper_identifier("a-b c/d") == "A_B_C_D");
  CHECK(to_upper_identifier("x9") == "X9");
  CHECK(to_upper_identifier("") == "");
}

TEST_CASE("format_value keeps about four significant digits", "[util]") {
  CHECK(format_value(930.1) == "930.1");
  CHECK(format_value(12345) == "12345");
  CHECK(format_value(12345.6) == "12346");
  CHECK(format_value(0.0123) == "0.0123");
  CHECK(format_value(1.5) == "1.50");
  CHECK(format_value(42.1234) == "42.12");
  CHECK(format_value(123.456) == "123.5");
  CHECK(format_value(-930.1) == "-930.1");
  CHECK(format_value(0) == "0");
  CHECK(format_value(std::nan("")) == "nan");
  CHECK(format_value(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(format_value(-std::numeric_limits<double>::infinity()) == "-inf");
}

TEST_CASE("format_value never writes exponents, even for tiny values", "[util]") {
  // The header promises "without exponents"; tables must not show 1.23e-05.
  for (double v : {0.0001234, 0.00001234, 1e-7, -2.5e-6}) {
    INFO("v = " << v << " -> " << format_value(v));
    CHECK(format_value(v).find('e') == std::string::npos);
    CHECK(format_value(v).find('E') == std::string::npos);
  }
}

TEST_CASE("format_number round-trips doubles", "[util]") {
  CHECK(format_number(0.1) == "0.1");
  CHECK(format_number(930.1) == "930.1");
  CHECK(format_number(25) == "25");
  CHECK(format_number(std::nan("")) == "nan");
  CHECK(format_number(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(format_number(-std::numeric_limits<double>::infinity()) == "-inf");
  double tricky = 0.1 + 0.2;
  CHECK(std::stod(format_number(tricky)) == tricky);
}

TEST_CASE("trim, split, join and starts_with", "[util]") {
  CHECK(trim("  a b \t\r\n") == "a b");
  CHECK(trim("   ").empty());
  CHECK(trim("").empty());
  CHECK(split("5,25,50", ',') == std::vector<std::string>{"5", "25", "50"});
  CHECK(split("", ',') == std::vector<std::string>{""});
  CHECK(split("a,,b,", ',') == std::vector<std::string>{"a", "", "b", ""});
  std::vector<std::string> parts = {"a", "b", "c"};
  CHECK(join(parts, ", ") == "a, b, c");
  CHECK(join(std::vector<std::string>{}, ", ").empty());
  CHECK(starts_with("PERFGATE {}", "PERFGATE "));
  CHECK_FALSE(starts_with("PERF", "PERFGATE "));
}

TEST_CASE("redact_env_value hides secrets and URL credentials", "[util]") {
  CHECK(redact_env_value("HF_TOKEN", "hf_abc") == "<redacted>");
  CHECK(redact_env_value("DB_PASSWORD", "") == "<redacted>");
  CHECK(redact_env_value("PIP_INDEX_URL", "https://user:s3cret@pypi.example.com/simple") ==
        "https://<redacted>@pypi.example.com/simple");
  CHECK(redact_env_value("PROXY", "http://token@proxy:3128") == "http://<redacted>@proxy:3128");
  CHECK(redact_env_value("MIRRORS", "https://a:b@one.example/x https://two.example/y http://c@three") ==
        "https://<redacted>@one.example/x https://two.example/y http://<redacted>@three");
  CHECK(redact_env_value("PIP_INDEX_URL", "https://pypi.org/simple") == "https://pypi.org/simple");
  // An @ in the path is not a credential.
  CHECK(redact_env_value("URL", "https://host.example/users/@me") == "https://host.example/users/@me");
  CHECK(redact_env_value("TASK_QUEUE_ENABLE", "1") == "1");
}

TEST_CASE("first_invalid_utf8 finds the first bad byte", "[util]") {
  CHECK(first_invalid_utf8("") == std::string::npos);
  CHECK(first_invalid_utf8("plain ascii") == std::string::npos);
  CHECK(first_invalid_utf8("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80") == std::string::npos);  // é € 😀
  CHECK(first_invalid_utf8("ab\xFF") == 2);
  CHECK(first_invalid_utf8("\xC0\xAF") == 0);          // overlong '/'
  CHECK(first_invalid_utf8("x\xED\xA0\x80") == 1);     // UTF-16 surrogate
  CHECK(first_invalid_utf8("euro \xE2\x82") == 5);     // cut short
  CHECK(first_invalid_utf8("\xF4\x90\x80\x80") == 0);  // above U+10FFFF
  CHECK(first_invalid_utf8("a\x80") == 1);             // a lone continuation byte
}

TEST_CASE("sanitize_utf8 replaces each invalid byte with U+FFFD", "[util]") {
  CHECK(sanitize_utf8("ok \xC3\xA9") == "ok \xC3\xA9");
  CHECK(sanitize_utf8("a\xFF"
                      "b") ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(sanitize_utf8("\xE2\x82") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(first_invalid_utf8(sanitize_utf8(std::string("\x00\xFE\xFF\xC0", 4))) == std::string::npos);
}
