#include "harness/analysis/gate.hpp"

#include <algorithm>
#include <cmath>
#include <map>

// The adaptive gate (gate.hpp): which configurations get more candidate
// trials, how many looks at the data that makes, and the loop that runs
// them through a TrialSource.

namespace perfgate::analysis {
using model::Better;
using model::Comparison;
using model::VerdictKind;

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
    bool may_regress =
        !c.tested || c.metric.better == Better::None || bad_edge > c.threshold_rel || bad > c.threshold_rel;
    // A comparison that cannot reach the level a lone regression needs gets
    // the trials that let it, whatever it shows now.
    bool needs_resolution = c.underpowered && c.trials_for_resolution > 0 && c.verdict != VerdictKind::Regression &&
                            c.verdict != VerdictKind::Failed && c.verdict != VerdictKind::Missing;
    if (!suspicious && !needs_resolution && !(c.verdict == VerdictKind::Inconclusive && may_regress)) continue;
    // No number of trials within the budget lets this comparison reach the
    // level a lone regression needs (its baseline is too small): it ends
    // underpowered whatever they show, and the gate fails naming the trials
    // that would, so none are spent on it. (A nightly's first night, one
    // baseline run of 3 trials, needs 28 against the default 20: the gate
    // ran 17 more per configuration, then failed as it would have at once.)
    if (c.underpowered && (c.trials_for_resolution <= 0 || c.trials_for_resolution > opt.max_trials)) continue;
    // Untested for want of baseline trials, or undecidable for the runs'
    // spread: no candidate trial can change that.
    if ((!c.tested || c.trials_cannot_decide) && c.extra_trials < 0 && !needs_resolution) continue;
    // Trials already spent on this configuration, failed ones and those
    // without this metric included.
    int room = opt.max_trials - c.trials_cand;
    if (room <= 0) continue;
    const bool undecided = suspicious || (c.verdict == VerdictKind::Inconclusive && may_regress);
    int want = c.extra_trials > 0 ? c.extra_trials : opt.max_batch;
    // Resolution alone needs exactly the trials that let the test reach the level.
    if (needs_resolution)
      want = undecided ? std::max(want, c.trials_for_resolution - c.n_cand) : c.trials_for_resolution - c.n_cand;
    int count = std::clamp(want, 1, std::min(room, opt.max_batch));
    auto key = config_key(c.workload, c.params_json);
    auto [pos, fresh] = index.try_emplace(key, out.size());
    // The label without its node class: the trials go wherever the queue sends them.
    if (fresh)
      out.push_back({c.workload, c.params_json, model::params_label(model::params_from_json(c.params_json)), count});
    else
      out[pos->second].count = std::max(out[pos->second].count, count);
  }
  return out;
}

int adaptive_looks(const std::vector<GateItem>& items, const AdaptiveOptions& opt) {
  int fewest = opt.max_trials;
  for (const auto& it : items)
    if (it.cand.present)
      fewest = std::min(fewest, std::max(static_cast<int>(it.cand.values.size()) + it.cand.failed + it.cand.non_finite,
                                         it.cand.ok + it.cand.failed));
  int batch = std::max(1, opt.max_batch);
  return 1 + (std::max(0, opt.max_trials - fewest) + batch - 1) / batch;
}

model::GatePolicy adaptive_final_policy(const model::GatePolicy& policy) {
  model::GatePolicy p = policy;
  p.fdr = 0.9 * policy.fdr;
  return p;
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
        final_policy = adaptive_final_policy(policy);
      }
    }
    auto cs = evaluate_gate(items, interim).comparisons;
    if (g.looks > 1) {
      // Resolution is judged at the level that decides (the final look's):
      // the interim looks' strict level would ask for trials no final
      // verdict needs.
      auto at_final = evaluate_gate(items, final_policy).comparisons;
      for (std::size_t i = 0; i < cs.size() && i < at_final.size(); ++i) {
        cs[i].underpowered = at_final[i].underpowered;
        cs[i].trials_for_resolution = at_final[i].trials_for_resolution;
      }
    }
    auto req = adaptive_requests(cs, interim, opt);
    if (req.empty() || round >= opt.max_trials) break;
    if (auto st = source.add_trials(req); !st) return st.error();
    ++g.rounds;
    for (const auto& r : req) {
      g.trials_added += r.count;
      added[config_key(r.workload, r.params_json)] += r.count;
    }
  }
  auto final_eval = evaluate_gate(items, final_policy);
  g.comparisons = std::move(final_eval.comparisons);
  g.joint = std::move(final_eval.joint);
  g.family = final_eval.family;
  g.alpha_lone = final_eval.alpha_lone;
  for (auto& c : g.comparisons)
    if (auto a = added.find(config_key(c.workload, c.params_json)); a != added.end()) c.added_trials = a->second;
  return g;
}

}  // namespace perfgate::analysis
