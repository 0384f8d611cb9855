#include <catch2/catch.hpp>

#include <unistd.h>

#include "harness/analysis/baseline.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;

namespace {

long long add_run(store::Store& st, const std::string& suite, std::vector<std::string> tags, const std::string& commit,
                  const std::string& cpu) {
  store::RunRecord r;
  r.suite = suite;
  r.started_at = 1700000000;
  r.status = model::RunStatus::Running;
  r.host = "h";
  r.pid = ::getpid();
  r.fingerprint_hash = "fp-" + cpu;
  r.fingerprint_json = "{\"cpu_model\":\"" + cpu + "\",\"hostname\":\"n" + cpu + "\",\"cpu_cores\":2}";
  r.git_commit = commit;
  r.tags = std::move(tags);
  auto id = st.begin_run(r);
  REQUIRE(id.has_value());
  REQUIRE(st.finish_run(*id, model::RunStatus::Completed, 1700000100).has_value());
  return *id;
}

std::vector<long long> ids(const analysis::Baseline& b) {
  std::vector<long long> out;
  for (const auto& r : b.runs) out.push_back(r.run.id);
  return out;
}

}  // namespace

TEST_CASE("baseline selectors parse, and bad ones say why", "[baseline]") {
  auto s = analysis::parse_baseline_selector("tag:nightly,last:7");
  REQUIRE(s.has_value());
  CHECK(s->tag == "nightly");
  CHECK(s->last == 7);
  CHECK(analysis::parse_baseline_selector("42")->run == "42");
  CHECK(analysis::parse_baseline_selector("latest:nightly")->run == "latest:nightly");
  CHECK(analysis::parse_baseline_selector("commit:abc123")->commit == "abc123");
  CHECK_THAT(analysis::parse_baseline_selector("tag:x,lats:3").error().message, Catch::Contains("did you mean 'last'"));
  CHECK_THAT(analysis::parse_baseline_selector("tag:x,last:0").error().message, Catch::Contains("positive integer"));
  CHECK_THAT(analysis::parse_baseline_selector("last:3").error().message, Catch::Contains("tag:T or commit:SHA"));
  CHECK_THAT(analysis::parse_baseline_selector("tag:").error().message, Catch::Contains("no value"));
  CHECK_FALSE(analysis::parse_baseline_selector("").has_value());
}

TEST_CASE("tag:T,last:N pools earlier runs of the candidate's suite and machine", "[baseline]") {
  test::TempDir dir("baseline");
  auto opened = store::open_sqlite_store((dir / "p.db").string());
  REQUIRE(opened.has_value());
  auto& st = *opened;
  long long r1 = add_run(*st, "s", {"nightly"}, "c1", "A");
  long long r2 = add_run(*st, "s", {"nightly"}, "c2", "B");  // another machine
  long long r3 = add_run(*st, "s", {"nightly"}, "c3", "A");
  long long r4 = add_run(*st, "t", {"nightly"}, "c4", "A");  // another suite
  long long r5 = add_run(*st, "s", {"nightly"}, "c5", "A");
  long long cand_id = add_run(*st, "s", {"nightly"}, "c6", "A");
  long long later = add_run(*st, "s", {"nightly"}, "c7", "A");
  (void)r4;
  (void)later;
  auto cand = st->load_run(cand_id)->run;

  auto b = analysis::select_baseline(*st, cand, "tag:nightly,last:3", false);
  REQUIRE(b.has_value());
  CHECK(ids(*b) == std::vector<long long>{r5, r3, r1});
  REQUIRE(b->warnings.size() == 1);
  CHECK_THAT(b->warnings[0], Catch::Contains("another machine") && Catch::Contains("cpu_model: B -> A"));
  CHECK_THAT(b->warnings[0], !Catch::Contains("hostname"));  // context, not a comparable field

  auto forced = analysis::select_baseline(*st, cand, "tag:nightly,last:3", true);
  REQUIRE(forced.has_value());
  CHECK(ids(*forced) == std::vector<long long>{r5, r3, r2});
  CHECK(forced->forced);

  // An explicit run of another machine is refused, naming the field.
  auto refused = analysis::select_baseline(*st, cand, std::to_string(r2), false);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.error().message, Catch::Contains("cpu_model: B -> A") && Catch::Contains("--force"));
  CHECK(analysis::select_baseline(*st, cand, std::to_string(r2), true).has_value());

  auto self = analysis::select_baseline(*st, cand, std::to_string(cand_id), false);
  REQUIRE_FALSE(self.has_value());
  CHECK_THAT(self.error().message, Catch::Contains("candidate run itself"));

  auto none = analysis::select_baseline(*st, cand, "tag:weekly", false);
  REQUIRE_FALSE(none.has_value());
  CHECK_THAT(none.error().message, Catch::Contains("matches no completed run"));

  auto by_commit = analysis::select_baseline(*st, cand, "commit:c3", false);
  REQUIRE(by_commit.has_value());
  CHECK(ids(*by_commit) == std::vector<long long>{r3});

  auto unknown = analysis::select_baseline(*st, cand, "9999", false);
  REQUIRE_FALSE(unknown.has_value());
  CHECK_THAT(unknown.error().message, Catch::Contains("no run 9999"));
}

TEST_CASE("a selector matching only other machines explains itself", "[baseline]") {
  test::TempDir dir("baseline");
  auto opened = store::open_sqlite_store((dir / "p.db").string());
  REQUIRE(opened.has_value());
  auto& st = *opened;
  add_run(*st, "s", {"nightly"}, "c1", "B");
  long long cand_id = add_run(*st, "s", {"nightly"}, "c2", "A");
  auto cand = st->load_run(cand_id)->run;
  auto b = analysis::select_baseline(*st, cand, "tag:nightly", false);
  REQUIRE_FALSE(b.has_value());
  CHECK_THAT(b.error().message, Catch::Contains("none on the candidate's machine") && Catch::Contains("cpu_model"));
}
