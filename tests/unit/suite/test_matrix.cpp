#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "harness/suite/matrix.hpp"

using namespace perfgate;
using model::Params;
using model::Scalar;

namespace {

model::Axis scalar_axis(const std::string& name, std::vector<std::string> values) {
  model::Axis a;
  a.name = name;
  for (auto& v : values) a.values.push_back(Params{{name, Scalar::infer(v)}});
  return a;
}

model::Axis dataloader_axis(std::vector<std::pair<int, int>> workers_prefetch) {
  model::Axis a;
  a.name = "dataloader";
  for (auto [w, p] : workers_prefetch)
    a.values.push_back(Params{{"dataloader.num_workers", Scalar::infer(std::to_string(w))},
                              {"dataloader.prefetch", Scalar::infer(std::to_string(p))}});
  return a;
}

model::Workload workload(const std::string& name) {
  model::Workload w;
  w.name = name;
  w.command = {"run"};
  return w;
}

std::string value(const model::Case& c, const std::string& key) { return c.params.at(key).text; }

std::vector<std::string> labels(const std::vector<model::Case>& cases) {
  std::vector<std::string> out;
  for (const auto& c : cases) out.push_back(c.label);
  return out;
}

}  // namespace

TEST_CASE("expand crosses axes in suite order, the last axis fastest", "[suite]") {
  model::Suite s;
  auto w = workload("train");
  w.matrix = {scalar_axis("graph_mode", {"eager", "graph"}), scalar_axis("bucket_mb", {"5", "25", "50"})};
  w.params = {{"precision", Scalar::infer("fp32")}};
  s.workloads = {w};
  auto cases = suite::expand(s);
  REQUIRE(cases.size() == 6);
  const char* expected[6][2] = {{"eager", "5"}, {"eager", "25"}, {"eager", "50"},
                                {"graph", "5"}, {"graph", "25"}, {"graph", "50"}};
  for (std::size_t i = 0; i < 6; ++i) {
    INFO("case " << i);
    CHECK(value(cases[i], "graph_mode") == expected[i][0]);
    CHECK(value(cases[i], "bucket_mb") == expected[i][1]);
    CHECK(value(cases[i], "precision") == "fp32");  // fixed params in every case
    CHECK(cases[i].workload == "train");
    CHECK(cases[i].workload_index == 0);
    CHECK(cases[i].params_json == model::params_json(cases[i].params));
  }
  CHECK(cases[0].label == "train bucket_mb=5 graph_mode=eager precision=fp32");
}

TEST_CASE("expand of several workloads keeps suite order", "[suite]") {
  model::Suite s;
  auto a = workload("a");
  a.matrix = {scalar_axis("x", {"1", "2"})};
  auto b = workload("b");  // no matrix: one case without parameters
  auto c = workload("c");
  c.matrix = {scalar_axis("y", {"p", "q", "r"})};
  s.workloads = {a, b, c};
  auto cases = suite::expand(s);
  REQUIRE(cases.size() == 6);
  CHECK(labels(cases) == std::vector<std::string>{"a x=1", "a x=2", "b", "c y=p", "c y=q", "c y=r"});
  CHECK(cases[2].workload_index == 1);
  CHECK(cases[2].params.empty());
  CHECK(cases[2].params_json == "{}");
  CHECK(cases[5].workload_index == 2);
}

TEST_CASE("exclude drops matching cases, including dotted keys of dict axes", "[suite]") {
  model::Suite s;
  auto w = workload("train");
  w.matrix = {scalar_axis("graph_mode", {"eager", "graph"}), scalar_axis("fusion", {"off", "on"}),
              dataloader_axis({{2, 2}, {4, 2}})};
  SECTION("a partial entry drops every case it matches") {
    w.exclude = {Params{{"graph_mode", Scalar::infer("eager")}, {"fusion", Scalar::infer("on")}}};
    s.workloads = {w};
    auto cases = suite::expand(s);
    CHECK(cases.size() == 8 - 2);
    for (const auto& c : cases) CHECK_FALSE((value(c, "graph_mode") == "eager" && value(c, "fusion") == "on"));
  }
  SECTION("a dotted key") {
    w.exclude = {Params{{"dataloader.num_workers", Scalar::infer("4")}, {"graph_mode", Scalar::infer("graph")}}};
    s.workloads = {w};
    auto cases = suite::expand(s);
    CHECK(cases.size() == 8 - 2);
    for (const auto& c : cases)
      CHECK_FALSE((value(c, "dataloader.num_workers") == "4" && value(c, "graph_mode") == "graph"));
  }
  SECTION("several entries each drop their matches") {
    w.exclude = {Params{{"fusion", Scalar::infer("on")}}, Params{{"dataloader.num_workers", Scalar::infer("2")}}};
    s.workloads = {w};
    auto cases = suite::expand(s);
    REQUIRE(cases.size() == 2);
    for (const auto& c : cases) {
      CHECK(value(c, "fusion") == "off");
      CHECK(value(c, "dataloader.num_workers") == "4");
    }
  }
  SECTION("an entry that matches nothing drops nothing") {
    w.exclude = {Params{{"graph_mode", Scalar::infer("jit")}}};
    s.workloads = {w};
    CHECK(suite::expand(s).size() == 8);
  }
}

TEST_CASE("include adds configurations and duplicates are removed", "[suite]") {
  model::Suite s;
  auto w = workload("train");
  w.params = {{"precision", Scalar::infer("fp32")}};
  w.matrix = {scalar_axis("graph_mode", {"eager", "graph"}), scalar_axis("bucket_mb", {"25"})};
  SECTION("a new configuration is added after the matrix") {
    w.include = {Params{{"graph_mode", Scalar::infer("graph")}, {"bucket_mb", Scalar::infer("100")}}};
    s.workloads = {w};
    auto cases = suite::expand(s);
    REQUIRE(cases.size() == 3);
    CHECK(value(cases[2], "bucket_mb") == "100");
    CHECK(value(cases[2], "graph_mode") == "graph");
    CHECK(value(cases[2], "precision") == "fp32");  // fixed params apply to includes too
  }
  SECTION("an include equal to a matrix case is not repeated") {
    w.include = {Params{{"graph_mode", Scalar::infer("eager")}, {"bucket_mb", Scalar::infer("25")}}};
    s.workloads = {w};
    CHECK(suite::expand(s).size() == 2);
  }
  SECTION("an include overrides a fixed parameter") {
    w.include = {Params{{"graph_mode", Scalar::infer("eager")},
                        {"bucket_mb", Scalar::infer("25")},
                        {"precision", Scalar::infer("bf16")}}};
    s.workloads = {w};
    auto cases = suite::expand(s);
    REQUIRE(cases.size() == 3);
    CHECK(value(cases[2], "precision") == "bf16");
  }
  SECTION("an axis listing a value twice gives it once") {
    w.matrix.push_back(scalar_axis("fusion", {"on", "on"}));
    s.workloads = {w};
    CHECK(suite::expand(s).size() == 2);
  }
  SECTION("an included case that exclude would drop is still run") {
    w.exclude = {Params{{"graph_mode", Scalar::infer("graph")}}};
    w.include = {Params{{"graph_mode", Scalar::infer("graph")}, {"bucket_mb", Scalar::infer("25")}}};
    s.workloads = {w};
    auto cases = suite::expand(s);
    REQUIRE(cases.size() == 2);
    CHECK(value(cases[1], "graph_mode") == "graph");
  }
}

TEST_CASE("parse_filter splits KEY=V1,V2", "[suite]") {
  auto f = suite::parse_filter("graph_mode=eager, graph");
  REQUIRE(f.has_value());
  CHECK(f->key == "graph_mode");
  CHECK(f->values == std::vector<std::string>{"eager", "graph"});
  auto d = suite::parse_filter("dataloader.num_workers=4");
  REQUIRE(d.has_value());
  CHECK(d->key == "dataloader.num_workers");
  CHECK_FALSE(suite::parse_filter("graph_mode").has_value());
  CHECK_FALSE(suite::parse_filter("=eager").has_value());
}

TEST_CASE("filter_cases: AND across filters, OR within values", "[suite]") {
  model::Suite s;
  auto a = workload("train");
  a.matrix = {scalar_axis("graph_mode", {"eager", "graph"}), scalar_axis("bucket_mb", {"5", "25", "50"}),
              dataloader_axis({{2, 2}, {4, 2}})};
  auto b = workload("infer");
  b.matrix = {scalar_axis("graph_mode", {"eager", "graph"})};
  s.workloads = {a, b};
  auto all = suite::expand(s);
  REQUIRE(all.size() == 12 + 2);

  auto filters = [](std::vector<std::string> texts) {
    std::vector<suite::CaseFilter> out;
    for (const auto& t : texts) {
      auto f = suite::parse_filter(t);
      REQUIRE(f.has_value());
      out.push_back(*f);
    }
    return out;
  };

  SECTION("no filters keep everything") {
    auto r = suite::filter_cases(all, {});
    REQUIRE(r.has_value());
    CHECK(r->size() == all.size());
  }
  SECTION("one key, several values") {
    auto r = suite::filter_cases(all, filters({"bucket_mb=5,50"}));
    REQUIRE(r.has_value());
    CHECK(r->size() == 8);  // cases without the key (infer) are dropped
    for (const auto& c : *r) CHECK((value(c, "bucket_mb") == "5" || value(c, "bucket_mb") == "50"));
  }
  SECTION("two keys") {
    auto r = suite::filter_cases(all, filters({"graph_mode=graph", "dataloader.num_workers=4"}));
    REQUIRE(r.has_value());
    CHECK(r->size() == 3);
    for (const auto& c : *r) {
      CHECK(value(c, "graph_mode") == "graph");
      CHECK(value(c, "dataloader.num_workers") == "4");
    }
  }
  SECTION("by workload") {
    auto r = suite::filter_cases(all, filters({"workload=infer", "graph_mode=eager"}));
    REQUIRE(r.has_value());
    REQUIRE(r->size() == 1);
    CHECK((*r)[0].label == "infer graph_mode=eager");
  }
  SECTION("order is kept") {
    auto r = suite::filter_cases(all, filters({"workload=train,infer", "graph_mode=graph"}));
    REQUIRE(r.has_value());
    REQUIRE(r->size() == 7);
    CHECK((*r).back().workload == "infer");
    CHECK((*r).front().workload == "train");
  }
  SECTION("an unknown key is an error with a suggestion") {
    auto r = suite::filter_cases(all, filters({"bukcet_mb=5"}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == perfgate::ErrorKind::Input);
    CHECK_THAT(r.error().message, Catch::Contains("bukcet_mb") && Catch::Contains("did you mean 'bucket_mb'"));
  }
  SECTION("a value nothing has leaves no case, without error") {
    auto r = suite::filter_cases(all, filters({"graph_mode=jit"}));
    REQUIRE(r.has_value());
    CHECK(r->empty());
  }
}
