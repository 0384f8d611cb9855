#pragma once
// perfgate's rows read the same way from either backend. A Row is anything
// with text(c), i64(c), f64(c) and is_null(c) over one result row (SQLite's
// statement, PostgreSQL's result at a row index); the column lists below
// are the SELECT lists both stores use, so a schema change is made once.

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "harness/model/params.hpp"
#include "harness/model/trial.hpp"
#include "harness/model/verdict.hpp"
#include "harness/store/schema.hpp"
#include "harness/store/store.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::store::rows {

// `latest`: the newest run a user started. A bisect's probe runs (kind
// 'bisect', one per commit it built) are not: after a bisect, `perfgate gate`
// (candidate `latest` by default) would judge an old commit's probe.
inline constexpr const char* k_latest_run_sql =
    "SELECT coalesce(max(CASE WHEN kind <> 'bisect' THEN id END), 0), count(*) FROM runs";
inline std::string no_latest_run_message(const std::string& where, long long runs) {
  if (runs == 0) return "no runs in " + where + " yet";
  return "no run in " + where + " but a bisect's probe runs, which are not `latest`: name one by its id " +
         "(`perfgate runs` lists them)";
}

// A number that may be NULL (how both stores keep a NaN).
template <typename Row>
double real(const Row& r, int c) {
  return r.is_null(c) ? std::nan("") : r.f64(c);
}

// Columns of k_run_columns (schema.hpp), from column 0.
template <typename Row>
RunRecord run(const Row& r) {
  RunRecord x;
  x.id = r.i64(0);
  x.suite = r.text(1);
  x.suite_path = r.text(2);
  x.description = r.text(3);
  x.started_at = r.f64(4);
  x.ended_at = r.f64(5);
  x.status = model::run_status_from(r.text(6));
  x.host = r.text(7);
  x.pid = r.i64(8);
  x.fingerprint_json = r.text(9);
  x.fingerprint_hash = r.text(10);
  x.git_commit = r.text(11);
  x.git_branch = r.text(12);
  x.seed = static_cast<std::uint64_t>(r.i64(13));
  x.argv = r.text(14);
  x.env_json = r.text(15);
  x.plan_json = r.text(16);
  x.artifacts_dir = r.text(17);
  x.perfgate_version = r.text(18);
  x.kind = model::run_kind_from(r.text(19));
  x.soak_duration_s = r.f64(20);
  x.soak_window_s = r.f64(21);
  x.soak_hang_after_s = r.f64(22);
  return x;
}

// A trial's devices as stored: "0,1".
inline std::vector<int> devices(const std::string& text) {
  std::vector<int> out;
  for (const auto& part : util::split(text, ','))
    if (auto id = util::parse_non_negative(part)) out.push_back(static_cast<int>(*id));
  return out;
}

inline constexpr const char* k_trial_columns =
    "id, run_id, config_id, repeat, seq, status, exit_code, signal, error, started_at, wall_s, cpu_s, peak_rss_mb, "
    "steps, malformed_lines, notes, log_dir, steady_class, steady_start, compile_steps, last_step_s, host, slot, "
    "device_kind, devices, node_fingerprint";

template <typename Row>
model::TrialRecord trial(const Row& r) {
  model::TrialRecord t;
  t.id = r.i64(0);
  t.run_id = r.i64(1);
  t.config_id = r.i64(2);
  t.repeat = static_cast<int>(r.i64(3));
  t.seq = static_cast<int>(r.i64(4));
  t.status = model::trial_status_from(r.text(5));
  t.exit_code = static_cast<int>(r.i64(6));
  t.signal = static_cast<int>(r.i64(7));
  t.error = r.text(8);
  t.started_at = r.f64(9);
  t.wall_s = r.f64(10);
  t.cpu_s = r.f64(11);
  t.peak_rss_mb = r.f64(12);
  t.steps = r.i64(13);
  t.malformed_lines = r.i64(14);
  t.notes = r.text(15);
  t.log_dir = r.text(16);
  t.steady_class = r.text(17);
  t.steady_start = r.i64(18);
  t.compile_steps = r.i64(19);
  t.last_step_s = r.f64(20);
  t.host = r.text(21);
  t.slot = static_cast<int>(r.i64(22));
  t.device_kind = r.text(23);
  t.devices = devices(r.text(24));
  t.node_fingerprint = r.text(25);
  return t;
}

// A trial's summary of one metric: trial id in column 0, then these.
inline constexpr const char* k_summary_columns =
    "ts.trial_id, m.name, ts.n_total, ts.n_steady, ts.mean, ts.median, ts.p90, ts.p99, ts.min, ts.max, ts.stddev, "
    "ts.value, ts.is_scalar";

template <typename Row>
model::MetricSummary summary(const Row& r) {
  model::MetricSummary m;
  m.metric = r.text(1);
  m.n_total = r.i64(2);
  m.n_steady = r.i64(3);
  m.mean = real(r, 4);
  m.median = real(r, 5);
  m.p90 = real(r, 6);
  m.p99 = real(r, 7);
  m.min = real(r, 8);
  m.max = real(r, 9);
  m.stddev = real(r, 10);
  m.value = real(r, 11);
  m.is_scalar = r.i64(12) != 0;
  return m;
}

inline constexpr const char* k_gate_columns =
    "id, run_id, created_at, baseline, baseline_runs, policy, outcome, trials_added, forced";

// The baseline's runs as stored in gates.baseline_runs: "[3,2,1]".
inline std::string run_list(const std::vector<long long>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

template <typename Row>
GateRecord gate(const Row& r) {
  GateRecord g;
  g.id = r.i64(0);
  g.run_id = r.i64(1);
  g.created_at = r.f64(2);
  g.baseline = r.text(3);
  for (auto& part : util::split(util::trim(r.text(4)), ',')) {
    std::string digits;
    for (char ch : part)
      if (ch >= '0' && ch <= '9') digits += ch;
    if (!digits.empty()) g.baseline_runs.push_back(std::stoll(digits));
  }
  g.policy = r.text(5);
  g.outcome = r.text(6);
  g.trials_added = static_cast<int>(r.i64(7));
  g.forced = r.i64(8) != 0;
  return g;
}

inline constexpr const char* k_verdict_columns =
    "c.workload, c.params, m.name, m.unit, m.better, v.verdict, v.threshold, v.n_base, v.n_cand, v.failed_base, "
    "v.failed_cand, v.base_median, v.cand_median, v.change, v.change_low, v.change_high, v.u, v.p, v.p_adjusted, "
    "v.extra_trials, v.added_trials, v.note, v.node_class, v.threshold_floor";

template <typename Row>
model::Comparison comparison(const Row& v) {
  model::Comparison c;
  c.workload = v.text(0);
  c.params_json = v.text(1);
  c.label = model::params_label(model::params_from_json(c.params_json));
  c.metric.name = v.text(2);
  c.metric.unit = v.text(3);
  c.metric.better = model::better_from_string(v.text(4)).value_or(model::Better::Lower);
  c.verdict = model::verdict_from_string(v.text(5)).value_or(model::VerdictKind::Inconclusive);
  c.threshold_rel = v.f64(6);
  c.n_base = static_cast<int>(v.i64(7));
  c.n_cand = static_cast<int>(v.i64(8));
  c.failed_base = static_cast<int>(v.i64(9));
  c.failed_cand = static_cast<int>(v.i64(10));
  c.base_median = real(v, 11);
  c.cand_median = real(v, 12);
  c.change_rel = real(v, 13);
  c.change_low_rel = real(v, 14);
  c.change_high_rel = real(v, 15);
  c.tested = !v.is_null(17);
  c.u = real(v, 16);
  c.p_value = c.tested ? v.f64(17) : 1;
  c.p_adjusted = c.tested ? v.f64(18) : 1;
  c.extra_trials = static_cast<int>(v.i64(19));
  c.added_trials = static_cast<int>(v.i64(20));
  c.note = v.text(21);
  c.node_class = v.text(22);
  c.threshold_floor = v.f64(23);
  c.label = model::with_node_class(c.label, c.node_class);
  return c;
}

inline constexpr const char* k_build_columns =
    "key, tree, build_command, git_commit, status, attempts, worktree, log_path, error, duration_s, updated_at";

template <typename Row>
BuildRecord build(const Row& r) {
  BuildRecord b;
  b.key = r.text(0);
  b.tree = r.text(1);
  b.build_command = r.text(2);
  b.git_commit = r.text(3);
  b.status = r.text(4);
  b.attempts = static_cast<int>(r.i64(5));
  b.worktree = r.text(6);
  b.log_path = r.text(7);
  b.error = r.text(8);
  b.duration_s = r.f64(9);
  b.updated_at = r.f64(10);
  return b;
}

inline constexpr const char* k_bisect_columns =
    "id, created_at, suite, workload, params, metric, good, bad, outcome, report";

template <typename Row>
BisectRecord bisect(const Row& r) {
  BisectRecord b;
  b.id = r.i64(0);
  b.created_at = r.f64(1);
  b.suite = r.text(2);
  b.workload = r.text(3);
  b.params_json = r.text(4);
  b.metric = r.text(5);
  b.good = r.text(6);
  b.bad = r.text(7);
  b.outcome = r.text(8);
  b.report_json = r.text(9);
  return b;
}

}  // namespace perfgate::store::rows
