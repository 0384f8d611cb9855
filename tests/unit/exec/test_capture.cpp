#include "harness/exec/capture.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>

#include "tests/unit/support/scoped_env.hpp"
#include "tests/unit/support/temp_dir.hpp"

using perfgate::exec::run_tool;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("run_tool: stdout, stderr and the exit code, whatever it is", "[exec]") {
  auto r = run_tool({"sh", "-c", "echo out; echo err >&2; exit 3"}, 30);
  CHECK(r.ran);
  CHECK(r.exit_code == 3);
  CHECK_FALSE(r.ok());
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  CHECK(r.error.empty());
  auto missing = run_tool({"perfgate-no-such-tool"}, 30);
  CHECK_FALSE(missing.ran);
  CHECK(missing.error == "perfgate-no-such-tool: command not found on PATH");
}

TEST_CASE("run_tool: a command that never answers is killed at the deadline, open output or not", "[exec]") {
  // Before the deadline applied to the exit too, one that closed its output and
  // went on (a daemon, a tool stuck after printing) blocked its caller until it
  // ended: 60 s here.
  for (const char* script : {"sleep 60", "exec >&- 2>&-; sleep 60", "echo partial; exec >&- 2>&-; sleep 60"}) {
    INFO(script);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run_tool({"sh", "-c", script}, 1);
    CHECK(seconds_since(t0) < 30);
    CHECK_FALSE(r.ran);
    CHECK(r.error == "sh did not answer within 1 s");
  }
}

TEST_CASE("run_tool finds its program as the launcher does: the first executable file on PATH", "[exec]") {
  namespace fs = std::filesystem;
  perfgate::test::TempDir tmp("run-tool");
  fs::create_directories(tmp / "a");
  fs::create_directories(tmp / "b");
  perfgate::test::write_file(tmp / "a" / "perfgate-tool", "#!/bin/sh\necho a\n");  // not executable
  perfgate::test::write_file(tmp / "b" / "perfgate-tool", "#!/bin/sh\necho b\n");
  fs::permissions(tmp / "b" / "perfgate-tool", fs::perms::owner_all);
  perfgate::test::ScopedEnv path("PATH", (tmp / "a").string() + ":" + (tmp / "b").string() + ":/usr/bin:/bin");
  auto r = run_tool({"perfgate-tool"}, 30);
  CHECK(r.ok());
  CHECK(r.out == "b\n");
  auto not_executable = run_tool({(tmp / "a" / "perfgate-tool").string()}, 30);
  CHECK_FALSE(not_executable.ran);
  CHECK(not_executable.error == (tmp / "a" / "perfgate-tool").string() + ": not an executable file");
}
