#pragma once
// Parameter values of one configuration. Matrix axes whose values are dicts
// (`dataloader: [{num_workers: 2, prefetch: 2}]`) are flattened to dotted keys
// ("dataloader.num_workers"), so every parameter is one scalar with a name.

#include <map>
#include <string>

namespace perfgate::model {

struct Scalar {
  enum class Kind { String, Int, Float, Bool };
  Kind kind = Kind::String;
  std::string text;  // as written in YAML / on the command line; what placeholders substitute

  static Scalar infer(std::string text);  // "25" -> Int, "0.5" -> Float, "true" -> Bool, else String
  bool operator==(const Scalar& o) const { return text == o.text; }
};

using Params = std::map<std::string, Scalar>;  // sorted: the canonical order

// Canonical JSON of the parameters, nested by dotted key, keys sorted, typed
// values: {"bucket_mb":25,"dataloader":{"num_workers":2}}. Equal params give
// equal text, so it identifies a configuration in the store.
std::string params_json(const Params& p);
// Inverse of params_json (flattening nested objects to dotted keys).
Params params_from_json(const std::string& json_text);
// "bucket_mb=25 dataloader.num_workers=2 graph_mode=eager": the short form for tables.
std::string params_label(const Params& p);

}  // namespace perfgate::model
