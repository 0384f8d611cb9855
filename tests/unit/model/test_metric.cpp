#include <catch2/catch.hpp>

#include "harness/model/metric.hpp"

using namespace perfgate::model;

TEST_CASE("MetricInfo::inferred: rates are higher-is-better", "[model]") {
  auto t = MetricInfo::inferred("throughput");
  CHECK(t.name == "throughput");
  CHECK(t.better == Better::Higher);
  CHECK(t.unit == "samples/s");
  CHECK(MetricInfo::inferred("fps").better == Better::Higher);
  CHECK(MetricInfo::inferred("qps").better == Better::Higher);
  CHECK(MetricInfo::inferred("tokens_per_s").better == Better::Higher);
  CHECK(MetricInfo::inferred("tokens_per_s").unit == "");
  CHECK(MetricInfo::inferred("samples_per_second").better == Better::Higher);
  CHECK(MetricInfo::inferred("model_tflops").better == Better::Higher);
}

TEST_CASE("MetricInfo::inferred: times and memory are lower-is-better with units", "[model]") {
  auto st = MetricInfo::inferred("step_time_ms");
  CHECK(st.better == Better::Lower);
  CHECK(st.unit == "ms");
  auto wall = MetricInfo::inferred("wall_time_s");
  CHECK(wall.better == Better::Lower);
  CHECK(wall.unit == "s");
  auto rss = MetricInfo::inferred("peak_rss_mb");
  CHECK(rss.better == Better::Lower);
  CHECK(rss.unit == "MB");
  CHECK(MetricInfo::inferred("aicore_pct").unit == "%");
  CHECK(MetricInfo::inferred("latency_p99_ms").better == Better::Lower);
}

TEST_CASE("MetricInfo::inferred: loss has no direction", "[model]") {
  CHECK(MetricInfo::inferred("loss").better == Better::None);
  CHECK(MetricInfo::inferred("val_loss").better == Better::None);
}

TEST_CASE("MetricInfo::inferred: a time per step is still a time", "[model]") {
  // "per_s" is meant as the suffix of a rate (tokens_per_s), not any name
  // containing "per_s": these are durations, lower is better.
  for (const char* name : {"time_per_step_ms", "ms_per_step", "time_per_sample_ms", "latency_per_sequence_ms"}) {
    INFO(name);
    CHECK(MetricInfo::inferred(name).better == Better::Lower);
  }
}

TEST_CASE("Better converts to and from text", "[model]") {
  for (auto b : {Better::Lower, Better::Higher, Better::None}) CHECK(better_from_string(to_string(b)) == b);
  CHECK(to_string(Better::Higher) == "higher");
  CHECK_FALSE(better_from_string("up").has_value());
}
