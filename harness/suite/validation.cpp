#include "harness/suite/validation.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "harness/suite/loader.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/placeholders.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::suite {
using model::SourceLoc;
using yaml::Ctx;
using yaml::err_at;

namespace {

// Most configurations one workload's matrix may expand to. A sweep is read
// trial by trial, at least three a configuration: 10,000 configurations at
// one second a trial are more than eight hours, a mistake more often than a
// plan (the shipped sweeps have 2 to 8). Three axes of 1,000 values (10^9)
// exhausted memory before the first trial.
constexpr double k_max_configurations = 10000;

}  // namespace

std::vector<std::string> known_params(const model::Workload& w) {
  std::set<std::string> names;
  for (const auto& a : w.matrix)
    for (const auto& v : a.values)
      for (const auto& [k, _] : v) names.insert(k);
  for (const auto& [k, _] : w.params) names.insert(k);
  for (const auto& inc : w.include)
    for (const auto& [k, _] : inc) names.insert(k);
  return {names.begin(), names.end()};
}

std::vector<std::string> placeholder_names(const model::Workload& w) {
  std::vector<std::string> out;
  auto collect = [&](const std::string& text) {
    auto refs = find_placeholders(text);
    if (refs)
      for (auto& r : *refs) out.push_back(r.name);
  };
  for (const auto& a : w.command) collect(a);
  for (const auto& [_, v] : w.env) collect(v);
  return out;
}

Status validate_placeholders(const Ctx& c, const model::Workload& w) {
  auto known = known_params(w);
  for (const auto& b : builtin_placeholders()) known.push_back(b);
  auto check_text = [&](const std::string& text, const SourceLoc& loc, const std::string& where) -> Status {
    auto refs = find_placeholders(text);
    if (!refs) return err_at(loc, fmt::format("{}: {}", where, refs.error().message));
    for (const auto& r : *refs) {
      if (std::find(known.begin(), known.end(), r.name) != known.end()) continue;
      return err_at(loc, fmt::format("{}: unknown placeholder '{{{}}}'{}; known: {}", where, r.name,
                                     util::did_you_mean(r.name, known), util::join(known, ", ")));
    }
    return Ok{};
  };
  for (std::size_t i = 0; i < w.command.size(); ++i)
    if (auto st = check_text(w.command[i], w.command_locs[i], fmt::format("workload '{}' command", w.name)); !st)
      return st;
  for (const auto& [k, v] : w.env) {
    auto loc = w.env_locs.count(k) ? w.env_locs.at(k) : w.loc;
    if (auto st = check_text(v, loc, fmt::format("workload '{}' env.{}", w.name, k)); !st) return st;
  }
  if (auto st = check_text(w.metrics.file, w.metrics.loc, fmt::format("workload '{}' metrics.file", w.name)); !st)
    return st;
  if (auto st =
          check_text(w.metrics.batch_size, w.metrics.loc, fmt::format("workload '{}' metrics.batch_size", w.name));
      !st)
    return st;
  (void)c;
  return Ok{};
}

Status validate_metrics(const model::Workload& w) {
  const auto& m = w.metrics;
  const auto who = fmt::format("workload '{}': metrics", w.name);
  if (m.parser == "regex" && m.patterns.empty())
    return err_at(m.loc, fmt::format("{}: parser regex needs 'patterns' (a list of regexes with named groups)", who));
  if (m.parser != "regex" && !m.patterns.empty())
    return err_at(m.loc, fmt::format("{}: 'patterns' is for parser regex, not {}", who, m.parser));
  if (m.parser != "mindspore" && !m.batch_size.empty())
    return err_at(m.loc, fmt::format("{}: 'batch_size' is for parser mindspore (Megatron logs carry theirs), not {}",
                                     who, m.parser));
  if (m.parser == "jsonl" && !m.file.empty())
    return err_at(m.loc, fmt::format("{}: 'file' is for log parsers; jsonl workloads write to $PERFGATE_METRICS", who));
  return Ok{};
}

Status validate_filters(const model::Workload& w) {
  auto known = known_params(w);
  for (std::size_t i = 0; i < w.exclude.size(); ++i)
    for (const auto& [k, _] : w.exclude[i]) {
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      const auto& locs = w.exclude_locs.at(i);
      auto it = locs.find(k.substr(0, k.find('.')));
      return err_at(it != locs.end() ? it->second : w.loc,
                    fmt::format("workload '{}': exclude names unknown parameter '{}'{}", w.name, k,
                                util::did_you_mean(k, known)));
    }
  return Ok{};
}

Status validate_cases(const model::Suite& suite) {
  const auto& builtins = builtin_placeholders();
  // Each workload's placeholders, found once: every configuration of its
  // matrix has the same texts and differs only in which parameters it has.
  struct Ref {
    std::string name;
    SourceLoc loc;
  };
  std::vector<std::vector<Ref>> refs_of(suite.workloads.size());
  for (std::size_t wi = 0; wi < suite.workloads.size(); ++wi) {
    const auto& w = suite.workloads[wi];
    auto collect = [&](const std::string& text, const SourceLoc& loc) {
      auto refs = find_placeholders(text);
      if (!refs) return;  // reported by validate_placeholders
      for (const auto& r : *refs)
        if (std::find(builtins.begin(), builtins.end(), r.name) == builtins.end()) refs_of[wi].push_back({r.name, loc});
    };
    for (std::size_t i = 0; i < w.command.size(); ++i) collect(w.command[i], w.command_locs[i]);
    for (const auto& [k, v] : w.env) collect(v, w.env_locs.count(k) ? w.env_locs.at(k) : w.loc);
    collect(w.metrics.file, w.metrics.loc);
    collect(w.metrics.batch_size, w.metrics.loc);
  }
  // Which parameters each configuration has is all this needs: not the
  // cases themselves (their identities and labels were most of the load
  // time of a large matrix).
  Status found = Ok{};
  for_each_params(suite, [&](std::size_t wi, const model::Params& params) {
    const auto& w = suite.workloads[wi];
    for (const auto& r : refs_of[wi]) {
      if (params.count(r.name)) continue;
      const auto label = params.empty() ? w.name : w.name + " " + model::params_label(params);
      found = err_at(r.loc, fmt::format("workload '{}': placeholder '{{{}}}' has no value in configuration '{}'; "
                                        "give it one in params or a matrix axis, not only in some include entries",
                                        w.name, r.name, label));
      return false;
    }
    return true;
  });
  return found;
}

Status validate_matrix_size(const model::Workload& w) {
  if (w.matrix.empty()) return Ok{};
  double n = 1;
  std::vector<std::string> sizes;
  for (const auto& a : w.matrix) {
    n *= static_cast<double>(a.values.size());
    sizes.push_back(fmt::format("{} {}", a.name, a.values.size()));
  }
  n += static_cast<double>(w.include.size());
  if (n <= k_max_configurations) return Ok{};
  return err_at(w.matrix.front().loc,
                fmt::format("workload '{}': its matrix has {:.0f} configurations ({}), more than the {:.0f} one "
                            "workload may expand to; give fewer values, or run parts with --only",
                            w.name, n, util::join(sizes, " x "), k_max_configurations));
}

}  // namespace perfgate::suite
