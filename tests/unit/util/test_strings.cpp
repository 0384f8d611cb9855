#include <catch2/catch.hpp>

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
