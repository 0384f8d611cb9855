#include "harness/runner/trial_spec.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "harness/runner/slots.hpp"
#include "harness/suite/placeholders.hpp"
#include "harness/util/install_paths.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::runner {
namespace fs = std::filesystem;

std::string safe_path_name(std::string_view s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out.substr(0, 60);
}

TrialSpec build_trial_spec(const model::Suite& suite, const model::Plan& plan, std::size_t index,
                           const TrialContext& ctx) {
  const model::PlannedTrial& pt = plan.trials.at(index);
  const model::Case& c = plan.cases.at(pt.case_index);
  const model::Workload& w = suite.workloads.at(c.workload_index);
  TrialSpec t;
  t.case_index = pt.case_index;
  t.repeat = pt.repeat;
  t.seq = pt.seq;
  t.slot = ctx.slot;
  const fs::path trial_dir =
      fs::path(ctx.run_dir) / fmt::format("{:04}-{}-r{}", pt.seq + 1, safe_path_name(w.name), pt.repeat + 1);
  t.trial_dir = trial_dir.string();
  t.metrics_path = (trial_dir / "metrics.jsonl").string();
  // The time the workload has: a soak's duration, else the trial timeout.
  t.duration_s = ctx.soak && ctx.soak_duration_s > 0 ? ctx.soak_duration_s : w.timeout_s;
  t.deadline_unix_s = ctx.started_at_unix_s + t.duration_s;

  auto lookup = [&](std::string_view name) -> std::optional<std::string> {
    if (auto it = c.params.find(std::string(name)); it != c.params.end()) return it->second.text;
    if (name == "repeat") return std::to_string(pt.repeat);
    if (name == "duration_s") return fmt::format("{:.0f}", t.duration_s);
    if (name == "deadline") return fmt::format("{:.0f}", t.deadline_unix_s);
    if (name == "trial_dir") return t.trial_dir;
    if (name == "metrics_file") return t.metrics_path;
    if (name == "run_id") return std::to_string(ctx.run_id);
    if (name == "suite_dir") return suite.dir;
    if (name == "worktree") return ctx.worktree.empty() ? suite.dir : ctx.worktree;
    if (name == "commit") return ctx.commit;
    if (name == "perfgate_libexec") return util::libexec_dir();
    if (name == "slot.index") return std::to_string(ctx.slot.index);
    if (name == "slot.devices") return util::join_ints(ctx.slot.devices);
    return std::nullopt;
  };
  auto fill = [&](std::string_view text) -> std::string {
    auto s = suite::substitute(text, lookup);
    if (s) return *s;
    if (t.error.empty()) t.error = s.error().message;
    return {};
  };

  exec::LaunchSpec& spec = t.launch;
  spec.shell = w.shell;
  spec.cwd = w.cwd;
  spec.stdout_path = (trial_dir / "stdout.log").string();
  spec.stderr_path = (trial_dir / "stderr.log").string();
  spec.log_limit_bytes = w.log_limit_bytes;
  spec.timeout_s = t.duration_s;
  spec.kill_grace_s = w.kill_grace_s;
  for (const auto& a : w.command) spec.argv.push_back(fill(a));
  spec.env = ctx.base_env;
  // The slot's devices before the suite's env, so a suite may still name
  // devices itself (with {slot.devices} or otherwise).
  for (auto& [k, v] : slot_environment(ctx.slot)) spec.env[k] = std::move(v);
  if (ctx.slot.kind == "cpu") spec.cpus = ctx.slot.devices;
  for (const auto& [k, v] : w.env) spec.env[k] = fill(v);
  for (const auto& [k, v] : c.params) spec.env["PERFGATE_PARAM_" + util::to_upper_identifier(k)] = v.text;
  spec.env["PERFGATE_PARAMS"] = c.params_json;
  spec.env["PERFGATE_METRICS"] = t.metrics_path;
  spec.env["PERFGATE_TRIAL_DIR"] = t.trial_dir;
  spec.env["PERFGATE_RUN_ID"] = std::to_string(ctx.run_id);
  spec.env["PERFGATE_REPEAT"] = std::to_string(pt.repeat);
  spec.env["PERFGATE_WORKLOAD"] = w.name;
  spec.env["PERFGATE_DEADLINE"] = fmt::format("{:.3f}", t.deadline_unix_s);
  spec.env["PERFGATE_DURATION_S"] = fmt::format("{:.0f}", t.duration_s);

  // A log preset, gbench or regex reads the workload's own output.
  t.metrics = w.metrics;
  if (w.metrics.parser != "jsonl" && t.error.empty()) {
    t.metrics.file = fill(w.metrics.file);
    t.metrics.batch_size = fill(w.metrics.batch_size);
    if (t.error.empty()) {
      if (t.metrics.parser == "gbench" && t.metrics.file.empty()) {
        // The harness asks the benchmark binary for its JSON in the trial directory.
        t.metrics.file = (trial_dir / "gbench.json").string();
        std::string out_arg = "--benchmark_out=" + t.metrics.file;
        if (spec.shell)
          spec.argv.back() += " '" + out_arg + "' --benchmark_out_format=json";
        else {
          spec.argv.push_back(out_arg);
          spec.argv.push_back("--benchmark_out_format=json");
        }
      }
      if (!t.metrics.file.empty() && fs::path(t.metrics.file).is_relative())
        t.metrics.file = (fs::path(w.cwd) / t.metrics.file).string();
    }
  }

  t.samplers = w.samplers;
  // The host probe tells the machine from the code: on for soaks unless the suite says otherwise.
  if (w.host_probe.value_or(ctx.soak) &&
      std::none_of(t.samplers.begin(), t.samplers.end(), [](const model::SamplerSpec& x) { return x.kind == "host"; }))
    t.samplers.push_back(model::SamplerSpec{"host", {}, {}, {}, {}, w.loc, {}});
  // Device samplers watch the slot's devices only: series named by the
  // trial's own cards, not all of the node's.
  for (auto& sm : t.samplers)
    if ((sm.kind == "npu-smi" && ctx.slot.kind == "npu") || (sm.kind == "nvidia-smi" && ctx.slot.kind == "cuda"))
      sm.devices = ctx.slot.devices;
  return t;
}

std::string rerun_script(const exec::LaunchSpec& spec, const std::map<std::string, std::string>& base_env,
                         const std::string& cwd_if_unset) {
  std::string out =
      "#!/bin/sh\n# What perfgate ran for this trial; run this file to run it again by hand. The\n"
      "# workload writes into this trial's folder again (PERFGATE_METRICS): copy it first to keep it.\n";
  std::vector<std::string> assignments, withheld, unset;
  for (const auto& [k, v] : spec.env) {
    auto base = base_env.find(k);
    if (base != base_env.end() && base->second == v) continue;
    if (util::redact_env_value(k, v) != v)  // a secret's name, or credentials in a URL: as the database does
      withheld.push_back(k);
    else if (k == "PERFGATE_DEADLINE")  // as far from now as it was from the trial's start
      assignments.push_back(k + "=\"$(($(date +%s) + " + std::to_string(std::llround(spec.timeout_s)) + "))\"");
    else
      assignments.push_back(k + "=" + util::shell_quote(v));
  }
  for (const auto& [k, v] : base_env)
    if (!spec.env.contains(k)) unset.push_back(k);
  if (!withheld.empty())
    out += "# Not written, as they look like secrets (set them yourself): " + util::join(withheld, " ") + "\n";
  out += "cd " + util::shell_quote(spec.cwd.empty() ? cwd_if_unset : spec.cwd) + " || exit\n";
  std::string line = "exec env";
  for (const auto& k : unset) line += " -u " + util::shell_quote(k);
  for (const auto& a : assignments) line += " " + a;
  if (spec.shell) {
    line += " /bin/sh -c " + util::shell_quote(spec.argv.empty() ? std::string() : spec.argv[0]);
  } else {
    for (const auto& a : spec.argv) line += " " + util::shell_quote(a);
  }
  return out + line + "\n";
}

}  // namespace perfgate::runner
