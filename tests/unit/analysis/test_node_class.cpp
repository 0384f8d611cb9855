// Node classes: a gate over a fleet of mixed nodes compares each
// configuration within one class, on both backends (the verdicts carry the
// class through the store).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>

#include "harness/analysis/baseline.hpp"
#include "harness/analysis/gate.hpp"
#include "harness/analysis/node_class.hpp"
#include "tests/unit/support/backends.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;

namespace {

const std::string k_pool_a = R"({"cpu_model":"Kunpeng-920","hostname_class":"pool-a","npus":["910B2C"]})";
const std::string k_pool_b = R"({"cpu_model":"Kunpeng-920","hostname_class":"pool-b","npus":["910B3"]})";

struct Trial {
  std::string node;  // node fingerprint hash ("" for the run's own machine)
  double step_ms;
};

// A completed run of suite "s" recorded on machine `machine_hash` whose
// trials of one configuration ran where `trials` say.
long long add_run(store::Store& st, const std::string& machine_hash, const std::vector<Trial>& trials,
                  const std::string& tag = "nightly") {
  store::RunRecord r;
  r.suite = "s";
  r.started_at = 1700000000;
  r.status = model::RunStatus::Running;
  r.host = "login-01";
  r.pid = ::getpid();
  r.fingerprint_hash = machine_hash;
  r.fingerprint_json = R"({"cpu_model":"Xeon","hostname_class":"login"})";
  r.tags = {tag};
  auto id = st.begin_run(r);
  REQUIRE(id);
  auto config = st.config_id("train", model::params_json({{"bucket_mb", model::Scalar::infer("25")}}));
  REQUIRE(config);
  auto metric = st.metric_id(model::MetricInfo::inferred("step_time_ms"));
  REQUIRE(metric);
  for (std::size_t i = 0; i < trials.size(); ++i) {
    model::TrialRecord t;
    t.run_id = *id;
    t.config_id = *config;
    t.repeat = static_cast<int>(i);
    t.seq = static_cast<int>(i);
    t.node_fingerprint = trials[i].node;
    auto tid = st.begin_trial(t);
    REQUIRE(tid);
    t.id = *tid;
    t.status = model::TrialStatus::Ok;
    t.exit_code = 0;
    model::MetricSummary m;
    m.metric = "step_time_ms";
    m.n_total = m.n_steady = 1;
    m.value = m.median = m.mean = m.min = m.max = m.p90 = m.p99 = trials[i].step_ms;
    t.summaries.push_back(m);
    long long mid = *metric;
    REQUIRE(st.finish_trial(t, std::span<const long long>(&mid, 1)));
  }
  REQUIRE(st.finish_run(*id, model::RunStatus::Completed, 1700000100));
  return *id;
}

// Trials on nodes a and b, 8 each, step times level * (1 + 0.1 % jitter).
std::vector<Trial> fleet_trials(double level_a, double level_b) {
  std::vector<Trial> out;
  for (int i = 0; i < 8; ++i) {
    out.push_back({"nodeA", level_a * (1 + 0.001 * i)});
    out.push_back({"nodeB", level_b * (1 + 0.001 * (7 - i))});
  }
  return out;
}

}  // namespace

TEST_CASE("node class names come from the fingerprint's hostname class", "[node_class]") {
  CHECK(analysis::node_class_name("3f2a1b9c0d", k_pool_a) == "pool-a/3f2a1b");
  CHECK(analysis::node_class_name("3f2a1b9c0d", "") == "3f2a1b");
  CHECK(analysis::node_class_name("3f2a1b9c0d", "not json") == "3f2a1b");
  CHECK(analysis::node_class_name("", "{}") == "unknown");
  CHECK(model::with_node_class("bucket_mb=25", "pool-a/3f2a1b") == "bucket_mb=25 @ pool-a/3f2a1b");
  CHECK(model::with_node_class("bucket_mb=25", "") == "bucket_mb=25");
}

TEST_CASE("a fleet of two node classes is gated per class, and the verdicts keep the class", "[node_class]") {
  BOTH_BACKENDS;
  test::TempDir dir("node-class");
  auto opened = store::open_store(test::database_for(backend, dir.path() / "n.db"));
  REQUIRE(opened);
  auto& st = **opened;
  REQUIRE(st.save_node_fingerprint("nodeA", k_pool_a));
  REQUIRE(st.save_node_fingerprint("nodeB", k_pool_b));
  // Pool b's nodes are 20 % slower than pool a's, always. Tonight pool a
  // got 5 % slower; pooled over both classes that is hidden under the 20 %
  // between them (each side half a, half b), per class it is plain.
  add_run(st, "login", fleet_trials(100, 120));
  add_run(st, "login", fleet_trials(100.2, 119.8));
  add_run(st, "login", fleet_trials(99.8, 120.2));
  long long cand_id = add_run(st, "login", fleet_trials(105, 120));
  auto cand = st.load_run(cand_id);
  REQUIRE(cand);

  auto base = analysis::select_baseline(st, cand->run, "tag:nightly", false);
  REQUIRE(base);
  REQUIRE(base->runs.size() == 3);
  auto view = analysis::node_class_view(st, *cand, false);
  REQUIRE(view);
  CHECK(view->split);
  CHECK(view->classes == std::set<std::string>{"nodeA", "nodeB"});
  CHECK(view->names.at("nodeA") == "pool-a/nodeA");

  std::vector<analysis::RunSummary> bs, pooled_base;
  for (const auto& b : base->runs) {
    for (auto& part : view->summarise(b)) bs.push_back(std::move(part));
    pooled_base.push_back(analysis::summarise_run(b));
  }
  REQUIRE(bs.size() == 6);
  auto policy = model::default_gate_policy();
  auto ev = analysis::evaluate_gate(analysis::collect_items(view->summarise(*cand), bs, policy, {}, {}), policy);
  std::vector<model::Comparison> step;
  for (const auto& c : ev.comparisons)
    if (c.metric.name == "step_time_ms") step.push_back(c);
  REQUIRE(step.size() == 2);
  auto on = [&](const std::string& cls) {
    return *std::find_if(step.begin(), step.end(), [&](const model::Comparison& c) { return c.node_class == cls; });
  };
  auto a = on("pool-a/nodeA"), b = on("pool-b/nodeB");
  INFO(a.note << " p=" << a.p_value << " p_runs=" << a.p_runs << " n_base=" << a.n_base << " change=" << a.change_rel);
  CHECK(a.verdict == model::VerdictKind::Regression);
  CHECK(a.n_base == 24);
  CHECK(a.n_cand == 8);
  CHECK(a.change_rel == Approx(0.05).margin(0.005));
  CHECK(a.label == "bucket_mb=25 @ pool-a/nodeA");
  CHECK(b.verdict == model::VerdictKind::Unchanged);
  CHECK(std::fabs(b.change_rel) < 0.01);

  // Pooled (what the gate did before it knew node classes): the 5 % on half
  // the trials sits inside the spread of the two pools and is not flagged.
  auto pooled =
      analysis::evaluate_gate(analysis::collect_items(analysis::summarise_run(*cand), pooled_base, policy), policy);
  auto pooled_step = std::find_if(pooled.comparisons.begin(), pooled.comparisons.end(),
                                  [](const model::Comparison& c) { return c.metric.name == "step_time_ms"; });
  REQUIRE(pooled_step != pooled.comparisons.end());
  CHECK(pooled_step->verdict != model::VerdictKind::Regression);

  // Both verdicts survive the store, each with its class.
  store::GateRecord g;
  g.run_id = cand_id;
  g.created_at = 1700000200;
  g.baseline = "tag:nightly";
  g.outcome = "regression";
  g.comparisons = step;
  REQUIRE(st.save_gate(g));
  auto gates = st.load_gates(cand_id);
  REQUIRE(gates);
  REQUIRE(gates->size() == 1);
  REQUIRE(gates->front().comparisons.size() == 2);
  std::set<std::string> labels;
  for (const auto& c : gates->front().comparisons) labels.insert(c.label);
  CHECK(labels == std::set<std::string>{"bucket_mb=25 @ pool-a/nodeA", "bucket_mb=25 @ pool-b/nodeB"});
}

TEST_CASE("a baseline counts when its trials ran on the candidate's node class, wherever it was recorded",
          "[node_class]") {
  BOTH_BACKENDS;
  test::TempDir dir("node-class-base");
  auto opened = store::open_store(test::database_for(backend, dir.path() / "b.db"));
  REQUIRE(opened);
  auto& st = **opened;
  REQUIRE(st.save_node_fingerprint("nodeA", k_pool_a));
  REQUIRE(st.save_node_fingerprint("nodeB", k_pool_b));
  // Run 1: a fleet run on pool b only; run 2: a fleet run on both pools,
  // submitted from another login node; run 3: a local run on a pool-a node
  // (its trials carry no node fingerprint: the run's own is nodeA).
  long long only_b = add_run(st, "login", {{"nodeB", 120}, {"nodeB", 121}, {"nodeB", 119}});
  long long both = add_run(st, "login-2", fleet_trials(100, 120));
  long long cand_id = add_run(st, "nodeA", {{"", 100}, {"", 101}, {"", 99}, {"", 100.5}});
  auto cand = st.load_run(cand_id);
  REQUIRE(cand);

  auto base = analysis::select_baseline(st, cand->run, "tag:nightly", false);
  REQUIRE(base);
  REQUIRE(base->runs.size() == 1);
  CHECK(base->runs.front().run.id == both);
  REQUIRE_FALSE(base->warnings.empty());
  CHECK_THAT(base->warnings.front(), Catch::Contains("skipped 1 run(s) of another machine") &&
                                         Catch::Contains("run " + std::to_string(only_b)));
  // Run 1 named on its own is refused; --force takes it.
  auto named = analysis::select_baseline(st, cand->run, std::to_string(only_b), false);
  REQUIRE_FALSE(named);
  CHECK_THAT(named.error().message, Catch::Contains("different machine") && Catch::Contains("--force"));
  CHECK(analysis::select_baseline(st, cand->run, std::to_string(only_b), true));

  // One class on the candidate's side: no split, and the baseline's pool-b
  // trials are left out rather than pooled.
  auto view = analysis::node_class_view(st, *cand, false);
  REQUIRE(view);
  CHECK_FALSE(view->split);
  CHECK(view->trials_elsewhere(base->runs.front()) == 8);
  auto bs = view->summarise(base->runs.front());
  REQUIRE(bs.size() == 1);
  CHECK(bs.front().node_class.empty());
  CHECK(bs.front().trials.size() == 8);
  auto policy = model::default_gate_policy();
  auto items = analysis::collect_items(view->summarise(*cand), bs, policy, {}, {});
  auto step = std::find_if(items.begin(), items.end(),
                           [](const analysis::GateItem& i) { return i.metric.name == "step_time_ms"; });
  REQUIRE(step != items.end());
  CHECK(step->label == "bucket_mb=25");
  CHECK(step->base.values.size() == 8);
  CHECK(*std::max_element(step->base.values.begin(), step->base.values.end()) < 110);

  // History for the run-to-run spread follows the same rule.
  analysis::Baseline none;
  auto history = analysis::select_history(st, cand->run, none, 10);
  REQUIRE(history);
  REQUIRE(history->size() == 1);
  CHECK(history->front().run.id == both);

  // --force pools every trial of every class.
  auto forced = analysis::node_class_view(st, *cand, true);
  REQUIRE(forced);
  CHECK(forced->summarise(base->runs.front()).front().trials.size() == 16);
}
