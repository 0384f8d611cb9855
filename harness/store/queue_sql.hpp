#pragma once
// The fleet queue's statements and messages, shared by both stores (the SQL
// differs only in parameters and the clock: SQLite is given the caller's,
// PostgreSQL uses its own, so the leases of workers on many nodes are
// judged by one clock).

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "harness/store/store.hpp"

namespace perfgate::store {

inline constexpr std::string_view k_worker_stopped =
    "lost: its worker was stopped while it ran (cancelled or interrupted); the trial was queued again";

inline std::string lease_lost_message(long long trial_id) {
  return fmt::format(
      "trial {}: its lease ran out while it ran and another worker was given it; this attempt's "
      "result is not kept (is the database reachable from this node, and the lease long enough?)",
      trial_id);
}

// A worker that makes its trial row after its claim ran out (it stalled
// longer than its lease between claiming and starting): the row is kept,
// lost, and the worker told, as when a lease runs out mid-trial.
inline std::string claim_lost_reason(const std::string& worker) {
  return fmt::format("worker {}'s lease ran out before the trial started and another worker was given it", worker);
}
inline std::string claim_lost_error(const std::string& worker) { return "lost: " + claim_lost_reason(worker); }
inline std::string claim_lost_message(long long trial_id, const std::string& worker) {
  return fmt::format(
      "trial {}: {}; this attempt is not run (is the database reachable from this node, and the lease long enough?)",
      trial_id, claim_lost_reason(worker));
}

// A new trial row named in its claim (Store::begin_claimed_trial), if the
// claim is still the worker's; otherwise the row is marked lost.
#define PERFGATE_LINK_CLAIM(TRIAL, RUN, INDEX, WORKER)                                         \
  "UPDATE trial_queue SET trial_id = " TRIAL " WHERE run_id = " RUN " AND plan_index = " INDEX \
  " AND state = 'claimed' AND worker = " WORKER
inline constexpr const char* k_link_claim_sqlite = PERFGATE_LINK_CLAIM("?1", "?2", "?3", "?4");
inline constexpr const char* k_link_claim_pg = PERFGATE_LINK_CLAIM("$1", "$2", "$3", "$4");
#undef PERFGATE_LINK_CLAIM
inline constexpr const char* k_mark_claim_lost_sqlite = "UPDATE trials SET status = 'lost', error = ?1 WHERE id = ?2";
inline constexpr const char* k_mark_claim_lost_pg = "UPDATE trials SET status = 'lost', error = $1 WHERE id = $2";

inline void add_queue_count(QueueCounts& c, const std::string& state, int n) {
  if (state == "pending")
    c.pending += n;
  else if (state == "claimed")
    c.claimed += n;
  else if (state == "done")
    c.done += n;
  else if (state == "lost")
    c.lost += n;
  else
    c.cancelled += n;
}

// Interrupted with its worker: pending again while attempts remain.
#define PERFGATE_REQUEUE(P)                                                                           \
  "UPDATE trial_queue SET state = CASE WHEN attempts < max_attempts THEN 'pending' ELSE 'lost' END, " \
  "worker = '', lease_until = 0 WHERE trial_id = " P " AND state = 'claimed'"
inline constexpr const char* k_requeue_interrupted_sqlite = PERFGATE_REQUEUE("?");
inline constexpr const char* k_requeue_interrupted_pg = PERFGATE_REQUEUE("$1");
#undef PERFGATE_REQUEUE

// Leases that ran out: first the attempts' trials (lost, with the worker's
// name), then the queue rows (pending again, or lost out of attempts).
#define PERFGATE_EXPIRE_TRIALS(RUN, NOW)                                                                       \
  "UPDATE trials SET status = 'lost', error = 'lost: worker ' || (SELECT q.worker FROM trial_queue q "         \
  "WHERE q.trial_id = trials.id) || ' stopped renewing its lease (killed, cancelled, or its node went down)' " \
  "|| (SELECT CASE WHEN q.attempts < q.max_attempts THEN '; the trial was queued again' "                      \
  "ELSE '; no attempts left' END FROM trial_queue q WHERE q.trial_id = trials.id) "                            \
  "WHERE status = 'running' AND id IN (SELECT trial_id FROM trial_queue WHERE run_id = " RUN                   \
  " AND state = 'claimed' AND lease_until < " NOW " AND trial_id IS NOT NULL)"
#define PERFGATE_EXPIRE_QUEUE(RUN, NOW)                                                               \
  "UPDATE trial_queue SET state = CASE WHEN attempts < max_attempts THEN 'pending' ELSE 'lost' END, " \
  "worker = '', lease_until = 0 WHERE run_id = " RUN " AND state = 'claimed' AND lease_until < " NOW
inline constexpr const char* k_expire_trials_sqlite = PERFGATE_EXPIRE_TRIALS("?1", "?2");
inline constexpr const char* k_expire_queue_sqlite = PERFGATE_EXPIRE_QUEUE("?1", "?2");
#define PERFGATE_PG_NOW "extract(epoch from clock_timestamp())"
inline constexpr const char* k_expire_trials_pg = PERFGATE_EXPIRE_TRIALS("$1", PERFGATE_PG_NOW);
inline constexpr const char* k_expire_queue_pg = PERFGATE_EXPIRE_QUEUE("$1", PERFGATE_PG_NOW);
#undef PERFGATE_EXPIRE_TRIALS
#undef PERFGATE_EXPIRE_QUEUE

}  // namespace perfgate::store
