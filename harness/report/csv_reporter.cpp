// CSV for `show` and `runs` (RFC 4180): one row per configuration and metric,
// or per run, with parameters and facts as their own columns.

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "harness/report/run_reporter.hpp"
#include "harness/report/sweep_reporter.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::report {
namespace {

std::string num(double v) { return std::isfinite(v) ? util::format_number(v) : ""; }

class CsvReporter final : public RunReporter {
 public:
  std::string show(const analysis::RunSummary& rs, const ShowOptions& opts) const override {
    std::vector<std::string> params, facts;
    auto add = [](std::vector<std::string>& v, const std::string& k) {
      if (std::find(v.begin(), v.end(), k) == v.end()) v.push_back(k);
    };
    for (const auto& c : rs.configs) {
      for (const auto& [k, v] : c.params) add(params, k);
      for (const auto& m : c.metrics)
        if (m.fact) add(facts, m.info.name);
    }
    std::string out = "run,workload";
    for (const auto& p : params) out += "," + csv_field(p);
    for (const auto& f : facts) out += "," + csv_field(f);
    out += ",metric,unit,better,n,median,ci_low,ci_high,ci_coverage,mean,min,max,cv\n";
    for (const auto& c : rs.configs) {
      std::string lead = fmt::format("{},{}", rs.run.id, csv_field(c.workload));
      for (const auto& p : params) {
        auto it = c.params.find(p);
        lead += "," + csv_field(it == c.params.end() ? "" : it->second.text);
      }
      for (const auto& f : facts) {
        const auto* m = c.find(f);
        lead += "," + (m && m->fact ? num(m->median) : std::string());
      }
      for (const auto& m : c.metrics) {
        if (m.fact || !metric_selected(m.info.name, opts)) continue;
        out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", lead, csv_field(m.info.name),
                           csv_field(m.info.unit), model::to_string(m.info.better), m.n, num(m.median), num(m.ci_low),
                           num(m.ci_high), num(m.ci_coverage), num(m.mean), num(m.min), num(m.max), num(m.cv));
      }
    }
    return out;
  }

  std::string runs(const std::vector<store::RunListRow>& rows) const override {
    std::string out =
        "id,suite,kind,started_at,ended_at,status,trials_ok,trials_failed,trials_total,tags,commit,branch\n";
    for (const auto& r : rows)
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", r.run.id, csv_field(r.run.suite),
                         model::to_string(r.run.kind), num(r.run.started_at),
                         r.run.ended_at > 0 ? num(r.run.ended_at) : "", model::to_string(r.run.status), r.trials_ok,
                         r.trials_failed, r.trials_total, csv_field(util::join(r.run.tags, ";")),
                         csv_field(r.run.git_commit), csv_field(r.run.git_branch));
    return out;
  }
};

}  // namespace

std::unique_ptr<RunReporter> make_csv_reporter() { return std::make_unique<CsvReporter>(); }

}  // namespace perfgate::report
