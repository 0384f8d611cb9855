#include "harness/suite/plan.hpp"

#include <unistd.h>
#include <chrono>

#include "harness/stats/running.hpp"

namespace perfgate::suite {
model::Plan make_plan(const model::Suite& suite, std::vector<model::Case> cases, std::uint64_t seed) {
  model::Plan plan;
  plan.seed = seed;
  plan.order = suite.order;
  plan.cases = std::move(cases);
  int max_repeats = 0;
  for (const auto& c : plan.cases) max_repeats = std::max(max_repeats, suite.workloads[c.workload_index].repeats);

  stats::SplitMix64 gen(seed);
  if (suite.order == "sequential") {
    for (std::size_t ci = 0; ci < plan.cases.size(); ++ci)
      for (int r = 0; r < suite.workloads[plan.cases[ci].workload_index].repeats; ++r)
        plan.trials.push_back({ci, r, 0});
  } else {
    for (int r = 0; r < max_repeats; ++r) {
      std::vector<model::PlannedTrial> block;
      for (std::size_t ci = 0; ci < plan.cases.size(); ++ci)
        if (r < suite.workloads[plan.cases[ci].workload_index].repeats) block.push_back({ci, r, 0});
      for (std::size_t i = block.size(); i > 1; --i) std::swap(block[i - 1], block[gen.below(i)]);
      plan.trials.insert(plan.trials.end(), block.begin(), block.end());
    }
  }
  for (std::size_t i = 0; i < plan.trials.size(); ++i) plan.trials[i].seq = static_cast<int>(i);
  return plan;
}

std::uint64_t fresh_seed() {
  const auto t = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  // Mixed, so two runs started in the same tick on one host (other pids) or
  // a tick apart get unrelated seeds.
  const std::uint64_t mixed = stats::splitmix64_mix(stats::splitmix64_mix(t) ^ static_cast<std::uint64_t>(::getpid()));
  // Keep seeds below 2^53 so they survive JSON and scripting languages intact.
  return mixed & ((1ull << 53) - 1);
}

}  // namespace perfgate::suite
