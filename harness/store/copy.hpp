#pragma once
// `perfgate db copy FROM TO`: a whole history (runs with their tags, plans,
// trials, summaries, raw samples, primary metrics and gate verdicts) from one
// store into another, SQLite to PostgreSQL or back, through the Store
// interface only. Runs keep their order and get the target's ids; gate
// baselines are renumbered with them. A target that already holds any of
// the runs (same suite, start time, host and pid) is refused before anything
// is written.

#include <functional>
#include <string>

#include "harness/store/store.hpp"

namespace perfgate::store {

struct CopyCounts {
  int runs = 0;
  long long trials = 0;
  long long samples = 0;
  int gates = 0;
};

// `on_run` is told after each run (source id, target id, its counts so far).
Expected<CopyCounts> copy_history(Store& from, Store& to,
                                  const std::function<void(long long from_id, long long to_id)>& on_run = {});

}  // namespace perfgate::store
