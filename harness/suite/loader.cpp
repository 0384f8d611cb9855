#include "harness/suite/loader.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "harness/runner/slots.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/placeholders.hpp"
#include "harness/suite/yaml_helpers.hpp"
#include "harness/util/install_paths.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/units.hpp"
#include "harness/util/user_regex.hpp"

namespace perfgate::suite {
namespace fs = std::filesystem;
using model::Params;
using model::Scalar;
using model::SourceLoc;

namespace {
using yaml::check_map;
using yaml::Ctx;
using yaml::err_at;
using yaml::get_bool;
using yaml::get_duration;
using yaml::get_int;
using yaml::get_string;
using yaml::loc_of;
using yaml::parse_yaml;
using yaml::read_file;
using yaml::type_name;

const std::vector<std::string> k_suite_keys = {"suite", "description", "profile",  "seed",
                                               "order", "slots",       "defaults", "workloads"};
const std::vector<std::string> k_setting_keys = {"repeats",   "warmup",    "timeout", "kill_grace", "env",
                                                 "cwd",       "log_limit", "metrics", "samplers",   "sample_interval",
                                                 "host_probe"};
const std::vector<std::string> k_workload_keys = {
    "name",    "description", "command",    "shell",           "env",       "cwd",    "repeats",
    "warmup",  "timeout",     "kill_grace", "log_limit",       "metrics",   "matrix", "params",
    "include", "exclude",     "samplers",   "sample_interval", "host_probe"};
const std::vector<std::string> k_profile_keys = {"profile", "description", "slots", "defaults"};
const std::vector<std::string> k_slots_keys = {"kind", "devices", "cpus", "per_trial", "env"};
const std::vector<std::string> k_metrics_keys = {"parser", "primary", "file", "batch_size", "patterns"};
const std::vector<std::string> k_pattern_keys = {"regex", "record", "units", "better"};
const std::vector<std::string> k_warmup_keys = {"steps", "seconds"};
const std::vector<std::string> k_sampler_kinds = {"proc", "npu-smi", "nvidia-smi", "command", "host"};
const std::vector<std::string> k_command_sampler_keys = {"kind", "name", "command", "regex", "metrics"};
const std::vector<std::string> k_parsers = {"jsonl",     "megatron", "mindspore", "modelzoo",
                                            "ais_bench", "gbench",   "regex"};
// `--set` keys that change settings rather than parameters.
const std::vector<std::string> k_override_settings = {"repeats", "warmup", "timeout", "kill_grace", "log_limit"};

// A plain YAML scalar as a typed parameter value; quoted scalars stay strings.
Scalar scalar_of(const YAML::Node& n) {
  if (n.Tag() == "!") return Scalar{Scalar::Kind::String, n.Scalar()};
  return Scalar::infer(n.Scalar());
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
}

// Flattens a scalar or (nested) mapping value under `prefix` into dotted keys.
Status flatten_value(const Ctx& c, const YAML::Node& n, const std::string& prefix, Params& out) {
  if (n.IsScalar()) {
    out[prefix] = scalar_of(n);
    return Ok{};
  }
  if (n.IsMap()) {
    if (n.size() == 0) return err_at(c, n, fmt::format("'{}' is an empty mapping", prefix));
    if (auto st = check_map(c, n, fmt::format("'{}'", prefix), {}); !st) return st;
    for (auto it = n.begin(); it != n.end(); ++it) {
      auto key = it->first.Scalar();
      if (!is_identifier(key))
        return err_at(c, it->first, fmt::format("'{}' is not a valid parameter name (letters, digits, _)", key));
      if (auto st = flatten_value(c, it->second, prefix + "." + key, out); !st) return st;
    }
    return Ok{};
  }
  return err_at(c, n,
                fmt::format("value of '{}' must be a scalar or a mapping of scalars, found {}", prefix, type_name(n)));
}

// A mapping of parameter names to values (params:, include/exclude entries).
Expected<Params> read_param_map(const Ctx& c, const YAML::Node& n, const std::string& what) {
  if (auto st = check_map(c, n, what, {}); !st) return st.error();
  Params p;
  for (auto it = n.begin(); it != n.end(); ++it) {
    auto key = it->first.Scalar();
    if (!is_identifier(key))
      return err_at(c, it->first, fmt::format("'{}' is not a valid parameter name (letters, digits, _)", key));
    if (auto st = flatten_value(c, it->second, key, p); !st) return st.error();
  }
  return p;
}

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
  SourceLoc metrics_loc;
  std::map<std::string, std::string> env;
  std::map<std::string, SourceLoc> env_locs;
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

Expected<model::Warmup> parse_warmup_text(const std::string& text) {
  using model::Warmup;
  if (text == "none" || text == "0") return Warmup{};
  if (text == "auto") return Warmup{Warmup::Kind::Auto, 0};
  auto s = Scalar::infer(text);
  if (s.kind == Scalar::Kind::Int) {
    long long v = std::stoll(text);
    if (v < 0) return Error::input("warm-up steps must not be negative");
    return Warmup{Warmup::Kind::Steps, static_cast<double>(v)};
  }
  auto d = util::parse_duration_s(text);
  if (!d) return Error::input(fmt::format("warm-up '{}' is neither a step count nor a duration", text));
  return Warmup{Warmup::Kind::Seconds, *d};
}

Expected<model::Warmup> read_warmup(const Ctx& c, const YAML::Node& n) {
  using model::Warmup;
  if (n.IsScalar()) {
    auto w = parse_warmup_text(n.Scalar());
    if (!w) return err_at(c, n, w.error().message);
    return w;
  }
  if (auto st = check_map(c, n, "warmup", k_warmup_keys); !st) return st.error();
  if (n.size() != 1) return err_at(c, n, "warmup takes exactly one of steps or seconds");
  if (n["steps"]) {
    auto v = get_int(c, n["steps"], "warmup.steps", 0);
    if (!v) return v.error();
    return Warmup{Warmup::Kind::Steps, static_cast<double>(*v)};
  }
  auto d = n["seconds"].IsScalar() ? util::parse_duration_s(n["seconds"].Scalar())
                                   : Expected<double>(Error::input("not a duration"));
  if (!d) return err_at(c, n["seconds"], fmt::format("warmup.seconds must be a duration such as 30 or 30s"));
  return Warmup{Warmup::Kind::Seconds, *d};
}

Status read_env(const Ctx& c, const YAML::Node& n, std::map<std::string, std::string>& env,
                std::map<std::string, SourceLoc>& locs) {
  if (auto st = check_map(c, n, "env", {}); !st) return st;
  for (auto it = n.begin(); it != n.end(); ++it) {
    auto key = it->first.Scalar();
    if (key.empty() || key.find('=') != std::string::npos)
      return err_at(c, it->first, fmt::format("'{}' is not a valid environment variable name", key));
    if (!it->second.IsScalar())
      return err_at(c, it->second, fmt::format("env.{} must be a string, found {}", key, type_name(it->second)));
    env[key] = it->second.Scalar();
    locs[key] = loc_of(c, it->second);
  }
  return Ok{};
}

// Reads the setting keys present in `n` (a defaults block or a workload).
Expected<model::SamplerSpec> read_sampler(const Ctx& c, const YAML::Node& n) {
  model::SamplerSpec spec;
  spec.loc = loc_of(c, n);
  auto known_kind = [&](const YAML::Node& at, const std::string& kind) -> Status {
    if (std::find(k_sampler_kinds.begin(), k_sampler_kinds.end(), kind) == k_sampler_kinds.end())
      return err_at(c, at,
                    fmt::format("unknown sampler '{}'{}; available: {}", kind,
                                util::did_you_mean(kind, k_sampler_kinds), util::join(k_sampler_kinds, ", ")));
    return Ok{};
  };
  if (n.IsScalar()) {
    spec.kind = n.Scalar();
    if (auto st = known_kind(n, spec.kind); !st) return st.error();
    if (spec.kind == "command")
      return err_at(c, n,
                    "a command sampler is a mapping: {kind: command, command: [...], regex: '...', metrics: [...]}");
    return spec;
  }
  if (auto st = check_map(c, n, "a sampler", k_command_sampler_keys); !st) return st.error();
  if (!n["kind"]) return err_at(c, n, "a sampler mapping needs 'kind'");
  auto kind = get_string(c, n["kind"], "kind");
  if (!kind) return kind.error();
  spec.kind = *kind;
  if (auto st = known_kind(n["kind"], spec.kind); !st) return st.error();
  if (spec.kind != "command") {
    for (const char* key : {"command", "regex", "metrics"})
      if (n[key]) return err_at(c, n[key], fmt::format("'{}' is for command samplers only", key));
    return spec;
  }
  if (!n["command"] || !n["regex"] || !n["metrics"])
    return err_at(c, n,
                  "a command sampler needs 'command' (argv list), 'regex' and 'metrics' (one name per regex group)");
  const auto& cmd = n["command"];
  if (!cmd.IsSequence() || cmd.size() == 0) return err_at(c, cmd, "command must be a non-empty list (argv; no shell)");
  for (const auto& a : cmd) {
    auto s = get_string(c, a, "command element");
    if (!s) return s.error();
    spec.command.push_back(*s);
  }
  auto re = get_string(c, n["regex"], "regex");
  if (!re) return re.error();
  spec.regex = *re;
  const auto& ms = n["metrics"];
  if (!ms.IsSequence() || ms.size() == 0)
    return err_at(c, ms, "metrics must be a list of metric names, one per regex group");
  for (std::size_t i = 0; i < ms.size(); ++i) {
    auto m = get_string(c, ms[i], "metric name");
    if (!m) return m.error();
    spec.metric_names[std::to_string(i + 1)] = *m;
  }
  if (n["name"]) {
    auto nm = get_string(c, n["name"], "name");
    if (!nm) return nm.error();
    spec.name = *nm;
  } else {
    spec.name = spec.command.front();
  }
  return spec;
}

// metrics.patterns of the regex parser: [{regex: '...(?<metric>...)...', record: step|summary,
// units: {metric: unit}, better: {metric: lower|higher|none}}]. The regexes are
// compiled here, so a bad one is reported at its line.
Expected<std::vector<model::LogPattern>> read_patterns(const Ctx& c, const YAML::Node& n) {
  if (!n.IsSequence() || n.size() == 0)
    return err_at(c, n,
                  "metrics.patterns must be a non-empty list of {regex: '...', record: step|summary, units: {...}, "
                  "better: {...}}");
  std::vector<model::LogPattern> out;
  for (const auto& e : n) {
    model::LogPattern lp;
    lp.loc = loc_of(c, e);
    if (e.IsScalar()) {
      lp.regex = e.Scalar();
    } else {
      if (auto st = check_map(c, e, "a pattern", k_pattern_keys); !st) return st.error();
      if (!e["regex"]) return err_at(c, e, "a pattern needs 'regex'");
      auto re = get_string(c, e["regex"], "regex");
      if (!re) return re.error();
      lp.regex = *re;
      lp.loc = loc_of(c, e["regex"]);
      if (e["record"]) {
        auto r = get_string(c, e["record"], "record");
        if (!r) return r.error();
        if (*r != "step" && *r != "summary")
          return err_at(c, e["record"], fmt::format("record must be 'step' or 'summary', not '{}'", *r));
        lp.summary = *r == "summary";
      }
      for (const char* key : {"units", "better"}) {
        const auto& m = e[key];
        if (!m) continue;
        if (!m.IsMap())
          return err_at(c, m,
                        fmt::format("{} must be a mapping of metric to {}", key,
                                    std::string_view(key) == "units" ? "unit" : "lower|higher|none"));
        for (auto it = m.begin(); it != m.end(); ++it) {
          auto val = get_string(c, it->second, fmt::format("{}.{}", key, it->first.Scalar()));
          if (!val) return val.error();
          if (std::string_view(key) == "units") {
            lp.units[it->first.Scalar()] = *val;
            continue;
          }
          auto dir = model::better_from_string(*val);
          if (!dir)
            return err_at(c, it->second,
                          fmt::format("better.{} must be lower, higher or none, not '{}'", it->first.Scalar(), *val));
          lp.better[it->first.Scalar()] = *dir;
        }
      }
    }
    auto compiled = util::UserRegex::compile(lp.regex);
    if (!compiled) return err_at(lp.loc, fmt::format("regex '{}': {}", lp.regex, compiled.error().message));
    std::vector<std::string> metrics;
    for (const auto& g : compiled->group_names())
      if (!g.empty() && g != "step") metrics.push_back(g);
    if (metrics.empty())
      return err_at(lp.loc, fmt::format("regex '{}' names no metric; name each group after the metric it feeds, "
                                        "e.g. '(?<step_time_ms>[0-9.]+)'",
                                        lp.regex));
    for (const auto& [k, _] : lp.units)
      if (std::find(metrics.begin(), metrics.end(), k) == metrics.end())
        return err_at(lp.loc, fmt::format("units.{} is not a group of regex '{}'{}", k, lp.regex,
                                          util::did_you_mean(k, metrics)));
    for (const auto& [k, _] : lp.better)
      if (std::find(metrics.begin(), metrics.end(), k) == metrics.end())
        return err_at(lp.loc, fmt::format("better.{} is not a group of regex '{}'{}", k, lp.regex,
                                          util::did_you_mean(k, metrics)));
    out.push_back(std::move(lp));
  }
  return out;
}

Status read_settings(const Ctx& c, const YAML::Node& n, Settings& s) {
  for (auto it = n.begin(); it != n.end(); ++it) {
    auto key = it->first.Scalar();
    const YAML::Node v = it->second;  // a copy: it-> is a proxy, its second dies with the statement (ASan, the fuzzer)
    if (key == "repeats") {
      auto r = get_int(c, v, "repeats", 1);
      if (!r) return r.error();
      s.repeats = static_cast<int>(*r);
    } else if (key == "warmup") {
      auto w = read_warmup(c, v);
      if (!w) return w.error();
      s.warmup = *w;
    } else if (key == "timeout") {
      auto d = get_duration(c, v, "timeout");
      if (!d) return d.error();
      s.timeout_s = *d;
    } else if (key == "kill_grace") {
      auto d = get_duration(c, v, "kill_grace");
      if (!d) return d.error();
      s.kill_grace_s = *d;
    } else if (key == "log_limit") {
      if (!v.IsScalar()) return err_at(c, v, "log_limit must be a size such as 16MB");
      auto b = util::parse_bytes(v.Scalar());
      if (!b) return err_at(c, v, b.error().message);
      s.log_limit_bytes = *b;
    } else if (key == "cwd") {
      auto str = get_string(c, v, "cwd");
      if (!str) return str.error();
      fs::path p(*str);
      s.cwd = (p.is_absolute() ? p : fs::path(c.base_dir) / p).lexically_normal().string();
    } else if (key == "env") {
      if (auto st = read_env(c, v, s.env, s.env_locs); !st) return st;
    } else if (key == "samplers") {
      if (!v.IsSequence())
        return err_at(c, v, fmt::format("samplers must be a list such as [proc, npu-smi], found {}", type_name(v)));
      std::vector<model::SamplerSpec> list;
      for (const auto& e : v) {
        auto spec = read_sampler(c, e);
        if (!spec) return spec.error();
        list.push_back(std::move(*spec));
      }
      s.samplers = std::move(list);
    } else if (key == "host_probe") {
      auto b = get_bool(c, v, "host_probe");
      if (!b) return b.error();
      s.host_probe = *b;
    } else if (key == "sample_interval") {
      auto d = get_duration(c, v, "sample_interval");
      if (!d) return d.error();
      if (*d < 0.05) return err_at(c, v, "sample_interval must be at least 50ms");
      s.sample_interval_s = *d;
    } else if (key == "metrics") {
      if (auto st = check_map(c, v, "metrics", k_metrics_keys); !st) return st;
      if (v["parser"]) {
        auto p = get_string(c, v["parser"], "metrics.parser");
        if (!p) return p.error();
        if (std::find(k_parsers.begin(), k_parsers.end(), *p) == k_parsers.end())
          return err_at(c, v["parser"],
                        fmt::format("unknown metrics parser '{}'{}; available: {}", *p,
                                    util::did_you_mean(*p, k_parsers), util::join(k_parsers, ", ")));
        s.parser = *p;
      }
      if (v["primary"]) {
        auto p = get_string(c, v["primary"], "metrics.primary");
        if (!p) return p.error();
        s.primary = *p;
      }
      s.metrics_loc = loc_of(c, v);
      if (v["file"]) {
        auto f = get_string(c, v["file"], "metrics.file");
        if (!f) return f.error();
        if (f->empty()) return err_at(c, v["file"], "metrics.file is empty; name the log file to read");
        s.metrics_file = *f;
      }
      if (v["batch_size"]) {
        auto b = get_string(c, v["batch_size"], "metrics.batch_size");
        if (!b) return b.error();
        s.batch_size = *b;
      }
      if (v["patterns"]) {
        auto pats = read_patterns(c, v["patterns"]);
        if (!pats) return pats.error();
        s.patterns = std::move(*pats);
      }
    }
  }
  return Ok{};
}

Expected<std::vector<model::Axis>> read_matrix(const Ctx& c, const YAML::Node& n) {
  if (auto st = check_map(c, n, "matrix", {}); !st) return st.error();
  if (n.size() == 0) return err_at(c, n, "matrix is empty: give at least one axis with values, or leave matrix out");
  std::vector<model::Axis> axes;
  for (auto it = n.begin(); it != n.end(); ++it) {
    auto name = it->first.Scalar();
    if (!is_identifier(name))
      return err_at(c, it->first, fmt::format("'{}' is not a valid axis name (letters, digits, _)", name));
    const YAML::Node vals = it->second;  // a copy, as above
    model::Axis axis{name, {}, loc_of(c, it->first)};
    if (vals.IsScalar() || vals.IsMap()) {
      // A single value is a one-point axis; accept it as people write it.
      Params p;
      if (auto st = flatten_value(c, vals, name, p); !st) return st.error();
      axis.values.push_back(std::move(p));
    } else if (vals.IsSequence()) {
      if (vals.size() == 0) return err_at(c, vals, fmt::format("matrix axis '{}' has no values", name));
      std::set<std::string> seen;
      for (const auto& v : vals) {
        Params p;
        if (auto st = flatten_value(c, v, name, p); !st) return st.error();
        auto key = model::params_json(p);
        if (!seen.insert(key).second)
          return err_at(c, v, fmt::format("matrix axis '{}' lists the same value twice", name));
        axis.values.push_back(std::move(p));
      }
    } else {
      return err_at(c, vals, fmt::format("matrix axis '{}' has no values", name));
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

struct RawWorkload {
  model::Workload w;
  Settings settings;
  YAML::Node node;
};

Expected<RawWorkload> read_workload(const Ctx& c, const YAML::Node& n, std::size_t index) {
  if (auto st = check_map(c, n, fmt::format("workload #{}", index + 1), k_workload_keys); !st) return st.error();
  RawWorkload raw;
  raw.node = n;
  auto& w = raw.w;
  w.loc = loc_of(c, n);
  if (!n["name"]) return err_at(c, n, fmt::format("workload #{} has no 'name'", index + 1));
  auto name = get_string(c, n["name"], "name");
  if (!name) return name.error();
  if (name->empty() || name->find_first_of(" \t\n/\\") != std::string::npos)
    return err_at(c, n["name"], fmt::format("workload name '{}' must be non-empty without spaces or slashes", *name));
  w.name = *name;
  std::string what = fmt::format("workload '{}'", w.name);

  if (n["shell"]) {
    auto b = get_bool(c, n["shell"], "shell");
    if (!b) return b.error();
    w.shell = *b;
  }
  const YAML::Node& cmd = n["command"];
  if (!cmd) return err_at(c, n, fmt::format("{} has no 'command'", what));
  if (cmd.IsScalar()) {
    if (!w.shell)
      return err_at(c, cmd,
                    fmt::format("{}: command must be a list of arguments (argv), e.g. [python3, train.py]; "
                                "to run a shell command line, set shell: true",
                                what));
    w.command.push_back(cmd.Scalar());
    w.command_locs.push_back(loc_of(c, cmd));
  } else if (cmd.IsSequence()) {
    if (cmd.size() == 0) return err_at(c, cmd, fmt::format("{}: command is empty", what));
    for (const auto& a : cmd) {
      if (!a.IsScalar())
        return err_at(c, a, fmt::format("{}: command arguments must be strings, found {}", what, type_name(a)));
      w.command.push_back(a.Scalar());
      w.command_locs.push_back(loc_of(c, a));
    }
    if (w.shell && w.command.size() != 1)
      return err_at(c, cmd, fmt::format("{}: with shell: true, command is one string (the shell command line)", what));
  } else {
    return err_at(c, cmd, fmt::format("{}: command must be a list of arguments, found {}", what, type_name(cmd)));
  }

  if (auto st = read_settings(c, n, raw.settings); !st) return st.error();

  if (n["matrix"]) {
    auto m = read_matrix(c, n["matrix"]);
    if (!m) return m.error();
    w.matrix = std::move(*m);
  }
  if (n["params"]) {
    auto p = read_param_map(c, n["params"], "params");
    if (!p) return p.error();
    w.params = std::move(*p);
  }
  for (const char* key : {"include", "exclude"}) {
    const YAML::Node& list = n[key];
    if (!list) continue;
    if (!list.IsSequence())
      return err_at(c, list, fmt::format("{} must be a list of parameter mappings, found {}", key, type_name(list)));
    for (const auto& e : list) {
      auto p = read_param_map(c, e, fmt::format("an {} entry", key));
      if (!p) return p.error();
      if (p->empty()) return err_at(c, e, fmt::format("an {} entry is empty", key));
      if (std::string(key) == "include") {
        w.include.push_back(std::move(*p));
      } else {
        std::map<std::string, SourceLoc> locs;
        for (auto k = e.begin(); k != e.end(); ++k) locs[k->first.Scalar()] = loc_of(c, k->first);
        w.exclude.push_back(std::move(*p));
        w.exclude_locs.push_back(std::move(locs));
      }
    }
  }
  return raw;
}

// Every parameter name a workload knows: axes (with dict keys), fixed params, includes.
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

// What a parser needs and what only some parsers take, once the layers are merged.
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

// Every configuration must give every placeholder a value: a key that only
// some include entries set is missing from the others.
Status validate_cases(const model::Suite& suite) {
  const auto& builtins = builtin_placeholders();
  for (const auto& c : expand(suite)) {
    const auto& w = suite.workloads[c.workload_index];
    auto check = [&](const std::string& text, const SourceLoc& loc) -> Status {
      auto refs = find_placeholders(text);
      if (!refs) return Ok{};  // reported by validate_placeholders
      for (const auto& r : *refs) {
        if (c.params.count(r.name) || std::find(builtins.begin(), builtins.end(), r.name) != builtins.end()) continue;
        return err_at(loc, fmt::format("workload '{}': placeholder '{{{}}}' has no value in configuration '{}'; "
                                       "give it one in params or a matrix axis, not only in some include entries",
                                       w.name, r.name, c.label));
      }
      return Ok{};
    };
    for (std::size_t i = 0; i < w.command.size(); ++i)
      if (auto st = check(w.command[i], w.command_locs[i]); !st) return st;
    for (const auto& [k, v] : w.env)
      if (auto st = check(v, w.env_locs.count(k) ? w.env_locs.at(k) : w.loc); !st) return st;
    if (auto st = check(w.metrics.file, w.metrics.loc); !st) return st;
    if (auto st = check(w.metrics.batch_size, w.metrics.loc); !st) return st;
  }
  return Ok{};
}

// Applies a parameter override to one workload; returns whether it matched.
bool apply_param_override(model::Workload& w, const Override& o) {
  auto dot = o.key.find('.');
  std::string axis_name = o.key.substr(0, dot);
  auto axis_it = std::find_if(w.matrix.begin(), w.matrix.end(), [&](const auto& a) { return a.name == axis_name; });
  SourceLoc loc{"--set " + o.key};
  if (dot != std::string::npos && axis_it != w.matrix.end()) {
    // --set dataloader.num_workers=2,4: every dict value of the axis, crossed with the new values.
    std::vector<Params> vals;
    for (const auto& base : axis_it->values)
      for (const auto& v : o.values) {
        Params p = base;
        p[o.key] = Scalar::infer(v);
        vals.push_back(std::move(p));
      }
    axis_it->values = std::move(vals);
    return true;
  }
  std::vector<Params> vals;
  for (const auto& v : o.values) vals.push_back(Params{{o.key, Scalar::infer(v)}});
  if (axis_it != w.matrix.end() && dot == std::string::npos) {
    axis_it->values = std::move(vals);
    return true;
  }
  bool used = w.params.count(o.key) > 0;
  if (!used) {
    auto names = placeholder_names(w);
    used = std::find(names.begin(), names.end(), o.key) != names.end();
  }
  if (!used) return false;
  w.params.erase(o.key);
  w.matrix.push_back(model::Axis{o.key, std::move(vals), loc});
  return true;
}

Status apply_overrides(std::vector<model::Workload>& ws, const std::vector<Override>& overrides) {
  for (const auto& o : overrides) {
    if (std::find(k_override_settings.begin(), k_override_settings.end(), o.key) != k_override_settings.end()) {
      if (o.values.size() != 1)
        return Error::input(fmt::format("--set {}: takes one value, got {}", o.key, o.values.size()));
      const std::string& v = o.values[0];
      for (auto& w : ws) {
        if (o.key == "repeats") {
          auto s = Scalar::infer(v);
          if (s.kind != Scalar::Kind::Int || std::stoll(v) < 1)
            return Error::input(fmt::format("--set repeats={}: must be a positive integer", v));
          w.repeats = static_cast<int>(std::stoll(v));
        } else if (o.key == "warmup") {
          auto wu = parse_warmup_text(v);
          if (!wu) return Error::input("--set warmup: " + wu.error().message);
          w.warmup = *wu;
        } else if (o.key == "log_limit") {
          auto b = util::parse_bytes(v);
          if (!b) return Error::input("--set log_limit: " + b.error().message);
          w.log_limit_bytes = *b;
        } else {
          auto d = util::parse_duration_s(v);
          if (!d || *d <= 0) return Error::input(fmt::format("--set {}={}: not a positive duration", o.key, v));
          (o.key == "timeout" ? w.timeout_s : w.kill_grace_s) = *d;
        }
      }
      continue;
    }
    bool matched = false;
    for (auto& w : ws) matched = apply_param_override(w, o) || matched;
    if (!matched) {
      std::set<std::string> all;
      for (const auto& w : ws) {
        for (auto& k : known_params(w)) all.insert(k);
        for (const auto& a : w.matrix) all.insert(a.name);
      }
      for (const auto& k : k_override_settings) all.insert(k);
      std::vector<std::string> cands(all.begin(), all.end());
      return Error::input(fmt::format("--set {}: no workload has a parameter '{}'{}; known: {}", o.key, o.key,
                                      util::did_you_mean(o.key, cands), util::join(cands, ", ")));
    }
  }
  return Ok{};
}

// Most configurations one workload's matrix may expand to: a sweep is read
// trial by trial, and 100,000 configurations at one second a trial are more
// than a day; three axes of 1,000 values (10^9) would otherwise exhaust memory
// before the first trial.
constexpr double k_max_configurations = 100000;

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

Expected<std::string> find_profile(const std::string& name, const std::string& suite_dir, const LoadOptions& opts) {
  std::vector<fs::path> tries;
  fs::path as_path(name);
  if (name.find('/') != std::string::npos || as_path.extension() == ".yaml") tries.push_back(as_path);
  std::vector<fs::path> dirs;
  for (const auto& d : opts.profile_search_dirs) dirs.emplace_back(d);
  dirs.push_back(fs::path(suite_dir) / ".." / "configs" / "profiles");
  dirs.push_back(fs::path("configs") / "profiles");
  // An installed perfgate's own profiles, whichever folder the suite is in.
  if (auto share = util::data_dir(); !share.empty()) dirs.push_back(fs::path(share) / "configs" / "profiles");
  for (const auto& d : dirs) tries.push_back(d / (name + ".yaml"));
  for (const auto& t : tries)
    if (fs::is_regular_file(t)) return t.lexically_normal().string();
  std::vector<std::string> shown;
  for (const auto& t : tries) shown.push_back(t.lexically_normal().string());
  return Error::input(fmt::format("profile '{}' not found; looked in: {}", name, util::join(shown, ", ")));
}

// `slots: {kind: npu, devices: [0-7], per_trial: 1}`; devices (cpus for
// kind cpu) as numbers, ranges "0-7", or one string "0-3,6".
Expected<model::SlotsSpec> read_slots(const Ctx& c, const YAML::Node& n) {
  if (auto st = check_map(c, n, "slots", k_slots_keys); !st) return st.error();
  model::SlotsSpec spec;
  spec.loc = loc_of(c, n);
  if (n["kind"]) {
    auto k = get_string(c, n["kind"], "slots.kind");
    if (!k) return k.error();
    spec.kind = *k;
  } else if (n["cpus"]) {
    spec.kind = "cpu";
  } else {
    return err_at(c, n, "slots: missing key 'kind' (npu, cuda, cpu, or another kind with env:)");
  }
  if (n["devices"] && n["cpus"]) return err_at(c, n["cpus"], "slots: give devices or cpus, not both");
  const YAML::Node& list = n["devices"] ? n["devices"] : n["cpus"];
  const char* list_key = n["devices"] ? "slots.devices" : "slots.cpus";
  if (list) {
    std::vector<std::string> parts;
    if (list.IsScalar())
      parts.push_back(list.Scalar());
    else if (list.IsSequence())
      for (const auto& e : list) {
        if (!e.IsScalar()) return err_at(c, e, fmt::format("{}: expected a device id or a range like 0-7", list_key));
        parts.push_back(e.Scalar());
      }
    else
      return err_at(c, list, fmt::format("{} must be a list like [0-7] or a string like \"0-3,6\"", list_key));
    std::string joined = util::join(parts, ",");
    auto ids = runner::parse_device_list(joined);
    if (!ids) return err_at(c, list, fmt::format("{}: {}", list_key, ids.error().message));
    spec.devices = *ids;
  }
  if (n["per_trial"]) {
    auto p = get_int(c, n["per_trial"], "slots.per_trial", 1);
    if (!p) return p.error();
    spec.per_trial = static_cast<int>(*p);
  }
  if (n["env"]) {
    auto e = get_string(c, n["env"], "slots.env");
    if (!e) return e.error();
    spec.env = *e;
  }
  if (auto made = runner::make_slots(spec); !made) return err_at(c, n, made.error().message);
  return spec;
}

Expected<Settings> load_profile(const std::string& path, const std::string& base_dir) {
  auto text = read_file(path);
  if (!text) return text.error();
  auto root = parse_yaml(*text, path);
  if (!root) return root.error();
  Ctx c{path, base_dir};
  if (auto st = check_map(c, *root, "a profile", k_profile_keys); !st) return st.error();
  Settings s;
  if ((*root)["defaults"]) {
    if (auto st = check_map(c, (*root)["defaults"], "defaults", k_setting_keys); !st) return st.error();
    if (auto st = read_settings(c, (*root)["defaults"], s); !st) return st.error();
  }
  if ((*root)["slots"]) {
    auto sl = read_slots(c, (*root)["slots"]);
    if (!sl) return sl.error();
    s.slots = *sl;
  }
  return s;
}

}  // namespace

const std::vector<std::string>& builtin_placeholders() {
  static const std::vector<std::string> k = {"repeat",       "trial_dir",  "metrics_file", "run_id",
                                             "suite_dir",    "duration_s", "deadline",     "slot.index",
                                             "slot.devices", "worktree",   "commit",       "perfgate_libexec"};
  return k;
}

Expected<Override> parse_override(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return Error::input(fmt::format("--set '{}': expected KEY=VALUE[,VALUE...]", text));
  Override o;
  o.key = std::string(util::trim(std::string_view(text).substr(0, eq)));
  for (auto& v : util::split(std::string_view(text).substr(eq + 1), ',')) o.values.emplace_back(util::trim(v));
  if (o.values.empty() || std::any_of(o.values.begin(), o.values.end(), [](auto& v) { return v.empty(); }))
    return Error::input(fmt::format("--set '{}': empty value", text));
  return o;
}

Expected<model::Suite> load_suite_text(const std::string& text, const std::string& display_path,
                                       const std::string& base_dir, const LoadOptions& opts) {
  if (auto bad = util::first_invalid_utf8(text); bad != std::string::npos) {
    auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    auto line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    auto column = line_start == std::string::npos || bad == 0 ? bad + 1 : bad - line_start;
    return Error::input(fmt::format("{}:{}:{}: the file is not valid UTF-8 (byte 0x{:02X}); save it as UTF-8",
                                    display_path, line, column, static_cast<unsigned char>(text[bad])));
  }
  auto root_r = parse_yaml(text, display_path);
  if (!root_r) return root_r.error();
  const YAML::Node& root = *root_r;
  Ctx c{display_path, base_dir};
  if (root.IsNull()) return Error::input(fmt::format("{}: the suite file is empty", display_path));
  if (auto st = check_map(c, root, "the suite", k_suite_keys); !st) return st.error();

  model::Suite suite;
  suite.path = display_path;
  suite.dir = base_dir;
  if (!root["suite"]) return err_at(c, root, "missing key 'suite' (the suite's name)");
  auto name = get_string(c, root["suite"], "suite");
  if (!name) return name.error();
  suite.name = *name;
  if (root["description"]) {
    auto d = get_string(c, root["description"], "description");
    if (!d) return d.error();
    suite.description = *d;
  }
  if (root["seed"]) {
    auto s = get_int(c, root["seed"], "seed", 0);
    if (!s) return s.error();
    suite.seed = static_cast<std::uint64_t>(*s);
  }
  if (root["order"]) {
    auto o = get_string(c, root["order"], "order");
    if (!o) return o.error();
    const std::vector<std::string> orders = {"interleaved", "sequential"};
    if (std::find(orders.begin(), orders.end(), *o) == orders.end())
      return err_at(
          c, root["order"],
          fmt::format("order must be interleaved or sequential, found '{}'{}", *o, util::did_you_mean(*o, orders)));
    suite.order = *o;
  }

  // Layer 0: built-in defaults; then profiles (suite's, then --profile); then suite defaults.
  Settings base;
  base.repeats = 5;
  base.warmup = model::Warmup{};
  base.timeout_s = 1200;
  base.kill_grace_s = 5;
  base.log_limit_bytes = 16ull << 20;
  base.cwd = fs::current_path().string();
  base.parser = "jsonl";
  base.primary = "";

  std::vector<std::string> profile_names;
  if (const auto& p = root["profile"]) {
    if (p.IsScalar())
      profile_names.push_back(p.Scalar());
    else if (p.IsSequence())
      for (const auto& e : p) {
        auto s = get_string(c, e, "profile");
        if (!s) return s.error();
        profile_names.push_back(*s);
      }
    else
      return err_at(c, p, "profile must be a name or a list of names");
  }
  for (const auto& pn : opts.profiles) profile_names.push_back(pn);
  for (const auto& pn : profile_names) {
    auto path = find_profile(pn, base_dir, opts);
    if (!path) return Error::input(fmt::format("{}: {}", display_path, path.error().message));
    auto prof = load_profile(*path, fs::path(*path).parent_path().string());
    if (!prof) return prof.error();
    prof->apply_onto(base);
    suite.profiles.push_back(*path);
  }
  if (const auto& d = root["defaults"]) {
    if (auto st = check_map(c, d, "defaults", k_setting_keys); !st) return st.error();
    Settings s;
    if (auto st = read_settings(c, d, s); !st) return st.error();
    s.apply_onto(base);
  }
  if (const auto& sl = root["slots"]) {
    auto spec = read_slots(c, sl);
    if (!spec) return spec.error();
    base.slots = *spec;
  }
  if (opts.slots) base.slots = opts.slots;
  suite.slots = base.slots;

  const YAML::Node& wl = root["workloads"];
  if (!wl) return err_at(c, root, "missing key 'workloads' (a list of workloads to run)");
  if (!wl.IsSequence()) return err_at(c, wl, fmt::format("workloads must be a list, found {}", type_name(wl)));
  if (wl.size() == 0) return err_at(c, wl, "workloads is empty");
  std::set<std::string> names;
  for (std::size_t i = 0; i < wl.size(); ++i) {
    auto raw = read_workload(c, wl[i], i);
    if (!raw) return raw.error();
    if (!names.insert(raw->w.name).second)
      return err_at(c, wl[i]["name"], fmt::format("duplicate workload name '{}'", raw->w.name));
    Settings eff = base;
    raw->settings.apply_onto(eff);
    auto& w = raw->w;
    w.repeats = *eff.repeats;
    w.warmup = *eff.warmup;
    w.timeout_s = *eff.timeout_s;
    w.kill_grace_s = *eff.kill_grace_s;
    w.log_limit_bytes = *eff.log_limit_bytes;
    w.cwd = *eff.cwd;
    w.metrics.parser = *eff.parser;
    w.metrics.primary = *eff.primary;
    if (eff.metrics_file) w.metrics.file = *eff.metrics_file;
    if (eff.batch_size) w.metrics.batch_size = *eff.batch_size;
    if (eff.patterns) w.metrics.patterns = *eff.patterns;
    w.metrics.loc = eff.metrics_loc.file.empty() ? w.loc : eff.metrics_loc;
    if (auto st = validate_metrics(w); !st) return st.error();
    w.env = eff.env;
    w.env_locs = eff.env_locs;
    if (eff.samplers) w.samplers = *eff.samplers;
    if (eff.sample_interval_s) w.sample_interval_s = *eff.sample_interval_s;
    w.host_probe = eff.host_probe;
    suite.workloads.push_back(std::move(w));
  }

  if (auto st = apply_overrides(suite.workloads, opts.overrides); !st) return st.error();
  for (const auto& w : suite.workloads) {
    if (auto st = validate_matrix_size(w); !st) return st.error();
    if (auto st = validate_placeholders(c, w); !st) return st.error();
    if (auto st = validate_filters(w); !st) return st.error();
  }
  if (auto st = validate_cases(suite); !st) return st.error();
  return suite;
}

Expected<model::SlotsSpec> parse_slots_option(const std::string& text) {
  std::string yaml_text = text;
  // The short form "npu:0-7", "npu:0-7/2", "cpu:0-15/4", "cuda:0,1".
  if (auto t = util::trim(text); !t.empty() && t.front() != '{') {
    auto colon = t.find(':');
    if (colon == std::string_view::npos || colon == 0)
      return Error::input(
          fmt::format("--slots '{}': expected KIND:DEVICES[/PER_TRIAL] (npu:0-7, cpu:0-15/4) or a "
                      "mapping like {{kind: npu, devices: [0-7], per_trial: 1}}",
                      text));
    std::string kind(t.substr(0, colon));
    std::string_view rest = t.substr(colon + 1);
    std::string per = "1";
    if (auto slash = rest.find('/'); slash != std::string_view::npos) {
      per = std::string(rest.substr(slash + 1));
      rest = rest.substr(0, slash);
    }
    yaml_text = fmt::format("{{kind: \"{}\", devices: \"{}\", per_trial: \"{}\"}}", kind, rest, per);
  }
  auto root = parse_yaml(yaml_text, "--slots");
  if (!root) return root.error();
  if (!root->IsMap()) return Error::input(fmt::format("--slots '{}': expected a mapping or KIND:DEVICES", text));
  Ctx c{"--slots", fs::current_path().string()};
  return read_slots(c, *root);
}

Expected<model::Suite> load_suite(const std::string& path, const LoadOptions& opts) {
  if (!fs::exists(path)) return Error::input(fmt::format("{}: no such suite file", path));
  auto text = read_file(path);
  if (!text) return text.error();
  auto dir = fs::absolute(fs::path(path)).parent_path().lexically_normal().string();
  return load_suite_text(*text, path, dir, opts);
}

}  // namespace perfgate::suite
