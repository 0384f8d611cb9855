#include "harness/util/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace perfgate::util {

FileLock::FileLock(FileLock&& other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    m_fd = other.m_fd;
    other.m_fd = -1;
  }
  return *this;
}

FileLock::~FileLock() { release(); }

void FileLock::release() {
  if (m_fd >= 0) ::close(m_fd);  // closing the descriptor drops its flock
  m_fd = -1;
}

Expected<FileLock> FileLock::acquire(const std::string& path, const WaitOptions& opts) {
  const std::string what = opts.what.empty() ? path : opts.what;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return Error::harness(fmt::format("cannot open the lock file {}: {}", path, std::strerror(errno)));
  FileLock lock(fd);  // closes fd on every error below
  // The mode asked for is cut by the umask; every user's perfgate needs it.
  (void)::fchmod(fd, 0666);
  // Polled rather than a blocking flock: Ctrl-C must end the wait, and the
  // handlers restart interrupted calls. The message waits a second: a
  // process this perfgate is starting holds a copy of every descriptor
  // between fork and exec, a lock just released among them.
  for (int polls = 0; ::flock(fd, LOCK_EX | LOCK_NB) != 0;) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      return Error::harness(fmt::format("cannot lock {}: {}", path, std::strerror(errno)));
    if (!opts.wait) return Error::harness(fmt::format("{} is held by another process ({})", what, path));
    if (opts.give_up && opts.give_up())
      return Error::harness(fmt::format("stopped while waiting for {} ({})", what, path));
    if (++polls == 20 && opts.on_wait) opts.on_wait();
    ::usleep(50'000);
  }
  return lock;
}

}  // namespace perfgate::util
