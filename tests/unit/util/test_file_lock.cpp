// The one file lock (util/file_lock): device slots and a bisect's worktrees
// stand on it. flock(2) locks belong to an open file description, so two
// acquisitions in this one process conflict as two processes would.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <atomic>
#include <thread>

#include "harness/util/file_lock.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;

TEST_CASE("file lock: one holder at a time; the next waits, says so once, and can give up", "[util]") {
  test::TempDir tmp("file-lock");
  const std::string path = (tmp / "npu-3.lock").string();
  auto first = util::FileLock::acquire(path, {});
  REQUIRE(first);
  CHECK(first->held());

  util::FileLock::WaitOptions at_once;
  at_once.wait = false;
  at_once.what = "npu 3";
  auto refused = util::FileLock::acquire(path, at_once);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("npu 3 is held by another process") && Catch::Contains(path));

  // A waiter told after about a second, then stopped (Ctrl-C).
  std::atomic<int> told{0};
  std::atomic<bool> stop{false};
  util::FileLock::WaitOptions waiting;
  waiting.what = "npu 3";
  waiting.on_wait = [&] {
    ++told;
    stop = true;
  };
  waiting.give_up = [&] { return stop.load(); };
  auto stopped = util::FileLock::acquire(path, waiting);
  REQUIRE_FALSE(stopped);
  CHECK(told == 1);
  CHECK_THAT(stopped.error().message, Catch::Contains("stopped while waiting for npu 3"));

  // Let go: a waiter gets it.
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto lock = util::FileLock::acquire(path, {});
    got = lock.has_value() && lock->held();
  });
  first->release();
  waiter.join();
  CHECK(got);
}

TEST_CASE("file lock: moved, the lock goes with it; the file is every user's whatever the umask", "[util]") {
  test::TempDir tmp("file-lock-move");
  const std::string path = (tmp / "a.lock").string();
  const mode_t old_mask = ::umask(022);
  auto lock = util::FileLock::acquire(path, {});
  ::umask(old_mask);
  REQUIRE(lock);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0666);
  util::FileLock moved = std::move(*lock);
  CHECK_FALSE(lock->held());
  CHECK(moved.held());
  util::FileLock::WaitOptions at_once;
  at_once.wait = false;
  CHECK_FALSE(util::FileLock::acquire(path, at_once));
  moved.release();
  CHECK(util::FileLock::acquire(path, at_once));
}
