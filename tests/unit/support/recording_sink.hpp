#pragma once
// A metrics::ProtocolSink that records every event by metric name, for the
// tests of the protocol parser and the output parsers.

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <utility>
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
  std::map<std::string, double> summaries;                     // the last value of each
  std::vector<std::pair<std::string, double>> summary_events;  // every one, in order
  std::map<std::string, std::string> units;
  std::map<std::string, model::Better> better;
  std::set<std::string> facts;

  void on_new_metric(int id, std::string_view name) override {
    CHECK(id == static_cast<int>(names.size()));  // ids are dense and in order of first sight
    names.emplace_back(name);
  }
  void on_step(long long step, double t_s, const std::vector<std::pair<int, double>>& values) override {
    RecordedStep s{step, t_s, {}};
    for (auto [id, v] : values) {
      auto [it, fresh] = s.values.emplace(name(id), v);
      CHECK(fresh);  // a metric at most once per step
    }
    steps.push_back(std::move(s));
  }
  void on_summary(int id, double value) override {
    summaries[name(id)] = value;
    summary_events.emplace_back(name(id), value);
  }
  void on_meta_unit(int id, std::string_view unit) override { units[name(id)] = std::string(unit); }
  void on_meta_better(int id, model::Better b) override { better[name(id)] = b; }
  void on_meta_fact(int id) override { facts.insert(name(id)); }

  // Every value of one metric over the step records, in order.
  std::vector<double> series(const std::string& metric) const {
    std::vector<double> out;
    for (const auto& s : steps)
      if (auto it = s.values.find(metric); it != s.values.end()) out.push_back(it->second);
    return out;
  }
  // Steps holding `metric`, in order.
  std::vector<RecordedStep> with(const std::string& metric) const {
    std::vector<RecordedStep> out;
    for (const auto& s : steps)
      if (s.values.count(metric)) out.push_back(s);
    return out;
  }
  // The steps of one benchmark: records whose metrics all start with "<bench>.".
  std::vector<RecordedStep> of(const std::string& bench) const {
    std::vector<RecordedStep> out;
    for (const auto& s : steps) {
      bool mine = !s.values.empty();
      for (const auto& [n, v] : s.values) mine = mine && n.starts_with(bench + ".");
      if (mine) out.push_back(s);
    }
    return out;
  }
  std::set<std::string> name_set() const { return {names.begin(), names.end()}; }

 private:
  const std::string& name(int id) const { return names.at(static_cast<std::size_t>(id)); }
};

}  // namespace perfgate::test
