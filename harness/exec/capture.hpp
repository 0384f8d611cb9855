#pragma once
// Runs a short helper command (git, nvidia-smi, python3 -c ...) and returns
// its stdout, for facts about the machine. Never through a shell.

#include <optional>
#include <string>
#include <vector>

namespace perfgate::exec {

// stdout (at most max_bytes) if the command ran and exited 0 within timeout_s; nothing otherwise.
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
