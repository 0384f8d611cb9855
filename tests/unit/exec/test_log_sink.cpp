#include <catch2/catch.hpp>

#include <string>

#include "harness/exec/log_sink.hpp"
#include "tests/unit/support/temp_dir.hpp"

using perfgate::exec::LogSink;
namespace test = perfgate::test;

TEST_CASE("LogSink below its limit writes everything and no note", "[exec]") {
  test::TempDir tmp("logsink");
  auto path = tmp / "out.log";
  {
    LogSink s(path.string(), 1024);
    REQUIRE(s.ok());
    s.write("hello\n");
    s.write("world\n");
    CHECK(s.total_bytes() == 12);
    CHECK_FALSE(s.truncated());
    s.close();
    s.close();  // idempotent
  }
  CHECK(test::read_file(path) == "hello\nworld\n");
}

TEST_CASE("LogSink exactly at its limit is not truncated", "[exec]") {
  test::TempDir tmp("logsink");
  auto path = tmp / "out.log";
  {
    LogSink s(path.string(), 10);
    s.write("0123456789");
    CHECK_FALSE(s.truncated());
  }
  CHECK(test::read_file(path) == "0123456789");
}

TEST_CASE("LogSink past its limit keeps the head, a note and the tail", "[exec]") {
  test::TempDir tmp("logsink");
  auto path = tmp / "out.log";
  SECTION("the tail is what came after the limit") {
    {
      LogSink s(path.string(), 10);
      s.write("0123456789ABCDEF");
      CHECK(s.total_bytes() == 16);
      CHECK(s.truncated());
    }
    CHECK(test::read_file(path) ==
          "0123456789\n[perfgate: output truncated at 10 B; 0 B dropped of 16 B in all; the last 6 B follow]\nABCDEF");
  }
  SECTION("a small tail ring that wraps many times") {
    {
      LogSink s(path.string(), 4, 8);
      for (int i = 0; i < 10; ++i) s.write("ab" + std::to_string(i) + "\n");
      CHECK(s.total_bytes() == 40);
      CHECK(s.truncated());
      CHECK(s.last_lines(2) == "ab8\nab9");
    }
    CHECK(test::read_file(path) ==
          "ab0\n\n[perfgate: output truncated at 4 B; 28 B dropped of 40 B in all; the last 8 B follow]\nab8\nab9\n");
  }
  SECTION("one write larger than the tail") {
    std::string big;
    for (int i = 0; i < 1000; ++i) big += std::to_string(i % 10);
    {
      LogSink s(path.string(), 100, 50);
      s.write(big);
    }
    auto text = test::read_file(path);
    CHECK(text.substr(0, 100) == big.substr(0, 100));
    CHECK(text.substr(text.size() - 50) == big.substr(big.size() - 50));
    CHECK_THAT(text, Catch::Contains("850 B dropped of 1000 B"));
  }
}

TEST_CASE("LogSink::last_lines returns the most recent lines", "[exec]") {
  LogSink s("", 1 << 20);  // no file: only counting and the tail
  CHECK_FALSE(s.ok());
  CHECK(s.last_lines(3).empty());
  s.write("one\ntwo\nthree\n");
  s.write("four\nfive");
  CHECK(s.last_lines(1) == "five");
  CHECK(s.last_lines(2) == "four\nfive");
  CHECK(s.last_lines(10) == "one\ntwo\nthree\nfour\nfive");
  CHECK(s.total_bytes() == 23);
  s.write("\n\n");
  CHECK(s.last_lines(1) == "five");  // trailing newlines do not count as lines
}
