#include "harness/suite/matrix.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "harness/util/strings.hpp"

namespace perfgate::suite {
using model::Params;

namespace {

bool matches(const Params& p, const Params& partial) {
  for (const auto& [k, v] : partial) {
    auto it = p.find(k);
    if (it == p.end() || it->second.text != v.text) return false;
  }
  return true;
}

model::Case make_case(std::size_t wi, const model::Workload& w, Params p) {
  model::Case c;
  c.workload_index = wi;
  c.workload = w.name;
  c.params = std::move(p);
  c.params_json = model::params_json(c.params);
  c.label = c.params.empty() ? w.name : w.name + " " + model::params_label(c.params);
  return c;
}

}  // namespace

void for_each_params(const model::Suite& suite,
                     const std::function<bool(std::size_t workload_index, const model::Params& params)>& visit) {
  for (std::size_t wi = 0; wi < suite.workloads.size(); ++wi) {
    const auto& w = suite.workloads[wi];
    std::vector<Params> combos{w.params};
    for (const auto& axis : w.matrix) {
      std::vector<Params> next;
      next.reserve(combos.size() * axis.values.size());
      for (const auto& base : combos)
        for (const auto& v : axis.values) {
          Params p = base;
          for (const auto& [k, val] : v) p[k] = val;
          next.push_back(std::move(p));
        }
      combos = std::move(next);
    }
    for (const auto& p : combos) {
      bool excluded = std::any_of(w.exclude.begin(), w.exclude.end(), [&](const Params& ex) { return matches(p, ex); });
      if (!excluded && !visit(wi, p)) return;
    }
    for (const auto& inc : w.include) {
      Params p = w.params;
      for (const auto& [k, v] : inc) p[k] = v;
      if (!visit(wi, p)) return;
    }
  }
}

std::vector<model::Case> expand(const model::Suite& suite) {
  std::vector<model::Case> out;
  std::set<std::string> seen;  // identities of the current workload's cases
  std::size_t seen_for = 0;
  for_each_params(suite, [&](std::size_t wi, const Params& p) {
    if (wi != seen_for) {
      seen.clear();
      seen_for = wi;
    }
    auto c = make_case(wi, suite.workloads[wi], p);
    if (seen.insert(c.params_json).second) out.push_back(std::move(c));
    return true;
  });
  return out;
}

Expected<CaseFilter> parse_filter(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return Error::input(fmt::format("--only '{}': expected KEY=VALUE[,VALUE...]", text));
  CaseFilter f;
  f.key = std::string(util::trim(std::string_view(text).substr(0, eq)));
  for (auto& v : util::split(std::string_view(text).substr(eq + 1), ',')) f.values.emplace_back(util::trim(v));
  return f;
}

Expected<std::vector<model::Case>> filter_cases(std::vector<model::Case> cases,
                                                const std::vector<CaseFilter>& filters) {
  for (const auto& f : filters) {
    bool known = f.key == "workload" ||
                 std::any_of(cases.begin(), cases.end(), [&](const auto& c) { return c.params.count(f.key) > 0; });
    if (!known) {
      std::set<std::string> keys{"workload"};
      for (const auto& c : cases)
        for (const auto& [k, _] : c.params) keys.insert(k);
      std::vector<std::string> cands(keys.begin(), keys.end());
      return Error::input(fmt::format("--only {}: no configuration has a parameter '{}'{}; known: {}", f.key, f.key,
                                      util::did_you_mean(f.key, cands), util::join(cands, ", ")));
    }
    std::erase_if(cases, [&](const model::Case& c) {
      std::string v;
      if (f.key == "workload")
        v = c.workload;
      else if (auto it = c.params.find(f.key); it != c.params.end())
        v = it->second.text;
      else
        return true;
      return std::find(f.values.begin(), f.values.end(), v) == f.values.end();
    });
  }
  return cases;
}

}  // namespace perfgate::suite
