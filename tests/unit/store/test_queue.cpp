// The fleet queue on both backends: claims in run order, leases that run out,
// workers that are stopped, a submitter's Ctrl-C, workers claiming at once.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "harness/store/store.hpp"
#include "tests/unit/support/backends.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;

namespace {

struct Queued {
  std::unique_ptr<store::Store> st;
  long long run = 0;
  long long config = 0;
};

// A run of `n` queued trials, each tried at most `attempts` times.
// pid: the submitter's (default: this test, alive).
Queued queued_run(const std::string& spec, int n, int attempts, pid_t pid = ::getpid()) {
  Queued q;
  q.st = test::open_or_fail(spec);
  store::RunRecord r;
  r.suite = "fleet";
  r.started_at = 1700000000;
  r.host = "submit-host";
  r.pid = pid;
  r.plan_json = "{}";
  auto run = q.st->begin_run(r);
  REQUIRE(run);
  q.run = *run;
  auto c = q.st->config_id("sim", "{}");
  REQUIRE(c);
  q.config = *c;
  std::vector<store::QueueItem> items;
  for (int i = 0; i < n; ++i)
    items.push_back({static_cast<std::size_t>(n - 1 - i), n - 1 - i});  // seq descending on insert
  REQUIRE(q.st->enqueue_trials(q.run, items, attempts));
  return q;
}

// The trial row of a claim, as a worker ("node-a:77": host and job) makes it.
Expected<long long> try_start_attempt(Queued& q, const store::Claim& c, const std::string& worker) {
  model::TrialRecord t;
  t.run_id = q.run;
  t.config_id = q.config;
  t.seq = static_cast<int>(c.plan_index);
  t.host = worker.substr(0, worker.find(':'));
  t.node_fingerprint = "fp-" + t.host;
  return q.st->begin_claimed_trial(t, c.plan_index, worker);
}

long long start_attempt(Queued& q, const store::Claim& c, const std::string& worker) {
  auto id = try_start_attempt(q, c, worker);
  REQUIRE(id);
  return *id;
}

Status finish(Queued& q, long long trial_id, model::TrialStatus status) {
  model::TrialRecord t;
  t.id = trial_id;
  t.run_id = q.run;
  t.status = status;
  return q.st->finish_trial(t, {});
}

model::TrialRecord trial_of(Queued& q, long long id) {
  auto data = q.st->load_run(q.run);
  REQUIRE(data);
  for (const auto& t : data->trials)
    if (t.id == id) return t;
  FAIL("no trial " << id);
  return {};
}

}  // namespace

TEST_CASE("queue: claims come in run order, each once, and a finished trial is done", "[store][queue]") {
  BOTH_BACKENDS;
  test::TempDir dir;
  auto q = queued_run(test::database_for(backend, dir.path() / "q.db"), 4, 3);
  // A worker whose plan holds none of these trials (they were added after it started) takes none.
  auto beyond = q.st->claim_trial(q.run, "old-worker", 600, 0);
  REQUIRE(beyond);
  CHECK_FALSE(beyond->has_value());
  auto none_below = q.st->queue_counts(q.run, 0);
  REQUIRE(none_below);
  CHECK(none_below->total() == 0);
  std::vector<std::size_t> order;
  for (int i = 0; i < 4; ++i) {
    auto c = q.st->claim_trial(q.run, i % 2 ? "node-b:2" : "node-a:1", 600);
    REQUIRE(c);
    REQUIRE(c->has_value());
    CHECK((*c)->attempt == 1);
    order.push_back((*c)->plan_index);
    long long id = start_attempt(q, **c, i % 2 ? "node-b:2" : "node-a:1");
    if (i < 3) REQUIRE(finish(q, id, model::TrialStatus::Ok));
  }
  CHECK(order == std::vector<std::size_t>{0, 1, 2, 3});
  auto none = q.st->claim_trial(q.run, "node-a:1", 600);
  REQUIRE(none);
  CHECK_FALSE(none->has_value());
  auto counts = q.st->queue_counts(q.run);
  REQUIRE(counts);
  CHECK(counts->done == 3);
  CHECK(counts->claimed == 1);
  CHECK(counts->open() == 1);
  // The node's fingerprint is kept once and named by its trials.
  REQUIRE(q.st->save_node_fingerprint("fp-node-a", R"({"cpu":"a"})"));
  REQUIRE(q.st->save_node_fingerprint("fp-node-a", R"({"cpu":"other"})"));
  auto fp = q.st->node_fingerprint("fp-node-a");
  REQUIRE(fp);
  CHECK(*fp == R"({"cpu":"a"})");
  auto data = q.st->load_run(q.run);
  REQUIRE(data);
  CHECK(data->trials.front().node_fingerprint.starts_with("fp-node-"));
  REQUIRE(q.st->record_fleet_job(q.run, "4242"));
  REQUIRE(q.st->record_fleet_job(q.run, "4242"));
  auto jobs = q.st->fleet_jobs(q.run);
  REQUIRE(jobs);
  CHECK(*jobs == std::vector<std::string>{"4242"});
}

TEST_CASE("queue: a lease that runs out makes the trial pending again and its attempt lost", "[store][queue]") {
  BOTH_BACKENDS;
  test::TempDir dir;
  auto q = queued_run(test::database_for(backend, dir.path() / "q.db"), 1, 2);
  auto c = q.st->claim_trial(q.run, "node-a:77", 600);
  REQUIRE(c);
  REQUIRE(c->has_value());
  long long first = start_attempt(q, **c, "node-a:77");
  auto held = q.st->renew_leases("node-a:77", 600);
  REQUIRE(held);
  CHECK(*held == 1);
  // The worker stops renewing: its lease ends (a negative lease ended a second ago).
  REQUIRE(q.st->renew_leases("node-a:77", -1));
  auto counts = q.st->queue_counts(q.run);
  REQUIRE(counts);
  CHECK(counts->pending == 1);
  CHECK(counts->claimed == 0);
  auto lost = trial_of(q, first);
  CHECK(lost.status == model::TrialStatus::Lost);
  CHECK_THAT(lost.error, Catch::Contains("node-a:77") && Catch::Contains("queued again"));
  // Another worker takes it as its second attempt.
  auto again = q.st->claim_trial(q.run, "node-b:5", 600);
  REQUIRE(again);
  REQUIRE(again->has_value());
  CHECK((*again)->attempt == 2);
  CHECK((*again)->plan_index == (*c)->plan_index);
  long long second = start_attempt(q, **again, "node-b:5");
  // The first worker comes back and finishes: refused, nothing overwritten.
  auto late = finish(q, first, model::TrialStatus::Ok);
  REQUIRE_FALSE(late);
  CHECK_THAT(late.error().message, Catch::Contains("lease ran out"));
  CHECK(trial_of(q, first).status == model::TrialStatus::Lost);
  // The second attempt's lease runs out too: no attempts left, the trial is lost.
  REQUIRE(q.st->renew_leases("node-b:5", -1));
  counts = q.st->queue_counts(q.run);
  REQUIRE(counts);
  CHECK(counts->lost == 1);
  CHECK(counts->open() == 0);
  CHECK_THAT(trial_of(q, second).error, Catch::Contains("no attempts left"));
}

TEST_CASE("queue: a trial row is made with its claim, and a worker whose claim ran out first is told",
          "[store][queue]") {
  BOTH_BACKENDS;
  test::TempDir dir;
  auto q = queued_run(test::database_for(backend, dir.path() / "q.db"), 1, 3);
  auto c = q.st->claim_trial(q.run, "node-a:1", 600);
  REQUIRE(c);
  REQUIRE(c->has_value());
  // node-a:1 stalls before making its trial row; its lease runs out and node-b:2 takes the trial.
  REQUIRE(q.st->renew_leases("node-a:1", -1));
  auto again = q.st->claim_trial(q.run, "node-b:2", 600);
  REQUIRE(again);
  REQUIRE(again->has_value());
  long long second = start_attempt(q, **again, "node-b:2");
  // node-a:1 wakes: refused, its row kept as lost, and the claim still names node-b:2's trial.
  auto stale = try_start_attempt(q, **c, "node-a:1");
  REQUIRE_FALSE(stale);
  CHECK_THAT(stale.error().message, Catch::Contains("node-a:1") && Catch::Contains("lease ran out before"));
  auto data = q.st->load_run(q.run);
  REQUIRE(data);
  REQUIRE(data->trials.size() == 2);
  for (const auto& t : data->trials)
    if (t.id != second) {
      CHECK(t.status == model::TrialStatus::Lost);
      CHECK_THAT(t.error, Catch::Contains("node-a:1"));
    }
  REQUIRE(finish(q, second, model::TrialStatus::Ok));
  auto counts = q.st->queue_counts(q.run);
  REQUIRE(counts);
  CHECK(counts->done == 1);
  CHECK(counts->open() == 0);
}

TEST_CASE("queue: a stopped worker's trial is queued again; after the submitter's Ctrl-C it stays interrupted",
          "[store][queue]") {
  BOTH_BACKENDS;
  test::TempDir dir;
  auto q = queued_run(test::database_for(backend, dir.path() / "q.db"), 3, 3);
  auto c = q.st->claim_trial(q.run, "node-a:1", 600);
  REQUIRE(c);
  long long id = start_attempt(q, **c, "node-a:1");
  // scancel of the worker's array task: the trial ends interrupted.
  REQUIRE(finish(q, id, model::TrialStatus::Interrupted));
  CHECK(trial_of(q, id).status == model::TrialStatus::Lost);
  auto counts = q.st->queue_counts(q.run);
  REQUIRE(counts);
  CHECK(counts->pending == 3);
  // Ctrl-C on the submitter: the job is cancelled, nothing more starts.
  auto c2 = q.st->claim_trial(q.run, "node-b:1", 600);
  REQUIRE(c2);
  CHECK((*c2)->plan_index == (*c)->plan_index);
  long long id2 = start_attempt(q, **c2, "node-b:1");
  REQUIRE(q.st->cancel_queue(q.run));
  REQUIRE(finish(q, id2, model::TrialStatus::Interrupted));
  CHECK(trial_of(q, id2).status == model::TrialStatus::Interrupted);
  counts = q.st->queue_counts(q.run);
  REQUIRE(counts);
  CHECK(counts->cancelled == 3);
  auto none = q.st->claim_trial(q.run, "node-b:1", 600);
  REQUIRE(none);
  CHECK_FALSE(none->has_value());
}

TEST_CASE("queue: a run with queued trials is not closed as abandoned by its host", "[store][queue]") {
  BOTH_BACKENDS;
  test::TempDir dir;
  // The submitter went away (--no-wait): its pid is gone, its workers are not.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  auto q = queued_run(test::database_for(backend, dir.path() / "q.db"), 2, 1, child);
  store::RunRecord r;
  r.suite = "local";
  r.started_at = 1700000001;
  r.host = "submit-host";
  r.pid = child;
  r.plan_json = "{}";
  auto local = q.st->begin_run(r);
  REQUIRE(local);
  auto closed = q.st->close_abandoned_runs("submit-host");
  REQUIRE(closed);
  CHECK(*closed == 1);  // the local run of the dead pid, not the queued one
  auto data = q.st->load_run(q.run);
  REQUIRE(data);
  CHECK(data->run.status == model::RunStatus::Running);
}

TEST_CASE("queue: eight workers claiming at once take every trial exactly once", "[store][queue]") {
  BOTH_BACKENDS;
  test::TempDir dir;
  const std::string spec = test::database_for(backend, dir.path() / "q.db");
  constexpr int k_trials = 400;
  auto q = queued_run(spec, k_trials, 1);
  std::vector<std::vector<std::size_t>> got(8);
  std::vector<std::string> errors(8);
  std::vector<long long> config_ids(8, 0);
  std::vector<std::thread> workers;
  std::latch connected(8);  // all claim together, not one by one as they connect
  for (int w = 0; w < 8; ++w)
    workers.emplace_back([&, w] {
      auto st = store::open_store(spec);  // a connection of its own, as on its own node
      connected.arrive_and_wait();
      if (!st) {
        errors[w] = st.error().message;
        return;
      }
      // Workers starting together record the same configuration at once.
      auto cfg = (*st)->config_id("fresh", R"({"k":1})");
      if (!cfg) {
        errors[w] = cfg.error().message;
        return;
      }
      config_ids[w] = *cfg;
      for (;;) {
        auto c = (*st)->claim_trial(q.run, "w" + std::to_string(w), 600);
        if (!c) {
          errors[w] = c.error().message;
          return;
        }
        if (!c->has_value()) return;
        got[w].push_back((*c)->plan_index);
      }
    });
  for (auto& t : workers) t.join();
  for (const auto& e : errors) CHECK(e == "");
  CHECK(std::count(config_ids.begin(), config_ids.end(), config_ids[0]) == 8);
  std::vector<std::size_t> all;
  for (const auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  CHECK(all.size() == k_trials);
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
}
