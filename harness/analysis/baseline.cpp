#include "harness/analysis/baseline.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "harness/analysis/node_class.hpp"
#include "harness/runner/fingerprint.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::analysis {

namespace {

constexpr int k_default_last = 3;

std::string mismatch_message(const store::RunRecord& base, const store::RunRecord& cand) {
  auto diffs = runner::fingerprint_differences(base.fingerprint_json, cand.fingerprint_json);
  // Fleet runs: the machines that recorded them may match while their nodes do not.
  if (diffs.empty()) diffs.push_back("(their trials ran on other node classes)");
  return fmt::format("run {} ran on a different machine than run {}: {}", base.id, cand.id, util::join(diffs, "; "));
}

// Whether a run ran on at least one node class the candidate ran on
// (analysis/node_class.hpp): for local runs, the same machine fingerprint.
Expected<bool> shares_a_class(store::Store& st, const store::RunRecord& r, const std::set<std::string>& cand_classes) {
  auto classes = node_classes(st, r);
  if (!classes) return classes.error();
  return std::any_of(classes->begin(), classes->end(), [&](const std::string& c) { return cand_classes.count(c) > 0; });
}

}  // namespace

Expected<std::string> flagged_by_own_gate(store::Store& st, long long run_id) {
  auto gates = st.load_gates(run_id);
  if (!gates) return gates.error();
  if (gates->empty()) return std::string();
  const auto& g = gates->front();
  if (g.outcome == "regression" || g.outcome == "underpowered" || g.outcome == "inconclusive")
    return fmt::format("its own gate {} said {}", g.id, g.outcome);
  return std::string();
}

Expected<BaselineSelector> parse_baseline_selector(const std::string& text) {
  BaselineSelector sel;
  std::string t(util::trim(text));
  if (t.empty()) return Error::input("empty baseline; use a run id, latest:TAG, or tag:T,last:N / commit:SHA");
  if (t.find(':') == std::string::npos || t.starts_with("latest")) {
    sel.run = t;
    return sel;
  }
  static const std::vector<std::string> k_keys = {"tag", "last", "commit", "suite", "include"};
  for (auto part : util::split(t, ',')) {
    std::string p(util::trim(part));
    auto colon = p.find(':');
    if (colon == std::string::npos)
      return Error::input(
          fmt::format("baseline '{}': '{}' is not KEY:VALUE; keys: {}", text, p, util::join(k_keys, ", ")));
    std::string key = p.substr(0, colon), value(util::trim(std::string_view(p).substr(colon + 1)));
    if (value.empty()) return Error::input(fmt::format("baseline '{}': '{}' has no value", text, key));
    if (key == "tag")
      sel.tag = value;
    else if (key == "commit")
      sel.commit = value;
    else if (key == "suite")
      sel.suite = value;
    else if (key == "include") {
      if (value != "all" && value != "passed")
        return Error::input(fmt::format("baseline '{}': include must be 'all' or 'passed', found '{}'", text, value));
      sel.include_all = value == "all";
    } else if (key == "last") {
      int n = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc{} || ptr != value.data() + value.size() || n < 1)
        return Error::input(fmt::format("baseline '{}': last must be a positive integer, found '{}'", text, value));
      sel.last = n;
    } else {
      return Error::input(fmt::format("baseline '{}': unknown key '{}'{}; keys: {}", text, key,
                                      util::did_you_mean(key, k_keys), util::join(k_keys, ", ")));
    }
  }
  if (sel.tag.empty() && sel.commit.empty())
    return Error::input(fmt::format("baseline '{}': say which runs with tag:T or commit:SHA", text));
  return sel;
}

Expected<Baseline> select_baseline(store::Store& st, const store::RunRecord& cand, const std::string& selector,
                                   bool force) {
  auto sel = parse_baseline_selector(selector);
  if (!sel) return sel.error();
  Baseline b;
  b.forced = false;
  auto cand_classes = node_classes(st, cand);
  if (!cand_classes) return cand_classes.error();
  if (!sel->run.empty()) {
    auto id = st.resolve_run(sel->run);
    if (!id) return id.error();
    if (*id == cand.id)
      return Error::input(fmt::format("baseline {} is the candidate run itself; pick an earlier run", sel->run));
    auto data = st.load_run(*id);
    if (!data) return data.error();
    auto comparable = shares_a_class(st, data->run, *cand_classes);
    if (!comparable) return comparable.error();
    if (!*comparable) {
      if (!force) return Error::input(mismatch_message(data->run, cand) + "; pass --force to compare anyway");
      b.forced = true;
      b.warnings.push_back(mismatch_message(data->run, cand) + " (compared anyway: --force)");
    }
    if (data->run.suite != cand.suite)
      b.warnings.push_back(fmt::format("baseline run {} is of suite '{}', the candidate of '{}'", data->run.id,
                                       data->run.suite, cand.suite));
    b.runs.push_back(std::move(*data));
    return b;
  }

  store::RunQuery q;
  q.suite = sel->suite.empty() ? cand.suite : sel->suite;
  q.tag = sel->tag;
  q.commit_prefix = sel->commit;
  q.exclude_id = cand.id;
  if (sel->commit.empty()) q.before_id = cand.id;
  auto found = st.find_runs(q);
  if (!found) return found.error();
  int want = sel->last > 0 ? sel->last : (sel->commit.empty() ? k_default_last : 1 << 30);
  std::vector<store::RunRecord> chosen, other_machine;
  for (const auto& r : *found) {
    if (static_cast<int>(chosen.size()) >= want) break;
    if (!sel->include_all) {
      auto flagged = flagged_by_own_gate(st, r.id);
      if (!flagged) return flagged.error();
      if (!flagged->empty()) {
        b.left_out.emplace_back(r.id, *flagged + " (include:all pools it anyway)");
        continue;
      }
    }
    auto comparable = shares_a_class(st, r, *cand_classes);
    if (!comparable) return comparable.error();
    if (*comparable || force) {
      if (!*comparable) {
        b.forced = true;
        b.warnings.push_back(mismatch_message(r, cand) + " (pooled anyway: --force)");
      }
      chosen.push_back(r);
    } else {
      other_machine.push_back(r);
    }
  }
  if (chosen.empty()) {
    if (!other_machine.empty())
      return Error::input(
          fmt::format("baseline '{}' matches {} run(s), none on the candidate's machine: {}; pass --force "
                      "to compare anyway",
                      selector, other_machine.size(), mismatch_message(other_machine.front(), cand)));
    if (!b.left_out.empty())
      return Error::input(
          fmt::format("baseline '{}': every matching run was left out because its own gate found "
                      "something (run {}: {}); add include:all to pool them anyway",
                      selector, b.left_out.front().first, b.left_out.front().second));
    return Error::input(fmt::format("baseline '{}' matches no completed run of suite '{}' before run {}{}", selector,
                                    q.suite, cand.id, sel->tag.empty() ? "" : "; tag runs with `perfgate run --tag`"));
  }
  if (!other_machine.empty())
    b.warnings.push_back(fmt::format("skipped {} run(s) of another machine (run {} first: {})", other_machine.size(),
                                     other_machine.front().id, mismatch_message(other_machine.front(), cand)));
  if (static_cast<int>(chosen.size()) < want && sel->last > 0)
    b.warnings.push_back(fmt::format("baseline '{}': asked for {} runs, found {}", selector, want, chosen.size()));
  for (const auto& r : chosen) {
    auto data = st.load_run(r.id);
    if (!data) return data.error();
    b.runs.push_back(std::move(*data));
  }
  return b;
}

Expected<std::vector<store::RunData>> select_history(store::Store& st, const store::RunRecord& cand,
                                                     const Baseline& baseline, int max_runs) {
  std::vector<store::RunData> out;
  int room = max_runs - static_cast<int>(baseline.runs.size());
  if (room <= 0) return out;
  store::RunQuery q;
  q.suite = cand.suite;
  q.exclude_id = cand.id;
  q.before_id = cand.id;
  q.limit = max_runs * 4;  // flagged and other-machine runs are skipped below
  auto found = st.find_runs(q);
  if (!found) return found.error();
  auto cand_classes = node_classes(st, cand);
  if (!cand_classes) return cand_classes.error();
  for (const auto& r : *found) {
    if (static_cast<int>(out.size()) >= room) break;
    auto comparable = shares_a_class(st, r, *cand_classes);
    if (!comparable) return comparable.error();
    if (!*comparable) continue;
    if (std::any_of(baseline.runs.begin(), baseline.runs.end(),
                    [&](const store::RunData& b) { return b.run.id == r.id; }))
      continue;
    auto flagged = flagged_by_own_gate(st, r.id);
    if (!flagged) return flagged.error();
    if (!flagged->empty()) continue;
    auto data = st.load_run(r.id);
    if (!data) return data.error();
    out.push_back(std::move(*data));
  }
  return out;
}

}  // namespace perfgate::analysis
