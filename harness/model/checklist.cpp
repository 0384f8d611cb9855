#include "harness/model/checklist.hpp"

#include <array>

namespace perfgate::model {

namespace {
constexpr std::array<std::pair<CheckKind, std::string_view>, 11> k_kinds = {{
    {CheckKind::Ratio, "ratio"},
    {CheckKind::DataShare, "data_share"},
    {CheckKind::Scaling, "scaling"},
    {CheckKind::FirstStep, "first_step"},
    {CheckKind::SoakDrift, "soak_drift"},
    {CheckKind::MemoryGrowth, "memory_growth"},
    {CheckKind::Stalls, "stalls"},
    {CheckKind::Hangs, "hangs"},
    {CheckKind::NanLoss, "nan_loss"},
    {CheckKind::NoRegression, "no_regression"},
    {CheckKind::AllTrialsOk, "all_trials_ok"},
}};
}  // namespace

std::string_view to_string(CheckKind k) {
  for (const auto& [kind, name] : k_kinds)
    if (kind == k) return name;
  return "?";
}

std::optional<CheckKind> check_kind_from(std::string_view s) {
  for (const auto& [kind, name] : k_kinds)
    if (name == s) return kind;
  return std::nullopt;
}

const std::vector<std::string>& check_kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [kind, name] : k_kinds) v.emplace_back(name);
    return v;
  }();
  return names;
}

}  // namespace perfgate::model
