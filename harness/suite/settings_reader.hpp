#pragma once
// The settings layers of suites and profiles read from YAML (internal to
// suite/): repeats, warm-up, timeouts, env, metrics, samplers, slots, and
// parameter maps and matrices. Every error names file:line:column.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "harness/model/suite.hpp"
#include "harness/suite/yaml_helpers.hpp"
#include "harness/util/error.hpp"

namespace perfgate::suite {

// The keys a `defaults` mapping (suite or profile) may hold.
extern const std::vector<std::string> k_setting_keys;

// One layer of settings; unset fields fall through to the layer below.
struct Settings {
  std::optional<int> repeats;
  std::optional<model::Warmup> warmup;
  std::optional<double> timeout_s;
  std::optional<double> kill_grace_s;
  std::optional<std::uint64_t> log_limit_bytes;
  std::optional<std::string> cwd;
  std::optional<std::string> parser;
  std::optional<std::string> primary;
  std::optional<std::string> metrics_file;
  std::optional<std::string> batch_size;
  std::optional<std::vector<model::LogPattern>> patterns;
  model::SourceLoc metrics_loc;
  std::map<std::string, std::string> env;
  std::map<std::string, model::SourceLoc> env_locs;
  std::optional<std::vector<model::SamplerSpec>> samplers;  // a higher layer's list replaces a lower one's
  std::optional<double> sample_interval_s;
  std::optional<bool> host_probe;
  // The node's slots: a top-level key of a profile or suite, not a default.
  std::optional<model::SlotsSpec> slots;

  void apply_onto(Settings& below) const {
    if (slots) below.slots = slots;
    if (host_probe) below.host_probe = host_probe;
    if (samplers) below.samplers = samplers;
    if (sample_interval_s) below.sample_interval_s = sample_interval_s;
    if (repeats) below.repeats = repeats;
    if (warmup) below.warmup = warmup;
    if (timeout_s) below.timeout_s = timeout_s;
    if (kill_grace_s) below.kill_grace_s = kill_grace_s;
    if (log_limit_bytes) below.log_limit_bytes = log_limit_bytes;
    if (cwd) below.cwd = cwd;
    if (parser) below.parser = parser;
    if (primary) below.primary = primary;
    if (metrics_file) below.metrics_file = metrics_file;
    if (batch_size) below.batch_size = batch_size;
    if (patterns) below.patterns = patterns;
    if (parser || primary || metrics_file || batch_size || patterns) below.metrics_loc = metrics_loc;
    for (const auto& [k, v] : env) below.env[k] = v;
    for (const auto& [k, v] : env_locs) below.env_locs[k] = v;
  }
};

// A mapping of parameters, nested maps flattened to dotted names ("dataloader.num_workers").
Expected<model::Params> read_param_map(const yaml::Ctx& c, const YAML::Node& n, const std::string& what);
// "5", "5 steps", "30s", "auto".
Expected<model::Warmup> parse_warmup_text(const std::string& text);
// One layer's keys (a `defaults` mapping or a workload) into `s`.
Status read_settings(const yaml::Ctx& c, const YAML::Node& n, Settings& s);
Expected<std::vector<model::Axis>> read_matrix(const yaml::Ctx& c, const YAML::Node& n);
Expected<model::SlotsSpec> read_slots(const yaml::Ctx& c, const YAML::Node& n);

}  // namespace perfgate::suite
