#pragma once
// `perfgate db copy FROM TO`: a whole history (runs with their tags, plans,
// trials, summaries, raw samples, primary metrics, gate verdicts and the
// machine fingerprints of fleet nodes) from one store into another, SQLite
// to PostgreSQL or back, through the Store interface only. Runs keep their
// order and get the target's ids; gate baselines are renumbered with them.
//
// A copy can be run again: a run the target already holds (same suite,
// start time, host and pid) is left as it is, and so are its gates, unless
// the target's copy is still "running" (an earlier copy was cut off inside
// it, or the source run had not ended then): that one is deleted and
// copied again. So a copy that failed midway is finished by repeating it,
// and nothing is ever held twice. Bisect builds (they name worktrees on the
// machine that built them) and bisect reports are not copied.

#include <functional>
#include <string>

#include "harness/store/store.hpp"

namespace perfgate::store {

struct CopyCounts {
  int runs = 0;      // copied
  int kept = 0;      // already in the target, left as they were
  int replaced = 0;  // of those copied, half-written ones copied again
  long long trials = 0;
  long long samples = 0;
  int gates = 0;
};

// `on_run` is told after each run (source id, target id, its counts so far).
Expected<CopyCounts> copy_history(Store& from, Store& to,
                                  const std::function<void(long long from_id, long long to_id)>& on_run = {});

}  // namespace perfgate::store
