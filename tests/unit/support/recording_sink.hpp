#pragma once
// A metrics::ProtocolSink that records every event by metric name, for the
// tests of the protocol parser and the output parsers.

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "harness/metrics/registry.hpp"

namespace perfgate::test {

struct RecordedStep {
  long long step;
  double t_s;
  std::map<std::string, double> values;
};

class RecordingSink final : public metrics::ProtocolSink {
 public:
  std::vector<std::string> names;  // by id
  std::vector<RecordedStep> steps;
  std::map<std::string, double> summaries;
  std::map<std::string, std::string> units;
  std::map<std::string, model::Better> better;

  void on_new_metric(int id, std::string_view name) override {
    CHECK(id == static_cast<int>(names.size()));  // ids are dense and in order of first sight
    names.emplace_back(name);
  }
  void on_step(long long step, double t_s, const std::vector<std::pair<int, double>>& values) override {
    RecordedStep s{step, t_s, {}};
    for (auto [id, v] : values) s.values[names.at(static_cast<std::size_t>(id))] = v;
    steps.push_back(std::move(s));
  }
  void on_summary(int id, double value) override { summaries[names.at(static_cast<std::size_t>(id))] = value; }
  void on_meta_unit(int id, std::string_view unit) override { units[names.at(static_cast<std::size_t>(id))] = std::string(unit); }
  void on_meta_better(int id, model::Better b) override { better[names.at(static_cast<std::size_t>(id))] = b; }

  // Every value of one metric over the step records, in order.
  std::vector<double> series(const std::string& name) const {
    std::vector<double> out;
    for (const auto& s : steps)
      if (auto it = s.values.find(name); it != s.values.end()) out.push_back(it->second);
    return out;
  }
};

}  // namespace perfgate::test
