// Claim throughput of the fleet queue (docs/cluster.md, "Measured"): W
// workers, each with a connection of its own as on its own node, take N
// queued trials through the store as `perfgate worker` does (claim, begin
// the trial, record it with its claim, finish it), then the run is checked:
// every trial run once, none lost.
//
//   build/tests/bench/queue_claims --db postgresql://... [--trials 10000] [--workers 8]
//
// Prints one JSON line: wall seconds, trials per second, duplicates, missing.
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "harness/store/store.hpp"

using namespace perfgate;

int main(int argc, char** argv) {
  std::string db;
  int trials = 10000, workers = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--db"))
      db = argv[i + 1];
    else if (!std::strcmp(argv[i], "--trials"))
      trials = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--workers"))
      workers = std::atoi(argv[i + 1]);
  }
  if (db.empty()) {
    std::fprintf(stderr, "usage: queue_claims --db SPEC [--trials N] [--workers W]\n");
    return 2;
  }
  auto st = store::open_store(db);
  if (!st) {
    std::fprintf(stderr, "%s\n", st.error().message.c_str());
    return 3;
  }
  store::RunRecord r;
  r.suite = "queue-bench";
  r.host = "bench";
  r.pid = ::getpid();
  r.plan_json = "{}";
  auto run = (*st)->begin_run(r);
  auto config = (*st)->config_id("instant", "{}");
  if (!run || !config) return 3;
  std::vector<store::QueueItem> items;
  for (int i = 0; i < trials; ++i) items.push_back({static_cast<std::size_t>(i), i});
  if (auto s = (*st)->enqueue_trials(*run, items, 1); !s) return 3;

  std::vector<std::vector<std::size_t>> got(static_cast<std::size_t>(workers));
  std::atomic<int> errors{0};
  std::latch ready(workers + 1);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      auto mine = store::open_store(db);
      ready.arrive_and_wait();
      if (!mine) {
        ++errors;
        return;
      }
      const std::string name = fmt::format("bench-node-{}", w);
      for (;;) {
        auto c = (*mine)->claim_trial(*run, name, 600);
        if (!c) {
          ++errors;
          return;
        }
        if (!c->has_value()) return;
        model::TrialRecord t;
        t.run_id = *run;
        t.config_id = *config;
        t.seq = static_cast<int>((*c)->plan_index);
        t.host = name;
        auto id = (*mine)->begin_claimed_trial(t, (*c)->plan_index, name);
        if (!id) {
          ++errors;
          return;
        }
        t.id = *id;
        t.status = model::TrialStatus::Ok;
        if (!(*mine)->finish_trial(t, {})) {
          ++errors;
          return;
        }
        got[static_cast<std::size_t>(w)].push_back((*c)->plan_index);
      }
    });
  ready.arrive_and_wait();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& t : threads) t.join();
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::multiset<std::size_t> all;
  int busiest = 0, idlest = trials;
  for (const auto& g : got) {
    all.insert(g.begin(), g.end());
    busiest = std::max(busiest, static_cast<int>(g.size()));
    idlest = std::min(idlest, static_cast<int>(g.size()));
  }
  int duplicates = static_cast<int>(all.size() - std::set<std::size_t>(all.begin(), all.end()).size());
  int missing = trials - static_cast<int>(std::set<std::size_t>(all.begin(), all.end()).size());
  auto counts = (*st)->queue_counts(*run);
  std::printf(
      "{\"backend\": \"%s\", \"trials\": %d, \"workers\": %d, \"wall_s\": %.3f, \"trials_per_s\": %.0f, "
      "\"duplicates\": %d, \"missing\": %d, \"queue_done\": %d, \"errors\": %d, \"per_worker\": [%d, %d]}\n",
      db.find("postgres") == 0 ? "postgresql" : "sqlite", trials, workers, wall_s, trials / wall_s, duplicates, missing,
      counts ? counts->done : -1, errors.load(), idlest, busiest);
  const bool all_done = counts && counts->done == trials;
  return duplicates == 0 && missing == 0 && errors == 0 && all_done ? 0 : 1;
}
