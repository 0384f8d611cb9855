#include "harness/suite/settings_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "harness/metrics/output_parser.hpp"
#include "harness/runner/slots.hpp"
#include "harness/sampling/sampler.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/placeholders.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/units.hpp"
#include "harness/util/user_regex.hpp"

namespace perfgate::suite {
namespace fs = std::filesystem;
using model::Params;
using model::Scalar;
using model::SourceLoc;
using yaml::check_map;
using yaml::Ctx;
using yaml::err_at;
using yaml::get_bool;
using yaml::get_duration;
using yaml::get_int;
using yaml::get_string;
using yaml::loc_of;
using yaml::type_name;

namespace {

const std::vector<std::string> k_metrics_keys = {"parser", "primary", "file", "batch_size", "patterns"};
const std::vector<std::string> k_pattern_keys = {"regex", "record", "units", "better"};
const std::vector<std::string> k_warmup_keys = {"steps", "seconds"};
const std::vector<std::string> k_command_sampler_keys = {"kind", "name", "command", "regex", "metrics"};
const std::vector<std::string> k_slots_keys = {"kind", "devices", "cpus", "per_trial", "env"};
// One list each, kept where the parsers and samplers are made.
const std::vector<std::string>& k_sampler_kinds = sampling::sampler_kinds();
const std::vector<std::string>& k_parsers = metrics::parser_names();

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

}  // namespace

const std::vector<std::string> k_setting_keys = {"repeats",   "warmup",    "timeout", "kill_grace", "env",
                                                 "cwd",       "log_limit", "metrics", "samplers",   "sample_interval",
                                                 "host_probe"};

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

}  // namespace perfgate::suite
