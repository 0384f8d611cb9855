#include "harness/analysis/checklist.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "harness/analysis/baseline.hpp"
#include "harness/analysis/gate.hpp"
#include "harness/analysis/node_class.hpp"
#include "harness/analysis/run_summary.hpp"
#include "harness/analysis/soak.hpp"
#include "harness/suite/policy_loader.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::analysis {
using model::CheckKind;

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

bool matches(const ConfigSummary& cs, const std::string& workload, const std::map<std::string, std::string>& filter) {
  if (!workload.empty() && cs.workload != workload) return false;
  for (const auto& [k, v] : filter) {
    auto it = cs.params.find(k);
    if (it == cs.params.end() || it->second.text != v) return false;
  }
  return true;
}

// The configuration's parameters without the given keys, to pair configurations.
std::string rest_of(const ConfigSummary& cs, const std::map<std::string, std::string>& without) {
  std::string out = cs.workload;
  for (const auto& [k, v] : cs.params)
    if (!without.contains(k)) out += "|" + k + "=" + v.text;
  return out;
}

double median_of(const ConfigSummary& cs, const std::string& metric) {
  const auto* row = cs.find(metric);
  return row && row->n > 0 ? row->median : k_nan;
}

std::string limit_text(const model::ChecklistItem& it, const std::string& unit) {
  std::vector<std::string> parts;
  if (it.at_least) parts.push_back(fmt::format(">= {}{}", util::format_value(*it.at_least), unit));
  if (it.at_most) parts.push_back(fmt::format("<= {}{}", util::format_value(*it.at_most), unit));
  return util::join(parts, " and ");
}

bool within(const model::ChecklistItem& it, double v) {
  if (!std::isfinite(v)) return false;
  if (it.at_least && v < *it.at_least) return false;
  if (it.at_most && v > *it.at_most) return false;
  return true;
}

class Evaluator {
 public:
  Evaluator(store::Store& st, const ChecklistOptions& opt) : m_st(st), m_opt(opt) {}

  ItemResult evaluate(const model::ChecklistItem& it) {
    ItemResult r;
    r.item = it;
    r.measured = k_nan;
    std::string sel = it.run.empty() ? m_opt.run : it.run;
    auto id = m_st.resolve_run(sel);
    if (!id) {
      r.evidence = fmt::format("run '{}': {}", sel, id.error().message);
      return r;
    }
    r.run_id = *id;
    auto summary = run_summary(*id);
    if (!summary) {
      r.evidence = summary.error().message;
      return r;
    }
    switch (it.kind) {
      case CheckKind::Ratio:
        ratio(it, **summary, r);
        break;
      case CheckKind::DataShare:
        data_share(it, **summary, r);
        break;
      case CheckKind::Scaling:
        scaling(it, **summary, r);
        break;
      case CheckKind::FirstStep:
        first_step(it, **summary, r);
        break;
      case CheckKind::SoakDrift:
      case CheckKind::MemoryGrowth:
      case CheckKind::Stalls:
      case CheckKind::Hangs:
      case CheckKind::NanLoss:
        soak_check(it, *id, r);
        break;
      case CheckKind::NoRegression:
        no_regression(it, **summary, r);
        break;
      case CheckKind::AllTrialsOk:
        all_ok(it, **summary, r);
        break;
    }
    return r;
  }

 private:
  Expected<const RunSummary*> run_summary(long long id) {
    if (auto it = m_runs.find(id); it != m_runs.end()) return it->second.get();
    auto data = m_st.load_run(id);
    if (!data) return data.error();
    auto s = std::make_unique<RunSummary>(summarise_run(*data));
    auto* p = s.get();
    m_runs[id] = std::move(s);
    return p;
  }

  Expected<const SoakReport*> soak(long long id) {
    if (auto it = m_soaks.find(id); it != m_soaks.end()) return it->second.get();
    SoakAnalysisOptions so;
    so.window_s = m_opt.soak_window_s > 0 ? m_opt.soak_window_s : stored_soak_window_s(m_st, id);
    auto rep = analyse_soak(m_st, id, so);
    if (!rep) return rep.error();
    auto s = std::make_unique<SoakReport>(std::move(*rep));
    auto* p = s.get();
    m_soaks[id] = std::move(s);
    return p;
  }

  void decide(ItemResult& r, double v, const std::string& text, const std::string& unit) {
    r.measured = v;
    r.measured_text = text;
    r.limit_text = limit_text(r.item, unit);
    r.status = within(r.item, v) ? ItemStatus::Pass : ItemStatus::Fail;
  }

  void ratio(const model::ChecklistItem& it, const RunSummary& rs, ItemResult& r) {
    // Pair each numerator configuration with the denominator one that differs only in the filtered keys.
    std::map<std::string, const ConfigSummary*> dens;
    for (const auto& cs : rs.configs)
      if (matches(cs, it.workload, it.denominator)) dens[rest_of(cs, it.denominator)] = &cs;
    std::vector<std::string> ev;
    double worst = k_nan;
    for (const auto& cs : rs.configs) {
      if (!matches(cs, it.workload, it.numerator)) continue;
      auto d = dens.find(rest_of(cs, it.numerator));
      if (d == dens.end()) continue;
      double num = median_of(cs, it.metric), den = median_of(*d->second, it.metric);
      if (!std::isfinite(num) || !std::isfinite(den) || den == 0) continue;
      double q = num / den;
      ev.push_back(fmt::format("{} / {}: {} / {} = {:.2f}x", cs.label, d->second->label, util::format_value(num),
                               util::format_value(den), q));
      // The pair closest to failing decides.
      if (!std::isfinite(worst) || (it.at_least && q < worst) || (!it.at_least && q > worst)) worst = q;
    }
    if (ev.empty()) {
      r.evidence = fmt::format("no pair of configurations with {} in run {} matches numerator and denominator",
                               it.metric, rs.run.id);
      return;
    }
    decide(r, worst, fmt::format("{:.2f}x", worst), "x");
    r.evidence = util::join(ev, "; ");
  }

  void data_share(const model::ChecklistItem& it, const RunSummary& rs, ItemResult& r) {
    double worst = k_nan;
    std::vector<std::string> ev;
    for (const auto& cs : rs.configs) {
      if (!matches(cs, it.workload, it.where)) continue;
      double wait = median_of(cs, "data_wait_ms"), step = median_of(cs, "step_time_ms");
      if (!std::isfinite(wait) || !std::isfinite(step) || step <= 0) continue;
      double share = wait / step;
      ev.push_back(fmt::format("{} {}: {:.1f}%", cs.workload, cs.label, share * 100));
      if (!std::isfinite(worst) || share > worst) worst = share;
    }
    if (ev.empty()) {
      r.evidence = fmt::format("run {} reports no data_wait_ms and step_time_ms", rs.run.id);
      return;
    }
    decide(r, worst, fmt::format("{:.1f}%", worst * 100), "");
    r.limit_text = fmt::format("<= {:.1f}%", *it.at_most * 100);
    r.evidence = util::join(ev, "; ");
  }

  void scaling(const model::ChecklistItem& it, const RunSummary& rs, ItemResult& r) {
    std::map<std::string, std::vector<std::pair<double, const ConfigSummary*>>> groups;
    for (const auto& cs : rs.configs) {
      if (!matches(cs, it.workload, it.where)) continue;
      auto p = cs.params.find(it.param);
      if (p == cs.params.end()) continue;
      char* end = nullptr;
      double n = std::strtod(p->second.text.c_str(), &end);
      if (end == p->second.text.c_str() || n <= 0) continue;
      groups[rest_of(cs, {{it.param, ""}})].emplace_back(n, &cs);
    }
    double worst = k_nan;
    std::vector<std::string> ev;
    for (auto& [key, list] : groups) {
      if (list.size() < 2) continue;
      std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      double n0 = list.front().first, t0 = median_of(*list.front().second, it.metric);
      if (!std::isfinite(t0) || t0 <= 0) continue;
      for (std::size_t i = 1; i < list.size(); ++i) {
        double tn = median_of(*list[i].second, it.metric);
        if (!std::isfinite(tn)) continue;
        double eff = tn / (list[i].first / n0 * t0);
        ev.push_back(fmt::format("{}={:g} vs {:g}: {} / ({:g} x {}) = {:.2f}", it.param, list[i].first, n0,
                                 util::format_value(tn), list[i].first / n0, util::format_value(t0), eff));
        if (!std::isfinite(worst) || eff < worst) worst = eff;
      }
    }
    if (ev.empty()) {
      r.evidence =
          fmt::format("run {} has no configurations differing only in '{}' with {}", rs.run.id, it.param, it.metric);
      return;
    }
    decide(r, worst, fmt::format("{:.2f}", worst), "");
    r.evidence = util::join(ev, "; ");
  }

  void first_step(const model::ChecklistItem& it, const RunSummary& rs, ItemResult& r) {
    std::string metric = it.metric.empty() ? "first_step_ms" : it.metric;
    double worst = k_nan;
    std::vector<std::string> ev;
    for (const auto& cs : rs.configs) {
      if (!matches(cs, it.workload, it.where)) continue;
      double v = median_of(cs, metric);
      if (!std::isfinite(v)) continue;
      ev.push_back(fmt::format("{} {}: {} ms", cs.workload, cs.label, util::format_value(v)));
      if (!std::isfinite(worst) || v > worst) worst = v;
    }
    if (ev.empty()) {
      r.evidence = fmt::format("run {} has no {}", rs.run.id, metric);
      return;
    }
    decide(r, worst, fmt::format("{} ms", util::format_value(worst)), " ms");
    r.evidence = util::join(ev, "; ");
  }

  void soak_check(const model::ChecklistItem& it, long long run_id, ItemResult& r) {
    auto rep = soak(run_id);
    if (!rep) {
      r.evidence = rep.error().message;
      return;
    }
    double worst = k_nan;
    double total = 0;
    bool seen = false;
    std::vector<std::string> ev;
    for (const auto& t : (*rep)->trials) {
      if (!it.workload.empty() && t.workload != it.workload) continue;
      std::string who = t.workload + (t.label.empty() ? "" : " " + t.label);
      switch (it.kind) {
        case CheckKind::SoakDrift:
          for (const auto& m : t.metrics)
            if (model::glob_match(it.metric, m.metric) && m.windows >= 3) {
              seen = true;
              ev.push_back(
                  fmt::format("{}: {} {:+.2f} %/h over {} windows", who, m.metric, m.drift_pct_per_h, m.windows));
              if (!std::isfinite(worst) || std::fabs(m.drift_pct_per_h) > worst) worst = std::fabs(m.drift_pct_per_h);
            }
          break;
        case CheckKind::MemoryGrowth:
          for (const auto& m : t.metrics)
            if ((it.metric.empty() ? m.memory : model::glob_match(it.metric, m.metric)) && m.windows >= 3) {
              seen = true;
              ev.push_back(fmt::format("{}: {} {:+.1f} MB/h", who, m.metric, m.slope_per_h));
              if (!std::isfinite(worst) || m.slope_per_h > worst) worst = m.slope_per_h;
            }
          break;
        case CheckKind::Stalls:
          for (const auto& m : t.metrics)
            if (m.metric == (it.metric.empty() ? "step_time_ms" : it.metric)) {
              seen = true;
              total += m.stalls;
              if (m.stalls > 0)
                ev.push_back(fmt::format("{}: {} stalls, worst {:.1f}x", who, m.stalls, m.worst_stall_ratio));
              // Not counted: the host held the trial up (soak host events).
              if (m.host_stalls > 0)
                ev.push_back(fmt::format("{}: {} more while the host paused (not counted)", who, m.host_stalls));
            }
          break;
        case CheckKind::Hangs:
          seen = true;
          for (const auto& f : t.findings)
            if (f.kind == "hang" || f.kind == "no_steps") {  // a trial that never stepped did not run
              total += 1;
              ev.push_back(fmt::format("{}: {}", who, f.summary));
            }
          break;
        case CheckKind::NanLoss:
          for (const auto& m : t.metrics)
            if (m.metric == "loss") {
              seen = true;
              total += static_cast<double>(m.non_finite);
              if (m.non_finite > 0) ev.push_back(fmt::format("{}: {} NaN/Inf loss values", who, m.non_finite));
            }
          break;
        default:
          break;
      }
    }
    if (!seen) {
      r.evidence = fmt::format("run {} holds no {} series to judge", run_id,
                               it.kind == CheckKind::NanLoss        ? "loss"
                               : it.kind == CheckKind::MemoryGrowth ? "memory"
                                                                    : it.metric);
      return;
    }
    switch (it.kind) {
      case CheckKind::SoakDrift:
        decide(r, worst, fmt::format("{:.2f} %/h", worst), " %/h");
        break;
      case CheckKind::MemoryGrowth:
        decide(r, worst, fmt::format("{:+.1f} MB/h", worst), " MB/h");
        break;
      default:
        decide(r, total, util::format_value(total), "");
        break;
    }
    r.evidence = ev.empty() ? "none found" : util::join(ev, "; ");
  }

  void no_regression(const model::ChecklistItem& it, const RunSummary& rs, ItemResult& r) {
    std::string sel = it.baseline.empty() ? m_opt.baseline : it.baseline;
    auto policy = it.policy.empty() ? Expected<model::GatePolicy>(model::default_gate_policy())
                                    : suite::load_gate_policy(it.policy);
    if (!policy) {
      r.evidence = policy.error().message;
      return;
    }
    auto base = select_baseline(m_st, rs.run, sel, m_opt.force);
    if (!base) {
      r.evidence = base.error().message;
      return;
    }
    auto history = select_history(m_st, rs.run, *base, policy->history_runs);
    if (!history) {
      r.evidence = history.error().message;
      return;
    }
    // Compared per node class, as the gate does.
    auto data = m_st.load_run(rs.run.id);
    if (!data) {
      r.evidence = data.error().message;
      return;
    }
    auto classes = node_class_view(m_st, *data, m_opt.force);
    if (!classes) {
      r.evidence = classes.error().message;
      return;
    }
    std::vector<RunSummary> bs, hs;
    for (const auto& b : base->runs)
      for (auto& part : classes->summarise(b)) bs.push_back(std::move(part));
    for (const auto& h : *history)
      for (auto& part : classes->summarise(h)) hs.push_back(std::move(part));
    // The gate's own evaluation (joint tests, failed trials, run-to-run
    // spread, resolution); a checklist launches nothing, so a gate that
    // cannot decide fails the item.
    auto ev = analysis::evaluate_gate(collect_items(classes->summarise(*data), bs, *policy, {}, hs), *policy);
    auto& cs = ev.comparisons;
    auto n = count_verdicts(cs);
    int bad = n.regression + n.failed;
    int underpowered = count_underpowered(cs);
    sort_by_severity(cs);
    std::vector<std::string> evidence;
    for (const auto& c : cs) {
      if (c.verdict != model::VerdictKind::Regression && c.verdict != model::VerdictKind::Failed) break;
      evidence.push_back(fmt::format("{} {} {}: {} {:+.1f}%", c.workload, c.label, c.metric.name,
                                     model::to_string(c.verdict), c.change_rel * 100));
    }
    if (!r.item.at_most) r.item.at_most = 0;
    if (bad == 0 && underpowered > 0) {
      int most = 0;
      for (const auto& c : cs)
        if (c.underpowered) most = std::max(most, c.trials_for_resolution);
      r.status = ItemStatus::Fail;
      r.measured = static_cast<double>(underpowered);
      r.measured_text = fmt::format("undecidable ({} comparison(s))", underpowered);
      r.limit_text = "decidable";
      r.evidence = fmt::format(
          "{} of {} comparison(s) against '{}' could not have flagged a lone regression at their "
          "trial counts; {}",
          underpowered, cs.size(), sel,
          most > 0 ? fmt::format("run the candidate with up to {} trials per configuration "
                                 "(perfgate gate --adaptive adds them)",
                                 most)
                   : "pool more baseline runs");
      return;
    }
    decide(r, bad, fmt::format("{} regression(s)", bad), "");
    r.evidence = fmt::format("{} comparison(s) against '{}': {} regression, {} failed, {} inconclusive, {} unchanged{}",
                             cs.size(), sel, n.regression, n.failed, n.inconclusive, n.unchanged,
                             evidence.empty() ? "" : "; " + util::join(evidence, "; "));
  }

  void all_ok(const model::ChecklistItem&, const RunSummary& rs, ItemResult& r) {
    r.item.at_most = 0;
    int bad = rs.trials_failed + rs.trials_interrupted;
    decide(r, bad, fmt::format("{} of {} failed", bad, rs.trials.size()), "");
    std::vector<std::string> ev;
    for (const auto& cs : rs.configs)
      for (const auto& f : cs.failures) ev.push_back(cs.workload + " " + cs.label + " " + f);
    r.evidence = ev.empty() ? fmt::format("{} trial(s), all ok", rs.trials.size()) : util::join(ev, "; ");
  }

  store::Store& m_st;
  const ChecklistOptions& m_opt;
  std::map<long long, std::unique_ptr<RunSummary>> m_runs;
  std::map<long long, std::unique_ptr<SoakReport>> m_soaks;
};

}  // namespace

std::string_view to_string(ItemStatus s) {
  switch (s) {
    case ItemStatus::Pass:
      return "pass";
    case ItemStatus::Fail:
      return "fail";
    case ItemStatus::NotEvaluable:
      return "not-evaluable";
  }
  return "?";
}

bool checklist_failed(const ChecklistResult& r, bool strict) {
  return r.failed > 0 || r.required_not_evaluable > 0 || (strict && r.not_evaluable > 0);
}

Expected<ChecklistResult> evaluate_checklist(store::Store& st, const model::Checklist& cl,
                                             const ChecklistOptions& opt) {
  // The default run must exist: a typo there is an input error, not N unevaluable items.
  if (auto id = st.resolve_run(opt.run); !id) return id.error();
  ChecklistResult res;
  res.checklist = cl;
  Evaluator ev(st, opt);
  for (const auto& it : cl.items) {
    auto r = ev.evaluate(it);
    switch (r.status) {
      case ItemStatus::Pass:
        ++res.passed;
        break;
      case ItemStatus::Fail:
        ++res.failed;
        break;
      case ItemStatus::NotEvaluable:
        ++res.not_evaluable;
        if (!it.optional) ++res.required_not_evaluable;
        break;
    }
    res.items.push_back(std::move(r));
  }
  return res;
}

}  // namespace perfgate::analysis
