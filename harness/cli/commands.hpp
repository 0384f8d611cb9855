#pragma once
// Subcommand handlers. Each has a setup (declares its options on a CLI11
// subcommand, writing into State) and a run (does the work, returns the exit code).

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace perfgate::cli {

struct Globals {
  std::string db_path = "results/perfgate.db";
  std::string db_timeout = "10s";
};

// Options of every subcommand live here; each uses its own part.
struct State {
  Globals globals;
  // run
  std::string suite_path;
  std::vector<std::string> sets, onlys, tags, profiles;
  std::string commit, branch, artifacts_dir;
  long long seed = -1;
  bool dry_run = false;
  bool quiet = false;
  // runs / show
  std::string run_selector;
  std::string format = "table";
  std::vector<std::string> metrics;
  bool all_metrics = false;
  int limit = 20;
  std::string suite_filter;
};

struct Command {
  const char* name;
  const char* summary;
  void (*setup)(CLI::App& sub, State& state);
  int (*run)(State& state);
};

void setup_run(CLI::App& sub, State& s);
int do_run(State& s);
void setup_runs(CLI::App& sub, State& s);
int do_runs(State& s);
void setup_show(CLI::App& sub, State& s);
int do_show(State& s);

}  // namespace perfgate::cli
