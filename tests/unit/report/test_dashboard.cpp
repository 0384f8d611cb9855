#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/model/params.hpp"
#include "harness/report/dashboard.hpp"
#include "harness/report/dashboard_assets.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The object a data file hands to PG.receive, and the key it names.
nlohmann::json data_file(const fs::path& p, const std::string& key) {
  auto text = slurp(p);
  std::string head = "PG.receive(\"" + key + "\", ";
  REQUIRE(text.starts_with(head));
  REQUIRE(text.ends_with(");\n"));
  return nlohmann::json::parse(text.substr(head.size(), text.size() - head.size() - 3));
}

// One finished run of `suite` with one configuration and `values` as trial values of step_time_ms.
long long add_run(store::Store& st, const std::string& suite, const std::string& workload, const model::Params& params,
                  const std::vector<double>& values, double started_at) {
  store::RunRecord r;
  r.suite = suite;
  r.started_at = started_at;
  r.host = "unit";
  r.git_commit = "c0ffee";
  r.fingerprint_json = R"({"cpu": "unit"})";
  r.env_json = R"({"HCCL_BUFFSIZE": "200"})";
  r.argv = "perfgate run unit.yaml";
  auto id = st.begin_run(r);
  REQUIRE(id);
  auto config = st.config_id(workload, model::params_json(params));
  REQUIRE(config);
  auto metric = st.metric_id(model::MetricInfo::inferred("step_time_ms"));
  REQUIRE(metric);
  for (std::size_t i = 0; i < values.size(); ++i) {
    model::TrialRecord t;
    t.run_id = *id;
    t.config_id = *config;
    t.repeat = static_cast<int>(i);
    t.seq = static_cast<int>(i);
    t.started_at = started_at;
    auto tid = st.begin_trial(t);
    REQUIRE(tid);
    t.id = *tid;
    t.status = model::TrialStatus::Ok;
    t.exit_code = 0;
    model::MetricSummary m;
    m.metric = "step_time_ms";
    m.n_total = m.n_steady = 1;
    m.value = m.median = m.mean = m.min = m.max = m.p90 = m.p99 = values[i];
    t.summaries.push_back(m);
    long long mid = *metric;
    REQUIRE(st.finish_trial(t, std::span<const long long>(&mid, 1)));
  }
  REQUIRE(st.finish_run(*id, model::RunStatus::Completed, started_at + 60));
  return *id;
}

}  // namespace

TEST_CASE("anchors and URL components of the dashboard", "[report][dashboard]") {
  CHECK(report::url_component("train bucket_mb=25") == "train%20bucket_mb%3D25");
  CHECK(report::url_component("a/b?c&d#e<f>") == "a%2Fb%3Fc%26d%23e%3Cf%3E");
  CHECK(report::url_component("safe-._~") == "safe-._~");
  CHECK(report::run_anchor(12) == "#/run/12");
  CHECK(report::trend_anchor("nightly", "step_time_ms", "train x=1") ==
        "#/trend/nightly?metric=step_time_ms&config=train%20x%3D1");
  CHECK(report::dashboard_index_url("https://ci/dash/") == "https://ci/dash/index.html");
  CHECK(report::dashboard_index_url("https://ci/dash") == "https://ci/dash/index.html");
  CHECK(report::dashboard_index_url("https://ci/dash/main.html") == "https://ci/dash/main.html");
}

TEST_CASE("the embedded assets are the page, its code and Dygraphs", "[report][dashboard]") {
  std::map<std::string, std::size_t> sizes;
  for (const auto& a : report::dashboard_assets()) sizes[std::string(a.path)] = a.bytes.size();
  for (const char* want : {"index.html", "assets/pg-core.js", "assets/pg-main.js", "assets/dashboard.css",
                           "assets/dygraph.min.js", "assets/dygraph.min.css"}) {
    INFO(want);
    REQUIRE(sizes.count(want));
    CHECK(sizes[want] > 100);
  }
  // index.html loads every embedded script of the app, and nothing else of assets/.
  std::string index;
  for (const auto& a : report::dashboard_assets())
    if (a.path == "index.html") index = std::string(a.bytes);
  std::set<std::string> loaded;
  for (auto at = index.find("src=\"assets/"); at != std::string::npos; at = index.find("src=\"assets/", at + 1)) {
    const auto start = at + 5, end = index.find('"', start);
    loaded.insert(index.substr(start, end - start));
  }
  std::set<std::string> scripts;
  for (const auto& [path, _] : sizes)
    if (path.size() > 3 && path.compare(path.size() - 3, 3, ".js") == 0) scripts.insert(path);
  CHECK(loaded == scripts);
  CHECK(scripts.size() >= 10);
}

TEST_CASE("the dashboard's data files hold runs, trends and escaped-safe strings", "[report][dashboard]") {
  test::TempDir tmp("dash");
  auto st = store::open_sqlite_store((tmp.path() / "perfgate.db").string());
  REQUIRE(st);
  const std::string evil = "<img src=x onerror=alert(1)>\u2028";
  std::vector<long long> ids;
  for (int i = 0; i < 12; ++i) {
    double level = i < 6 ? 10.0 : 12.0;  // a 20 % step from the seventh run on
    ids.push_back(add_run(**st, "nightly", evil, {{"bucket_mb", model::Scalar::infer("25")}},
                          {level, level * 1.01, level * 0.99, level * 1.005, level * 0.995}, 1'000'000.0 + i * 3600));
  }
  report::DashboardOptions opt;
  opt.out_dir = (tmp.path() / "dash").string();
  opt.db_label = "unit.db";
  auto stats = report::write_dashboard(**st, opt);
  REQUIRE(stats);
  CHECK(stats->runs == 12);
  CHECK(stats->suites == 1);
  CHECK(stats->bytes > 0);
  const fs::path out = opt.out_dir;
  CHECK(fs::is_regular_file(out / "index.html"));
  CHECK(fs::is_regular_file(out / "assets" / "dygraph.min.js"));

  auto index = data_file(out / "data" / "index.js", "index");
  CHECK(index["db"] == "unit.db");
  REQUIRE(index["runs"].size() == 12);
  CHECK(index["runs"][0]["id"] == ids.back());  // newest first
  CHECK(index["suites"][0]["name"] == "nightly");
  CHECK(index["suites"][0]["trend"] == "trend-0");

  // Every byte is ASCII: nothing a workload printed can end or re-encode the script.
  auto raw = slurp(out / "data" / ("run-" + std::to_string(ids[0]) + ".js"));
  CHECK(std::all_of(raw.begin(), raw.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }));
  CHECK(raw.find("\\u2028") != std::string::npos);
  auto run = data_file(out / "data" / ("run-" + std::to_string(ids[0]) + ".js"), "run-" + std::to_string(ids[0]));
  CHECK(run["configs"][0]["workload"] == evil);  // the string as it is; the page inserts it as text
  CHECK(run["run"]["fingerprint"]["cpu"] == "unit");
  CHECK(run["run"]["env"]["HCCL_BUFFSIZE"] == "200");
  CHECK(run["primary"] == "step_time_ms");
  CHECK(run["params"] == nlohmann::json::array({"bucket_mb"}));
  CHECK(run["trials"].size() == 5);
  CHECK(run["sweep"].is_null());  // one configuration: nothing to rank

  auto trend = data_file(out / "data" / "trend-0.js", "trend-0");
  REQUIRE(trend["series"].size() >= 1);
  const nlohmann::json* step = nullptr;
  for (const auto& s : trend["series"])
    if (s["metric"] == "step_time_ms") step = &s;
  REQUIRE(step);
  CHECK((*step)["label"] == evil + " bucket_mb=25");
  REQUIRE((*step)["points"].size() == 12);
  CHECK((*step)["points"][0][1] == 10.0);  // oldest first: [t, median, lo, hi, run, commit]
  CHECK((*step)["points"][1][0].get<double>() - (*step)["points"][0][0].get<double>() == 3600.0);  // times unrounded
  CHECK((*step)["points"][0][4] == ids[0]);
  CHECK((*step)["points"][11][1] == 12.0);
  REQUIRE((*step)["changes"].size() == 1);
  CHECK((*step)["changes"][0]["run"] == ids[6]);
  CHECK((*step)["changes"][0]["regression"] == true);
}

TEST_CASE("a sweep run ranks its configurations and tests the best against the runner-up", "[report][dashboard]") {
  test::TempDir tmp("dash");
  auto st = store::open_sqlite_store((tmp.path() / "perfgate.db").string());
  REQUIRE(st);
  // Two configurations in one run: written as two runs' worth of trials into one run id.
  store::RunRecord r;
  r.suite = "sweep";
  r.started_at = 2'000'000;
  r.argv = "perfgate run sweep.yaml";
  auto id = (*st)->begin_run(r);
  REQUIRE(id);
  auto metric = (*st)->metric_id(model::MetricInfo::inferred("step_time_ms"));
  REQUIRE(metric);
  int seq = 0;
  for (auto [bucket, level] : {std::pair{25, 20.0}, std::pair{50, 30.0}, std::pair{100, 31.0}}) {
    auto config =
        (*st)->config_id("train", model::params_json({{"bucket_mb", model::Scalar::infer(std::to_string(bucket))}}));
    REQUIRE(config);
    for (int i = 0; i < 6; ++i) {
      model::TrialRecord t;
      t.run_id = *id;
      t.config_id = *config;
      t.repeat = i;
      t.seq = seq++;
      auto tid = (*st)->begin_trial(t);
      REQUIRE(tid);
      t.id = *tid;
      t.status = model::TrialStatus::Ok;
      model::MetricSummary m;
      m.metric = "step_time_ms";
      m.n_total = m.n_steady = 1;
      m.value = m.median = m.mean = m.min = m.max = m.p90 = m.p99 = level + 0.1 * i;
      t.summaries.push_back(m);
      long long mid = *metric;
      REQUIRE((*st)->finish_trial(t, std::span<const long long>(&mid, 1)));
    }
  }
  REQUIRE((*st)->finish_run(*id, model::RunStatus::Completed, 2'000'100));
  report::DashboardOptions opt;
  opt.out_dir = (tmp.path() / "dash").string();
  REQUIRE(report::write_dashboard(**st, opt));
  auto run =
      data_file(fs::path(opt.out_dir) / "data" / ("run-" + std::to_string(*id) + ".js"), "run-" + std::to_string(*id));
  const auto& sweep = run["sweep"];
  REQUIRE(sweep.is_object());
  CHECK(sweep["metric"] == "step_time_ms");
  CHECK(sweep["better"] == "lower");
  REQUIRE(sweep["ranked"].size() == 3);
  CHECK(sweep["ranked"][0]["label"] == "train bucket_mb=25");
  CHECK(sweep["ranked"][1]["label"] == "train bucket_mb=50");
  CHECK(sweep["best"] == sweep["ranked"][0]["config"]);
  CHECK(sweep["runner_up"] == sweep["ranked"][1]["config"]);
  CHECK(sweep["best_vs_runner_up"]["significant"] == true);
  CHECK(sweep["best_vs_runner_up"]["p"].get<double>() < 0.01);
  CHECK(sweep["best_vs_runner_up"]["advantage_pct"].get<double>() > 30);  // (30 - 20) / 30
}
