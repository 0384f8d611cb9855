// perfgate dashboard: the data files of docs/dashboard.md, and the embedded page.

#include "harness/report/dashboard.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/analysis/history.hpp"
#include "harness/analysis/run_summary.hpp"
#include "harness/analysis/soak.hpp"
#include "harness/analysis/sweep.hpp"
#include "harness/report/dashboard_assets.hpp"
#include "harness/stats/downsample.hpp"
#include "harness/stats/mann_whitney.hpp"

namespace perfgate::report {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::string url_component(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string dashboard_index_url(const std::string& url) {
  if (url.ends_with(".html")) return url;
  return url + (url.ends_with("/") ? "" : "/") + "index.html";
}

std::string run_anchor(long long run_id) { return fmt::format("#/run/{}", run_id); }

std::string trend_anchor(const std::string& suite, const std::string& metric, const std::string& config_label) {
  return fmt::format("#/trend/{}?metric={}&config={}", url_component(suite), url_component(metric),
                     url_component(config_label));
}

namespace {

// Six significant digits: what a chart or a table shows, at a third of the bytes.
json num(double v) {
  if (!std::isfinite(v)) return nullptr;
  if (v == 0) return 0.0;
  return std::stod(fmt::format("{:.6g}", v));
}

// Unix times and seconds into a trial: to the millisecond, never to six digits.
json secs(double t) {
  if (!std::isfinite(t)) return nullptr;
  return std::round(t * 1000.0) / 1000.0;
}

json parse_object(const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

std::string full_label(const std::string& workload, const std::string& label) {
  return label.empty() ? workload : workload + " " + label;
}

bool is_soak(const store::RunRecord& r) { return r.kind == model::RunKind::Soak; }

std::string run_kind(const store::RunRecord& r) { return std::string(model::to_string(r.kind)); }

// The headline metric of a run: its configurations' recorded primary, else
// the usual headline metrics in order, then the first a workload reported.
std::string primary_metric(const analysis::RunSummary& s) {
  for (const auto& c : s.configs)
    if (!c.primary_metric.empty() && c.find(c.primary_metric)) return c.primary_metric;
  for (const char* want : {"throughput", "step_time_ms", "latency_ms", "npu_compute_time_ms"})
    for (const auto& c : s.configs)
      if (c.find(want)) return want;
  for (const auto& c : s.configs)
    for (const auto& m : c.metrics)
      if (!m.harness_metric && !m.fact) return m.info.name;
  return s.configs.empty() || s.configs.front().metrics.empty() ? "" : s.configs.front().metrics.front().info.name;
}

class Writer {
 public:
  Writer(fs::path dir, DashboardStats& stats) : m_dir(std::move(dir)), m_stats(stats) {}

  Status data(const std::string& key, const json& obj) {
    // ASCII only: no byte of a workload's output can end the script early or
    // change its encoding; the page inserts every string as text.
    std::string text =
        "PG.receive(" + json(key).dump() + ", " + obj.dump(-1, ' ', true, json::error_handler_t::replace) + ");\n";
    return file(fs::path("data") / (key + ".js"), text);
  }

  Status file(const fs::path& rel, std::string_view bytes) {
    auto path = m_dir / rel;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) return Error::harness(fmt::format("cannot write {}", path.string()));
    m_stats.bytes += static_cast<long long>(bytes.size());
    return Ok{};
  }

 private:
  fs::path m_dir;
  DashboardStats& m_stats;
};

json verdict_counts(const store::GateRecord& g) {
  json counts = json::object();
  for (const auto& c : g.comparisons) {
    auto v = std::string(model::to_string(c.verdict));
    counts[v] = counts.value(v, 0) + 1;
  }
  return counts;
}

json gate_json(const store::GateRecord& g) {
  json comps = json::array();
  for (const auto& c : g.comparisons) {
    auto v = std::string(model::to_string(c.verdict));
    comps.push_back({{"workload", c.workload},
                     {"label", full_label(c.workload, c.label)},
                     {"metric", c.metric.name},
                     {"unit", c.metric.unit},
                     {"verdict", v},
                     {"baseline", num(c.base_median)},
                     {"candidate", num(c.cand_median)},
                     {"change_pct", num(c.change_rel * 100)},
                     {"ci_low_pct", num(c.change_low_rel * 100)},
                     {"ci_high_pct", num(c.change_high_rel * 100)},
                     {"p_adjusted", c.tested ? num(c.p_adjusted) : json(nullptr)},
                     {"threshold_pct", num(c.threshold_rel * 100)},
                     // In the metric's unit when the policy's absolute floor set the threshold.
                     {"threshold_floor", c.threshold_floor > 0 ? json(c.threshold_floor) : json(nullptr)},
                     {"note", c.note}});
  }
  return {{"id", g.id},
          {"outcome", g.outcome},
          {"baseline", g.baseline},
          {"baseline_runs", g.baseline_runs},
          {"counts", verdict_counts(g)},
          {"comparisons", comps}};
}

// One metric's sweep, ranked by analysis::rank_sweep (the CLI's `perfgate
// sweep`): null when the run cannot be ranked by it.
json sweep_json(const analysis::RunSummary& s, const std::string& metric) {
  if (s.configs.size() < 2 || metric.empty()) return nullptr;
  analysis::SweepOptions so;
  so.metric = metric;
  auto r = analysis::rank_sweep(s, so);
  if (!r) return nullptr;
  json ranked = json::array();
  for (const auto& e : r->entries)
    ranked.push_back({{"config", e.config->config_id},
                      {"label", e.label},
                      {"median", num(e.median)},
                      {"ci_low", num(e.ci_low)},
                      {"ci_high", num(e.ci_high)},
                      {"min_max", e.min_max},
                      {"n", e.n},
                      {"advantage_pct", e.rank == 1 ? json(nullptr) : num(100 * e.advantage_rel)},
                      {"p_adjusted", e.rank == 1 ? json(nullptr) : num(e.p_adjusted)},
                      {"beaten", e.beaten},
                      {"tied", e.rank > 1 && !e.beaten},
                      {"repeats_to_separate", e.repeats_to_separate},
                      {"underpowered", e.underpowered}});
  json out = {{"metric", r->metric},
              {"unit", r->unit},
              {"better", std::string(model::to_string(r->better))},
              {"threshold_pct", num(100 * r->threshold_rel)},
              {"ranked", ranked},
              {"best", r->entries[0].config->config_id},
              {"clear_winner", r->clear_winner},
              {"tied_with_best", r->tied_with_best},
              {"runner_up", r->entries[1].config->config_id},
              {"best_vs_runner_up",
               {{"p", num(r->entries[1].p_adjusted)},
                {"significant", r->entries[1].beaten},
                {"advantage_pct", num(100 * r->entries[1].advantage_rel)}}}};
  return out;
}

// Every metric a sweep can rank (a direction, not a fact), primary first.
json sweeps_json(const analysis::RunSummary& s, const std::string& primary) {
  json out = json::object();
  std::vector<std::string> names = {primary};
  for (const auto& c : s.configs)
    for (const auto& m : c.metrics)
      if (!m.fact && m.info.better != model::Better::None &&
          std::find(names.begin(), names.end(), m.info.name) == names.end())
        names.push_back(m.info.name);
  for (const auto& n : names)
    if (auto j = sweep_json(s, n); !j.is_null()) out[n] = std::move(j);
  return out;
}

json run_json(const analysis::RunSummary& s, const std::vector<store::GateRecord>& gates) {
  const auto& r = s.run;
  json run = {{"id", r.id},
              {"suite", r.suite},
              {"description", r.description},
              {"started_at", secs(r.started_at)},
              {"ended_at", secs(r.ended_at)},
              {"status", std::string(model::to_string(r.status))},
              {"commit", r.git_commit},
              {"branch", r.git_branch},
              {"tags", r.tags},
              {"host", r.host},
              {"seed", r.seed},
              {"argv", r.argv},
              {"kind", run_kind(r)},
              {"perfgate_version", r.perfgate_version},
              {"artifacts_dir", r.artifacts_dir},
              {"fingerprint", parse_object(r.fingerprint_json)},
              {"env", parse_object(r.env_json)}};
  std::set<std::string> param_keys;
  json configs = json::array();
  std::map<long long, std::string> labels;
  for (const auto& c : s.configs) {
    json params = json::object();
    for (const auto& [k, v] : c.params) {
      params[k] = v.text;
      param_keys.insert(k);
    }
    json metrics = json::array();
    for (const auto& m : c.metrics)
      metrics.push_back({{"metric", m.info.name},
                         {"unit", m.info.unit},
                         {"better", std::string(model::to_string(m.info.better))},
                         {"n", m.n},
                         {"median", num(m.median)},
                         {"ci_low", num(m.ci_low)},
                         {"ci_high", num(m.ci_high)},
                         {"cv", num(m.cv)},
                         {"harness", m.harness_metric}});
    labels[c.config_id] = full_label(c.workload, c.label);
    configs.push_back({{"id", c.config_id},
                       {"workload", c.workload},
                       {"label", labels[c.config_id]},
                       {"params", params},
                       {"trials_ok", c.trials_ok},
                       {"trials_failed", c.trials_failed},
                       {"metrics", metrics}});
  }
  json trials = json::array();
  for (const auto& t : s.trials)
    trials.push_back({{"id", t.id},
                      {"seq", t.seq},
                      {"repeat", t.repeat},
                      {"config", t.config_id},
                      {"label", labels.count(t.config_id) ? labels[t.config_id] : ""},
                      {"status", std::string(model::to_string(t.status))},
                      {"exit_code", t.exit_code},
                      {"signal", t.signal},
                      {"wall_s", secs(t.wall_s)},
                      {"error", t.error},
                      {"notes", t.notes},
                      {"log_dir", t.log_dir}});
  const auto primary = primary_metric(s);
  return {{"run", run},
          {"primary", primary},
          {"params", json(std::vector<std::string>(param_keys.begin(), param_keys.end()))},
          {"configs", configs},
          {"trials", trials},
          {"sweep", sweep_json(s, primary)},
          {"sweeps", sweeps_json(s, primary)},
          {"gate", gates.empty() ? json(nullptr) : gate_json(gates.front())}};
}

// Per suite: every configuration and metric over its runs, with change points.
// The culprits bisects named, per (workload, params, metric): each marked
// on the trend at the run of its bisect's bad commit (the nightly that
// regressed), when the trend has it.
using SeriesKey = std::tuple<std::string, std::string, std::string>;
std::map<SeriesKey, json> bisect_culprits(const std::vector<store::BisectRecord>& bisects) {
  std::map<SeriesKey, json> out;
  for (const auto& b : bisects) {  // newest first
    if (b.outcome != "culprit") continue;
    auto rep = json::parse(b.report_json, nullptr, false);
    if (!rep.is_object() || !rep.contains("findings")) continue;
    for (const auto& f : rep["findings"]) {
      if (!f.is_object() || f.value("kind", "") != "culprit") continue;
      auto& list = out[{b.workload, b.params_json, b.metric}];
      if (!list.is_array()) list = json::array();
      const auto& first = f.contains("first") ? f["first"] : json::object();
      list.push_back(
          {{"bisect", b.id},
           {"sha", first.value("sha", "")},
           {"subject", first.value("subject", "")},
           {"change_pct",
            f.contains("change") && f["change"].is_number() ? json(100 * f["change"].get<double>()) : json(nullptr)},
           {"bad", b.bad},
           {"run", nullptr}});
    }
  }
  return out;
}

json trend_json(const std::string& suite, const std::vector<const analysis::RunSummary*>& runs,
                const std::map<long long, std::vector<store::GateRecord>>& gates,
                const std::vector<store::BisectRecord>& bisects = {}) {
  auto culprits = bisect_culprits(bisects);
  std::vector<analysis::RunSummary> chrono;
  chrono.reserve(runs.size());
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) chrono.push_back(**it);
  analysis::HistoryOptions ho;
  ho.metrics = {"*"};
  auto series = analysis::history(chrono, model::default_gate_policy(), ho);

  // Interval of each point, and each gate's verdicts, by (run, workload, params, metric).
  using Key = std::tuple<long long, std::string, std::string, std::string>;
  std::map<Key, const analysis::MetricRow*> rows;
  for (const auto& r : chrono)
    for (const auto& c : r.configs)
      for (const auto& m : c.metrics) rows[{r.run.id, c.workload, c.params_json, m.info.name}] = &m;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<long long>> regressions;
  std::map<std::tuple<std::string, std::string, std::string>, json> baseline_band;
  for (const auto& r : chrono) {  // oldest first: the newest gate's band wins
    auto g = gates.find(r.run.id);
    if (g == gates.end() || g->second.empty()) continue;
    for (const auto& c : g->second.front().comparisons) {
      auto k = std::tuple{c.workload, c.params_json, c.metric.name};
      if (c.verdict == model::VerdictKind::Regression) regressions[k].push_back(r.run.id);
      // A band only where the baseline had this configuration (not "missing" or "failed").
      if (c.n_base > 0 && c.verdict != model::VerdictKind::Missing && std::isfinite(c.base_median) &&
          c.base_median != 0 && c.threshold_rel > 0)
        baseline_band[k] = {{"lo", num(c.base_median * (1 - c.threshold_rel))},
                            {"hi", num(c.base_median * (1 + c.threshold_rel))}};
    }
  }
  // Facts are settings, not trends; the suite's primary metric is the trend page's default.
  std::set<std::string> facts;
  std::string primary;
  for (const auto& r : chrono) {
    if (primary.empty()) primary = primary_metric(r);
    for (const auto& c : r.configs)
      for (const auto& m : c.metrics)
        if (m.fact) facts.insert(m.info.name);
  }
  json out_series = json::array();
  for (const auto& s : series) {
    if (facts.count(s.metric.name)) continue;
    json points = json::array();
    for (const auto& p : s.points) {
      auto it = rows.find({p.run_id, s.workload, s.params_json, s.metric.name});
      double lo = it != rows.end() ? it->second->ci_low : std::nan("");
      double hi = it != rows.end() ? it->second->ci_high : std::nan("");
      points.push_back({secs(p.started_at), num(p.value), num(lo), num(hi), p.run_id, p.commit});
    }
    json changes = json::array();
    for (const auto& ch : s.changes)
      changes.push_back({{"run", ch.run_id},
                         {"t", secs(ch.index < s.points.size() ? s.points[ch.index].started_at : 0)},
                         {"before", num(ch.before)},
                         {"after", num(ch.after)},
                         {"change_pct", num(ch.change_rel * 100)},
                         {"p", num(ch.p_value)},
                         {"regression", ch.regression}});
    auto k = std::tuple{s.workload, s.params_json, s.metric.name};
    json marks = json::array();
    if (auto c = culprits.find(k); c != culprits.end()) {
      marks = c->second;
      for (auto& m : marks)
        for (const auto& p : s.points)
          if (!p.commit.empty() && p.commit == m["bad"].get<std::string>()) m["run"] = p.run_id;
    }
    json params = json::object();
    for (const auto& [pk, pv] : model::params_from_json(s.params_json)) params[pk] = pv.text;
    out_series.push_back({{"workload", s.workload},
                          {"label", full_label(s.workload, s.label)},
                          {"params", params},
                          {"metric", s.metric.name},
                          {"unit", s.metric.unit},
                          {"better", std::string(model::to_string(s.metric.better))},
                          {"points", points},
                          {"changes", changes},
                          {"regressions", regressions.count(k) ? json(regressions[k]) : json::array()},
                          {"culprits", marks},
                          {"baseline", baseline_band.count(k) ? baseline_band[k] : json(nullptr)}});
  }
  return {{"suite", suite}, {"primary", primary}, {"series", out_series}};
}

// Drawn first: what a soak is watched for.
int series_rank(const std::string& metric, bool memory) {
  if (metric == "step_time_ms") return 0;
  if (metric == "throughput") return 1;
  if (memory) return 2;
  if (metric == "loss") return 3;
  return 4;
}

Expected<json> soak_json(store::Store& st, const store::RunRecord& run, const DashboardOptions& opt,
                         DashboardStats& stats, json& findings_out) {
  // One pass over the store: the analysis streams each series, and the
  // reducers of the drawn series ride along (5M samples: 4 s instead of 8).
  struct Drawing {
    model::MetricInfo info;
    stats::StreamingReducer reducer;
  };
  std::map<long long, std::vector<Drawing>> drawings;  // by trial, in the order the store lists the metrics
  analysis::SoakAnalysisOptions so;
  // The window the soak ran with: what `perfgate soak` printed.
  so.window_s = run.soak_window_s > 0 ? run.soak_window_s : so.window_s;
  so.on_sample = [&](long long trial_id, const model::MetricInfo& info, double t_s, double v) {
    auto& list = drawings[trial_id];
    if (list.empty() || list.back().info.name != info.name)
      list.push_back({info, stats::StreamingReducer(opt.soak_points)});
    list.back().reducer.add(t_s, v);
  };
  auto rep = analysis::analyse_soak(st, run.id, so);
  if (!rep) return rep.error();
  json trials = json::array();
  for (const auto& t : rep->trials) {
    struct Drawn {
      int rank;
      json j;
    };
    std::vector<Drawn> drawn;
    for (const auto& [info, reducer] : drawings[t.trial_id]) {
      stats.soak_samples += reducer.count();
      auto kept = reducer.points();
      auto pts = stats::lttb(kept, opt.soak_points);
      json points = json::array();
      for (const auto& p : pts) points.push_back({secs(p.t), num(p.v)});
      const analysis::MetricTrend* trend = nullptr;
      for (const auto& m : t.metrics)
        if (m.metric == info.name) trend = &m;
      bool memory = model::is_memory_metric(info.name);
      json j = {
          {"metric", info.name}, {"unit", info.unit}, {"memory", memory}, {"n", reducer.count()}, {"points", points}};
      // The analysis windows only what it judges over time (the loss it only checks for NaN).
      if (trend && trend->windows > 0) {
        json steps = json::array();
        for (const auto& st_step : trend->steps)
          steps.push_back({{"t", secs(st_step.t_s)},
                           {"before", num(st_step.before)},
                           {"after", num(st_step.after)},
                           {"change_pct", num(st_step.change_pct)}});
        j["drift_pct_per_h"] = num(trend->drift_pct_per_h);
        j["slope_per_h"] = num(trend->slope_per_h);
        j["first_window"] = num(trend->first_window);
        j["last_window"] = num(trend->last_window);
        j["trend_p"] = num(trend->trend_p);
        j["steps"] = steps;
      }
      drawn.push_back({series_rank(info.name, memory), std::move(j)});
    }
    std::stable_sort(drawn.begin(), drawn.end(), [](const Drawn& a, const Drawn& b) { return a.rank < b.rank; });
    json series = json::array();
    for (auto& d : drawn) series.push_back(std::move(d.j));
    json findings = json::array();
    for (const auto& f : t.findings) {
      json ev = json::array();
      for (const auto& e : f.evidence) ev.push_back({{"t", secs(e.t_s)}, {"value", num(e.value)}, {"note", e.note}});
      findings.push_back({{"kind", f.kind},
                          {"metric", f.metric},
                          {"value", num(f.value)},
                          {"unit", f.unit},
                          {"summary", f.summary},
                          {"evidence", ev}});
      findings_out.push_back({{"run", run.id},
                              {"suite", run.suite},
                              {"label", full_label(t.workload, t.label)},
                              {"kind", f.kind},
                              {"metric", f.metric},
                              {"summary", f.summary}});
    }
    json host_events = json::array();
    for (const auto& f : t.host_events)
      host_events.push_back(
          {{"kind", f.kind}, {"metric", f.metric}, {"value", num(f.value)}, {"unit", f.unit}, {"summary", f.summary}});
    trials.push_back({{"trial", t.trial_id},
                      {"label", full_label(t.workload, t.label)},
                      {"status", t.status},
                      {"error", t.error},
                      {"wall_s", secs(t.wall_s)},
                      {"steps", t.steps},
                      {"series", series},
                      {"findings", findings},
                      {"host_events", host_events}});
  }
  return json{{"run", run.id}, {"suite", run.suite}, {"window_s", so.window_s}, {"trials", trials}};
}

}  // namespace

Expected<DashboardStats> write_dashboard(store::Store& st, const DashboardOptions& opt) {
  DashboardStats stats;
  auto say = [&](const std::string& s) {
    if (opt.progress) opt.progress(s);
  };
  const fs::path out = opt.out_dir;
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    return Error::input(fmt::format("{}: exists and is not a directory", out.string()));
  for (const char* sub : {"data", "assets"}) {
    fs::create_directories(out / sub, ec);
    if (ec) return Error::harness(fmt::format("cannot create {}: {}", (out / sub).string(), ec.message()));
  }
  // Data files of an earlier generation would be shown as if current; only ours are removed.
  for (const auto& e : fs::directory_iterator(out / "data", ec))
    if (e.path().extension() == ".js") fs::remove(e.path(), ec);
  Writer w(out, stats);
  for (const auto& a : dashboard_assets())
    if (auto s = w.file(std::string(a.path), a.bytes); !s) return s.error();

  auto all_rows = st.list_runs(std::numeric_limits<int>::max());
  if (!all_rows) return all_rows.error();
  // The newest runs, and soaks beyond them: a soak is run before a release,
  // not nightly, and a thousand nightly runs must not push it out.
  constexpr int k_max_soak_pages = 50;
  std::vector<store::RunListRow> listed;
  int soaks_listed = 0;
  for (std::size_t i = 0; i < all_rows->size(); ++i) {
    const auto& row = (*all_rows)[i];
    bool soak = is_soak(row.run);
    if (static_cast<int>(i) < opt.max_runs || (soak && soaks_listed < k_max_soak_pages)) {
      listed.push_back(row);
      if (soak) ++soaks_listed;
    }
  }
  say(fmt::format("reading {} run(s)", listed.size()));
  // Newest first, as listed.
  std::vector<analysis::RunSummary> summaries;
  summaries.reserve(listed.size());
  std::map<long long, std::vector<store::GateRecord>> gates;
  for (const auto& row : listed) {
    auto data = st.load_run(row.run.id);
    if (!data) return data.error();
    summaries.push_back(analysis::summarise_run(*data));
    auto g = st.load_gates(row.run.id);
    if (!g) return g.error();
    if (!g->empty()) gates[row.run.id] = std::move(*g);
  }
  for (const auto& s : summaries) {
    auto g = gates.find(s.run.id);
    static const std::vector<store::GateRecord> none;
    if (auto r = w.data(fmt::format("run-{}", s.run.id), run_json(s, g == gates.end() ? none : g->second)); !r)
      return r.error();
  }
  stats.runs = static_cast<int>(summaries.size());

  // Suites in order of their newest run.
  std::vector<std::string> suites;
  std::map<std::string, std::vector<const analysis::RunSummary*>> by_suite;
  for (const auto& s : summaries) {
    if (!by_suite.count(s.run.suite)) suites.push_back(s.run.suite);
    by_suite[s.run.suite].push_back(&s);
  }
  json suites_json = json::array();
  json failing = json::array();
  for (std::size_t i = 0; i < suites.size(); ++i) {
    const auto& runs = by_suite[suites[i]];
    say(fmt::format("trends of suite {} ({} run(s))", suites[i], runs.size()));
    // Soaks are judged by their own page; their single long trial is not a point of a trend.
    std::vector<const analysis::RunSummary*> trend_runs;
    // Bisect runs measure old commits now: not points of a trend either.
    for (const auto* r : runs)
      if (!is_soak(r->run) && r->run.kind != model::RunKind::Bisect) trend_runs.push_back(r);
    auto bisects = st.load_bisects(suites[i]);
    if (!bisects) return bisects.error();
    std::string key = fmt::format("trend-{}", i);
    auto trend = trend_json(suites[i], trend_runs, gates, *bisects);
    std::set<std::string> metric_names;
    for (const auto& s : trend["series"]) metric_names.insert(s["metric"].get<std::string>());
    const bool has_trend = !trend["series"].empty();
    if (has_trend)
      if (auto r = w.data(key, trend); !r) return r.error();
    // The suite's latest run is its latest nightly or sweep, not a bisect's.
    const analysis::RunSummary* newest = runs.front();
    std::size_t bisect_runs = 0;
    for (const auto* r : runs) bisect_runs += r->run.kind == model::RunKind::Bisect;
    for (const auto* r : runs)
      if (r->run.kind != model::RunKind::Bisect) {
        newest = r;
        break;
      }
    const auto& latest = *newest;
    suites_json.push_back({{"name", suites[i]},
                           {"runs", runs.size() - bisect_runs},
                           {"bisect_runs", bisect_runs},
                           {"latest_run", latest.run.id},
                           {"trend", has_trend ? json(key) : json(nullptr)},
                           {"metrics", std::vector<std::string>(metric_names.begin(), metric_names.end())}});
    std::map<long long, std::string> labels;
    for (const auto& c : latest.configs) labels[c.config_id] = full_label(c.workload, c.label);
    for (const auto& t : latest.trials)
      if (t.status != model::TrialStatus::Ok)
        failing.push_back({{"run", latest.run.id},
                           {"suite", suites[i]},
                           {"label", labels[t.config_id]},
                           {"repeat", t.repeat},
                           {"status", std::string(model::to_string(t.status))},
                           {"error", t.error}});
  }
  stats.suites = static_cast<int>(suites.size());

  json soak_findings = json::array();
  for (const auto& s : summaries) {
    if (!is_soak(s.run) || stats.soaks >= k_max_soak_pages) continue;
    say(fmt::format("soak run {}", s.run.id));
    auto j = soak_json(st, s.run, opt, stats, soak_findings);
    if (!j) return j.error();
    if (auto r = w.data(fmt::format("soak-{}", s.run.id), *j); !r) return r.error();
    ++stats.soaks;
  }

  json runs_json = json::array();
  json regressions = json::array();
  constexpr std::size_t k_max_regressions = 50;
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    const auto& s = summaries[i];
    const auto& row = listed[i];
    json gate = nullptr;
    if (auto g = gates.find(s.run.id); g != gates.end()) {
      const auto& latest = g->second.front();
      gate = {{"id", latest.id},
              {"outcome", latest.outcome},
              {"baseline", latest.baseline},
              {"counts", verdict_counts(latest)}};
      for (const auto& c : latest.comparisons)
        if (c.verdict == model::VerdictKind::Regression && regressions.size() < k_max_regressions)
          regressions.push_back({{"run", s.run.id},
                                 {"suite", s.run.suite},
                                 {"workload", c.workload},
                                 {"label", full_label(c.workload, c.label)},
                                 {"metric", c.metric.name},
                                 {"unit", c.metric.unit},
                                 {"baseline", num(c.base_median)},
                                 {"candidate", num(c.cand_median)},
                                 {"change_pct", num(c.change_rel * 100)},
                                 {"gate", latest.id},
                                 {"at", secs(latest.created_at)}});
    }
    runs_json.push_back({{"id", s.run.id},
                         {"suite", s.run.suite},
                         {"started_at", secs(s.run.started_at)},
                         {"ended_at", secs(s.run.ended_at)},
                         {"status", std::string(model::to_string(s.run.status))},
                         {"commit", s.run.git_commit},
                         {"branch", s.run.git_branch},
                         {"tags", s.run.tags},
                         {"host", s.run.host},
                         {"trials_ok", row.trials_ok},
                         {"trials_failed", row.trials_failed},
                         {"configs", s.configs.size()},
                         {"kind", run_kind(s.run)},
                         {"gate", gate}});
  }
  json index = {{"generated_at", secs(static_cast<double>(std::time(nullptr)))},
                {"perfgate_version", PERFGATE_VERSION},
                {"db", opt.db_label},
                {"suites", suites_json},
                {"runs", runs_json},
                {"regressions", regressions},
                {"soak_findings", soak_findings},
                {"failing_trials", failing}};
  if (auto r = w.data("index", index); !r) return r.error();
  return stats;
}

}  // namespace perfgate::report
