#pragma once
// Ctrl-C / SIGTERM handling. perfgate never dies mid-write on these signals:
// handlers only record the request and wake whoever polls wake_fd(); the
// runner then ends the running trial's process group and marks the run
// interrupted, keeping every finished trial.

namespace perfgate::util {

// Installs SIGINT/SIGTERM/SIGHUP handlers (idempotent).
void install_interrupt_handlers();
// How many interrupt signals arrived (a second one asks for a hard stop).
int interrupt_count();
// The signal number of the first interrupt, or 0.
int interrupt_signal();
// Read end of a self-pipe that becomes readable when a signal arrives; -1 before install.
int interrupt_wake_fd();
// Tests and in-process callers may request an interrupt without a signal.
void request_interrupt();
void reset_interrupts();

}  // namespace perfgate::util
