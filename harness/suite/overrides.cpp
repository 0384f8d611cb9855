#include "harness/suite/overrides.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "harness/suite/settings_reader.hpp"
#include "harness/suite/validation.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/units.hpp"

namespace perfgate::suite {
using model::Params;
using model::Scalar;
using model::SourceLoc;

namespace {

// `--set` keys that change settings rather than parameters.
const std::vector<std::string> k_override_settings = {"repeats", "warmup", "timeout", "kill_grace", "log_limit"};

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

}  // namespace

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

}  // namespace perfgate::suite
