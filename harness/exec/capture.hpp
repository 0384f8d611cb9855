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

}  // namespace perfgate::exec
