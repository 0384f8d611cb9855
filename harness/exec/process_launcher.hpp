#pragma once
#include "harness/exec/launcher.hpp"

namespace perfgate::exec {

// Runs the workload as its own process group with Boost.Process (the only
// file that includes it). No shell unless the spec asks for one. Ends the
// whole group at the timeout, on interrupt, and whenever the main process
// exits while other members live on: SIGTERM, then SIGKILL after the grace.
class ProcessLauncher final : public Launcher {
 public:
  LaunchResult launch(const LaunchSpec& spec, TrialObserver& observer) override;
};

}  // namespace perfgate::exec
