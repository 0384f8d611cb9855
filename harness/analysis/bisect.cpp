#include "harness/analysis/bisect.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <boost/math/distributions/students_t.hpp>

#include "harness/stats/descriptive.hpp"
#include "harness/stats/mann_whitney.hpp"

namespace perfgate::analysis {

int BisectCommitState::trials() const {
  int n = 0;
  for (const auto& r : runs) n += static_cast<int>(r.values.size()) + r.failed;
  return n;
}

namespace {

std::vector<double> run_means(const BisectCommitState& c) {
  std::vector<double> out;
  for (const auto& r : c.runs)
    if (!r.values.empty()) out.push_back(stats::mean(r.values));
  return out;
}

// The commit's runs from run `from` on: what a test may read when earlier
// runs were chosen by the search itself.
BisectCommitState runs_from(const BisectCommitState& c, std::size_t from) {
  BisectCommitState f;
  f.runs.assign(c.runs.begin() + static_cast<std::ptrdiff_t>(std::min(from, c.runs.size())), c.runs.end());
  return f;
}

std::vector<double> pooled_values(const BisectCommitState& c) {
  std::vector<double> out;
  for (const auto& r : c.runs) out.insert(out.end(), r.values.begin(), r.values.end());
  return out;
}

// The variance of a run's mean (tau^2 + sigma^2 / n), pooled over every
// commit with two runs or more: each commit has one level, so the spread of
// its run means around their own mean is all noise.
struct RunVariance {
  double var = 0;
  double df = 0;
};

RunVariance pooled_run_variance(const std::vector<BisectCommitState>& all) {
  stats::PooledVariance pooled;
  for (const auto& c : all) pooled.add(run_means(c));
  return {pooled.variance(), pooled.df};
}

// The trial noise alone (pooled within runs), for when no commit has two
// runs yet: a lower bound of the run mean's variance.
double within_run_variance(const std::vector<BisectCommitState>& all, double* mean_n) {
  stats::PooledVariance pooled;
  double n_sum = 0, runs = 0;
  for (const auto& c : all)
    for (const auto& r : c.runs) {
      if (r.values.size() < 2) continue;
      pooled.add(r.values);
      n_sum += static_cast<double>(r.values.size());
      runs += 1;
    }
  if (mean_n) *mean_n = runs > 0 ? n_sum / runs : 1;
  return pooled.variance();
}

double bad_sign(model::Better b) { return b == model::Better::Higher ? -1.0 : 1.0; }

// One-sided p in the bad direction from a two-sided p and the sign of the change.
double one_sided(double p_two, double signed_bad) { return signed_bad > 0 ? p_two / 2 : 1 - p_two / 2; }

}  // namespace

BisectTest bisect_test(const BisectCommitState& good, const BisectCommitState& bad,
                       const std::vector<BisectCommitState>& all, const BisectOptions& opt) {
  BisectTest t;
  auto g = pooled_values(good), b = pooled_values(bad);
  t.n_good = static_cast<int>(g.size());
  t.n_bad = static_cast<int>(b.size());
  auto mg = run_means(good), mb = run_means(bad);
  t.runs_good = static_cast<int>(mg.size());
  t.runs_bad = static_cast<int>(mb.size());
  if (g.size() < 2 || b.size() < 2) return t;
  const double s = bad_sign(opt.better);
  const double scale = std::max(std::fabs(stats::median(g)), 1e-300);
  auto hl = stats::hodges_lehmann(g, b, 0.95);
  t.change_rel = hl.shift / scale;
  t.low_rel = hl.low / scale;
  t.high_rel = hl.high / scale;
  auto mw = stats::mann_whitney_u(b, g);
  t.p_trials = one_sided(mw.p_value, s * hl.shift);
  // Run level: the difference of the sides' mean run means, with the
  // pooled spread of run means (every commit measured twice or more).
  auto rv = pooled_run_variance(all);
  if (rv.df >= 1 && rv.var > 0 && !mg.empty() && !mb.empty()) {
    const double d = stats::mean(mb) - stats::mean(mg);
    const double se = std::sqrt(rv.var * (1.0 / static_cast<double>(mg.size()) + 1.0 / static_cast<double>(mb.size())));
    boost::math::students_t_distribution<double> dist(rv.df);
    t.p_runs = boost::math::cdf(boost::math::complement(dist, s * d / se));
    const double trial_bound = s > 0 ? t.high_rel : -t.low_rel;
    const double run_bound = (s * d + boost::math::quantile(dist, 0.975) * se) / scale;
    t.bad_bound_rel = std::max(trial_bound, run_bound);
  } else {
    t.p_runs = 1;  // no spread of runs known yet: the run level cannot reject
  }
  t.p = std::max(t.p_trials, t.p_runs);
  t.significant = t.p < opt.alpha && s * t.change_rel > opt.threshold_rel;
  return t;
}

namespace {

struct Evidence {
  std::vector<double> llr;   // per commit: log likelihood ratio of "bad" over "good"
  std::vector<double> post;  // per commit: P(culprit == k)
};

Evidence evidence(const std::vector<BisectCommitState>& commits, std::size_t lo, std::size_t hi,
                  const BisectOptions& opt) {
  Evidence e;
  e.llr.assign(commits.size(), 0.0);
  e.post.assign(commits.size(), 0.0);
  auto& p = e.post;
  if (hi <= lo || hi >= commits.size()) return e;
  auto ml = run_means(commits[lo]), mh = run_means(commits[hi]);
  if (ml.empty() || mh.empty()) {
    for (std::size_t k = lo + 1; k <= hi; ++k) p[k] = 1.0 / static_cast<double>(hi - lo);
    return e;
  }
  const double mu_g = stats::mean(ml), mu_b = stats::mean(mh);
  auto rv = pooled_run_variance(commits);
  double mean_n = 1;
  const double within = within_run_variance(commits, &mean_n) / std::max(1.0, mean_n);
  // Never below the trial noise of one run's mean: few runs can make the
  // pooled spread look smaller than that by chance.
  double v = std::max(rv.df > 0 ? rv.var : 0.0, within);
  if (!(v > 0)) v = std::max(1e-12, 1e-6 * (mu_b - mu_g) * (mu_b - mu_g));
  // The step between the ends, less one standard error: the ends were
  // measured until their test passed, so the difference they show is
  // biased up (the first look that passes is often a lucky one), and a
  // step taken too large makes every commit's evidence overconfident.
  const double mid = 0.5 * (mu_g + mu_b);
  const double se = std::sqrt(v * (1.0 / static_cast<double>(ml.size()) + 1.0 / static_cast<double>(mh.size())));
  const double raw = mu_b - mu_g;
  const double step = raw > 0 ? std::max(0.0, raw - se) : std::min(0.0, raw + se);
  auto& llr = e.llr;
  for (std::size_t j = lo + 1; j < hi; ++j) {
    if (commits[j].skipped) continue;
    double sum = 0;
    for (double m : run_means(commits[j])) sum += step * (m - mid) / v;
    llr[j] = std::clamp(sum, -opt.llr_cap, opt.llr_cap);
  }
  // log P(k) = sum of llr[j] for lo < j < hi, j >= k (commits from k on are bad).
  std::vector<double> logp(commits.size(), -std::numeric_limits<double>::infinity());
  double suffix = 0;
  for (std::size_t k = hi; k > lo; --k) {
    logp[k] = suffix + (k < hi ? llr[k] : 0.0);
    suffix = logp[k];
  }
  double top = -std::numeric_limits<double>::infinity();
  for (std::size_t k = lo + 1; k <= hi; ++k) top = std::max(top, logp[k]);
  double z = 0;
  for (std::size_t k = lo + 1; k <= hi; ++k) z += std::exp(logp[k] - top);
  for (std::size_t k = lo + 1; k <= hi; ++k) p[k] = std::exp(logp[k] - top) / z;
  return e;
}

}  // namespace

std::vector<double> bisect_posterior(const std::vector<BisectCommitState>& commits, std::size_t lo, std::size_t hi,
                                     const BisectOptions& opt) {
  return evidence(commits, lo, hi, opt).post;
}

namespace {

// The shortest run of consecutive commits in (lo, hi] holding `mass` of the posterior.
std::pair<std::size_t, std::size_t> credible_range(const std::vector<double>& p, std::size_t lo, std::size_t hi,
                                                   double mass) {
  std::pair<std::size_t, std::size_t> best{lo + 1, hi};
  std::size_t a = lo + 1;
  double sum = 0;
  for (std::size_t b = lo + 1; b <= hi; ++b) {
    sum += p[b];
    while (a < b && sum - p[a] >= mass) sum -= p[a++];
    if (sum >= mass && b - a < best.second - best.first) best = {a, b};
  }
  return best;
}

class Search {
 public:
  Search(BisectOracle& oracle, std::size_t n, const BisectOptions& opt,
         const std::function<void(const BisectProgress&)>& progress)
      : m_oracle(oracle), m_opt(opt), m_progress(progress) {
    m_result.commits.resize(n);
  }

  Expected<BisectResult> run() {
    const std::size_t n = m_result.commits.size();
    for (std::size_t end : {std::size_t{0}, n - 1}) {
      auto built = ensure_built(end);
      if (!built) return built.error();
      if (!*built)
        return Error::input(
            fmt::format("the {} end does not build (twice); fix the build command or pick another commit",
                        end == 0 ? "good" : "bad"));
    }
    auto st = search(0, n - 1, true);
    if (!st) return st.error();
    std::sort(m_result.findings.begin(), m_result.findings.end(),
              [](const BisectFinding& a, const BisectFinding& b) { return a.first < b.first; });
    return std::move(m_result);
  }

 private:
  BisectCommitState& at(std::size_t i) { return m_result.commits[i]; }

  bool budget_left_for_build() const { return m_opt.max_builds <= 0 || m_result.builds < m_opt.max_builds; }
  bool budget_left_for_run() const {
    return m_opt.max_trials <= 0 || m_result.trials + m_opt.trials_per_run <= m_opt.max_trials;
  }

  // False when it does not build (tried twice: a flaky build is not a broken commit).
  Expected<bool> ensure_built(std::size_t i) {
    auto& c = at(i);
    if (c.built) return true;
    if (c.skipped) return false;
    for (int attempt = 0; attempt < 2; ++attempt) {
      ++m_result.builds;
      auto ok = m_oracle.build(i);
      if (!ok) return ok.error();
      if (*ok) {
        c.built = true;
        report(fmt::format("built commit {}", i));
        return true;
      }
    }
    c.skipped = true;
    report(fmt::format("commit {} does not build: skipped", i));
    return false;
  }

  Status measure(std::size_t i) {
    auto r = m_oracle.measure(i, m_opt.trials_per_run);
    if (!r) return r.error();
    m_result.trials += static_cast<long long>(r->values.size()) + r->failed;
    auto& c = at(i);
    c.runs.push_back(std::move(*r));
    // Every trial failed, every time: nothing this commit says can be used.
    if (pooled_values(c).empty() && c.trials() > 0) {
      c.skipped = true;
      report(fmt::format("commit {}: every trial failed: skipped", i));
    } else {
      report(fmt::format("measured commit {} (run {})", i, c.runs.size()));
    }
    return Ok{};
  }

  void report(const std::string& event) {
    if (!m_progress) return;
    BisectProgress p;
    p.lo = m_lo;
    p.hi = m_hi;
    p.builds = m_result.builds;
    p.trials = m_result.trials;
    p.event = event;
    if (m_hi > m_lo) {
      auto post = bisect_posterior(m_result.commits, m_lo, m_hi, m_opt);
      auto best = std::max_element(post.begin() + static_cast<std::ptrdiff_t>(m_lo) + 1,
                                   post.begin() + static_cast<std::ptrdiff_t>(m_hi) + 1);
      p.best = static_cast<std::size_t>(best - post.begin());
      p.best_posterior = *best;
      auto [a, b] = credible_range(post, m_lo, m_hi, m_opt.confidence);
      p.commits_left = b - a + 1;
    }
    m_progress(p);
  }

  // Runs at an end until it has `want` from run `from` on (false: the budget ran out).
  Expected<bool> runs_at_end(std::size_t i, int want, std::size_t from = 0) {
    auto counted = [&] {
      int n = 0;
      for (std::size_t r = from; r < at(i).runs.size(); ++r) n += !at(i).runs[r].values.empty();
      return n;
    };
    while (counted() < want) {
      if (at(i).skipped) return false;
      if (!budget_left_for_run()) return false;
      if (auto s = measure(i); !s) return s.error();
    }
    return true;
  }

  Status search(std::size_t lo, std::size_t hi, bool top) {
    m_lo = lo;
    m_hi = hi;
    // 1. The ends must differ. The first range gets up to end_runs_max runs
    // per end to tell; a sub-range (after a culprit) gets end_runs and one look.
    BisectTest ends;
    const int most = top ? m_opt.end_runs_max : m_opt.end_runs;
    // A sub-range's ends were measured by the search before it, which
    // chose and stopped them by what they showed (a commit read until it
    // looked decidedly bad, its neighbour decidedly good): their test
    // reads fresh runs only. The user's two ends were fixed beforehand.
    const std::size_t from_lo = top ? 0 : at(lo).runs.size(), from_hi = top ? 0 : at(hi).runs.size();
    // Looks at about 1.5 times the runs each time (3, 4, 6, 9, 13, 20, 30,
    // 40): few looks, so that testing again and again does not inflate the
    // false alarms much (each look is at alpha).
    for (int runs = m_opt.end_runs;; runs = std::min(most, std::max(runs + 1, runs * 3 / 2))) {
      for (std::size_t e : {lo, hi}) {
        auto ok = runs_at_end(e, runs, e == lo ? from_lo : from_hi);
        if (!ok) return ok.error();
        if (!*ok) {
          m_result.budget_spent = !budget_left_for_run();
          if (at(e).skipped)
            return Error::input(fmt::format("every trial at the {} end failed", e == lo ? "good" : "bad"));
        }
      }
      ends = bisect_test(runs_from(at(lo), from_lo), runs_from(at(hi), from_hi), m_result.commits, m_opt);
      if (ends.significant || runs >= most || m_result.budget_spent) break;
      // Futile: the ends differ the good way, or not at all.
      if (ends.p_trials > 0.9) break;
      // Equivalent: whatever the ends differ by is surely below the practical
      // threshold (its 95 % bound is; the interval form of Schuirmann's two
      // one-sided tests, 1987), so no culprit could pass it.
      if (m_opt.threshold_rel > 0 && ends.bad_bound_rel < m_opt.threshold_rel) break;
    }
    // Both levels well known before any commit is read against them: a
    // commit is judged by which end's level its runs are nearer, so each
    // end's mean must be off by far less than the step (a fifth of it, one
    // standard error).
    while (ends.significant && !m_result.budget_spent) {
      const auto mg = run_means(at(lo)), mb = run_means(at(hi));
      const double step = std::fabs(stats::mean(mb) - stats::mean(mg));
      const double v = std::max(pooled_run_variance(m_result.commits).var, 1e-300);
      const int need = static_cast<int>(std::ceil(25 * v / std::max(step * step, 1e-300)));
      const int have = static_cast<int>(std::min(mg.size(), mb.size()));
      if (have >= std::min(need, m_opt.end_runs_max)) break;
      for (std::size_t e : {lo, hi}) {
        auto ok = runs_at_end(e, have + 1);
        if (!ok) return ok.error();
        if (!*ok) m_result.budget_spent = true;
      }
    }
    if (!ends.significant) {
      if (top) {
        BisectFinding f;
        f.kind = BisectEnd::NoRegression;
        f.lo = lo;
        f.hi = hi;
        f.first = lo;
        f.last = hi;
        f.test = ends;
        f.why = fmt::format(
            "the ends do not differ: {:+.2f} % (95 % interval {:+.2f} .. {:+.2f} %), one-sided p {:.3g} "
            "(trials {:.3g}, runs {:.3g}) over {} and {} runs",
            100 * ends.change_rel, 100 * ends.low_rel, 100 * ends.high_rel, ends.p, ends.p_trials, ends.p_runs,
            ends.runs_good, ends.runs_bad);
        if (m_opt.threshold_rel > 0 && ends.bad_bound_rel < m_opt.threshold_rel)
          f.why += fmt::format("; any regression is below the {:.2f} % threshold (at most {:+.2f} %)",
                               100 * m_opt.threshold_rel, 100 * ends.bad_bound_rel);
        m_result.findings.push_back(f);
      }
      return Ok{};
    }
    if (hi == lo + 1) {
      BisectFinding f;
      f.kind = BisectEnd::Culprit;
      f.first = f.last = hi;
      f.parent = lo;
      f.posterior = 1;
      f.test = ends;
      f.lo = lo;
      f.hi = hi;
      return found(f);
    }
    // 2.-4. The noisy binary search.
    constexpr std::size_t k_none = std::numeric_limits<std::size_t>::max();
    std::size_t candidate = k_none;                 // the culprit being confirmed
    std::map<std::size_t, std::size_t> fresh_from;  // commit -> its first run counted in the confirmation
    for (;;) {
      auto ev = evidence(m_result.commits, lo, hi, m_opt);
      const auto& post = ev.post;
      auto best_it = std::max_element(post.begin() + static_cast<std::ptrdiff_t>(lo) + 1,
                                      post.begin() + static_cast<std::ptrdiff_t>(hi) + 1);
      const std::size_t best = static_cast<std::size_t>(best_it - post.begin());
      auto range = [&](const std::string& why) {
        // The range it can honestly name: the posterior's shortest 95 %
        // set, widened to the nearest commits decided either way (odds of
        // llr_decide) on both sides of the most likely culprit. A posterior
        // led astray by commits read at their most trials without a
        // decision (a small step) holds most of its mass in the wrong place;
        // decided commits are wrong about once in a thousand. (An
        // unmeasured commit's llr is 0: never decided.)
        auto [a, b] = credible_range(post, lo, hi, m_opt.confidence);
        std::size_t good = best - 1;
        while (good > lo && ev.llr[good] > -m_opt.llr_decide) --good;
        std::size_t bad = best;
        while (bad < hi && ev.llr[bad] < m_opt.llr_decide) ++bad;
        a = std::min(a, good + 1);
        b = std::max(b, bad);
        BisectFinding f;
        f.kind = BisectEnd::Range;
        f.first = a;
        f.last = b;
        f.lo = lo;
        f.hi = hi;
        for (std::size_t k = a; k <= b; ++k) f.posterior += post[k];
        f.why = why;
        m_result.findings.push_back(f);
        return Ok{};
      };
      if (*best_it >= m_opt.confidence) {
        // Confirm against the parent: the nearest commit before it that was measured.
        std::size_t parent = best - 1;
        while (parent > lo && (at(parent).skipped || run_means(at(parent)).empty())) --parent;
        if (parent != best - 1)
          return range(
              fmt::format("commits {} to {} did not build or ran no trial: the step is somewhere in "
                          "{} .. {}",
                          parent + 1, best - 1, parent + 1, best));
        // The confirmation reads fresh runs only: the runs that put the
        // posterior here were chosen by it (a commit measured once and
        // looking bad by chance is where the search stops), so testing them
        // again would confirm the chance. The ends were fixed beforehand:
        // all their runs count.
        if (candidate != best) {
          candidate = best;
          fresh_from.clear();
          for (std::size_t c : {parent, best}) fresh_from[c] = c == lo || c == hi ? 0 : at(c).runs.size();
        }
        auto fresh_runs = [&](std::size_t c) { return static_cast<int>(at(c).runs.size() - fresh_from[c]); };
        // The confirmation has runs of its own, beyond the commit's cap.
        auto can_add = [&](std::size_t c) { return !at(c).skipped && fresh_runs(c) < m_opt.confirm_runs_max; };
        BisectTest test;
        const bool enough = fresh_runs(parent) >= 2 && fresh_runs(best) >= 2;
        if (enough) {
          test = bisect_test(runs_from(at(parent), fresh_from[parent]), runs_from(at(best), fresh_from[best]),
                             m_result.commits, m_opt);
          if (test.significant) {
            BisectFinding f;
            f.kind = BisectEnd::Culprit;
            f.first = f.last = best;
            f.parent = parent;
            f.posterior = *best_it;
            f.test = test;  // change and interval from the fresh runs too: the others were selected
            f.lo = lo;
            f.hi = hi;
            return found(f);
          }
        }
        // Not confirmed yet: another run on the side with fewer fresh runs.
        std::optional<std::size_t> more;
        for (std::size_t c : {parent, best})
          if (can_add(c) && (!more || fresh_runs(c) < fresh_runs(*more))) more = c;
        if (!more || !budget_left_for_run()) {
          m_result.budget_spent = !budget_left_for_run();
          return range(
              fmt::format("commit {} holds {:.0f} % of the posterior but its step against commit {} is not "
                          "significant (one-sided p {:.3g}) at the most trials allowed",
                          best, 100 * *best_it, parent, test.p));
        }
        if (auto st = measure(*more); !st) return st.error();
        continue;
      }
      candidate = k_none;
      // The commit at the posterior's median: F(j) = P(culprit <= j) nearest 1/2.
      std::optional<std::size_t> next;
      double best_gap = 2;
      double cdf = 0;
      for (std::size_t j = lo + 1; j < hi; ++j) {
        cdf += post[j];
        const auto& c = at(j);
        if (c.skipped || c.trials() >= m_opt.max_trials_per_commit) continue;
        if (!c.built && !budget_left_for_build()) continue;
        // A commit the posterior already places (almost surely before or
        // after the culprit) cannot split it: next to skipped commits every
        // candidate is such a one, and the range is the answer.
        const double tail = (1 - m_opt.confidence) / 2;
        if (cdf < tail || cdf > 1 - tail) continue;
        const double gap = std::fabs(cdf - 0.5);
        // Ties go to a commit already built.
        if (gap < best_gap - 1e-12 || (std::fabs(gap - best_gap) <= 1e-12 && c.built)) {
          best_gap = gap;
          next = j;
        }
      }
      if (!next) {
        m_result.budget_spent = !budget_left_for_build();
        return range(m_result.budget_spent ? "the build budget is spent"
                                           : "no commit left that could split the range: the others beside it do not "
                                             "build, or were measured as often as allowed");
      }
      auto built = ensure_built(*next);
      if (!built) return built.error();
      if (!*built) continue;  // skipped: the median moves on
      // Runs until the commit is decided one way (odds of llr_decide) or
      // has its most trials: a new build costs far more than a run, so
      // each commit built is read well before the search moves on.
      for (;;) {
        if (!budget_left_for_run()) {
          m_result.budget_spent = true;
          return range("the trial budget is spent");
        }
        if (auto st = measure(*next); !st) return st.error();
        if (at(*next).skipped || at(*next).trials() >= m_opt.max_trials_per_commit) break;
        auto now = evidence(m_result.commits, lo, hi, m_opt);
        if (std::fabs(now.llr[*next]) >= m_opt.llr_decide) break;
      }
    }
  }

  // A confirmed culprit; then the sub-ranges on both sides, when their ends differ.
  Status found(const BisectFinding& f) {
    m_result.findings.push_back(f);
    int culprits = 0;
    for (const auto& x : m_result.findings) culprits += x.kind == BisectEnd::Culprit;
    if (culprits >= m_opt.max_culprits) return Ok{};
    const std::size_t lo = f.lo, hi = f.hi;
    if (f.parent > lo) {
      if (auto s = search(lo, f.parent, false); !s) return s;
    }
    if (hi > f.first) {
      culprits = 0;
      for (const auto& x : m_result.findings) culprits += x.kind == BisectEnd::Culprit;
      if (culprits < m_opt.max_culprits)
        if (auto s = search(f.first, hi, false); !s) return s;
    }
    return Ok{};
  }

  BisectOracle& m_oracle;
  const BisectOptions& m_opt;
  const std::function<void(const BisectProgress&)>& m_progress;
  BisectResult m_result;
  std::size_t m_lo = 0, m_hi = 0;
};

}  // namespace

Expected<BisectResult> run_bisect(BisectOracle& oracle, std::size_t n_commits, const BisectOptions& opt,
                                  const std::function<void(const BisectProgress&)>& progress) {
  if (n_commits < 2) return Error::input("bisect needs a good and a bad commit");
  Search s(oracle, n_commits, opt, progress);
  return s.run();
}

}  // namespace perfgate::analysis
