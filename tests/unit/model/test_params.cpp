#include <catch2/catch.hpp>

#include <string>

#include "harness/model/params.hpp"

using namespace perfgate::model;

namespace {

Params sample_params() {
  return Params{
      {"graph_mode", Scalar::infer("eager")},           {"bucket_mb", Scalar::infer("25")},
      {"dataloader.num_workers", Scalar::infer("2")},   {"dataloader.prefetch", Scalar::infer("4")},
      {"dataloader.pin_memory", Scalar::infer("true")}, {"lr", Scalar::infer("0.5")},
      {"tag", Scalar{Scalar::Kind::String, "25"}},  // a quoted "25" in YAML
  };
}

}  // namespace

TEST_CASE("Scalar::infer types plain text", "[model]") {
  CHECK(Scalar::infer("25").kind == Scalar::Kind::Int);
  CHECK(Scalar::infer("-3").kind == Scalar::Kind::Int);
  CHECK(Scalar::infer("0.5").kind == Scalar::Kind::Float);
  CHECK(Scalar::infer("1e3").kind == Scalar::Kind::Float);
  CHECK(Scalar::infer("true").kind == Scalar::Kind::Bool);
  CHECK(Scalar::infer("false").kind == Scalar::Kind::Bool);
  CHECK(Scalar::infer("eager").kind == Scalar::Kind::String);
  CHECK(Scalar::infer("25mb").kind == Scalar::Kind::String);
  CHECK(Scalar::infer("").kind == Scalar::Kind::String);
  CHECK(Scalar::infer("fp32").text == "fp32");
}

TEST_CASE("params_json is canonical: sorted, nested by dotted key, typed", "[model]") {
  CHECK(params_json(sample_params()) ==
        R"({"bucket_mb":25,"dataloader":{"num_workers":2,"pin_memory":true,"prefetch":4},)"
        R"("graph_mode":"eager","lr":0.5,"tag":"25"})");
  CHECK(params_json(Params{}) == "{}");
  // Insertion order does not matter.
  Params a{{"b", Scalar::infer("1")}, {"a", Scalar::infer("x")}};
  Params b;
  b["a"] = Scalar::infer("x");
  b["b"] = Scalar::infer("1");
  CHECK(params_json(a) == params_json(b));
  // Int 25 and string "25" are different configurations.
  CHECK(params_json(Params{{"x", Scalar::infer("25")}}) !=
        params_json(Params{{"x", Scalar{Scalar::Kind::String, "25"}}}));
  // Characters JSON must escape survive.
  CHECK(params_json(Params{{"s", Scalar{Scalar::Kind::String, "a\"b"}}}) == R"({"s":"a\"b"})");
  // Keys with a pointer's special characters but no dot are plain members.
  CHECK(params_json(Params{{"a/b~c", Scalar::infer("1")}, {"x.y", Scalar::infer("2")}}) ==
        R"({"a/b~c":1,"x":{"y":2}})");
}

TEST_CASE("params_from_json inverts params_json", "[model]") {
  auto p = sample_params();
  auto back = params_from_json(params_json(p));
  REQUIRE(back.size() == p.size());
  for (const auto& [k, v] : p) {
    INFO("key " << k);
    REQUIRE(back.count(k) == 1);
    CHECK(back.at(k).text == v.text);
    CHECK(back.at(k).kind == v.kind);
  }
  CHECK(params_json(back) == params_json(p));
  CHECK(params_from_json("{}").empty());
  CHECK(params_from_json("not json").empty());
  CHECK(params_from_json("[1,2]").empty());
}

TEST_CASE("distinct parameter values give distinct canonical JSON", "[model]") {
  // params_json identifies a configuration in the store, so two different
  // values must never share one. Texts that from_chars reads as non-finite
  // doubles ("nan", "inf") must not collapse to JSON null.
  for (const char* text : {"nan", "inf", "-inf", "infinity"}) {
    INFO("value '" << text << "' -> " << params_json(Params{{"x", Scalar::infer(text)}}));
    auto json = params_json(Params{{"x", Scalar::infer(text)}});
    CHECK(json.find("null") == std::string::npos);
    CHECK(params_from_json(json).at("x").text == text);
  }
  CHECK(params_json(Params{{"x", Scalar::infer("nan")}}) != params_json(Params{{"x", Scalar::infer("inf")}}));
}

TEST_CASE("params_label is the short sorted form", "[model]") {
  CHECK(params_label(sample_params()) ==
        "bucket_mb=25 dataloader.num_workers=2 dataloader.pin_memory=true dataloader.prefetch=4 graph_mode=eager "
        "lr=0.5 tag=25");
  CHECK(params_label(Params{}).empty());
}
