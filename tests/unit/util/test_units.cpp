#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>

#include "harness/util/units.hpp"

using namespace perfgate;
using namespace perfgate::util;

TEST_CASE("parse_duration_s reads bare seconds and unit suffixes", "[util]") {
  struct Row {
    const char* text;
    double seconds;
  };
  const Row rows[] = {
      {"90", 90},         {"0", 0},       {"2.5", 2.5},  {"500ms", 0.5},    {"30s", 30},
      {"20m", 1200},      {"2min", 120},  {"2h", 7200},  {"1h30m", 5400},   {"1d", 86400},
      {"1h30m15s", 5415}, {"1.5h", 5400}, {" 30s ", 30}, {"1m500ms", 60.5}, {"\t20m\n", 1200},
  };
  for (const auto& r : rows) {
    INFO("text = '" << r.text << "'");
    auto d = parse_duration_s(r.text);
    REQUIRE(d.has_value());
    CHECK(*d == Approx(r.seconds));
  }
}

TEST_CASE("parse_duration_s rejects what is not a duration", "[util]") {
  for (const char* bad : {"", "   ", "abc", "m", "ms", "10x", "-5", "-5s", "5 s", "30s10", "1h 30m", "1.2.3s", "s30",
                          "10sec", "1e3s", "+5"}) {
    INFO("text = '" << bad << "'");
    auto d = parse_duration_s(bad);
    REQUIRE_FALSE(d.has_value());
    CHECK(d.error().kind == ErrorKind::Input);
    // The message quotes the input and shows the accepted forms.
    CHECK_THAT(d.error().message, Catch::Contains("is not a duration") && Catch::Contains("1h30m"));
  }
}

TEST_CASE("parse_bytes reads sizes in powers of 1024", "[util]") {
  struct Row {
    const char* text;
    std::uint64_t bytes;
  };
  const Row rows[] = {
      {"4096", 4096},
      {"0", 0},
      {"12B", 12},
      {"64KB", 64ull << 10},
      {"64K", 64ull << 10},
      {"16MB", 16ull << 20},
      {"16MiB", 16ull << 20},
      {"16mb", 16ull << 20},
      {"16 MB", 16ull << 20},
      {"1GB", 1ull << 30},
      {"1GiB", 1ull << 30},
      {"1.5KB", 1536},
      {"0.5MB", 512ull << 10},
      {" 2G ", 2ull << 30},
  };
  for (const auto& r : rows) {
    INFO("text = '" << r.text << "'");
    auto b = parse_bytes(r.text);
    REQUIRE(b.has_value());
    CHECK(*b == r.bytes);
  }
}

TEST_CASE("parse_bytes rejects what is not a size", "[util]") {
  for (const char* bad : {"", "MB", "12XB", "-1", "-1MB", "1TB", "abc", "1.2.3MB", "16 M B x"}) {
    INFO("text = '" << bad << "'");
    auto b = parse_bytes(bad);
    REQUIRE_FALSE(b.has_value());
    CHECK(b.error().kind == ErrorKind::Input);
    CHECK_THAT(b.error().message, Catch::Contains("is not a size"));
  }
}

TEST_CASE("format_duration picks a readable unit", "[util]") {
  CHECK(format_duration(0.85) == "850 ms");
  CHECK(format_duration(0) == "0 ms");
  CHECK(format_duration(12.3) == "12.3 s");
  CHECK(format_duration(245) == "4m05s");
  CHECK(format_duration(60) == "1m00s");
  CHECK(format_duration(7800) == "2h10m");
  CHECK(format_duration(3600) == "1h00m");
  CHECK(format_duration(std::nan("")) == "?");
  CHECK(format_duration(HUGE_VAL) == "?");
}

TEST_CASE("format_bytes uses binary units", "[util]") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1024) == "1.0 KiB");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(16ull << 20) == "16.0 MiB");
  CHECK(format_bytes(2ull << 30) == "2.00 GiB");
}

TEST_CASE("parse_bytes and format_bytes agree", "[util]") {
  for (const char* text : {"1KB", "16MB", "3GB"}) {
    auto b = parse_bytes(text);
    REQUIRE(b.has_value());
    auto again = parse_bytes(format_bytes(*b).substr(0, format_bytes(*b).find(' ')) +
                             format_bytes(*b).substr(format_bytes(*b).find(' ') + 1));
    REQUIRE(again.has_value());
    CHECK(*again == *b);
  }
}
