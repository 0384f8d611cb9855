// How well `perfgate bisect` finds the commit that moved a metric, on
// simulated histories, against the rules other tools use, on the same
// histories and the same noise (docs/statistics.md, "Bisect").
//
// A history is 100 commits, 0 (good) .. 99 (bad). In 90 % of histories one
// commit k (uniform over 1..99) adds `shift` to the metric (a step time, lower
// is better) from k on; in 10 % nothing changes. 5 % of the commits between
// the ends do not build (the same every time: a broken commit, not a flaky
// build). Noise (the gate's two-level model): each visit to a commit is a run
// with its own run effect r ~ N(0, (rho sigma)^2), and each of its trials
// adds e ~ N(0, sigma^2); the level is 100 ms, sigma 2 ms (2 % trial CV),
// rho 0.25 unless --rho says otherwise. The effect size d = shift / sigma:
// 0.5, 1, 2, 4 (a 1, 2, 4, 8 % step).
//
// Rules compared (each as documented by its tool; all get the same draws):
//   perfgate  analysis::run_bisect: probabilistic bisection with the
//             two-level test (5 trials per run, ends confirmed first).
//   asv find  one result per commit (the median of a 10-trial run), binary
//             search towards the half with the larger jump, no test; always
//             names a commit.
//   TorchBench  one result per commit (10-trial median); a commit is bad
//             when 7 % slower than the good end; the ends must differ by 7 %;
//             a commit that does not build ends the bisect without a result.
//   Pinpoint  pools every value of every attempt (runs of 5 trials, 4
//             attempts first, doubled up to 32 while undecided), compares
//             two commits with Mann-Whitney: different below p 0.01, same
//             above 0.1 (a stand-in for its table of high thresholds);
//             bisects every pair found different, and every adjacent pair
//             left different is a culprit.
//
// Scored per history: "right" = exactly the culprit, or, when the culprit or
// its parent does not build, a range within the honest one (from the commit
// after the last good commit that builds to the first bad one that builds); "right or range" = a culprit or range that
// contains the true one (and names nothing else); "wrong" = a culprit that is not it, or more than one; "none found" =
// no culprit and no range. In histories with no step, "false" = any culprit named.
//
// Usage: bisect_sim [--histories N] [--seed S] [--rho R] [--d D] [--threads T]

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <functional>

#include <fmt/format.h>

#include "harness/analysis/bisect.hpp"
#include "harness/stats/descriptive.hpp"
#include "harness/stats/mann_whitney.hpp"

using namespace perfgate;

namespace {

constexpr std::size_t k_commits = 100;
constexpr double k_level = 100, k_sigma = 2;

struct History {
  std::optional<std::size_t> culprit;
  std::vector<bool> broken;
  double shift = 0, rho = 0.25;
  std::uint64_t seed = 0;
};

History make_history(std::uint64_t seed, double d, double rho) {
  std::mt19937_64 g(seed);
  History h;
  h.seed = seed;
  h.rho = rho;
  h.shift = d * k_sigma;
  std::uniform_real_distribution<double> u(0, 1);
  if (u(g) >= 0.10) h.culprit = 1 + static_cast<std::size_t>(u(g) * (k_commits - 1)) % (k_commits - 1);
  h.broken.assign(k_commits, false);
  for (std::size_t i = 1; i + 1 < k_commits; ++i) h.broken[i] = u(g) < 0.05;
  return h;
}

// The draws of one method on one history: a run at commit i is the visit'th
// visit there, with its own stream, so every method sees the same first
// run at a commit, the same second run, and so on.
class Bench {
 public:
  Bench(const History& h, std::uint64_t salt) : m_h(h), m_salt(salt) {}
  std::vector<double> run(std::size_t commit, int trials) {
    int visit = m_visits[commit]++;
    std::mt19937_64 g(m_h.seed * 0x9E3779B97F4A7C15ull ^
                      (commit * 1000003ull + static_cast<std::uint64_t>(visit) * 7919ull + m_salt));
    std::normal_distribution<double> z(0, 1);
    double mu = k_level + (m_h.culprit && commit >= *m_h.culprit ? m_h.shift : 0);
    double r = m_h.rho * k_sigma * z(g);
    std::vector<double> out(static_cast<std::size_t>(trials));
    for (auto& v : out) v = mu + r + k_sigma * z(g);
    trials_spent += trials;
    return out;
  }
  // A build that worked is cached; one that failed runs again each time a
  // rule asks (perfgate asks twice before it skips a commit).
  bool build(std::size_t commit) {
    if (m_h.broken[commit] || m_built.insert({commit, true}).second) ++builds;
    return !m_h.broken[commit];
  }
  int builds = 0;
  long long trials_spent = 0;

 private:
  const History& m_h;
  std::uint64_t m_salt;
  std::map<std::size_t, int> m_visits;
  std::map<std::size_t, bool> m_built;
};

struct Answer {
  std::vector<std::size_t> culprits;
  std::optional<std::pair<std::size_t, std::size_t>> range;  // when no culprit
  int builds = 0;
  long long trials = 0;
};

// -- perfgate ---------------------------------------------------------------
class SimOracle final : public analysis::BisectOracle {
 public:
  explicit SimOracle(Bench& b) : m_b(b) {}
  Expected<bool> build(std::size_t c) override { return m_b.build(c); }
  Expected<analysis::BisectRun> measure(std::size_t c, int trials) override {
    analysis::BisectRun r;
    r.values = m_b.run(c, trials);
    return r;
  }

 private:
  Bench& m_b;
};

bool g_trace = false;

Answer perfgate_rule(const History& h) {
  Bench b(h, 0);
  SimOracle o(b);
  analysis::BisectOptions opt;
  std::function<void(const analysis::BisectProgress&)> trace;
  if (g_trace)
    trace = [](const analysis::BisectProgress& p) {
      fmt::print("  [{}..{}] {} | builds {} trials {} best {} ({:.2f}) left {}\n", p.lo, p.hi, p.event, p.builds,
                 p.trials, p.best, p.best_posterior, p.commits_left);
    };
  auto r = analysis::run_bisect(o, k_commits, opt, trace);
  if (g_trace && r)
    for (const auto& f : r->findings)
      fmt::print("  finding kind {} {}..{} parent {} p {:.3g} change {:.3f} why {}\n", static_cast<int>(f.kind),
                 f.first, f.last, f.parent, f.test.p, f.test.change_rel, f.why);
  Answer a;
  if (r) {
    for (const auto& f : r->findings) {
      if (f.kind == analysis::BisectEnd::Culprit) a.culprits.push_back(f.first);
      if (f.kind == analysis::BisectEnd::Range && !a.range) a.range = std::pair{f.first, f.last};
    }
    if (!a.culprits.empty()) a.range.reset();
  }
  a.builds = b.builds;
  a.trials = b.trials_spent;
  return a;
}

// -- asv find ---------------------------------------------------------------
double median_of(std::vector<double> v) { return stats::median(v); }

// The nearest building commit to `mid` strictly inside (lo, hi), or none.
std::optional<std::size_t> building_near(Bench& b, std::size_t lo, std::size_t hi, std::size_t mid) {
  for (std::size_t off = 0; off < hi - lo; ++off) {
    for (std::size_t c : {mid + off, mid - off}) {
      if (c <= lo || c >= hi) continue;
      if (b.build(c)) return c;
    }
  }
  return std::nullopt;
}

Answer asv_rule(const History& h) {
  Bench b(h, 1);
  std::size_t lo = 0, hi = k_commits - 1;
  b.build(lo);
  b.build(hi);
  double vlo = median_of(b.run(lo, 10)), vhi = median_of(b.run(hi, 10));
  Answer a;
  while (hi - lo > 1) {
    auto mid = building_near(b, lo, hi, (lo + hi) / 2);
    if (!mid) {
      a.range = std::pair{lo + 1, hi};
      break;
    }
    double v = median_of(b.run(*mid, 10));
    if (std::fabs(v - vlo) > std::fabs(vhi - v)) {
      hi = *mid;
      vhi = v;
    } else {
      lo = *mid;
      vlo = v;
    }
  }
  if (!a.range) a.culprits.push_back(hi);
  a.builds = b.builds;
  a.trials = b.trials_spent;
  return a;
}

// -- TorchBench's 7 % rule --------------------------------------------------
Answer torchbench_rule(const History& h) {
  Bench b(h, 2);
  std::size_t lo = 0, hi = k_commits - 1;
  b.build(lo);
  b.build(hi);
  const double good = median_of(b.run(lo, 10));
  const double bad = median_of(b.run(hi, 10));
  Answer a;
  auto is_bad = [&](double v) { return v > good * 1.07; };
  if (is_bad(bad)) {
    bool aborted = false;
    while (hi - lo > 1) {
      std::size_t mid = (lo + hi) / 2;
      if (!b.build(mid)) {
        aborted = true;  // it stops at the first commit that does not build
        break;
      }
      if (is_bad(median_of(b.run(mid, 10))))
        hi = mid;
      else
        lo = mid;
    }
    if (!aborted) a.culprits.push_back(hi);
  }
  a.builds = b.builds;
  a.trials = b.trials_spent;
  return a;
}

// -- Pinpoint ---------------------------------------------------------------
enum class Same { Different, Same, Unknown };

Answer pinpoint_rule(const History& h) {
  Bench b(h, 3);
  std::map<std::size_t, std::vector<double>> values;  // pooled over attempts
  std::map<std::size_t, int> attempts;
  auto add_attempts = [&](std::size_t c, int n) {
    for (int i = 0; i < n; ++i) {
      auto v = b.run(c, 5);
      values[c].insert(values[c].end(), v.begin(), v.end());
    }
    attempts[c] += n;
  };
  auto compare = [&](std::size_t x, std::size_t y) {
    for (;;) {
      auto mw = stats::mann_whitney_u(values[x], values[y]);
      if (mw.p_value < 0.01) return Same::Different;
      if (mw.p_value > 0.1) return Same::Same;
      int most = std::max(attempts[x], attempts[y]);
      if (most >= 32) return Same::Same;
      for (std::size_t c : {x, y})
        if (attempts[c] < 2 * most) add_attempts(c, 2 * most - attempts[c]);
    }
  };
  std::size_t lo = 0, hi = k_commits - 1;
  b.build(lo);
  b.build(hi);
  add_attempts(lo, 4);
  add_attempts(hi, 4);
  Answer a;
  std::vector<std::pair<std::size_t, std::size_t>> todo;
  if (compare(lo, hi) == Same::Different) todo.push_back({lo, hi});
  while (!todo.empty()) {
    auto [x, y] = todo.back();
    todo.pop_back();
    auto mid = building_near(b, x, y, (x + y) / 2);
    if (!mid) {
      if (y == x + 1)
        a.culprits.push_back(y);
      else if (!a.range)
        a.range = std::pair{x + 1, y};
      continue;
    }
    add_attempts(*mid, 4);
    for (auto [p, q] : {std::pair{x, *mid}, std::pair{*mid, y}})
      if (compare(p, q) == Same::Different) todo.push_back({p, q});
  }
  std::sort(a.culprits.begin(), a.culprits.end());
  if (!a.culprits.empty()) a.range.reset();
  a.builds = b.builds;
  a.trials = b.trials_spent;
  return a;
}

struct Score {
  int histories = 0, stepped = 0, flat = 0;
  int right = 0, right_or_range = 0, wrong = 0, none = 0, false_culprit = 0;
  double builds = 0, trials = 0;  // sums over stepped histories
  std::vector<int> build_counts;
};

void score(const History& h, const Answer& a, Score& s) {
  ++s.histories;
  if (!h.culprit) {
    ++s.flat;
    if (!a.culprits.empty()) ++s.false_culprit;
    return;
  }
  ++s.stepped;
  s.builds += a.builds;
  s.trials += static_cast<double>(a.trials);
  s.build_counts.push_back(a.builds);
  const std::size_t k = *h.culprit;
  if (a.culprits.size() == 1 && a.culprits[0] == k) {
    ++s.right;
    ++s.right_or_range;
  } else if (!a.culprits.empty()) {
    ++s.wrong;
  } else if (a.range && a.range->first <= k && k <= a.range->second) {
    // The best anyone can say next to commits that do not build: from the
    // first commit after the last good one that builds, to the first bad
    // one that builds.
    std::size_t first = k, last = k;
    while (first > 1 && h.broken[first - 1]) --first;
    while (last + 1 < k_commits && h.broken[last]) ++last;
    if (a.range->first >= first && a.range->second <= last) ++s.right;
    ++s.right_or_range;
  } else {
    ++s.none;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int histories = 1000, threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::uint64_t seed = 20261202;
  double rho = 0.25;
  std::vector<double> ds = {0.5, 1, 2, 4};
  for (int i = 1; i < argc; ++i) {
    auto arg = [&](const char* name) { return std::strcmp(argv[i], name) == 0 && i + 1 < argc; };
    if (arg("--histories"))
      histories = std::atoi(argv[++i]);
    else if (arg("--seed"))
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (arg("--rho"))
      rho = std::atof(argv[++i]);
    else if (arg("--d"))
      ds = {std::atof(argv[++i])};
    else if (arg("--threads"))
      threads = std::atoi(argv[++i]);
    else if (arg("--trace")) {
      // One history's perfgate search, event by event (for debugging the search).
      g_trace = true;
      int n = std::atoi(argv[++i]);
      double d = ds.size() == 1 ? ds[0] : 2;
      auto h = make_history(seed + static_cast<std::uint64_t>(n) * 1000003ull + static_cast<std::uint64_t>(d * 1000), d,
                            rho);
      fmt::print("history {}: culprit {}\n", n, h.culprit ? std::to_string(*h.culprit) : "none");
      perfgate_rule(h);
      return 0;
    } else {
      std::fprintf(stderr, "usage: bisect_sim [--histories N] [--seed S] [--rho R] [--d D] [--threads T]\n");
      return 2;
    }
  }
  fmt::print(
      "bisect_sim: {} histories of {} commits per effect size, seed {}, trial CV 2 %, run effect rho {} x "
      "sigma, 5 % of commits do not build, 10 % of histories with no step\n\n",
      histories, k_commits, seed, rho);
  fmt::print("{:>4}  {:<11} {:>7} {:>15} {:>7} {:>6} {:>13} {:>8} {:>8}\n", "d", "rule", "right", "right or range",
             "wrong", "none", "false (flat)", "builds", "trials");
  using Rule = Answer (*)(const History&);
  const std::vector<std::pair<const char*, Rule>> rules = {{"perfgate", perfgate_rule},
                                                           {"asv find", asv_rule},
                                                           {"TorchBench", torchbench_rule},
                                                           {"Pinpoint", pinpoint_rule}};
  for (double d : ds) {
    std::vector<Score> scores(rules.size());
    std::vector<std::vector<Score>> per_thread(static_cast<std::size_t>(threads), std::vector<Score>(rules.size()));
    std::atomic<int> next{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (int i; (i = next++) < histories;) {
          auto h = make_history(
              seed + static_cast<std::uint64_t>(i) * 1000003ull + static_cast<std::uint64_t>(d * 1000), d, rho);
          for (std::size_t r = 0; r < rules.size(); ++r)
            score(h, rules[r].second(h), per_thread[static_cast<std::size_t>(t)][r]);
        }
      });
    for (auto& th : pool) th.join();
    for (std::size_t r = 0; r < rules.size(); ++r) {
      Score s;
      for (const auto& pt : per_thread) {
        const auto& x = pt[r];
        s.histories += x.histories;
        s.stepped += x.stepped;
        s.flat += x.flat;
        s.right += x.right;
        s.right_or_range += x.right_or_range;
        s.wrong += x.wrong;
        s.none += x.none;
        s.false_culprit += x.false_culprit;
        s.builds += x.builds;
        s.trials += x.trials;
      }
      auto pct = [](int a, int b) { return b ? fmt::format("{:.1f} %", 100.0 * a / b) : std::string("-"); };
      fmt::print("{:>4}  {:<11} {:>7} {:>15} {:>7} {:>6} {:>13} {:>8.1f} {:>8.0f}\n", d, rules[r].first,
                 pct(s.right, s.stepped), pct(s.right_or_range, s.stepped), pct(s.wrong, s.stepped),
                 pct(s.none, s.stepped), pct(s.false_culprit, s.flat), s.stepped ? s.builds / s.stepped : 0.0,
                 s.stepped ? s.trials / s.stepped : 0.0);
    }
    fmt::print("\n");
  }
  return 0;
}
