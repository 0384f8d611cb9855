#include "harness/suite/yaml_helpers.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "harness/model/params.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/units.hpp"

namespace perfgate::suite::yaml {
using model::Scalar;
using model::SourceLoc;

SourceLoc loc_of(const Ctx& c, const YAML::Node& n) {
  auto m = n.Mark();
  if (m.is_null()) return {c.file, 0, 0};
  return {c.file, m.line + 1, m.column + 1};
}

Error err_at(const SourceLoc& loc, const std::string& msg) {
  return Error::input(fmt::format("{}: {}", loc.str(), msg));
}
Error err_at(const Ctx& c, const YAML::Node& n, const std::string& msg) { return err_at(loc_of(c, n), msg); }

const char* type_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Null:
      return "empty";
    case YAML::NodeType::Undefined:
      break;
  }
  return "undefined";
}

// A mapping whose keys are all known and unique.
Status check_map(const Ctx& c, const YAML::Node& n, const std::string& what, const std::vector<std::string>& allowed) {
  if (!n.IsMap()) return err_at(c, n, fmt::format("{} must be a mapping, found {}", what, type_name(n)));
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) return err_at(c, it->first, fmt::format("keys of {} must be plain names", what));
    auto key = it->first.Scalar();
    if (!seen.insert(key).second) return err_at(c, it->first, fmt::format("duplicate key '{}' in {}", key, what));
    // yaml-cpp places an empty value at the next token, so point at the key instead.
    if (it->second.IsNull()) return err_at(c, it->first, fmt::format("'{}' in {} has no value", key, what));
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      return err_at(c, it->first,
                    fmt::format("unknown key '{}' in {}{}; allowed: {}", key, what, util::did_you_mean(key, allowed),
                                util::join(allowed, ", ")));
  }
  return Ok{};
}

Expected<std::string> get_string(const Ctx& c, const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) return err_at(c, n, fmt::format("{} must be a string, found {}", what, type_name(n)));
  return n.Scalar();
}

Expected<long long> get_int(const Ctx& c, const YAML::Node& n, const std::string& what, long long min_value) {
  if (!n.IsScalar()) return err_at(c, n, fmt::format("{} must be an integer, found {}", what, type_name(n)));
  auto s = Scalar::infer(n.Scalar());
  if (s.kind != Scalar::Kind::Int)
    return err_at(c, n, fmt::format("{} must be an integer, found '{}'", what, n.Scalar()));
  long long v = std::stoll(s.text);
  if (v < min_value) return err_at(c, n, fmt::format("{} must be at least {}, found {}", what, min_value, v));
  return v;
}

Expected<bool> get_bool(const Ctx& c, const YAML::Node& n, const std::string& what) {
  // on / off read as switches do in YAML 1.1 files people write (host_probe: on).
  if (n.IsScalar() && n.Tag() != "!") {
    const auto& v = n.Scalar();
    if (v == "true" || v == "on") return true;
    if (v == "false" || v == "off") return false;
  }
  return err_at(c, n,
                fmt::format("{} must be true or false (or on / off), found '{}'", what,
                            n.IsScalar() ? n.Scalar() : type_name(n)));
}

Expected<double> get_duration(const Ctx& c, const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) return err_at(c, n, fmt::format("{} must be a duration, found {}", what, type_name(n)));
  auto d = util::parse_duration_s(n.Scalar());
  if (!d) return err_at(c, n, fmt::format("{}: {}", what, d.error().message));
  if (*d <= 0) return err_at(c, n, fmt::format("{} must be positive", what));
  return *d;
}

namespace {

// Sizes a document as a reader that follows its aliases would see it.
// yaml-cpp shares an anchored node with every alias to it, so parsing stays
// linear, but walking the tree visits the node once per alias: nine levels
// of nine aliases each (a "billion laughs") are 9^9 nodes in 300 bytes, and
// an alias inside the node it names is a cycle no walk ends. Both are found
// here from the parser's events, before any reader walks the tree.
class AliasCheck : public YAML::EventHandler {
 public:
  // Saturates: past the limit the exact count does not matter.
  static constexpr std::uint64_t k_cap = k_max_nodes_through_aliases * 4;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { pending_name_ = name; }
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { leaf(anchor); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    leaf(anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (problem_) return;
    const auto& a = anchored(anchor);
    if (a.open) {
      problem_ =
          Problem{mark, fmt::format("alias *{} is inside the node it names (a cycle no reader can finish)", a.name)};
      return;
    }
    through_aliases_ = std::min(k_cap, through_aliases_ + a.size);
    if (through_aliases_ > k_max_nodes_through_aliases)
      problem_ =
          Problem{mark, fmt::format("YAML aliases expand to more than {} nodes here (*{} alone is {}{}); "
                                    "a YAML bomb? write the values out or use fewer aliases",
                                    k_max_nodes_through_aliases, a.name, a.size >= k_cap ? "over " : "", a.size)};
    add(a.size);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(anchor);
  }
  void OnMapEnd() override { close(); }

  struct Problem {
    YAML::Mark mark;
    std::string message;
  };
  const std::optional<Problem>& problem() const { return problem_; }

 private:
  struct Anchored {
    std::string name;
    std::uint64_t size = 1;
    bool open = false;
  };
  // Anchors are numbered 1, 2, ... in document order.
  Anchored& anchored(YAML::anchor_t anchor) {
    if (anchors_.size() <= anchor) anchors_.resize(anchor + 1);
    return anchors_[anchor];
  }
  void name(YAML::anchor_t anchor) {
    if (anchor == YAML::NullAnchor) return;
    anchored(anchor).name = std::exchange(pending_name_, {});
  }
  void add(std::uint64_t nodes) {
    if (!open_.empty()) open_.back().size = std::min(k_cap, open_.back().size + nodes);
  }
  void leaf(YAML::anchor_t anchor) {
    name(anchor);
    add(1);
  }
  void open(YAML::anchor_t anchor) {
    name(anchor);
    if (anchor != YAML::NullAnchor) anchored(anchor).open = true;
    open_.push_back({anchor, 1});
  }
  void close() {
    auto done = open_.back();
    open_.pop_back();
    if (done.anchor != YAML::NullAnchor) {
      auto& a = anchored(done.anchor);
      a.open = false;
      a.size = done.size;
    }
    add(done.size);
  }

  struct Open {
    YAML::anchor_t anchor;
    std::uint64_t size;
  };
  std::vector<Open> open_;
  std::vector<Anchored> anchors_;
  std::string pending_name_;
  std::uint64_t through_aliases_ = 0;
  std::optional<Problem> problem_;
};

}  // namespace

Expected<YAML::Node> parse_yaml(const std::string& text, const std::string& display_path) {
  try {
    auto root = YAML::Load(text);
    // No alias without a '*': most files need no second pass.
    if (text.find('*') != std::string::npos) {
      std::istringstream in(text);
      YAML::Parser parser(in);
      AliasCheck check;
      parser.HandleNextDocument(check);  // Load reads the first document only
      if (const auto& p = check.problem())
        return Error::input(
            fmt::format("{}:{}:{}: {}", display_path, p->mark.line + 1, p->mark.column + 1, p->message));
    }
    return root;
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp stops at a fixed nesting depth (its DepthGuard: 500 levels in
    // Debian 12's 0.7, the top-level map counting as one) and says only
    // "bad file": name the limit so the user knows what to change.
    return Error::input(fmt::format("{}:{}:{}: YAML nested too deep: sequences and maps may nest at most {} levels",
                                    display_path, e.mark.line + 1, e.mark.column + 1, e.depth() - 1));
  } catch (const YAML::ParserException& e) {
    return Error::input(
        fmt::format("{}:{}:{}: YAML syntax error: {}", display_path, e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (const YAML::Exception& e) {
    return Error::input(fmt::format("{}: YAML error: {}", display_path, e.what()));
  }
}

Expected<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::input(fmt::format("{}: cannot read file ({})", path, std::strerror(errno)));
  // Read in blocks up to one byte past the limit, so a pipe or a file that
  // grows is bounded too, not only what its size said.
  std::string text;
  char block[1 << 16];
  while (in && text.size() <= k_max_yaml_file_bytes) {
    in.read(block, sizeof block);
    text.append(block, static_cast<std::size_t>(in.gcount()));
  }
  if (text.size() > k_max_yaml_file_bytes)
    return Error::input(
        fmt::format("{}: larger than {} MiB, the most perfgate reads of a YAML file (its node tree "
                    "takes about 50 times the file's size); split it, or generate fewer entries",
                    path, k_max_yaml_file_bytes >> 20));
  if (in.bad()) return Error::input(fmt::format("{}: cannot read file ({})", path, std::strerror(errno)));
  return text;
}

Expected<double> get_number(const Ctx& c, const YAML::Node& n, const std::string& what, bool duration_ms) {
  if (!n.IsScalar()) return err_at(c, n, fmt::format("{} must be a number, found {}", what, type_name(n)));
  auto s = Scalar::infer(n.Scalar());
  if (s.kind == Scalar::Kind::Int || s.kind == Scalar::Kind::Float) return std::stod(s.text);
  if (duration_ms) {
    // A compile-time limit may be written as a duration: "90s", "2m".
    if (auto d = util::parse_duration_s(n.Scalar())) return *d * 1000.0;
  }
  return err_at(c, n,
                fmt::format("{} must be a number{}, found '{}'", what,
                            duration_ms ? " of ms or a duration such as 90s" : "", n.Scalar()));
}

Expected<double> get_fraction(const Ctx& c, const YAML::Node& n, const std::string& what, double max_value) {
  if (!n.IsScalar())
    return err_at(c, n, fmt::format("{} must be a number or a percentage, found {}", what, type_name(n)));
  std::string text(util::trim(n.Scalar()));
  bool percent = !text.empty() && text.back() == '%';
  if (percent) text = std::string(util::trim(std::string_view(text).substr(0, text.size() - 1)));
  auto s = Scalar::infer(text);
  if (s.kind != Scalar::Kind::Int && s.kind != Scalar::Kind::Float)
    return err_at(
        c, n, fmt::format("{} must be a number such as 0.03 or a percentage such as 3%, found '{}'", what, n.Scalar()));
  double v = std::stod(s.text) / (percent ? 100.0 : 1.0);
  if (!(v >= 0) || v > max_value)
    return err_at(c, n, fmt::format("{} must lie between 0 and {}, found '{}'", what, max_value, n.Scalar()));
  return v;
}

}  // namespace perfgate::suite::yaml
