#include "harness/exec/capture.hpp"

#include <filesystem>

#include "harness/exec/process_launcher.hpp"
#include "harness/util/environment.hpp"

namespace perfgate::exec {
namespace {

class Collect final : public TrialObserver {
 public:
  explicit Collect(std::size_t max) : m_max(max) {}
  void on_stdout_line(std::string_view line, bool, double) override {
    if (out.size() + line.size() + 1 > m_max) return;
    out.append(line);
    out += '\n';
  }
  void on_tick(double, bool) override {}
  std::string out;

 private:
  std::size_t m_max;
};

}  // namespace

std::optional<std::string> capture_output(const std::vector<std::string>& argv, double timeout_s,
                                          const std::string& cwd, std::size_t max_bytes) {
  LaunchSpec spec;
  spec.argv = argv;
  spec.cwd = std::filesystem::absolute(cwd).string();
  spec.env = util::current_environment();
  spec.timeout_s = timeout_s;
  spec.kill_grace_s = 0.5;
  spec.log_limit_bytes = 0;
  spec.tick_interval_s = 1;
  spec.track_usage = false;  // a short helper: its /proc scans would cost more than it does
  Collect c(max_bytes);
  ProcessLauncher launcher;
  auto r = launcher.launch(spec, c);
  if (r.outcome != Outcome::Exited || r.exit_code != 0) return std::nullopt;
  return c.out;
}

}  // namespace perfgate::exec
