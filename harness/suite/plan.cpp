#include "harness/suite/plan.hpp"

#include <unistd.h>
#include <chrono>
#include <random>

namespace perfgate::suite {
namespace {

// Uniform integer in [0, n) by rejection, from the standardised mt19937_64
// output, so the order is identical across standard library implementations.
std::uint64_t uniform_below(std::mt19937_64& g, std::uint64_t n) {
  std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  std::uint64_t x = 0;
  do {
    x = g();
  } while (x >= limit);
  return x % n;
}

}  // namespace

model::Plan make_plan(const model::Suite& suite, std::vector<model::Case> cases, std::uint64_t seed) {
  model::Plan plan;
  plan.seed = seed;
  plan.order = suite.order;
  plan.cases = std::move(cases);
  int max_repeats = 0;
  for (const auto& c : plan.cases) max_repeats = std::max(max_repeats, suite.workloads[c.workload_index].repeats);

  std::mt19937_64 gen(seed);
  if (suite.order == "sequential") {
    for (std::size_t ci = 0; ci < plan.cases.size(); ++ci)
      for (int r = 0; r < suite.workloads[plan.cases[ci].workload_index].repeats; ++r)
        plan.trials.push_back({ci, r, 0});
  } else {
    for (int r = 0; r < max_repeats; ++r) {
      std::vector<model::PlannedTrial> block;
      for (std::size_t ci = 0; ci < plan.cases.size(); ++ci)
        if (r < suite.workloads[plan.cases[ci].workload_index].repeats) block.push_back({ci, r, 0});
      for (std::size_t i = block.size(); i > 1; --i) std::swap(block[i - 1], block[uniform_below(gen, i)]);
      plan.trials.insert(plan.trials.end(), block.begin(), block.end());
    }
  }
  for (std::size_t i = 0; i < plan.trials.size(); ++i) plan.trials[i].seq = static_cast<int>(i);
  return plan;
}

std::uint64_t fresh_seed() {
  auto t = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::seed_seq seq{static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(t >> 32),
                    static_cast<std::uint32_t>(::getpid())};
  std::uint32_t out[2];
  seq.generate(out, out + 2);
  // Keep seeds below 2^53 so they survive JSON and scripting languages intact.
  return ((static_cast<std::uint64_t>(out[0]) << 32) | out[1]) & ((1ull << 53) - 1);
}

}  // namespace perfgate::suite
