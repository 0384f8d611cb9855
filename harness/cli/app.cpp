#include "harness/cli/app.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "harness/cli/commands.hpp"
#include "harness/store/store.hpp"
#include "harness/util/error.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::cli {

namespace {

// The subcommand table: one line each, in the order `--help` lists them.
const std::vector<Command>& commands() {
  static const std::vector<Command> k = {
      {"run", "run a suite: every configuration x repeats, recorded in the database", setup_run, do_run},
      {"runs", "list recent runs: id, suite, when, status, trials ok/failed, tags, commit", setup_runs, do_runs},
      {"show", "per configuration and metric of a run: n, median, 95% CI, CV, first-step time", setup_show, do_show},
      {"soak", "long-run stability: every trial runs --duration; drift, leaks, stalls, hangs analysed", setup_soak,
       do_soak},
      {"soak-report", "trends and findings of a soak run: drift, memory growth, staircases, stalls, jitter, NaN loss",
       setup_soak_report, do_soak_report},
      {"compare", "compare two runs per configuration and metric: change, interval, p, verdict", setup_compare,
       do_compare},
      {"gate", "judge a run against its baseline with a gate policy; exit 1 on regression", setup_gate, do_gate},
      {"bisect",
       "find the commit that moved a metric: builds commits in worktrees, measures them, searches with the "
       "gate's statistics",
       setup_bisect, do_bisect},
      {"checklist", "evaluate a release checklist against stored runs; exit 1 if an item fails", setup_checklist,
       do_checklist},
      {"history", "change points over past runs of a suite, per configuration and metric", setup_history, do_history},
      {"sweep", "rank a run's configurations by a metric: the best, and whether it is really better", setup_sweep,
       do_sweep},
      {"dashboard", "write a static HTML dashboard of the database (overview, trends, sweeps, soaks, runs)",
       setup_dashboard, do_dashboard},
      {"worker", "a fleet worker (started by Slurm): claim a run's queued trials, run them, exit when none is left",
       setup_worker, do_worker},
      {"wait", "follow a fleet run submitted with --no-wait until it ends; the same lines and exit code as run",
       setup_wait, do_wait},
      {"db", "database maintenance: `db copy FROM TO` moves a whole history between SQLite and PostgreSQL", setup_db,
       do_db},
      {"import",
       "record results produced outside perfgate (Google Benchmark JSON, metric-protocol JSON lines) as a run",
       setup_import, do_import},
  };
  return k;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"perfgate: performance regression harness for training and inference workloads"};
  app.require_subcommand(1);
  app.set_version_flag("--version", PERFGATE_VERSION);
  Globals globals;
  // PERFGATE_DB names the team's database once for every command; its value
  // is never shown (it may hold a password), so no captured default.
  if (const char* env = std::getenv("PERFGATE_DB"); env && *env) globals.db_path = env;
  app.add_option("--db", globals.db_path,
                 "results database: a SQLite file, or PostgreSQL as postgresql://user@host:port/db or a libpq "
                 "'host=... dbname=...' string (default: $PERFGATE_DB, else results/perfgate.db)");
  app.add_option("--db-timeout", globals.db_timeout,
                 "how long to wait for a database locked by another perfgate, e.g. 10s")
      ->capture_default_str();
  app.fallthrough();

  // Unknown subcommands get a suggestion before CLI11 sees them. The command
  // is the first word that is neither a global option nor its value.
  int cmd_index = 1;
  while (cmd_index < argc && argv[cmd_index][0] == '-') {
    std::string_view opt = argv[cmd_index];
    bool takes_value = (opt == "--db" || opt == "--db-timeout");
    cmd_index += takes_value ? 2 : 1;
  }
  if (cmd_index < argc) {
    std::vector<std::string> names;
    for (const auto& c : commands()) names.push_back(c.name);
    std::string first = argv[cmd_index];
    if (std::find(names.begin(), names.end(), first) == names.end()) {
      std::cerr << fmt::format("perfgate: unknown command '{}'{}; commands: {}\n", first,
                               util::did_you_mean(first, names), util::join(names, ", "));
      return static_cast<int>(ExitCode::InputError);
    }
  }

  std::vector<std::unique_ptr<State>> states;
  const Command* chosen = nullptr;
  std::vector<std::pair<CLI::App*, const Command*>> subs;
  for (const auto& c : commands()) {
    auto* sub = app.add_subcommand(c.name, c.summary);
    states.push_back(std::make_unique<State>());
    c.setup(*sub, *states.back());
    subs.emplace_back(sub, &c);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // An option the command does not have: say which it may have meant.
    std::vector<std::string> known;
    CLI::App* where = &app;
    for (const auto& [sub, c] : subs)
      if (sub->parsed()) where = sub;
    for (const CLI::App* a : {where, static_cast<CLI::App*>(&app)})
      for (const auto* o : a->get_options())
        for (const auto& n : o->get_lnames()) known.push_back("--" + n);
    std::vector<std::string> unknown;
    for (int i = 1; i < argc; ++i)
      if (argv[i][0] == '-' &&
          std::find(known.begin(), known.end(), std::string(argv[i]).substr(0, std::string(argv[i]).find('='))) ==
              known.end() &&
          std::string_view(argv[i]) != "-q" && std::string_view(argv[i]) != "-h")
        unknown.push_back(argv[i]);
    if (unknown.empty()) return app.exit(e) == 0 ? 0 : static_cast<int>(ExitCode::InputError);
    for (const auto& u : unknown)
      std::cerr << fmt::format("perfgate {}: unknown option '{}'{}; `perfgate {} --help` lists them\n",
                               where == &app ? "" : where->get_name(), u,
                               util::did_you_mean(u.substr(0, u.find('=')), known),
                               where == &app ? "" : where->get_name());
    return static_cast<int>(ExitCode::InputError);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(ExitCode::InputError);
  }
  State* state = nullptr;
  for (std::size_t i = 0; i < subs.size(); ++i)
    if (subs[i].first->parsed()) {
      chosen = subs[i].second;
      state = states[i].get();
    }
  if (!chosen) return static_cast<int>(ExitCode::InputError);
  state->globals = globals;
  {
    // The command line as it was, for the record: each word shell-quoted,
    // a database URL's password masked.
    std::string line = "perfgate";
    for (int i = 1; i < argc; ++i) {
      std::string word = argv[i];
      if (i > 1 && std::string_view(argv[i - 1]) == "--db") word = store::display_name(word);
      if (word.starts_with("--db=")) word = "--db=" + store::display_name(word.substr(5));
      line += " " + util::shell_quote(word);
    }
    state->globals.command_line = line;
  }
  {
    // Relative paths (the suite, --db, a workload's cwd, the artifacts)
    // resolve against the current directory: one deleted under the shell
    // would otherwise surface as an exception from deep inside a command.
    std::error_code ec;
    const bool readable = !std::filesystem::current_path(ec).empty() && !ec;
    if (!readable) {
      std::cerr << fmt::format(
          "perfgate: the current directory cannot be read ({}): it was deleted or moved; cd to one that exists\n",
          ec.message());
      return static_cast<int>(ExitCode::InputError);
    }
  }
  try {
    return chosen->run(*state);
  } catch (const std::exception& e) {
    // Expected failures are values; an exception here is a bug, reported as such.
    std::cerr << "perfgate: internal error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::HarnessError);
  }
}

}  // namespace perfgate::cli
