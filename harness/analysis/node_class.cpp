#include "harness/analysis/node_class.hpp"

#include <nlohmann/json.hpp>

namespace perfgate::analysis {

std::string node_class_of(const store::RunRecord& run, const model::TrialRecord& trial) {
  return trial.node_fingerprint.empty() ? run.fingerprint_hash : trial.node_fingerprint;
}

std::set<std::string> node_classes(const store::RunData& data) {
  std::set<std::string> out;
  for (const auto& t : data.trials) out.insert(node_class_of(data.run, t));
  if (out.empty()) out.insert(data.run.fingerprint_hash);
  return out;
}

Expected<std::set<std::string>> node_classes(store::Store& st, const store::RunRecord& run) {
  auto nodes = st.trial_node_fingerprints(run.id);
  if (!nodes) return nodes.error();
  std::set<std::string> out;
  for (const auto& n : *nodes) out.insert(n.empty() ? run.fingerprint_hash : n);
  if (out.empty()) out.insert(run.fingerprint_hash);
  return out;
}

std::string node_class_name(const std::string& hash, const std::string& fingerprint_json) {
  std::string short_hash = hash.substr(0, 6);
  auto j = nlohmann::json::parse(fingerprint_json, nullptr, false);
  if (j.is_object()) {
    auto h = j.find("hostname_class");
    if (h != j.end() && h->is_string() && !h->get<std::string>().empty())
      return h->get<std::string>() + "/" + short_hash;
  }
  return short_hash.empty() ? "unknown" : short_hash;
}

namespace {

store::RunData only_classes(const store::RunData& data, const std::set<std::string>& classes) {
  store::RunData out;
  out.run = data.run;
  out.configs = data.configs;
  out.primary_metrics = data.primary_metrics;
  out.metrics = data.metrics;
  for (const auto& t : data.trials)
    if (classes.count(node_class_of(data.run, t))) out.trials.push_back(t);
  return out;
}

}  // namespace

std::vector<RunSummary> NodeClassView::summarise(const store::RunData& data) const {
  std::vector<RunSummary> out;
  if (pool_all) {
    out.push_back(summarise_run(data));
    return out;
  }
  if (!split) {
    out.push_back(summarise_run(only_classes(data, classes)));
    return out;
  }
  const auto here = node_classes(data);
  for (const auto& c : classes) {
    if (!here.count(c)) continue;
    auto rs = summarise_run(only_classes(data, {c}));
    auto n = names.find(c);
    rs.node_class = n != names.end() ? n->second : c.substr(0, 6);
    out.push_back(std::move(rs));
  }
  return out;
}

int NodeClassView::trials_elsewhere(const store::RunData& data) const {
  if (pool_all) return 0;
  int n = 0;
  for (const auto& t : data.trials)
    if (!classes.count(node_class_of(data.run, t))) ++n;
  return n;
}

Expected<NodeClassView> node_class_view(store::Store& st, const store::RunData& cand, bool force) {
  NodeClassView v;
  v.classes = node_classes(cand);
  v.pool_all = force;
  v.split = !force && v.classes.size() > 1;
  for (const auto& c : v.classes) {
    std::string json;
    if (c == cand.run.fingerprint_hash) {
      json = cand.run.fingerprint_json;
    } else {
      auto j = st.node_fingerprint(c);
      if (!j) return j.error();
      json = *j;
    }
    v.names[c] = node_class_name(c, json);
  }
  return v;
}

}  // namespace perfgate::analysis
