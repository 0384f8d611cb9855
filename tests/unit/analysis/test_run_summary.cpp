#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "harness/analysis/run_summary.hpp"

using namespace perfgate;

namespace {

model::MetricSummary step_metric(const std::string& name, double value) {
  model::MetricSummary m;
  m.metric = name;
  m.n_total = 50;
  m.n_steady = 45;
  m.mean = m.median = m.value = value;
  return m;
}

model::MetricSummary scalar_metric(const std::string& name, double value) {
  model::MetricSummary m;
  m.metric = name;
  m.n_total = m.n_steady = 1;
  m.mean = m.median = m.value = value;
  m.is_scalar = true;
  return m;
}

model::TrialRecord trial(long long id, long long config, int repeat, int seq, model::TrialStatus status,
                         std::vector<model::MetricSummary> summaries = {}, std::string error = {}) {
  model::TrialRecord t;
  t.id = id;
  t.run_id = 1;
  t.config_id = config;
  t.repeat = repeat;
  t.seq = seq;
  t.status = status;
  t.summaries = std::move(summaries);
  t.error = std::move(error);
  return t;
}

// Two configurations of one workload; the second has failures.
store::RunData sample_run() {
  store::RunData d;
  d.run.id = 1;
  d.run.suite = "sweep";
  d.configs = {{10, "train", R"({"bucket_mb":25,"graph_mode":"eager"})"}, {11, "train", R"({"bucket_mb":50})"}};
  d.metrics = {{"first_step_ms", "ms", model::Better::Lower},
               {"step_time_ms", "ms", model::Better::Lower},
               {"throughput", "samples/s", model::Better::Higher},
               {"wall_time_s", "s", model::Better::Lower}};
  const double tp[] = {100, 102, 98, 101, 99};
  const double st[] = {10.0, 9.8, 10.2, 9.9, 10.1};
  // Interleaved, so config 10's repeats are not in seq order.
  const int repeat_order[] = {3, 0, 4, 1, 2};
  int seq = 0;
  long long id = 100;
  for (int r : repeat_order) {
    d.trials.push_back(trial(
        id++, 10, r, seq++, model::TrialStatus::Ok,
        {step_metric("throughput", tp[r]), step_metric("step_time_ms", st[r]), scalar_metric("wall_time_s", 30 + r),
         scalar_metric("first_step_ms", 2000 + r), scalar_metric("accuracy", 0.9)}));
    if (r == 0)
      d.trials.push_back(trial(id++, 11, 0, seq++, model::TrialStatus::Ok,
                               {step_metric("throughput", 150), scalar_metric("wall_time_s", 20)}));
  }
  d.trials.push_back(
      trial(id++, 11, 1, seq++, model::TrialStatus::Failed, {},
            "exited with code 1; last lines of stderr:\nTraceback (most recent call last):\nValueError: x\n"));
  d.trials.push_back(
      trial(id++, 11, 2, seq++, model::TrialStatus::Interrupted, {}, "interrupted; process group terminated"));
  d.trials.push_back(trial(id++, 11, 3, seq++, model::TrialStatus::TimedOut,
                           {step_metric("throughput", 1)},  // values of failed trials are not used
                           "timed out after 5.0 s; process group terminated"));
  return d;
}

std::vector<std::string> metric_names(const analysis::ConfigSummary& c) {
  std::vector<std::string> out;
  for (const auto& m : c.metrics) out.push_back(m.info.name);
  return out;
}

}  // namespace

TEST_CASE("summarise_run gives per-configuration medians, intervals and CV", "[analysis]") {
  auto rs = analysis::summarise_run(sample_run());
  CHECK(rs.run.suite == "sweep");
  CHECK(rs.trials.size() == 9);
  CHECK(rs.trials_ok == 6);
  CHECK(rs.trials_failed == 2);
  CHECK(rs.trials_interrupted == 1);
  REQUIRE(rs.configs.size() == 2);

  const auto& c = rs.configs[0];
  CHECK(c.config_id == 10);
  CHECK(c.workload == "train");
  CHECK(c.label == "bucket_mb=25 graph_mode=eager");
  CHECK(c.params.at("bucket_mb").kind == model::Scalar::Kind::Int);
  CHECK(c.params_json == R"({"bucket_mb":25,"graph_mode":"eager"})");
  CHECK(c.trials_ok == 5);
  CHECK(c.trials_failed == 0);
  CHECK(c.failures.empty());

  const auto* tp = c.find("throughput");
  REQUIRE(tp != nullptr);
  CHECK(tp->n == 5);
  CHECK(tp->median == 100);
  CHECK(tp->mean == Approx(100));
  CHECK(tp->min == 98);
  CHECK(tp->max == 102);
  CHECK(tp->cv == Approx(0.015811388300841896));  // np.std([100,102,98,101,99], ddof=1) / 100
  CHECK(tp->ci_low == 98);                        // n = 5: [min, max]
  CHECK(tp->ci_high == 102);
  CHECK(tp->ci_coverage == Approx(0.9375));
  CHECK(tp->info.better == model::Better::Higher);
  CHECK(tp->info.unit == "samples/s");
  CHECK_FALSE(tp->harness_metric);
  REQUIRE(tp->trials.size() == 5);
  for (int r = 0; r < 5; ++r) {
    INFO("repeat " << r);
    CHECK(tp->trials[static_cast<std::size_t>(r)].repeat == r);  // sorted by repeat
  }
  CHECK(tp->trials[0].value == 100);
  CHECK(tp->trials[0].trial_id == 101);

  const auto* st = c.find("step_time_ms");
  REQUIRE(st != nullptr);
  CHECK(st->median == Approx(10.0));
  CHECK(st->info.better == model::Better::Lower);

  const auto* wall = c.find("wall_time_s");
  REQUIRE(wall != nullptr);
  CHECK(wall->harness_metric);
  CHECK(wall->median == 32);
  const auto* first = c.find("first_step_ms");
  REQUIRE(first != nullptr);
  CHECK_FALSE(first->harness_metric);
  // A metric the run's metric list does not know is inferred from its name.
  const auto* acc = c.find("accuracy");
  REQUIRE(acc != nullptr);
  CHECK(acc->info.name == "accuracy");
  CHECK(acc->cv == 0);
  CHECK(c.find("no_such_metric") == nullptr);
}

TEST_CASE("summarise_run orders metrics: steps, then per-trial numbers, then the harness's", "[analysis]") {
  auto rs = analysis::summarise_run(sample_run());
  CHECK(metric_names(rs.configs[0]) ==
        std::vector<std::string>{"step_time_ms", "throughput", "accuracy", "first_step_ms", "wall_time_s"});
  CHECK(metric_names(rs.configs[1]) == std::vector<std::string>{"throughput", "wall_time_s"});
}

TEST_CASE("summarise_run lists failures and uses only successful trials", "[analysis]") {
  auto rs = analysis::summarise_run(sample_run());
  const auto& c = rs.configs[1];
  CHECK(c.config_id == 11);
  CHECK(c.label == "bucket_mb=50");
  CHECK(c.trials_ok == 1);
  CHECK(c.trials_failed == 2);  // failed and timed out; the interrupted one is neither
  REQUIRE(c.failures.size() == 2);
  CHECK(c.failures[0] == "repeat 2: exited with code 1: ValueError: x");
  CHECK(c.failures[1] == "repeat 4: timed out after 5.0 s; process group terminated");
  const auto* tp = c.find("throughput");
  REQUIRE(tp != nullptr);
  CHECK(tp->n == 1);  // the timed-out trial's value is not used
  CHECK(tp->median == 150);
  CHECK(tp->ci_low == 150);
  CHECK(tp->ci_high == 150);
  CHECK(tp->ci_coverage == 0);
  CHECK(tp->cv == 0);
}

TEST_CASE("summarise_run of an empty run", "[analysis]") {
  store::RunData d;
  d.run.id = 3;
  auto rs = analysis::summarise_run(d);
  CHECK(rs.configs.empty());
  CHECK(rs.trials_ok == 0);
  CHECK(rs.trials_failed == 0);
}

TEST_CASE("summarise_run with a wider interval for more trials", "[analysis]") {
  store::RunData d;
  d.configs = {{1, "w", "{}"}};
  for (int r = 0; r < 10; ++r)
    d.trials.push_back(trial(r + 1, 1, r, r, model::TrialStatus::Ok, {step_metric("throughput", 100 + r)}));
  auto rs = analysis::summarise_run(d);
  REQUIRE(rs.configs.size() == 1);
  CHECK(rs.configs[0].label.empty());
  const auto* tp = rs.configs[0].find("throughput");
  REQUIRE(tp != nullptr);
  CHECK(tp->median == 104.5);
  CHECK(tp->ci_low == 101);   // x_(2), coverage 1 - 2 * binom.cdf(1, 10, .5)
  CHECK(tp->ci_high == 108);  // x_(9)
  CHECK(tp->ci_coverage == Approx(0.978515625));
  CHECK(tp->info.better == model::Better::Higher);  // inferred: the run lists no metrics
}

TEST_CASE("facts: declared, or a directionless per-trial number that never varies; differing ones are noted",
          "[analysis]") {
  store::RunData d;
  d.run.id = 3;
  d.configs = {{1, "sim", R"({"bucket_mb":25})"}};
  d.metrics = {{"step_time_ms", "ms", model::Better::Lower},
               {"buckets", "", model::Better::None, true},  // declared by the workload
               {"matmul_tile", "", model::Better::None, true},
               {"final_loss", "", model::Better::None},   // directionless, but it varies
               {"world_size", "", model::Better::None}};  // directionless and constant: a fact
  const double tile[] = {32, 32, 64};
  for (int r = 0; r < 3; ++r)
    d.trials.push_back(
        trial(200 + r, 1, r, r, model::TrialStatus::Ok,
              {step_metric("step_time_ms", 10 + r), scalar_metric("buckets", 4), scalar_metric("matmul_tile", tile[r]),
               scalar_metric("final_loss", 0.5 + 0.01 * r), scalar_metric("world_size", 2)}));
  auto rs = analysis::summarise_run(d);
  const auto& c = rs.configs.at(0);
  CHECK(c.find("buckets")->fact);
  CHECK(c.find("matmul_tile")->fact);
  CHECK(c.find("world_size")->fact);
  CHECK_FALSE(c.find("final_loss")->fact);
  CHECK_FALSE(c.find("step_time_ms")->fact);
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0] == "matmul_tile: 32 in 2 trials, 64 in 1 trial");
}

TEST_CASE("a configuration's primary metric and its trials' steady states are read back", "[analysis]") {
  auto d = sample_run();
  d.primary_metrics[10] = "throughput";
  for (auto& t : d.trials)
    if (t.config_id == 10) t.steady_class = t.repeat < 4 ? "flat" : "warm-up";
  auto rs = analysis::summarise_run(d);
  CHECK(rs.configs[0].primary_metric == "throughput");
  CHECK(rs.configs[1].primary_metric.empty());
  CHECK(rs.configs[0].steady_classes.at("flat") == 4);
  CHECK(rs.configs[0].steady_classes.at("warm-up") == 1);
}

TEST_CASE("a device whose trials are all slower than elsewhere is a finding, jitter is not", "[analysis]") {
  store::RunData d;
  d.run.id = 1;
  d.configs = {{10, "w", R"({"k":0})"}, {11, "w", R"({"k":1})"}};
  d.metrics = {{"step_time_ms", "ms", model::Better::Lower}};
  d.primary_metrics = {{10, "step_time_ms"}, {11, "step_time_ms"}};
  long long id = 1;
  int seq = 0;
  // 4 devices, 2 repeats of each configuration per device; device 2 is 10 % slow,
  // the others jitter by up to 1 %.
  const double jitter[] = {0.0, 0.01, -0.01, 0.005};
  for (int dev = 0; dev < 4; ++dev)
    for (long long cfg : {10LL, 11LL})
      for (int r = 0; r < 2; ++r) {
        const double base = cfg == 10 ? 100 : 50;
        const double v = base * (1 + jitter[(dev + r) % 4]) * (dev == 2 ? 1.10 : 1.0);
        auto t = trial(id++, cfg, dev * 2 + r, seq++, model::TrialStatus::Ok, {step_metric("step_time_ms", v)});
        t.host = "node1";
        t.slot = dev;
        t.device_kind = "npu";
        t.devices = {dev};
        d.trials.push_back(std::move(t));
      }
  auto rs = analysis::summarise_run(d);
  REQUIRE(rs.slow_devices.size() == 1);
  CHECK(rs.slow_devices[0].devices == "2");
  CHECK(rs.slow_devices[0].trials == 4);
  CHECK(rs.slow_devices[0].median_worse == Approx(0.10).margin(0.02));
  CHECK(rs.slow_devices[0].text().find("npu 2 on node1") != std::string::npos);
  // Without devices (one slot), nothing to say.
  for (auto& t : d.trials) t.devices.clear();
  CHECK(analysis::summarise_run(d).slow_devices.empty());
}

TEST_CASE("summarise_run: a 0 MB peak RSS from an older perfgate is no value", "[analysis]") {
  // Runs stored before the launcher said "peak RSS not measured" hold 0 MB for
  // trials that ended before their first memory sample.
  store::RunData d;
  d.configs = {{1, "short", "{}"}, {2, "silent", "{}"}};
  const double peaks_mb[] = {0, 9.4, 0, 9.6};
  for (int r = 0; r < 4; ++r) {
    d.trials.push_back(trial(r + 1, 1, r, r, model::TrialStatus::Ok,
                             {scalar_metric("peak_rss_mb", peaks_mb[r]), scalar_metric("wall_time_s", 0.04)}));
    d.trials.push_back(trial(r + 11, 2, r, r + 4, model::TrialStatus::Ok,
                             {scalar_metric("peak_rss_mb", 0), scalar_metric("wall_time_s", 0.03)}));
  }
  auto rs = analysis::summarise_run(d);
  REQUIRE(rs.configs.size() == 2);
  const auto* rss = rs.configs[0].find("peak_rss_mb");
  REQUIRE(rss != nullptr);
  CHECK(rss->n == 2);
  CHECK(rss->median == Approx(9.5));
  CHECK(rss->min == 9.4);
  CHECK(rs.configs[1].find("peak_rss_mb") == nullptr);  // never measured: no row at all
  CHECK(rs.configs[1].find("wall_time_s") != nullptr);
}
