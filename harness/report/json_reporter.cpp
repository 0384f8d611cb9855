// JSON for `show` and `runs`: every number of the tables plus per-trial
// values, so scripts never need to read the database.

#include <cmath>

#include <nlohmann/json.hpp>

#include "harness/report/run_reporter.hpp"

namespace perfgate::report {
namespace {

using json = nlohmann::json;

// JSON has no NaN; null says "no number".
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json run_json(const store::RunRecord& r) {
  json j;
  j["id"] = r.id;
  j["suite"] = r.suite;
  j["suite_path"] = r.suite_path;
  j["description"] = r.description;
  j["status"] = model::to_string(r.status);
  j["started_at"] = r.started_at;
  j["ended_at"] = r.ended_at > 0 ? json(r.ended_at) : json(nullptr);
  j["host"] = r.host;
  j["git_commit"] = r.git_commit;
  j["git_branch"] = r.git_branch;
  j["tags"] = r.tags;
  j["seed"] = r.seed;
  j["command_line"] = r.argv;
  j["fingerprint"] = json::parse(r.fingerprint_json.empty() ? "{}" : r.fingerprint_json, nullptr, false);
  j["fingerprint_hash"] = r.fingerprint_hash;
  j["env"] = json::parse(r.env_json.empty() ? "{}" : r.env_json, nullptr, false);
  j["artifacts_dir"] = r.artifacts_dir;
  j["perfgate_version"] = r.perfgate_version;
  j["kind"] = model::to_string(r.kind);
  if (r.kind == model::RunKind::Soak)
    j["soak"] = {
        {"duration_s", r.soak_duration_s}, {"window_s", r.soak_window_s}, {"hang_after_s", r.soak_hang_after_s}};
  return j;
}

class JsonReporter final : public RunReporter {
 public:
  std::string show(const analysis::RunSummary& rs, const ShowOptions& opts) const override {
    json j;
    j["run"] = run_json(rs.run);
    j["trials_ok"] = rs.trials_ok;
    j["trials_failed"] = rs.trials_failed;
    j["trials_interrupted"] = rs.trials_interrupted;
    j["trials_lost"] = rs.trials_lost;
    j["configs"] = json::array();
    for (const auto& c : rs.configs) {
      json cj;
      cj["config_id"] = c.config_id;
      cj["workload"] = c.workload;
      cj["params"] = json::parse(c.params_json, nullptr, false);
      cj["label"] = c.label;
      cj["trials_ok"] = c.trials_ok;
      cj["trials_failed"] = c.trials_failed;
      cj["failures"] = c.failures;
      const auto* fs = c.find(model::harness_metric::first_step_ms);
      cj["first_step_ms"] = fs ? num(fs->median) : json(nullptr);
      cj["primary_metric"] = c.primary_metric;
      cj["notes"] = c.notes;
      cj["steady_classes"] = c.steady_classes;
      // Facts: the value of the configuration's trials (a list when they differ).
      cj["facts"] = json::object();
      for (const auto& m : c.metrics) {
        if (!m.fact) continue;
        std::vector<double> values;
        for (const auto& t : m.trials)
          if (std::find(values.begin(), values.end(), t.value) == values.end()) values.push_back(t.value);
        cj["facts"][m.info.name] = values.size() == 1 ? json(values[0]) : json(values);
      }
      cj["metrics"] = json::array();
      for (const auto& m : c.metrics) {
        if (m.fact || !metric_selected(m.info.name, opts)) continue;
        json mj;
        mj["metric"] = m.info.name;
        mj["unit"] = m.info.unit;
        mj["better"] = model::to_string(m.info.better);
        mj["harness_metric"] = m.harness_metric;
        mj["n"] = m.n;
        mj["median"] = num(m.median);
        mj["mean"] = num(m.mean);
        mj["min"] = num(m.min);
        mj["max"] = num(m.max);
        mj["cv"] = num(m.cv);
        mj["ci"] = {{"low", num(m.ci_low)}, {"high", num(m.ci_high)}, {"coverage", num(m.ci_coverage)}};
        mj["trials"] = json::array();
        for (const auto& t : m.trials)
          mj["trials"].push_back({{"trial_id", t.trial_id},
                                  {"repeat", t.repeat},
                                  {"value", num(t.value)},
                                  {"n_steps", t.summary.n_total},
                                  {"n_steady", t.summary.n_steady},
                                  {"mean", num(t.summary.mean)},
                                  {"median", num(t.summary.median)},
                                  {"p90", num(t.summary.p90)},
                                  {"p99", num(t.summary.p99)},
                                  {"min", num(t.summary.min)},
                                  {"max", num(t.summary.max)},
                                  {"stddev", num(t.summary.stddev)}});
        cj["metrics"].push_back(std::move(mj));
      }
      j["configs"].push_back(std::move(cj));
    }
    j["trials"] = json::array();
    for (const auto& t : rs.trials)
      j["trials"].push_back({{"id", t.id},
                             {"seq", t.seq},
                             {"config_id", t.config_id},
                             {"repeat", t.repeat},
                             {"status", model::to_string(t.status)},
                             {"exit_code", t.exit_code},
                             {"signal", t.signal},
                             {"error", t.error},
                             {"wall_s", num(t.wall_s)},
                             {"cpu_s", num(t.cpu_s)},
                             // 0 is stored for "not measured" (a trial too short to sample, or one that never started).
                             {"peak_rss_mb", t.peak_rss_mb > 0 ? num(t.peak_rss_mb) : json(nullptr)},
                             {"steps", t.steps},
                             {"malformed_lines", t.malformed_lines},
                             {"notes", t.notes},
                             {"log_dir", t.log_dir},
                             {"steady_class", t.steady_class},
                             {"steady_start", t.steady_start},
                             {"compile_steps", t.compile_steps},
                             {"last_step_s", t.last_step_s >= 0 ? json(t.last_step_s) : json(nullptr)},
                             {"host", t.host},
                             {"slot", t.slot >= 0 ? json(t.slot) : json(nullptr)},
                             {"device_kind", t.device_kind},
                             {"devices", t.devices},
                             {"node_fingerprint", t.node_fingerprint}});
    j["slow_devices"] = json::array();
    for (const auto& d : rs.slow_devices)
      j["slow_devices"].push_back({{"host", d.host},
                                   {"device_kind", d.device_kind},
                                   {"devices", d.devices},
                                   {"trials", d.trials},
                                   {"median_worse", d.median_worse},
                                   {"note", d.text()}});
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }

  std::string runs(const std::vector<store::RunListRow>& rows) const override {
    json j = json::array();
    for (const auto& r : rows) {
      json rj = run_json(r.run);
      rj["trials_ok"] = r.trials_ok;
      rj["trials_failed"] = r.trials_failed;
      rj["trials_total"] = r.trials_total;
      j.push_back(std::move(rj));
    }
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
};

}  // namespace

std::unique_ptr<RunReporter> make_json_reporter() { return std::make_unique<JsonReporter>(); }

}  // namespace perfgate::report
