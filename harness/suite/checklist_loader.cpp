#include "harness/suite/checklist_loader.hpp"

#include <fmt/format.h>

#include "harness/model/params.hpp"
#include "harness/suite/yaml_helpers.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/units.hpp"

namespace perfgate::suite {
using namespace yaml;
using model::CheckKind;

namespace {

const std::vector<std::string> k_top_keys = {"checklist", "description", "items"};
const std::vector<std::string> k_item_keys = {"name",     "check",     "description", "run",    "workload",
                                              "metric",   "numerator", "denominator", "where",  "param",
                                              "at_least", "at_most",   "baseline",    "policy", "optional"};

Expected<std::map<std::string, std::string>> get_filter(const Ctx& c, const YAML::Node& n, const std::string& what) {
  if (auto st = check_map(c, n, what, {}); !st) return st.error();
  std::map<std::string, std::string> out;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->second.IsScalar())
      return err_at(c, it->second, fmt::format("{}.{} must be a plain value", what, it->first.Scalar()));
    out[it->first.Scalar()] = it->second.Scalar();
  }
  return out;
}

Expected<model::ChecklistItem> read_item(const Ctx& c, const YAML::Node& n, std::size_t index) {
  model::ChecklistItem it;
  it.loc = loc_of(c, n);
  if (auto st = check_map(c, n, fmt::format("checklist item {}", index + 1), k_item_keys); !st) return st.error();
  if (!n["name"]) return err_at(c, n, fmt::format("checklist item {} needs a 'name'", index + 1));
  auto name = get_string(c, n["name"], "name");
  if (!name) return name.error();
  it.name = *name;
  auto where = [&](const std::string& msg) { return fmt::format("item '{}': {}", it.name, msg); };
  if (!n["check"])
    return err_at(c, n, where("needs 'check' (one of " + util::join(model::check_kind_names(), ", ") + ")"));
  auto kind_text = get_string(c, n["check"], "check");
  if (!kind_text) return kind_text.error();
  auto kind = model::check_kind_from(*kind_text);
  if (!kind)
    return err_at(c, n["check"],
                  where(fmt::format("unknown check '{}'{}; checks: {}", *kind_text,
                                    util::did_you_mean(*kind_text, model::check_kind_names()),
                                    util::join(model::check_kind_names(), ", "))));
  it.kind = *kind;
  for (auto [key, out] :
       {std::pair{"run", &it.run}, std::pair{"workload", &it.workload}, std::pair{"metric", &it.metric},
        std::pair{"param", &it.param}, std::pair{"baseline", &it.baseline}, std::pair{"policy", &it.policy}}) {
    if (!n[key]) continue;
    auto v = get_string(c, n[key], key);
    if (!v) return v.error();
    *out = *v;
  }
  for (auto [key, out] : {std::pair{"numerator", &it.numerator}, std::pair{"denominator", &it.denominator},
                          std::pair{"where", &it.where}}) {
    if (!n[key]) continue;
    auto f = get_filter(c, n[key], key);
    if (!f) return f.error();
    *out = *f;
  }
  if (n["optional"]) {
    auto o = get_bool(c, n["optional"], "optional");
    if (!o) return o.error();
    it.optional = *o;
  }
  bool ms = it.kind == CheckKind::FirstStep;
  if (n["at_least"]) {
    auto v = get_number(c, n["at_least"], where("at_least"), ms);
    if (!v) return v.error();
    it.at_least = *v;
  }
  if (n["at_most"]) {
    auto v = get_number(c, n["at_most"], where("at_most"), ms);
    if (!v) return v.error();
    it.at_most = *v;
  }
  // What each kind needs; defaults where there is an obvious one.
  auto need = [&](bool ok, const std::string& what) -> Status {
    if (ok) return Ok{};
    return err_at(c, n, where(fmt::format("a '{}' check needs {}", *kind_text, what)));
  };
  Status st = Ok{};
  switch (it.kind) {
    case CheckKind::Ratio:
      if (it.metric.empty()) it.metric = "throughput";
      st = need(!it.numerator.empty() && !it.denominator.empty() && (it.at_least || it.at_most),
                "numerator and denominator (parameter filters) and at_least or at_most");
      break;
    case CheckKind::DataShare:
      st = need(it.at_most.has_value(), "at_most (the largest data_wait_ms / step_time_ms)");
      break;
    case CheckKind::Scaling:
      if (it.metric.empty()) it.metric = "throughput";
      st = need(it.at_least.has_value(), "at_least (the smallest scaling efficiency, e.g. 0.8)");
      break;
    case CheckKind::FirstStep:
      st = need(it.at_most.has_value(), "at_most (ms, or a duration such as 90s)");
      break;
    case CheckKind::SoakDrift:
      if (it.metric.empty()) it.metric = "step_time_ms";
      st = need(it.at_most.has_value(), "at_most (%/hour)");
      break;
    case CheckKind::MemoryGrowth:
      st = need(it.at_most.has_value(), "at_most (MB/hour)");
      break;
    case CheckKind::Stalls:
    case CheckKind::Hangs:
    case CheckKind::NanLoss:
      if (!it.at_most) it.at_most = 0;
      break;
    case CheckKind::NoRegression:
      st = need(!it.baseline.empty(), "baseline (a selector such as tag:release,last:1)");
      break;
    case CheckKind::AllTrialsOk:
      break;
  }
  if (!st) return st.error();
  return it;
}

}  // namespace

Expected<model::Checklist> load_checklist_text(const std::string& text, const std::string& display_path) {
  auto root = parse_yaml(text, display_path);
  if (!root) return root.error();
  Ctx c{display_path, ""};
  if (root->IsNull()) return Error::input(fmt::format("{}: the checklist is empty", display_path));
  if (auto st = check_map(c, *root, "a checklist", k_top_keys); !st) return st.error();
  model::Checklist cl;
  cl.path = display_path;
  if ((*root)["checklist"]) {
    auto n = get_string(c, (*root)["checklist"], "checklist");
    if (!n) return n.error();
    cl.name = *n;
  }
  if ((*root)["description"]) {
    auto d = get_string(c, (*root)["description"], "description");
    if (!d) return d.error();
    cl.description = *d;
  }
  const auto& items = (*root)["items"];
  if (!items) return err_at(c, *root, "missing key 'items' (a list of checks)");
  if (!items.IsSequence() || items.size() == 0) return err_at(c, items, "items must be a non-empty list");
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto it = read_item(c, items[i], i);
    if (!it) return it.error();
    cl.items.push_back(std::move(*it));
  }
  return cl;
}

Expected<model::Checklist> load_checklist(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return load_checklist_text(*text, path);
}

}  // namespace perfgate::suite
