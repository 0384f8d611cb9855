#pragma once
// Runs a short helper command (git, nvidia-smi, python3 -c ...) and returns
// its stdout, for facts about the machine. Never through a shell.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfgate::exec {

// Runs argv and hands each stdout line to `on_line` as it arrives, however
// much it prints: nothing is kept. A line longer than 1 MiB arrives cut to
// that length with `cut` set. True if the command exited 0 within timeout_s.
using OutputLineFn = std::function<void(std::string_view line, bool cut)>;
bool for_each_output_line(const std::vector<std::string>& argv, double timeout_s, const OutputLineFn& on_line,
                          const std::string& cwd = ".");

// stdout (whole lines, at most max_bytes; later lines are left out) if the command ran and exited 0 within timeout_s;
// nothing otherwise.
std::optional<std::string> capture_output(const std::vector<std::string>& argv, double timeout_s = 5,
                                          const std::string& cwd = ".", std::size_t max_bytes = 1 << 20);

// A scheduler's command (sbatch, squeue, scontrol, scancel): stdout, stderr
// and exit code, whatever they are. Unlike capture_output it ignores Ctrl-C,
// so a submitter can still cancel its job after the user pressed it; after
// timeout_s the command is killed.
struct ToolResult {
  bool ran = false;  // started and exited (not killed, not missing)
  int exit_code = -1;
  std::string out, err;
  std::string error;  // why it did not run: "not found", "timed out after 30 s"
  bool ok() const { return ran && exit_code == 0; }
};
ToolResult run_tool(const std::vector<std::string>& argv, double timeout_s = 30);

}  // namespace perfgate::exec
