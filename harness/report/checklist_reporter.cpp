#include "harness/report/checklist_reporter.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/report/gate_reporter.hpp"
#include "harness/report/table.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::report {
using analysis::ItemStatus;

namespace {

std::string headline(const analysis::ChecklistResult& r, bool strict) {
  bool fail = analysis::checklist_failed(r, strict);
  std::string unevaluated;
  if (r.not_evaluable > 0) {
    int optional = r.not_evaluable - r.required_not_evaluable;
    unevaluated = r.required_not_evaluable > 0 ? " (every item not marked optional must be evaluated)"
                  : strict                     ? " (--strict: optional ones too)"
                                               : fmt::format(" ({} optional)", optional);
  }
  return fmt::format("{}: {} passed, {} failed, {} not evaluable{} ({}{})", fail ? "FAIL" : "PASS", r.passed, r.failed,
                     r.not_evaluable, unevaluated, r.checklist.name.empty() ? "checklist" : r.checklist.name,
                     r.checklist.path.empty() ? "" : ", " + r.checklist.path);
}

TextTable table(const analysis::ChecklistResult& r, bool markdown) {
  TextTable t;
  using A = TextTable::Align;
  t.columns({"status", "item", "check", "run", "measured", "limit", "evidence"},
            {A::Left, A::Left, A::Left, A::Right, A::Right, A::Left, A::Left});
  for (const auto& it : r.items) {
    std::string status(analysis::to_string(it.status));
    if (markdown && it.status == ItemStatus::Fail) status = "**fail**";
    std::string evidence = it.evidence;
    if (!markdown && evidence.size() > 160) evidence = evidence.substr(0, 157) + "...";
    t.row({status, it.item.name, std::string(model::to_string(it.item.kind)),
           it.run_id > 0 ? std::to_string(it.run_id) : "-", it.measured_text.empty() ? "-" : it.measured_text,
           it.limit_text.empty() ? "-" : it.limit_text, evidence});
  }
  return t;
}

}  // namespace

std::string checklist_table(const analysis::ChecklistResult& r, bool strict) {
  return table(r, false).render() + "\n" + headline(r, strict) + "\n";
}

std::string checklist_markdown(const analysis::ChecklistResult& r, bool strict) {
  bool fail = analysis::checklist_failed(r, strict);
  return fmt::format("{} **perfgate checklist** — {}\n\n", fail ? "❌" : "✅", markdown_escape(headline(r, strict))) +
         table(r, true).render_markdown();
}

std::string checklist_junit(const analysis::ChecklistResult& r, bool strict) {
  auto item_fails = [&](const analysis::ItemResult& it) {
    return it.status == ItemStatus::Fail || (it.status == ItemStatus::NotEvaluable && (strict || !it.item.optional));
  };
  int failures = 0;
  for (const auto& it : r.items) failures += item_fails(it) ? 1 : 0;
  int skipped = r.failed + r.not_evaluable - failures;
  std::string name = xml_escape(r.checklist.name.empty() ? "checklist" : r.checklist.name);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"perfgate\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n", r.items.size(),
                     failures, skipped);
  out += fmt::format("  <testsuite name=\"perfgate checklist {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n", name,
                     r.items.size(), failures, skipped);
  for (const auto& it : r.items) {
    std::string detail = fmt::format("{}: measured {}, limit {}; {}", model::to_string(it.item.kind),
                                     it.measured_text.empty() ? "-" : it.measured_text,
                                     it.limit_text.empty() ? "-" : it.limit_text, it.evidence);
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\">", name, xml_escape(it.item.name));
    bool fails = item_fails(it);
    if (fails)
      out += fmt::format("\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    ",
                         xml_escape(fmt::format("{}: {}", analysis::to_string(it.status), it.measured_text)),
                         analysis::to_string(it.status), xml_escape(detail));
    else if (it.status == ItemStatus::NotEvaluable)
      out += fmt::format("\n      <skipped message=\"{}\"/>\n    ", xml_escape(detail));
    else
      out += fmt::format("\n      <system-out>{}</system-out>\n    ", xml_escape(detail));
    out += "</testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string checklist_json(const analysis::ChecklistResult& r, bool strict) {
  using nlohmann::json;
  json items = json::array();
  for (const auto& it : r.items)
    items.push_back({{"name", it.item.name},
                     {"check", model::to_string(it.item.kind)},
                     {"status", analysis::to_string(it.status)},
                     {"run", it.run_id},
                     {"measured", std::isfinite(it.measured) ? json(it.measured) : json(nullptr)},
                     {"measured_text", it.measured_text},
                     {"limit", it.limit_text},
                     {"at_least", it.item.at_least ? json(*it.item.at_least) : json(nullptr)},
                     {"at_most", it.item.at_most ? json(*it.item.at_most) : json(nullptr)},
                     {"evidence", it.evidence},
                     {"optional", it.item.optional},
                     {"line", it.item.loc.line}});
  json j = {{"checklist", r.checklist.name},
            {"path", r.checklist.path},
            {"headline", headline(r, strict)},
            {"passed", r.passed},
            {"failed", r.failed},
            {"not_evaluable", r.not_evaluable},
            {"required_not_evaluable", r.required_not_evaluable},
            {"outcome", analysis::checklist_failed(r, strict) ? "fail" : "pass"},
            {"strict", strict},
            {"items", std::move(items)}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace perfgate::report
