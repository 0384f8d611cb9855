#pragma once
// An exclusive flock(2) on a file, the one way perfgate keeps two processes
// of a node apart: device slots (runner/slots), a bisect's worktree of a
// commit (runner/bisect). The kernel drops the lock when its holder dies,
// so a killed perfgate never leaves a stale one.

#include <functional>
#include <string>

#include "harness/util/error.hpp"

namespace perfgate::util {

class FileLock {
 public:
  FileLock() = default;
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  bool held() const { return m_fd >= 0; }
  void release();

  struct WaitOptions {
    bool wait = true;  // false: held elsewhere is an error at once
    // Called once when another process has held the lock for about a second
    // (a message for the user), and asked every 50 ms while waiting: true
    // ends the wait with an error (Ctrl-C).
    std::function<void()> on_wait;
    std::function<bool()> give_up;
    std::string what;  // names the lock in errors: "npu 3"; empty: the path
  };
  // Takes the lock on `path`, created readable and writable by every user
  // of the node (every user's perfgate shares it).
  static Expected<FileLock> acquire(const std::string& path, const WaitOptions& opts);

 private:
  explicit FileLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

}  // namespace perfgate::util
