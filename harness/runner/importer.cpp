// perfgate import: files of results become a run (docs/cli.md, "import").

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/runner/runner.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/time.hpp"

namespace perfgate::runner {
namespace fs = std::filesystem;

Expected<RunOutcome> import_files(const ImportRequest& req, store::Store& st, const RunOptions& opts) {
  if (req.format != "gbench" && req.format != "jsonl")
    return Error::input(fmt::format(
        "--format {}: import reads gbench (Google Benchmark JSON) or jsonl (the metric protocol)", req.format));
  if (req.files.empty()) return Error::input("import: name at least one file");
  if (req.suite.empty()) return Error::input("import: --suite is required (the suite name the run is filed under)");
  // Every file must be readable before anything is recorded.
  std::vector<std::string> paths;
  for (const auto& f : req.files) {
    std::error_code ec;
    if (!fs::is_regular_file(f, ec)) return Error::input(fmt::format("{}: no such file", f));
    if (!std::ifstream(f)) return Error::input(fmt::format("{}: cannot be read", f));
    paths.push_back(fs::absolute(f).lexically_normal().string());
  }
  const std::string workload = req.workload.empty() ? req.format : req.workload;
  const std::string params = model::params_json(req.params);

  nlohmann::json plan;
  plan["import"] = {{"format", req.format}, {"files", paths}};
  plan["seed"] = 0;
  plan["order"] = "imported";
  plan["cases"] = nlohmann::json::array({{{"workload", workload}, {"params", nlohmann::json::parse(params)}}});
  plan["trials"] = nlohmann::json::array();
  for (std::size_t i = 0; i < paths.size(); ++i) plan["trials"].push_back({0, i});

  auto rec =
      new_run_record(req.suite, "", fmt::format("imported from {} file(s) of format {}", paths.size(), req.format), 0,
                     opts, FingerprintOptions{}, req.cwd);
  rec.env_json = "{}";
  auto run_id = st.begin_run(rec);
  if (!run_id) return run_id.error();
  if (auto s = st.update_run_plan(*run_id, plan.dump(), ""); !s) return s.error();
  auto config = st.config_id(workload, params);
  if (!config) return config.error();

  RunOutcome out;
  out.run_id = *run_id;
  out.trials_total = static_cast<int>(paths.size());
  Status store_failure = Ok{};
  for (std::size_t i = 0; i < paths.size(); ++i) {
    model::TrialRecord trial;
    trial.run_id = *run_id;
    trial.config_id = *config;
    trial.repeat = static_cast<int>(i);
    trial.seq = static_cast<int>(i);
    trial.started_at = util::unix_now_s();
    trial.log_dir = fs::path(paths[i]).parent_path().string();
    auto trial_id = st.begin_trial(trial);
    if (!trial_id) {
      store_failure = trial_id.error();
      break;
    }
    trial.id = *trial_id;
    // The file is read as a finished trial's output: jsonl as the metrics
    // file, gbench through its parser. Imported numbers were measured
    // elsewhere, so no warm-up is dropped here.
    TrialCollector collector(st, trial.id, req.format == "jsonl" ? paths[i] : "", model::Warmup{});
    if (req.format == "gbench") {
      model::MetricsSpec ms;
      ms.parser = "gbench";
      ms.file = paths[i];
      if (auto a = collector.attach_output_parser(ms, /*written_during_trial=*/false); !a) return a.error();
    }
    collector.on_tick(0, true);
    auto res = collector.finish();
    trial.steps = res.steps;
    trial.malformed_lines = collector.malformed_count();
    trial.exit_code = 0;
    trial.notes = util::join(res.notes, "; ");
    if (res.summaries.empty()) {
      trial.status = model::TrialStatus::Failed;
      trial.error =
          fmt::format("no metrics could be read from {}{}", paths[i], res.notes.empty() ? "" : ": " + trial.notes);
    } else {
      trial.status = model::TrialStatus::Ok;
    }
    if (auto s = record_trial(st, collector, trial, res); !s) {
      store_failure = s;
      break;
    }
    if (trial.status == model::TrialStatus::Ok)
      ++out.trials_ok;
    else
      ++out.trials_failed;
    if (opts.progress)
      *opts.progress << fmt::format("[{}/{}] {}  {}{}", i + 1, paths.size(), paths[i], model::to_string(trial.status),
                                    trial.status == model::TrialStatus::Ok ? "" : "  " + trial.error)
                     << std::endl;
  }
  out.trials_not_run = out.trials_total - out.trials_ok - out.trials_failed;
  if (!store_failure) {
    (void)st.finish_run(*run_id, model::RunStatus::Interrupted, util::unix_now_s());
    return Error::harness(fmt::format("import into run {} stopped because the results database failed: {}", *run_id,
                                      store_failure.error().message));
  }
  out.status = out.trials_ok == 0 ? model::RunStatus::Failed : model::RunStatus::Completed;
  if (auto s = st.finish_run(*run_id, out.status, util::unix_now_s()); !s) return s.error();
  return out;
}

}  // namespace perfgate::runner
