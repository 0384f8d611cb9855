#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>

#include "harness/suite/placeholders.hpp"

using namespace perfgate;

namespace {

std::function<std::optional<std::string>(std::string_view)> from(std::map<std::string, std::string> m) {
  return [m = std::move(m)](std::string_view name) -> std::optional<std::string> {
    auto it = m.find(std::string(name));
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST_CASE("find_placeholders lists names and offsets", "[suite]") {
  auto r = suite::find_placeholders("--bucket={bucket_mb} {dataloader.num_workers}x{a}");
  REQUIRE(r.has_value());
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].name == "bucket_mb");
  CHECK((*r)[0].offset == 9);
  CHECK((*r)[1].name == "dataloader.num_workers");
  CHECK((*r)[1].offset == 21);
  CHECK((*r)[2].name == "a");
  CHECK((*r)[2].offset == 46);

  auto none = suite::find_placeholders("plain --text");
  REQUIRE(none.has_value());
  CHECK(none->empty());
  auto empty = suite::find_placeholders("");
  REQUIRE(empty.has_value());
  CHECK(empty->empty());
}

TEST_CASE("doubled braces are literal, not placeholders", "[suite]") {
  auto r = suite::find_placeholders("{{not_a_name}} {real} {{{inner}}}");
  REQUIRE(r.has_value());
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].name == "real");
  CHECK((*r)[1].name == "inner");

  auto s = suite::substitute("json={{\"bucket\": {bucket_mb}}} {{x}}", from({{"bucket_mb", "25"}}));
  REQUIRE(s.has_value());
  CHECK(*s == "json={\"bucket\": 25} {x}");
}

TEST_CASE("substitute replaces every placeholder", "[suite]") {
  auto lookup = from({{"graph_mode", "eager"}, {"bucket_mb", "25"}, {"dataloader.num_workers", "4"}, {"empty", ""}});
  auto s = suite::substitute("--mode={graph_mode} --bucket {bucket_mb}{bucket_mb} w{dataloader.num_workers}{empty}.",
                             lookup);
  REQUIRE(s.has_value());
  CHECK(*s == "--mode=eager --bucket 2525 w4.");
  auto plain = suite::substitute("no placeholders here", lookup);
  REQUIRE(plain.has_value());
  CHECK(*plain == "no placeholders here");
  // Substituted values are not scanned again.
  auto nested = suite::substitute("{a}", from({{"a", "{b}"}}));
  REQUIRE(nested.has_value());
  CHECK(*nested == "{b}");
}

TEST_CASE("an unclosed brace is an error", "[suite]") {
  auto r = suite::find_placeholders("--bucket {bucket_mb");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK_THAT(r.error().message, Catch::Contains("unclosed") && Catch::Contains("offset 9"));
  auto s = suite::substitute("x{", from({}));
  REQUIRE_FALSE(s.has_value());
  CHECK_THAT(s.error().message, Catch::Contains("unclosed"));
}

TEST_CASE("an empty or malformed placeholder name is an error", "[suite]") {
  CHECK_FALSE(suite::find_placeholders("{}").has_value());
  CHECK_FALSE(suite::find_placeholders("{a b}").has_value());
  CHECK_FALSE(suite::find_placeholders("{a{b}").has_value());
}

TEST_CASE("an unknown name is an error naming it", "[suite]") {
  auto s = suite::substitute("--x {known} {unknown}", from({{"known", "1"}}));
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().kind == ErrorKind::Input);
  CHECK_THAT(s.error().message, Catch::Contains("unknown placeholder '{unknown}'"));
}
