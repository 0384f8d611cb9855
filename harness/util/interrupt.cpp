#include "harness/util/interrupt.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <atomic>
#include <csignal>

namespace perfgate::util {
namespace {

std::atomic<int> g_count{0};
std::atomic<int> g_signal{0};
int g_pipe[2] = {-1, -1};

void on_signal(int sig) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
  g_count.fetch_add(1);
  if (g_pipe[1] >= 0) {
    char c = 1;
    [[maybe_unused]] auto n = ::write(g_pipe[1], &c, 1);  // async-signal-safe
  }
}

}  // namespace

void install_interrupt_handlers() {
  if (g_pipe[0] >= 0) return;
  if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_pipe[0] = g_pipe[1] = -1;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll() returns EINTR at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  // A closed reader of a pipe must not kill the harness.
  std::signal(SIGPIPE, SIG_IGN);
}

int interrupt_count() { return g_count.load(); }
int interrupt_signal() { return g_signal.load(); }
int interrupt_wake_fd() { return g_pipe[0]; }

void request_interrupt() { on_signal(SIGINT); }

void reset_interrupts() {
  g_count = 0;
  g_signal = 0;
  if (g_pipe[0] >= 0) {
    char buf[64];
    while (::read(g_pipe[0], buf, sizeof buf) > 0) {
    }
  }
}

}  // namespace perfgate::util
