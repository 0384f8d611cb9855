#include "harness/suite/loader.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "harness/suite/matrix.hpp"
#include "harness/suite/overrides.hpp"
#include "harness/suite/placeholders.hpp"
#include "harness/suite/profiles.hpp"
#include "harness/suite/settings_reader.hpp"
#include "harness/suite/validation.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/units.hpp"

namespace perfgate::suite {
namespace fs = std::filesystem;
using model::Scalar;
using model::SourceLoc;
using yaml::check_map;
using yaml::Ctx;
using yaml::err_at;
using yaml::get_bool;
using yaml::get_int;
using yaml::get_string;
using yaml::loc_of;
using yaml::parse_yaml;
using yaml::read_file;
using yaml::type_name;

namespace {

const std::vector<std::string> k_suite_keys = {"suite", "description", "profile",  "seed",
                                               "order", "slots",       "defaults", "workloads"};
const std::vector<std::string> k_workload_keys = {
    "name",    "description", "command",    "shell",           "env",       "cwd",    "repeats",
    "warmup",  "timeout",     "kill_grace", "log_limit",       "metrics",   "matrix", "params",
    "include", "exclude",     "samplers",   "sample_interval", "host_probe"};

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

}  // namespace

const std::vector<std::string>& builtin_placeholders() {
  static const std::vector<std::string> k = {"repeat",       "trial_dir",  "metrics_file", "run_id",
                                             "suite_dir",    "duration_s", "deadline",     "slot.index",
                                             "slot.devices", "worktree",   "commit",       "perfgate_libexec"};
  return k;
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
  std::error_code ec;
  if (!fs::exists(path, ec))
    return Error::input(ec ? fmt::format("{}: cannot read the suite file: {}", path, ec.message())
                           : fmt::format("{}: no such suite file", path));
  auto text = read_file(path);
  if (!text) return text.error();
  auto dir = fs::absolute(fs::path(path)).parent_path().lexically_normal().string();
  return load_suite_text(*text, path, dir, opts);
}

}  // namespace perfgate::suite
