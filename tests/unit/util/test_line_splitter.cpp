#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "harness/util/line_splitter.hpp"

using perfgate::util::LineSplitter;

namespace {

struct Collected {
  std::vector<std::pair<std::string, bool>> lines;
  LineSplitter::Callback cb() {
    return [this](std::string_view line, bool oversized) { lines.emplace_back(std::string(line), oversized); };
  }
};

using Lines = std::vector<std::pair<std::string, bool>>;

}  // namespace

TEST_CASE("LineSplitter emits whole lines from one chunk", "[util]") {
  LineSplitter s;
  Collected c;
  s.feed("a\nbb\n\nccc\n", c.cb());
  CHECK(c.lines == Lines{{"a", false}, {"bb", false}, {"", false}, {"ccc", false}});
  s.finish(c.cb());
  CHECK(c.lines.size() == 4);  // nothing pending
}

TEST_CASE("LineSplitter joins lines split across chunks", "[util]") {
  LineSplitter s;
  Collected c;
  s.feed("ab", c.cb());
  CHECK(c.lines.empty());
  s.feed("c\nde", c.cb());
  CHECK(c.lines == Lines{{"abc", false}});
  s.feed("", c.cb());
  s.feed("f", c.cb());
  s.feed("\n", c.cb());
  CHECK(c.lines == Lines{{"abc", false}, {"def", false}});
}

TEST_CASE("LineSplitter handles one byte at a time", "[util]") {
  LineSplitter s;
  Collected c;
  std::string text = "{\"step\": 1}\r\nsecond\nthird";
  for (char ch : text) s.feed(std::string_view(&ch, 1), c.cb());
  s.finish(c.cb());
  CHECK(c.lines == Lines{{"{\"step\": 1}", false}, {"second", false}, {"third", false}});
}

TEST_CASE("LineSplitter strips a trailing carriage return", "[util]") {
  LineSplitter s;
  Collected c;
  s.feed("a\r\nb\r\n", c.cb());
  // \r and \n in different chunks
  s.feed("c\r", c.cb());
  s.feed("\nd\r\r\n", c.cb());
  // a \r inside a line stays
  s.feed("e\rf\n", c.cb());
  CHECK(c.lines == Lines{{"a", false}, {"b", false}, {"c", false}, {"d\r", false}, {"e\rf", false}});
}

TEST_CASE("LineSplitter cuts oversized lines and flags them", "[util]") {
  LineSplitter s(4);
  Collected c;
  SECTION("in one chunk") {
    s.feed("abcdefgh\nxy\nwxyz\n", c.cb());
    CHECK(c.lines == Lines{{"abcd", true}, {"xy", false}, {"wxyz", false}});
  }
  SECTION("across chunks") {
    s.feed("abc", c.cb());
    s.feed("defg", c.cb());
    s.feed("hijk", c.cb());
    CHECK(c.lines.empty());
    s.feed("l\nok\n", c.cb());
    CHECK(c.lines == Lines{{"abcd", true}, {"ok", false}});
  }
  SECTION("exactly the limit is not oversized") {
    s.feed("ab", c.cb());
    s.feed("cd\n", c.cb());
    s.feed("wxyz\n", c.cb());
    CHECK(c.lines == Lines{{"abcd", false}, {"wxyz", false}});
  }
  SECTION("the flag does not leak into the next line") {
    s.feed("0123456789", c.cb());
    s.feed("\nx", c.cb());
    s.feed("\n", c.cb());
    CHECK(c.lines == Lines{{"0123", true}, {"x", false}});
  }
}

TEST_CASE("LineSplitter::finish emits a last line without newline", "[util]") {
  SECTION("short last line") {
    LineSplitter s;
    Collected c;
    s.feed("first\nlast", c.cb());
    CHECK(c.lines == Lines{{"first", false}});
    s.finish(c.cb());
    CHECK(c.lines == Lines{{"first", false}, {"last", false}});
    s.finish(c.cb());  // idempotent
    CHECK(c.lines.size() == 2);
  }
  SECTION("oversized last line") {
    LineSplitter s(3);
    Collected c;
    s.feed("abcdef", c.cb());
    s.finish(c.cb());
    CHECK(c.lines == Lines{{"abc", true}});
  }
  SECTION("last line with only a carriage return") {
    LineSplitter s;
    Collected c;
    s.feed("x\r", c.cb());
    s.finish(c.cb());
    CHECK(c.lines == Lines{{"x", false}});
  }
  SECTION("nothing pending") {
    LineSplitter s;
    Collected c;
    s.finish(c.cb());
    CHECK(c.lines.empty());
  }
  SECTION("the splitter is reusable after finish") {
    LineSplitter s;
    Collected c;
    s.feed("a", c.cb());
    s.finish(c.cb());
    s.feed("b\n", c.cb());
    CHECK(c.lines == Lines{{"a", false}, {"b", false}});
  }
}
