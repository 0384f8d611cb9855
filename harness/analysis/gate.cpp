#include "harness/analysis/gate.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "harness/stats/descriptive.hpp"
#include "harness/stats/mann_whitney.hpp"
#include "harness/stats/multiple.hpp"

namespace perfgate::analysis {
using model::Better;
using model::Comparison;
using model::VerdictKind;

namespace {

std::string config_key(const std::string& workload, const std::string& params_json) {
  return workload + '\x1f' + params_json;
}

Better direction(const GateItem& it) {
  return it.rule && it.rule->better ? *it.rule->better : it.metric.better;
}

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

std::vector<Comparison> evaluate(const std::vector<GateItem>& items, const model::GatePolicy& policy) {
  std::vector<Comparison> out;
  out.reserve(items.size());
  std::vector<double> sd_rel(items.size(), 0);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    Comparison c;
    c.workload = it.workload;
    c.params_json = it.params_json;
    c.label = it.label;
    c.metric = it.metric;
    c.metric.better = direction(it);
    c.threshold_rel = policy.threshold_for(c.metric, it.rule);
    c.n_base = static_cast<int>(it.base.values.size());
    c.n_cand = static_cast<int>(it.cand.values.size());
    c.failed_base = it.base.failed + it.base.non_finite;
    c.failed_cand = it.cand.failed + it.cand.non_finite;
    int min_trials = it.rule && it.rule->min_trials ? *it.rule->min_trials : policy.min_trials;
    if (!it.base.present || !it.cand.present) {
      c.verdict = VerdictKind::Missing;
      c.note = !it.cand.present ? "configuration not in the candidate run" : "configuration not in the baseline";
      out.push_back(std::move(c));
      continue;
    }
    if (c.n_base == 0 || c.n_cand == 0) {
      // A candidate that fails where the baseline ran is the worst regression
      // of all; a baseline that failed leaves nothing to compare against.
      auto why = [](const SideValues& side, const char* who) {
        if (side.failed == 0 && side.non_finite == 0) return fmt::format("metric not reported by the {}", who);
        if (side.failed == 0) return fmt::format("every {} value is NaN or infinite ({} trials)", who, side.non_finite);
        return fmt::format("every {} trial failed ({})", who, side.failed + side.non_finite);
      };
      bool cand_broke = c.n_cand == 0 && (it.cand.failed > 0 || it.cand.non_finite > 0);
      // What one side did measure is still worth showing.
      c.base_median = c.n_base > 0 ? stats::median(it.base.values) : std::nan("");
      c.cand_median = c.n_cand > 0 ? stats::median(it.cand.values) : std::nan("");
      c.change_rel = c.change_low_rel = c.change_high_rel = std::nan("");
      c.verdict = cand_broke ? VerdictKind::Failed : VerdictKind::Missing;
      c.note = c.n_cand == 0 ? why(it.cand, "candidate") : why(it.base, "baseline");
      out.push_back(std::move(c));
      continue;
    }
    // A past run's hiccup (a trial 10-30 % off on a busy machine) would cost
    // the rank test as much as a real change: every candidate trial ranks
    // past it. Rare gross outliers of the pooled baseline are left out: far
    // outside its spread (MADs) and off by more than twice the change that
    // matters (so a tight baseline's ordinary scatter stays). The candidate
    // keeps all its trials, since its hiccups may be the regression.
    std::vector<double> base_kept;
    if (policy.baseline_outlier_mads > 0 && c.n_base >= min_trials) {
      const double min_distance = 2 * c.threshold_rel * std::fabs(stats::median(it.base.values));
      constexpr double k_rare_fraction = 0.2;  // more than a fifth is a mode of the machine
      auto out_idx = stats::rare_outliers(it.base.values, policy.baseline_outlier_mads, k_rare_fraction, min_distance);
      if (!out_idx.empty()) {
        base_kept.reserve(it.base.values.size() - out_idx.size());
        std::size_t next = 0;
        for (std::size_t k = 0; k < it.base.values.size(); ++k) {
          if (next < out_idx.size() && out_idx[next] == k) ++next;
          else base_kept.push_back(it.base.values[k]);
        }
        c.base_left_out = static_cast<int>(out_idx.size());
        c.n_base = static_cast<int>(base_kept.size());
      }
    }
    const std::vector<double>& base = c.base_left_out > 0 ? base_kept : it.base.values;
    c.base_median = stats::median(base);
    c.cand_median = stats::median(it.cand.values);
    double scale = std::fabs(c.base_median);
    if (scale == 0) {
      // A relative change of a zero baseline is undefined; use the spread instead.
      scale = std::max({std::fabs(c.cand_median), pooled_sd(base, it.cand.values), 1e-300});
      c.note = "baseline median is 0: change relative to the candidate scale";
    }
    if (c.n_base < 2 || c.n_cand < 2 || c.n_base < min_trials || c.n_cand < min_trials) {
      c.change_rel = (c.cand_median - c.base_median) / scale;
      c.change_low_rel = c.change_high_rel = c.change_rel;
      c.verdict = VerdictKind::Inconclusive;
      // Candidate trials help only if the baseline is big enough to test against.
      bool base_short = c.n_base < std::max(2, min_trials);
      c.extra_trials = base_short ? -1 : std::max(0, std::max(2, min_trials) - c.n_cand);
      c.note = fmt::format("{} baseline and {} candidate trials; at least {} per side are needed to test", c.n_base,
                           c.n_cand, std::max(2, min_trials));
      if (c.n_base < min_trials) c.note += " (the baseline is short too: pool more runs)";
      out.push_back(std::move(c));
      continue;
    }
    auto mw = stats::mann_whitney_u(base, it.cand.values);
    auto hl = stats::hodges_lehmann(base, it.cand.values, policy.confidence);
    c.tested = true;
    c.u = mw.u;
    c.p_value = mw.p_value;
    c.exact = mw.exact;
    c.change_rel = hl.shift / scale;
    c.change_low_rel = hl.low / scale;
    c.change_high_rel = hl.high / scale;
    c.interval_coverage = hl.coverage;
    sd_rel[i] = pooled_sd(base, it.cand.values) / scale;
    if (policy.bootstrap_resamples > 0) {
      // Each comparison gets its own stream, derived from the seed and its position.
      auto r = stats::bootstrap_median_ratio(base, it.cand.values, policy.confidence,
                                             policy.bootstrap_resamples, policy.bootstrap_seed + 0x9E3779B97F4A7C15ull * i);
      c.ratio = r.ratio;
      c.ratio_low = r.low;
      c.ratio_high = r.high;
    }
    if (it.base.non_finite + it.cand.non_finite > 0)
      c.note = fmt::format("{} NaN/infinite trial value(s) left out", it.base.non_finite + it.cand.non_finite);
    if (c.base_left_out > 0) {
      if (!c.note.empty()) c.note += "; ";
      c.note += fmt::format("{} baseline trial(s) left out as hiccups: over {:g} MADs and {:g} % from the baseline median",
                            c.base_left_out, policy.baseline_outlier_mads, 200 * c.threshold_rel);
    }
    out.push_back(std::move(c));
  }

  // One family: every tested comparison of this gate.
  std::vector<double> p;
  std::vector<std::size_t> tested;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i].tested) {
      p.push_back(out[i].p_value);
      tested.push_back(i);
    }
  auto adjusted = policy.correction == model::Correction::Holm ? stats::holm(p) : stats::benjamini_hochberg(p);
  // Level at which one more significant result would likely be declared (BH's smallest step).
  double alpha_decide = policy.fdr / std::max<double>(1, static_cast<double>(tested.size()));
  for (std::size_t k = 0; k < tested.size(); ++k) {
    auto& c = out[tested[k]];
    c.p_adjusted = adjusted[k];
    bool significant = c.p_adjusted <= policy.fdr;
    double bad = c.metric.better == Better::Higher ? -c.change_rel : c.change_rel;
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
        c.note = "changed, but the metric has no better direction";
      int need = candidate_trials_needed(c, sd_rel[tested[k]], alpha_decide, policy);
      c.extra_trials = need < 0 ? -1 : std::max(1, need - c.n_cand);
    }
  }
  return out;
}

std::vector<GateItem> collect_items(const RunSummary& cand, const std::vector<RunSummary>& base,
                                    const model::GatePolicy& policy, const std::vector<std::string>& metrics) {
  struct Side {
    bool present = false;
    int failed = 0;
    std::map<std::string, std::vector<double>> values;
    std::map<std::string, int> non_finite;
  };
  struct Entry {
    std::string workload, params_json, label;
    Side base, cand;
    std::map<std::string, model::MetricInfo> infos;
    std::vector<std::string> metric_order;
  };
  std::vector<Entry> entries;
  std::map<std::string, std::size_t> index;
  auto add = [&](const RunSummary& rs, bool is_cand) {
    for (const auto& cs : rs.configs) {
      auto key = config_key(cs.workload, cs.params_json);
      auto [pos, fresh] = index.try_emplace(key, entries.size());
      if (fresh) entries.push_back(Entry{cs.workload, cs.params_json, cs.label, {}, {}, {}, {}});
      Entry& e = entries[pos->second];
      Side& side = is_cand ? e.cand : e.base;
      side.present = true;
      side.failed += cs.trials_failed;
      for (const auto& row : cs.metrics) {
        if (e.infos.emplace(row.info.name, row.info).second) e.metric_order.push_back(row.info.name);
        auto& vals = side.values[row.info.name];
        for (const auto& t : row.trials) {
          if (std::isfinite(t.value)) vals.push_back(t.value);
          else ++side.non_finite[row.info.name];
        }
      }
    }
  };
  add(cand, true);
  for (const auto& b : base) add(b, false);

  std::vector<GateItem> items;
  for (const auto& e : entries) {
    for (const auto& name : e.metric_order) {
      const model::MetricRule* rule = policy.match(name);
      if (metrics.empty()) {
        if (!rule) continue;
      } else if (std::none_of(metrics.begin(), metrics.end(), [&](const std::string& m) { return model::glob_match(m, name); })) {
        continue;
      }
      GateItem it;
      it.workload = e.workload;
      it.params_json = e.params_json;
      it.label = e.label;
      it.metric = e.infos.at(name);
      it.rule = rule;
      auto fill = [&](const Side& s, SideValues& out) {
        out.present = s.present;
        out.failed = s.failed;
        if (auto v = s.values.find(name); v != s.values.end()) out.values = v->second;
        if (auto n = s.non_finite.find(name); n != s.non_finite.end()) out.non_finite = n->second;
      };
      fill(e.base, it.base);
      fill(e.cand, it.cand);
      items.push_back(std::move(it));
    }
  }
  return items;
}

VerdictCounts count_verdicts(const std::vector<Comparison>& cs) {
  VerdictCounts n;
  for (const auto& c : cs) {
    switch (c.verdict) {
      case VerdictKind::Regression: ++n.regression; break;
      case VerdictKind::Improvement: ++n.improvement; break;
      case VerdictKind::Unchanged: ++n.unchanged; break;
      case VerdictKind::Inconclusive: ++n.inconclusive; break;
      case VerdictKind::Missing: ++n.missing; break;
      case VerdictKind::Failed: ++n.failed; break;
    }
  }
  return n;
}

std::vector<TrialRequest> adaptive_requests(const std::vector<Comparison>& cs, const model::GatePolicy& policy,
                                            const AdaptiveOptions& opt) {
  std::vector<TrialRequest> out;
  std::map<std::string, std::size_t> index;
  for (const auto& c : cs) {
    double bad = c.metric.better == Better::Higher ? -c.change_rel : c.change_rel;
    bool suspicious = c.tested && c.p_value < policy.screening_p && std::fabs(c.change_rel) > c.threshold_rel &&
                      c.verdict != VerdictKind::Regression && c.verdict != VerdictKind::Improvement;
    // Trials go where a regression may hide: an undecided comparison whose
    // interval reaches past the threshold on the bad side (an untested one
    // may be anything). A possible improvement can wait for tomorrow.
    double bad_edge = c.metric.better == Better::Higher ? -c.change_low_rel : c.change_high_rel;
    bool may_regress = !c.tested || c.metric.better == Better::None || bad_edge > c.threshold_rel || bad > c.threshold_rel;
    if (!suspicious && !(c.verdict == VerdictKind::Inconclusive && may_regress)) continue;
    // Untested for want of baseline trials: no candidate trial can change that.
    if (!c.tested && c.extra_trials < 0) continue;
    // Trials already spent on this configuration, failed ones included.
    int room = opt.max_trials - (c.n_cand + c.failed_cand);
    if (room <= 0) continue;
    int want = c.extra_trials > 0 ? c.extra_trials : opt.max_batch;
    int count = std::clamp(want, 1, std::min(room, opt.max_batch));
    auto key = config_key(c.workload, c.params_json);
    auto [pos, fresh] = index.try_emplace(key, out.size());
    if (fresh) out.push_back({c.workload, c.params_json, c.label, count});
    else out[pos->second].count = std::max(out[pos->second].count, count);
  }
  return out;
}

int adaptive_looks(const std::vector<GateItem>& items, const AdaptiveOptions& opt) {
  int fewest = opt.max_trials;
  for (const auto& it : items)
    if (it.cand.present) fewest = std::min(fewest, static_cast<int>(it.cand.values.size()) + it.cand.failed + it.cand.non_finite);
  int batch = std::max(1, opt.max_batch);
  return 1 + (std::max(0, opt.max_trials - fewest) + batch - 1) / batch;
}

Expected<GateOutcome> adaptive_gate(TrialSource& source, const model::GatePolicy& policy, const AdaptiveOptions& opt) {
  GateOutcome g;
  std::map<std::string, int> added;
  // Every look at the data is a chance for a false alarm. The looks between
  // batches only steer where trials go, at a strict level; the last look,
  // once sampling stops, decides at nearly the policy's level. Interim looks
  // share 10 % of the FDR, the final one has the other 90 % (a
  // Haybittle-Peto style boundary: Haybittle 1971, Peto et al. 1976), so the
  // union over all looks stays within the policy's level.
  model::GatePolicy interim = policy, final_policy = policy;
  std::vector<GateItem> items;
  // Each round adds at least one trial to a configuration below max_trials,
  // so max_trials rounds bound the loop even if trials keep failing.
  for (int round = 0;; ++round) {
    auto got = source.items();
    if (!got) return got.error();
    items = std::move(*got);
    if (round == 0) {
      g.looks = adaptive_looks(items, opt);
      if (g.looks > 1) {
        interim.fdr = 0.1 * policy.fdr / (g.looks - 1);
        final_policy.fdr = 0.9 * policy.fdr;
      }
    }
    auto cs = evaluate(items, interim);
    auto req = adaptive_requests(cs, interim, opt);
    if (req.empty() || round >= opt.max_trials) break;
    if (auto st = source.add_trials(req); !st) return st.error();
    ++g.rounds;
    for (const auto& r : req) {
      g.trials_added += r.count;
      added[config_key(r.workload, r.params_json)] += r.count;
    }
  }
  g.comparisons = evaluate(items, final_policy);
  for (auto& c : g.comparisons)
    if (auto a = added.find(config_key(c.workload, c.params_json)); a != added.end()) c.added_trials = a->second;
  return g;
}

void sort_by_severity(std::vector<Comparison>& cs) {
  std::stable_sort(cs.begin(), cs.end(), [](const Comparison& a, const Comparison& b) {
    int ra = model::severity_rank(a.verdict), rb = model::severity_rank(b.verdict);
    if (ra != rb) return ra < rb;
    return std::fabs(a.change_rel) > std::fabs(b.change_rel);
  });
}

}  // namespace perfgate::analysis
