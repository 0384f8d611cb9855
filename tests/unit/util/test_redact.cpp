#include <catch2/catch.hpp>

#include "harness/util/strings.hpp"

using namespace perfgate::util;

TEST_CASE("environment values are redacted by name and URL credentials", "[util]") {
  CHECK(redact_env_value("HF_TOKEN", "abc") == "<redacted>");
  CHECK(redact_env_value("HTTPS_PROXY", "http://user:pass@proxy:8080/x") == "http://<redacted>@proxy:8080/x");
  CHECK(redact_env_value("PIP_INDEX_URL", "https://a:b@h/simple https://c@d/") ==
        "https://<redacted>@h/simple https://<redacted>@d/");
  CHECK(redact_env_value("TASK_QUEUE_ENABLE", "1") == "1");
  CHECK(redact_env_value("LINK", "http://host/path@x") == "http://host/path@x");
}

TEST_CASE("invalid UTF-8 is found and replaced", "[util]") {
  CHECK(first_invalid_utf8("plain ascii") == std::string::npos);
  CHECK(first_invalid_utf8("caf\xc3\xa9") == std::string::npos);
  CHECK(first_invalid_utf8("caf\xe9!") == 3);
  CHECK(sanitize_utf8("a\xff"
                      "b") ==
        "a\xef\xbf\xbd"
        "b");
  CHECK(first_invalid_utf8("\xed\xa0\x80") == 0);  // a UTF-16 surrogate is not UTF-8
}
