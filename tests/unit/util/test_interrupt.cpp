#include <catch2/catch.hpp>

#include <poll.h>
#include <csignal>

#include "harness/util/interrupt.hpp"

using namespace perfgate::util;

namespace {

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

// Whatever happens in a test, leave no interrupt behind for the next one.
struct ResetGuard {
  ResetGuard() { reset_interrupts(); }
  ~ResetGuard() { reset_interrupts(); }
};

}  // namespace

TEST_CASE("request_interrupt counts and reset_interrupts clears", "[util]") {
  ResetGuard guard;
  CHECK(interrupt_count() == 0);
  CHECK(interrupt_signal() == 0);
  request_interrupt();
  CHECK(interrupt_count() == 1);
  CHECK(interrupt_signal() == SIGINT);
  request_interrupt();
  CHECK(interrupt_count() == 2);
  CHECK(interrupt_signal() == SIGINT);  // the first signal is kept
  reset_interrupts();
  CHECK(interrupt_count() == 0);
  CHECK(interrupt_signal() == 0);
}

TEST_CASE("the wake fd becomes readable on an interrupt and is drained by reset", "[util]") {
  ResetGuard guard;
  install_interrupt_handlers();
  install_interrupt_handlers();  // idempotent
  int fd = interrupt_wake_fd();
  REQUIRE(fd >= 0);
  CHECK(interrupt_wake_fd() == fd);
  CHECK_FALSE(readable(fd));
  request_interrupt();
  CHECK(readable(fd));
  reset_interrupts();
  CHECK_FALSE(readable(fd));
}
