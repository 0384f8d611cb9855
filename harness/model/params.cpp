#include "harness/model/params.hpp"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

namespace perfgate::model {
namespace {

nlohmann::json to_json(const Scalar& s) {
  switch (s.kind) {
    case Scalar::Kind::Int: {
      long long v = 0;
      std::from_chars(s.text.data(), s.text.data() + s.text.size(), v);
      return v;
    }
    case Scalar::Kind::Float:
      return std::stod(s.text);
    case Scalar::Kind::Bool:
      return s.text == "true";
    case Scalar::Kind::String:
      break;
  }
  return s.text;
}

void flatten(const nlohmann::json& j, const std::string& prefix, Params& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    const auto& v = it.value();
    if (v.is_object())
      flatten(v, key, out);
    else if (v.is_string())
      out[key] = Scalar{Scalar::Kind::String, v.get<std::string>()};
    else if (v.is_boolean())
      out[key] = Scalar{Scalar::Kind::Bool, v.get<bool>() ? "true" : "false"};
    else if (v.is_number_integer())
      out[key] = Scalar{Scalar::Kind::Int, v.dump()};
    else
      out[key] = Scalar{Scalar::Kind::Float, v.dump()};
  }
}

}  // namespace

Scalar Scalar::infer(std::string text) {
  Scalar s{Kind::String, std::move(text)};
  const std::string& t = s.text;
  if (t == "true" || t == "false") {
    s.kind = Kind::Bool;
    return s;
  }
  if (t.empty()) return s;
  long long i = 0;
  auto ri = std::from_chars(t.data(), t.data() + t.size(), i);
  if (ri.ec == std::errc{} && ri.ptr == t.data() + t.size()) {
    s.kind = Kind::Int;
    return s;
  }
  double d = 0;
  auto rd = std::from_chars(t.data(), t.data() + t.size(), d);
  // "nan" and "inf" stay text: JSON cannot hold them, and they would all become null.
  if (rd.ec == std::errc{} && rd.ptr == t.data() + t.size() && std::isfinite(d)) s.kind = Kind::Float;
  return s;
}

std::string params_json(const Params& p) {
  nlohmann::json j = nlohmann::json::object();
  // Not a structured binding: clang 14 (the fuzz build) cannot capture those in lambdas.
  for (const auto& entry : p) {
    const auto& key = entry.first;
    const auto& value = entry.second;
    // A plain key is a member of the top object: the same JSON as through a
    // pointer, without parsing one (a suite's matrix makes one per key per
    // configuration, most of the load time of a 10,000-configuration sweep).
    if (key.find('.') == std::string::npos) {
      j[key] = to_json(value);
      continue;
    }
    j[nlohmann::json::json_pointer("/" + [&] {
      std::string ptr;
      for (char c : key) {
        if (c == '.')
          ptr += '/';
        else if (c == '~')
          ptr += "~0";
        else if (c == '/')
          ptr += "~1";
        else
          ptr += c;
      }
      return ptr;
    }())] = to_json(value);
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Params params_from_json(const std::string& json_text) {
  Params out;
  auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_object()) flatten(j, "", out);
  return out;
}

std::string params_label(const Params& p) {
  std::string out;
  for (const auto& [key, value] : p) {
    if (!out.empty()) out += ' ';
    out += key;
    out += '=';
    out += value.text;
  }
  return out;
}

}  // namespace perfgate::model
