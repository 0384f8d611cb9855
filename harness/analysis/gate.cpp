#include "harness/analysis/gate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>

#include <fmt/format.h>

#include "harness/stats/descriptive.hpp"
#include "harness/stats/fisher_exact.hpp"
#include "harness/stats/mann_whitney.hpp"
#include "harness/stats/multiple.hpp"
#include "harness/stats/two_level.hpp"
#include "harness/stats/van_elteren.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::analysis {
using model::Better;
using model::Comparison;
using model::VerdictKind;

std::string config_key(const std::string& workload, const std::string& params_json) {
  return workload + '\x1f' + params_json;
}

namespace {

Better direction(const GateItem& it) { return it.rule && it.rule->better ? *it.rule->better : it.metric.better; }

// Pooled standard deviation of both sides.
double pooled_sd(std::span<const double> a, std::span<const double> b) {
  double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  if (na + nb < 3) return 0;
  double sa = stats::stddev(a), sb = stats::stddev(b);
  return std::sqrt(((na - 1) * sa * sa + (nb - 1) * sb * sb) / (na + nb - 2));
}

// Candidate trials (in total) that would likely decide an inconclusive
// comparison, with the baseline fixed (a past build cannot be re-run).
// -1 when no number of candidate trials will do with this baseline.
int candidate_trials_needed(const Comparison& c, double sd_rel, double alpha_decide, const model::GatePolicy& policy) {
  double change = std::fabs(c.change_rel);
  double shift, alpha, power;
  if (change > c.threshold_rel) {
    // Beyond the threshold: significance after correction would decide it.
    shift = change;
    alpha = alpha_decide;
    power = policy.power;
  } else {
    // Inside: an interval narrower than the distance to the threshold would.
    shift = std::max(c.threshold_rel - change, c.threshold_rel / 4);
    alpha = 1 - policy.confidence;
    power = 0.5;
  }
  if (!(sd_rel > 0)) return c.n_cand + 1;
  int n_equal = stats::mann_whitney_trials_needed(shift, sd_rel, alpha, power);
  // Equal allocation n per side has n_b n_c / (n_b + n_c) = n / 2; solve for
  // n_c with n_b fixed.
  double r = n_equal / 2.0, nb = c.n_base;
  if (nb <= r) return -1;
  return static_cast<int>(std::ceil(r * nb / (nb - r)));
}

}  // namespace

namespace {

// What evaluate_gate keeps of a tested comparison between its passes.
struct Tested {
  std::size_t index = 0;                   // into the comparisons
  std::vector<double> base_rel, cand_rel;  // kept values relative to the baseline median
  std::vector<std::vector<double>> base_runs_rel, history_rel;
  // What the run-level test reads: the baseline runs and the candidate with
  // each run's rare hiccups left out (the same rule on both sides).
  std::vector<std::vector<double>> level_base_runs;
  std::vector<double> level_cand;
  stats::RunSpread spread;
  double sd_rel = 0;               // pooled trial standard deviation, relative
  double hl_low = 0, hl_high = 0;  // Hodges-Lehmann interval, relative
};

// One metric test in the family: a comparison, a failed-trial test or a joint test.
struct FamilyMember {
  enum class Kind { Comparison, Failures, Joint } kind;
  std::size_t index;
  double p;
};

std::vector<std::vector<double>> scaled(const std::vector<std::vector<double>>& runs, double scale) {
  std::vector<std::vector<double>> out;
  out.reserve(runs.size());
  for (const auto& r : runs) {
    if (r.empty()) continue;
    auto& o = out.emplace_back();
    o.reserve(r.size());
    for (double v : r) o.push_back(v / scale);
  }
  return out;
}

// The baseline's values per run after hiccups were left out: `left_out`
// indexes the pooled values (the runs one after another).
std::vector<std::vector<double>> runs_kept(const SideValues& side, const std::vector<std::size_t>& left_out) {
  std::vector<std::vector<double>> runs = side.runs.empty() ? std::vector<std::vector<double>>{side.values} : side.runs;
  if (left_out.empty()) return runs;
  std::size_t pos = 0, next = 0;
  for (auto& run : runs) {
    std::vector<double> kept;
    for (double v : run) {
      if (next < left_out.size() && left_out[next] == pos)
        ++next;
      else
        kept.push_back(v);
      ++pos;
    }
    run = std::move(kept);
  }
  return runs;
}

double bad_change(const Comparison& c) { return c.metric.better == Better::Higher ? -c.change_rel : c.change_rel; }

// Candidate trials at which the Mann-Whitney test of n_base against them can
// reach alpha; -1 beyond `cap`.
int trials_to_reach(int n_base, double alpha, int cap) {
  if (n_base < 1) return -1;
  for (int n = 2; n <= cap; ++n)
    if (stats::mann_whitney_min_p(static_cast<std::size_t>(n_base), static_cast<std::size_t>(n)) <= alpha) return n;
  return -1;
}

std::string percent(double rel) { return fmt::format("{:.1f} %", 100 * rel); }

// Pass 1: one comparison on its own, appended to `out`; a tested one also
// to `tested`, with what the later passes read.
void compare_one(const GateItem& it, const model::GatePolicy& policy, std::vector<Comparison>& out,
                 std::vector<Tested>& tested) {
  Comparison c;
  c.workload = it.workload;
  c.params_json = it.params_json;
  c.label = it.label;
  c.node_class = it.node_class;
  c.metric = it.metric;
  c.metric.better = direction(it);
  c.threshold_rel = policy.threshold_for(c.metric, it.rule);
  if (c.metric.name == model::harness_metric::peak_rss_mb && policy.peak_rss_floor_mb > 0 && !it.base.values.empty()) {
    // Below the launcher's resolution a percentage means nothing (GatePolicy::peak_rss_floor_mb).
    const double base_mb = std::fabs(stats::median(it.base.values));
    if (base_mb > 0 && policy.peak_rss_floor_mb / base_mb > c.threshold_rel) {
      c.threshold_rel = policy.peak_rss_floor_mb / base_mb;
      c.threshold_floor = policy.peak_rss_floor_mb;
    }
  }
  c.n_base = static_cast<int>(it.base.values.size());
  c.n_cand = static_cast<int>(it.cand.values.size());
  c.failed_base = it.base.failed + it.base.non_finite;
  c.failed_cand = it.cand.failed + it.cand.non_finite;
  c.trials_cand = std::max(it.cand.ok + it.cand.failed, c.n_cand + c.failed_cand);
  c.base_runs = static_cast<int>(
      std::count_if(it.base.runs.begin(), it.base.runs.end(), [](const auto& r) { return !r.empty(); }));
  if (it.base.runs.empty() && c.n_base > 0) c.base_runs = 1;
  c.history_runs = static_cast<int>(it.history.size());
  c.detectable_rel = std::numeric_limits<double>::infinity();
  int min_trials = it.rule && it.rule->min_trials ? *it.rule->min_trials : policy.min_trials;
  if (!it.base.present || !it.cand.present) {
    c.verdict = VerdictKind::Missing;
    c.note = !it.cand.present ? "configuration not in the candidate run" : "configuration not in the baseline";
    out.push_back(std::move(c));
    return;
  }
  const bool cand_crashed = it.cand.failed > 0 || it.cand.non_finite > 0;
  // warmup: auto found no steady state in most candidate trials: their
  // summaries are of a series still moving, nothing to judge a change by.
  if (it.cand.classified > 0 && 2 * it.cand.no_steady > it.cand.classified) {
    c.verdict = VerdictKind::Inconclusive;
    c.base_median = c.n_base > 0 ? stats::median(it.base.values) : std::nan("");
    c.cand_median = c.n_cand > 0 ? stats::median(it.cand.values) : std::nan("");
    c.change_rel = c.change_low_rel = c.change_high_rel =
        std::isfinite(c.base_median) && c.base_median != 0 ? c.cand_median / c.base_median - 1 : std::nan("");
    c.extra_trials = -1;
    c.note = fmt::format("{} of {} candidate trials have no steady state (warmup: auto): longer trials would",
                         it.cand.no_steady, it.cand.classified);
    out.push_back(std::move(c));
    return;
  }
  if (c.n_base == 0 || c.n_cand == 0) {
    // A candidate that fails where the baseline ran is the worst regression
    // of all; a baseline that failed leaves nothing to compare against.
    auto why = [&](const SideValues& side, const char* who) {
      // The launcher's own metric is absent when no trial lived to its first memory sample.
      if (side.failed == 0 && side.non_finite == 0 && c.metric.name == model::harness_metric::peak_rss_mb)
        return fmt::format("peak RSS not measured in any {} trial: each ended before its first memory sample", who);
      if (side.failed == 0 && side.non_finite == 0) return fmt::format("metric not reported by the {}", who);
      if (side.failed == 0) return fmt::format("every {} value is NaN or infinite ({} trials)", who, side.non_finite);
      return fmt::format("every {} trial failed ({})", who, side.failed + side.non_finite);
    };
    bool cand_broke = c.n_cand == 0 && cand_crashed;
    // What one side did measure is still worth showing.
    c.base_median = c.n_base > 0 ? stats::median(it.base.values) : std::nan("");
    c.cand_median = c.n_cand > 0 ? stats::median(it.cand.values) : std::nan("");
    c.change_rel = c.change_low_rel = c.change_high_rel = std::nan("");
    c.verdict = cand_broke ? VerdictKind::Failed : VerdictKind::Missing;
    c.note = c.n_cand == 0 ? why(it.cand, "candidate") : why(it.base, "baseline");
    if (cand_broke) c.failures = it.cand.failures;
    out.push_back(std::move(c));
    return;
  }
  // A past run's hiccup (a trial 10-30 % off on a busy machine) would cost
  // the rank test as much as a real change: every candidate trial ranks
  // past it. Rare gross outliers of the pooled baseline are left out: far
  // outside its spread (MADs) and off by more than twice the change that
  // matters (so a tight baseline's ordinary scatter stays). The candidate
  // keeps all its trials, since its hiccups may be the regression.
  std::vector<std::size_t> out_idx;
  std::vector<double> base_kept;
  if (policy.baseline_outlier_mads > 0 && c.n_base >= min_trials) {
    const double min_distance = 2 * c.threshold_rel * std::fabs(stats::median(it.base.values));
    constexpr double k_rare_fraction = 0.2;  // more than a fifth is a mode of the machine
    out_idx = stats::rare_outliers(it.base.values, policy.baseline_outlier_mads, k_rare_fraction, min_distance);
    if (!out_idx.empty()) {
      base_kept.reserve(it.base.values.size() - out_idx.size());
      std::size_t next = 0;
      for (std::size_t k = 0; k < it.base.values.size(); ++k) {
        if (next < out_idx.size() && out_idx[next] == k)
          ++next;
        else
          base_kept.push_back(it.base.values[k]);
      }
      c.base_left_out = static_cast<int>(out_idx.size());
      c.n_base = static_cast<int>(base_kept.size());
    }
  }
  std::vector<std::string> notes;
  if (c.base_left_out > 0)
    notes.push_back(
        fmt::format("{} baseline trial(s) left out as hiccups: over {:g} MADs and {:g} % from the baseline median",
                    c.base_left_out, policy.baseline_outlier_mads, 200 * c.threshold_rel));
  if (it.base.non_finite + it.cand.non_finite > 0)
    notes.push_back(fmt::format("{} NaN/infinite trial value(s) left out", it.base.non_finite + it.cand.non_finite));
  const std::vector<double>& base = c.base_left_out > 0 ? base_kept : it.base.values;
  c.base_median = stats::median(base);
  c.cand_median = stats::median(it.cand.values);
  double scale = std::fabs(c.base_median);
  if (scale == 0) {
    // A relative change of a zero baseline is undefined; use the spread instead.
    scale = std::max({std::fabs(c.cand_median), pooled_sd(base, it.cand.values), 1e-300});
    notes.insert(notes.begin(), "baseline median is 0: change relative to the candidate scale");
  }
  if (c.n_base < 2 || c.n_cand < 2 || c.n_base < min_trials || c.n_cand < min_trials) {
    c.change_rel = (c.cand_median - c.base_median) / scale;
    c.change_low_rel = c.change_high_rel = c.change_rel;
    bool base_short = c.n_base < std::max(2, min_trials);
    if (cand_crashed && c.n_cand < std::max(2, min_trials)) {
      // Too few candidate trials survived to test: the crashes are the finding.
      c.verdict = VerdictKind::Failed;
      c.failures = it.cand.failures;
      notes.insert(notes.begin(),
                   fmt::format("only {} candidate trial(s) gave a value; {} failed", c.n_cand, c.failed_cand));
    } else {
      c.verdict = VerdictKind::Inconclusive;
      // Candidate trials help only if the baseline is big enough to test against.
      c.extra_trials = base_short ? -1 : std::max(0, std::max(2, min_trials) - c.n_cand);
      notes.insert(notes.begin(),
                   fmt::format("{} baseline and {} candidate trials; at least {} per side are needed to test", c.n_base,
                               c.n_cand, std::max(2, min_trials)) +
                       (c.n_base < min_trials ? " (the baseline is short too: pool more runs)" : ""));
    }
    c.underpowered = true;
    c.note = util::join(notes, "; ");
    out.push_back(std::move(c));
    return;
  }
  auto mw = stats::mann_whitney_u(base, it.cand.values);
  auto hl = stats::hodges_lehmann(base, it.cand.values, policy.confidence);
  c.tested = true;
  c.u = mw.u;
  c.p_trials = c.p_value = mw.p_value;
  c.exact = mw.exact;
  c.change_rel = hl.shift / scale;
  c.change_low_rel = hl.low / scale;
  c.change_high_rel = hl.high / scale;
  c.interval_coverage = hl.coverage;
  Tested t;
  t.index = out.size();
  t.sd_rel = pooled_sd(base, it.cand.values) / scale;
  t.hl_low = c.change_low_rel;
  t.hl_high = c.change_high_rel;
  for (double v : base) t.base_rel.push_back(v / scale);
  for (double v : it.cand.values) t.cand_rel.push_back(v / scale);
  t.base_runs_rel = scaled(runs_kept(it.base, out_idx), scale);
  t.history_rel = scaled(it.history, scale);
  {
    // One hiccup among a run's five trials moves its mean by 2-6 %, as
    // much as a run effect: the run-level test reads each run without its
    // rare hiccups, the candidate's too (the trial-level test keeps all).
    std::vector<std::vector<double>> runs = t.base_runs_rel;
    runs.insert(runs.end(), t.history_rel.begin(), t.history_rel.end());
    runs.push_back(t.cand_rel);
    // Fewer than half of a run: its median stays on the run's main mode.
    // (The pooled rule above allows a fifth; a five-trial run with two
    // hiccups is one run in fifty at a 5 % hiccup rate.)
    constexpr double k_run_hiccup_fraction = 0.45;
    auto trimmed =
        stats::leave_out_run_hiccups(runs, policy.baseline_outlier_mads, 2 * c.threshold_rel, k_run_hiccup_fraction);
    t.level_cand = std::move(trimmed.runs.back());
    trimmed.runs.pop_back();
    if (int n = trimmed.left_out.back(); n > 0)
      notes.push_back(fmt::format("{} candidate trial(s) left out of the run-level test as hiccups", n));
    t.level_base_runs.assign(trimmed.runs.begin(),
                             trimmed.runs.begin() + static_cast<std::ptrdiff_t>(t.base_runs_rel.size()));
    t.spread = stats::run_spread(trimmed.runs, t.level_cand);
  }
  if (policy.bootstrap_resamples > 0) {
    // Each comparison gets its own stream, derived from the seed and its position.
    auto r = stats::bootstrap_median_ratio(base, it.cand.values, policy.confidence, policy.bootstrap_resamples,
                                           policy.bootstrap_seed + 0x9E3779B97F4A7C15ull * t.index);
    c.ratio = r.ratio;
    c.ratio_low = r.low;
    c.ratio_high = r.high;
  }
  c.note = util::join(notes, "; ");
  out.push_back(std::move(c));
  tested.push_back(std::move(t));
}

// Pass 2: the run-to-run spread of each comparison, moderated towards the
// others of the same metric (or of the whole gate when the metric has too
// few), then the run-level test.
// The trial noise inside runs is moderated the same way, so that the
// run effect (the spread of run means less the trial noise in them) is
// not the difference of a gate-wide and a one-comparison estimate.
std::vector<stats::TwoLevel> run_level_tests(std::vector<Comparison>& out, std::vector<Tested>& tested,
                                             const model::GatePolicy& policy) {
  struct Family {
    std::vector<double> var, df;
  };
  std::map<std::string, Family> between_by_metric, within_by_metric;
  Family between_all, within_all;
  auto add = [](Family& f, double var, double df) {
    f.var.push_back(var);
    f.df.push_back(df);
  };
  for (const auto& t : tested) {
    const auto& name = out[t.index].metric.name;
    if (t.spread.between_df > 0) {
      add(between_by_metric[name], t.spread.between_var, t.spread.between_df);
      add(between_all, t.spread.between_var, t.spread.between_df);
    }
    if (t.spread.within_df > 0) {
      add(within_by_metric[name], t.spread.within_var, t.spread.within_df);
      add(within_all, t.spread.within_var, t.spread.within_df);
    }
  }
  using PriorFn = stats::VariancePrior (*)(std::span<const double>, std::span<const double>);
  // Per metric, falling back on the whole gate's when the metric's own family gives none.
  struct Priors {
    stats::VariancePrior gate;
    std::map<std::string, stats::VariancePrior> by_metric;
    stats::VariancePrior of(const std::string& metric) const {
      auto it = by_metric.find(metric);
      return it != by_metric.end() && it->second.df > 0 ? it->second : gate;
    }
  };
  auto priors_of = [](const std::map<std::string, Family>& by_metric, const Family& all, PriorFn fit) {
    Priors p{fit(all.var, all.df), {}};
    for (const auto& [name, f] : by_metric) p.by_metric[name] = fit(f.var, f.df);
    return p;
  };
  const Priors priors = priors_of(between_by_metric, between_all, &stats::squeeze_prior);
  // The trial noise is pooled only across comparisons that share one level
  // of it: a gate mixes benchmarks of 1 % and 50 % CV, and each comparison's
  // own estimate already rests on tens of trials.
  const Priors within_priors = priors_of(within_by_metric, within_all, &stats::pooled_if_homogeneous);
  std::vector<stats::TwoLevel> levels(tested.size());
  for (std::size_t k = 0; k < tested.size(); ++k) {
    auto& t = tested[k];
    auto& c = out[t.index];
    const stats::VariancePrior prior = priors.of(c.metric.name);
    if (t.spread.within_df > 0) {
      const stats::VariancePrior w = within_priors.of(c.metric.name);
      if (w.df > 0 && std::isfinite(w.var)) {
        if (std::isinf(w.df))
          t.spread.within_var = w.var;
        else
          t.spread.within_var = (w.df * w.var + t.spread.within_df * t.spread.within_var) / (w.df + t.spread.within_df);
        t.spread.within_df += w.df;
      }
    }
    levels[k] = stats::two_level_test(t.level_base_runs, t.level_cand, t.spread, prior, policy.confidence);
    const auto& tl = levels[k];
    c.run_spread_known = tl.spread_known;
    if (!policy.two_level) {
      levels[k].spread_known = false;
      c.run_spread_known = false;
    } else if (tl.spread_known) {
      c.p_runs = tl.p_two_sided;
      c.run_sd_rel = std::sqrt(tl.tau2);
      // Both levels must reject (an intersection-union test, Berger 1982):
      // the change stands out against the trials and against the runs.
      c.p_value = std::max(c.p_trials, c.p_runs);
      c.change_low_rel = std::min(c.change_low_rel, tl.low);
      c.change_high_rel = std::max(c.change_high_rel, tl.high);
    } else {
      std::string why = c.base_runs <= 1 ? "one baseline run and no history of this configuration"
                                         : "the baseline runs gave no spread";
      c.note +=
          (c.note.empty() ? "" : "; ") + fmt::format("run-to-run spread unknown ({}): judged on trial noise only", why);
    }
  }
  return levels;
}

// Pass 3: a failed-trials test per configuration wherever either side had
// some, appended to `out`; their positions there.
std::vector<std::size_t> add_failure_tests(const std::vector<GateItem>& items, std::vector<Comparison>& out) {
  std::vector<std::size_t> failure_rows;
  std::map<std::string, bool> seen;
  for (const auto& it : items) {
    if (!it.base.present || !it.cand.present) continue;
    if (it.base.failed + it.cand.failed == 0) continue;
    if (!seen.emplace(config_key(it.workload, it.params_json) + '\x1f' + it.node_class, true).second) continue;
    Comparison c;
    c.workload = it.workload;
    c.params_json = it.params_json;
    c.label = it.label;
    c.node_class = it.node_class;
    c.metric.name = std::string(model::k_trials_failed_metric);
    c.metric.unit = "trials";
    c.metric.better = Better::Lower;
    c.n_base = it.base.failed + it.base.ok;
    c.n_cand = it.cand.failed + it.cand.ok;
    c.failed_base = it.base.failed;
    c.failed_cand = it.cand.failed;
    c.trials_cand = c.n_cand;
    c.base_median = c.n_base > 0 ? static_cast<double>(it.base.failed) / c.n_base : 0;
    c.cand_median = c.n_cand > 0 ? static_cast<double>(it.cand.failed) / c.n_cand : 0;
    c.change_rel = c.change_low_rel = c.change_high_rel = c.cand_median - c.base_median;
    c.failures = it.cand.failures;
    // Fisher's exact test that the candidate's failed fraction is higher.
    auto f = stats::fisher_exact(it.cand.failed, it.cand.ok, it.base.failed, it.base.ok);
    c.tested = true;
    c.p_value = c.p_trials = f.p_greater;
    c.detectable_rel = std::nan("");
    failure_rows.push_back(out.size());
    out.push_back(std::move(c));
  }
  return failure_rows;
}

// Pass 4: joint tests, one per metric across its configurations.
std::vector<model::JointTest> joint_tests(const std::vector<Comparison>& out, const std::vector<Tested>& tested,
                                          const std::vector<stats::TwoLevel>& levels) {
  std::vector<model::JointTest> joint;
  std::map<std::string, std::vector<std::size_t>> groups;  // metric -> positions in `tested`
  std::vector<std::string> order;
  for (std::size_t k = 0; k < tested.size(); ++k) {
    const auto& c = out[tested[k].index];
    if (c.metric.better == Better::None) continue;
    auto [pos, fresh] = groups.try_emplace(c.metric.name);
    if (fresh) order.push_back(c.metric.name);
    pos->second.push_back(k);
  }
  for (const auto& name : order) {
    const auto& members = groups[name];
    if (members.size() < 2) continue;
    model::JointTest j;
    j.metric = name;
    j.better = out[tested[members[0]].index].metric.better;
    j.configs = static_cast<int>(members.size());
    std::vector<stats::StratumSamples> strata;
    std::vector<double> zs, changes, thresholds;
    for (std::size_t k : members) {
      const auto& c = out[tested[k].index];
      strata.push_back({tested[k].base_rel, tested[k].cand_rel});
      changes.push_back(c.change_rel);
      thresholds.push_back(c.threshold_rel);
      if (bad_change(c) > c.threshold_rel) ++j.moved_bad;
      if (-bad_change(c) > c.threshold_rel) ++j.moved_good;
      const auto& tl = levels[k];
      // The run-level t as a standard normal deviate of the same tail.
      if (tl.spread_known) zs.push_back(stats::normal_deviate(tl.p_two_sided, tl.t));
    }
    auto ve = stats::van_elteren(strata);
    j.p_van_elteren = ve.p_two_sided;
    j.p_value = ve.p_two_sided;
    if (zs.size() == members.size()) {
      auto st = stats::stouffer(zs);
      j.p_stouffer = st.p_two_sided;
      j.p_value = std::max(j.p_value, st.p_two_sided);
    }
    j.change_median_rel = stats::median(changes);
    j.threshold_rel = stats::median(thresholds);
    joint.push_back(std::move(j));
  }
  return joint;
}

// One family: every test of this gate, corrected together; then the
// verdicts of the comparisons and failure tests. Sets the family size and
// the level a lone regression needs.
void decide(const std::vector<std::size_t>& failure_rows, const model::GatePolicy& policy, Evaluation& ev) {
  auto& out = ev.comparisons;
  std::vector<bool> is_failure_test(out.size(), false);
  for (std::size_t r : failure_rows) is_failure_test[r] = true;
  std::vector<FamilyMember> family;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i].tested)
      family.push_back(
          {is_failure_test[i] ? FamilyMember::Kind::Failures : FamilyMember::Kind::Comparison, i, out[i].p_value});
  for (std::size_t j = 0; j < ev.joint.size(); ++j)
    family.push_back({FamilyMember::Kind::Joint, j, ev.joint[j].p_value});
  std::vector<double> p;
  p.reserve(family.size());
  for (const auto& m : family) p.push_back(m.p);
  auto adjusted = policy.correction == model::Correction::Holm ? stats::holm(p) : stats::benjamini_hochberg(p);
  ev.family = static_cast<int>(family.size());
  // Level at which one more significant result would likely be declared
  // (BH's smallest step, Holm's first): what a lone regression must reach.
  ev.alpha_lone = policy.fdr / std::max(1, ev.family);

  // Verdicts of the comparisons and failure tests.
  for (std::size_t f = 0; f < family.size(); ++f) {
    const auto& m = family[f];
    if (m.kind == FamilyMember::Kind::Joint) {
      ev.joint[m.index].p_adjusted = adjusted[f];
      continue;
    }
    auto& c = out[m.index];
    c.p_adjusted = adjusted[f];
    bool significant = c.p_adjusted <= policy.fdr;
    if (m.kind == FamilyMember::Kind::Failures) {
      const std::string counts = fmt::format("{} of {} candidate trials failed, {} of {} in the baseline",
                                             c.failed_cand, c.n_cand, c.failed_base, c.n_base);
      if (c.failed_cand > 0 && significant) {
        c.verdict = VerdictKind::Failed;
        c.note = fmt::format("{}: more than chance (Fisher's exact test, p = {:.2g})", counts, c.p_trials);
      } else if (c.failed_cand > 0 && c.failed_base == 0 && policy.failures == model::FailurePolicy::Strict) {
        c.verdict = VerdictKind::Failed;
        c.note = counts + " (failures: strict fails any failure where the baseline had none)";
      } else if (c.cand_median > c.base_median) {
        c.verdict = VerdictKind::Inconclusive;
        c.note = fmt::format("{}: not more than chance yet (Fisher's exact test, p = {:.2g})", counts, c.p_trials);
      } else {
        c.verdict = VerdictKind::Unchanged;
        c.note = counts;
      }
      continue;
    }
    double bad = bad_change(c);
    double thr = c.threshold_rel;
    if (c.metric.better != Better::None && significant && bad > thr) {
      c.verdict = VerdictKind::Regression;
    } else if (c.metric.better != Better::None && significant && -bad > thr) {
      c.verdict = VerdictKind::Improvement;
    } else if (c.change_low_rel > -thr && c.change_high_rel < thr) {
      c.verdict = VerdictKind::Unchanged;
    } else {
      c.verdict = VerdictKind::Inconclusive;
      if (c.metric.better == Better::None && significant && std::fabs(c.change_rel) > thr)
        c.note += std::string(c.note.empty() ? "" : "; ") + "changed, but the metric has no better direction";
    }
  }
}

// Resolution: the smallest change each tested comparison would have flagged,
// and for an undecided one the candidate trials that would likely decide it.
void resolve(const std::vector<Tested>& tested, const std::vector<stats::TwoLevel>& levels,
             const model::GatePolicy& policy, Evaluation& ev) {
  auto& out = ev.comparisons;
  const double alpha_decide = ev.alpha_lone;
  for (std::size_t k = 0; k < tested.size(); ++k) {
    auto& c = out[tested[k].index];
    const double p_min =
        stats::mann_whitney_min_p(static_cast<std::size_t>(c.n_base), static_cast<std::size_t>(c.n_cand));
    const double df_trials = static_cast<double>(c.n_base + c.n_cand - 2);
    // The rank test's efficiency against the t test is 3/pi under normal noise.
    const double se_trials =
        tested[k].sd_rel * std::sqrt(1.0 / c.n_base + 1.0 / c.n_cand) * std::sqrt(std::numbers::pi / 3);
    double mdc = stats::detectable_shift(se_trials, df_trials, ev.alpha_lone, policy.power);
    if (levels[k].spread_known && std::isfinite(levels[k].se))
      mdc = std::max(mdc, stats::detectable_shift(levels[k].se, levels[k].df, ev.alpha_lone, policy.power));
    c.underpowered = p_min > ev.alpha_lone;
    c.detectable_rel = c.underpowered ? std::numeric_limits<double>::infinity() : std::max(c.threshold_rel, mdc);
    c.trials_for_resolution = c.underpowered ? trials_to_reach(c.n_base, ev.alpha_lone, 1000) : 0;
    if (c.verdict == VerdictKind::Inconclusive) {
      int need = candidate_trials_needed(c, tested[k].sd_rel, alpha_decide, policy);
      c.extra_trials = need < 0 ? -1 : std::max(1, need - c.n_cand);
      // Candidate trials shrink the trial noise only: when the runs' own
      // spread keeps the interval too wide to decide either way, no number
      // of them will (more baseline runs, or history, would).
      const auto& tl = levels[k];
      if (tl.spread_known && tl.tau2 > 0) {
        // Hopeless only when the interval can never fit inside the threshold
        // and even a change two standard errors beyond today's estimate
        // would not be flagged.
        const double q_sig = stats::detectable_shift(tl.se_floor, tl.df, alpha_decide, 0.5);
        const double q_ci = stats::detectable_shift(tl.se_floor, tl.df, 1 - policy.confidence, 0.5);
        const double plausible = std::fabs(c.change_rel) + 2 * tl.se;
        if (q_ci >= c.threshold_rel && plausible < q_sig) {
          c.extra_trials = -1;
          c.trials_cannot_decide = true;
          c.note += (c.note.empty() ? "" : "; ") +
                    fmt::format(
                        "more candidate trials cannot decide it: the baseline runs differ by {:.1f} % among "
                        "themselves (pool more runs, or keep history)",
                        100 * std::sqrt(tl.tau2));
        }
      }
    }
  }
}

// Comparisons too small to test at all: the candidate trials that would
// let them, when the baseline is big enough to test against.
void resolve_untested(const std::vector<GateItem>& items, const model::GatePolicy& policy, Evaluation& ev) {
  auto& out = ev.comparisons;
  for (std::size_t i = 0; i < items.size() && i < out.size(); ++i) {
    auto& c = out[i];
    if (c.tested || !c.underpowered) continue;
    const auto& it = items[i];
    const int min_trials = std::max(2, it.rule && it.rule->min_trials ? *it.rule->min_trials : policy.min_trials);
    if (c.n_base < min_trials) {
      c.trials_for_resolution = -1;
      continue;
    }
    int n = trials_to_reach(c.n_base, ev.alpha_lone, 1000);
    c.trials_for_resolution = n < 0 ? -1 : std::max(n, min_trials);
  }
}

// Joint verdicts, and the inconclusive comparisons they decide.
void decide_joint(const std::vector<Tested>& tested, const model::GatePolicy& policy, Evaluation& ev) {
  auto& out = ev.comparisons;
  for (std::size_t j = 0; j < ev.joint.size(); ++j) {
    auto& jt = ev.joint[j];
    const bool significant = jt.p_adjusted <= policy.fdr;
    const double bad = jt.better == Better::Higher ? -jt.change_median_rel : jt.change_median_rel;
    if (significant && bad > jt.threshold_rel)
      jt.verdict = VerdictKind::Regression;
    else if (significant && -bad > jt.threshold_rel)
      jt.verdict = VerdictKind::Improvement;
    else
      jt.verdict = VerdictKind::Inconclusive;
    if (jt.verdict == VerdictKind::Inconclusive) {
      bool all_unchanged = true;
      for (const auto& t : tested)
        if (out[t.index].metric.name == jt.metric && out[t.index].verdict != VerdictKind::Unchanged)
          all_unchanged = false;
      if (all_unchanged) jt.verdict = VerdictKind::Unchanged;
      continue;
    }
    const bool regress = jt.verdict == VerdictKind::Regression;
    for (const auto& t : tested) {
      auto& c = out[t.index];
      if (c.metric.name != jt.metric || c.verdict != VerdictKind::Inconclusive) continue;
      const double b = bad_change(c);
      if (regress ? b > c.threshold_rel : -b > c.threshold_rel) {
        c.verdict = jt.verdict;
        c.joint = true;
        c.extra_trials = 0;
        c.note += (c.note.empty() ? "" : "; ") +
                  fmt::format(
                      "decided with the other configurations: {} of {} moved {} beyond their thresholds, median {} "
                      "(joint test p = {:.2g} adjusted)",
                      regress ? jt.moved_bad : jt.moved_good, jt.configs, regress ? "the bad way" : "the good way",
                      percent(jt.change_median_rel), jt.p_adjusted);
      }
    }
  }
}

}  // namespace

Evaluation evaluate_gate(const std::vector<GateItem>& items, const model::GatePolicy& policy) {
  Evaluation ev;
  ev.comparisons.reserve(items.size());
  std::vector<Tested> tested;
  for (const auto& it : items) compare_one(it, policy, ev.comparisons, tested);
  const auto levels = run_level_tests(ev.comparisons, tested, policy);
  const auto failure_rows = add_failure_tests(items, ev.comparisons);
  ev.joint = joint_tests(ev.comparisons, tested, levels);
  decide(failure_rows, policy, ev);
  resolve(tested, levels, policy, ev);
  resolve_untested(items, policy, ev);
  decide_joint(tested, policy, ev);
  return ev;
}

std::vector<Comparison> evaluate(const std::vector<GateItem>& items, const model::GatePolicy& policy) {
  return evaluate_gate(items, policy).comparisons;
}

VerdictCounts count_verdicts(const std::vector<Comparison>& cs) {
  VerdictCounts n;
  for (const auto& c : cs) {
    switch (c.verdict) {
      case VerdictKind::Regression:
        ++n.regression;
        break;
      case VerdictKind::Improvement:
        ++n.improvement;
        break;
      case VerdictKind::Unchanged:
        ++n.unchanged;
        break;
      case VerdictKind::Inconclusive:
        ++n.inconclusive;
        break;
      case VerdictKind::Missing:
        ++n.missing;
        break;
      case VerdictKind::Failed:
        ++n.failed;
        break;
    }
  }
  return n;
}

void sort_by_severity(std::vector<Comparison>& cs) {
  std::stable_sort(cs.begin(), cs.end(), [](const Comparison& a, const Comparison& b) {
    int ra = model::severity_rank(a.verdict), rb = model::severity_rank(b.verdict);
    if (ra != rb) return ra < rb;
    return std::fabs(a.change_rel) > std::fabs(b.change_rel);
  });
}

double host_probe_median(const RunSummary& rs) {
  std::vector<double> v;
  for (const auto& c : rs.configs)
    if (const auto* row = c.find("host.probe_ms"))
      for (const auto& t : row->trials)
        if (std::isfinite(t.value)) v.push_back(t.value);
  return v.empty() ? std::nan("") : stats::median(v);
}

std::string host_probe_note(double cand_ms, double base_ms, bool flagged) {
  if (!std::isfinite(cand_ms) || !std::isfinite(base_ms) || !(base_ms > 0)) return "";
  const double change = cand_ms / base_ms - 1;
  // The probe's own run-to-run noise is a few percent; beyond 5 % the machine moved.
  constexpr double k_moved = 0.05;
  if (std::fabs(change) >= k_moved)
    return fmt::format("the host probe was {:.0f} % {} in the candidate run ({:.2f} vs {:.2f} ms){}",
                       100 * std::fabs(change), change > 0 ? "slower" : "faster", cand_ms, base_ms,
                       flagged ? ": the machine moved too, so part or all of the change may be the host's" : "");
  return flagged
             ? fmt::format(
                   "the host probe did not move ({:+.1f} %, {:.2f} vs {:.2f} ms): the machine ran as in the baseline",
                   100 * change, cand_ms, base_ms)
             : "";
}

int count_underpowered(const std::vector<Comparison>& cs) {
  return static_cast<int>(std::count_if(cs.begin(), cs.end(), [](const Comparison& c) {
    return c.underpowered && c.verdict != VerdictKind::Regression && c.verdict != VerdictKind::Failed &&
           c.verdict != VerdictKind::Missing && c.verdict != VerdictKind::Improvement;
  }));
}

}  // namespace perfgate::analysis
