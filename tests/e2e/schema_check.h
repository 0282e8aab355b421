// A checker of the JSON Schema keywords docs/schemas/*.schema.json use: type,
// const, enum, required, properties, additionalProperties (a schema), items, minimum, anyOf
// and $ref into #/$defs.
// A keyword outside those is itself an error, so a schema that grows one the
// checker does not know fails the test instead of passing unchecked. (Debian has
// python3-jsonschema; the build image does not install it, and the C++ tests
// already read JSON with nlohmann: this keeps the suite free of one more package.)
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace dstest {

inline bool schema_type_is(const nlohmann::json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "integer") return v.is_number_integer() || v.is_number_unsigned();
  if (t == "number") return v.is_number();
  return false;
}

// Every way `doc` breaks `schema` (resolved against `root`), each "path: what".
inline void schema_check(const nlohmann::json& root, const nlohmann::json& schema, const nlohmann::json& doc,
                         const std::string& path, std::vector<std::string>& errors) {
  static const std::set<std::string> annotations = {"$schema", "$id", "title", "description", "$defs"};
  static const std::set<std::string> known = {"type", "const", "enum", "required", "properties", "items",
                                              "minimum", "anyOf", "$ref", "additionalProperties"};
  for (auto it = schema.begin(); it != schema.end(); ++it)
    if (!annotations.count(it.key()) && !known.count(it.key()))
      errors.push_back(path + ": the checker does not know the keyword " + it.key());
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"];
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0 || !root["$defs"].contains(ref.substr(prefix.size())))
      errors.push_back(path + ": unresolved $ref " + ref);
    else
      schema_check(root, root["$defs"][ref.substr(prefix.size())], doc, path, errors);
  }
  if (schema.contains("type")) {
    const nlohmann::json& t = schema["type"];
    bool ok = false;
    if (t.is_string()) ok = schema_type_is(doc, t);
    for (const auto& one : t.is_array() ? t : nlohmann::json::array()) ok = ok || schema_type_is(doc, one);
    if (!ok) {
      errors.push_back(path + ": expected type " + t.dump() + ", got " + doc.dump().substr(0, 60));
      return;
    }
  }
  if (schema.contains("const") && doc != schema["const"])
    errors.push_back(path + ": expected " + schema["const"].dump() + ", got " + doc.dump().substr(0, 60));
  if (schema.contains("enum")) {
    bool in = false;
    for (const auto& e : schema["enum"]) in = in || e == doc;
    if (!in) errors.push_back(path + ": " + doc.dump().substr(0, 60) + " not in " + schema["enum"].dump());
  }
  if (schema.contains("minimum") && doc.is_number() && doc.get<double>() < schema["minimum"].get<double>())
    errors.push_back(path + ": " + doc.dump() + " below the minimum " + schema["minimum"].dump());
  if (schema.contains("anyOf")) {
    bool any = false;
    for (const auto& alt : schema["anyOf"]) {
      std::vector<std::string> e;
      schema_check(root, alt, doc, path, e);
      any = any || e.empty();
    }
    if (!any) errors.push_back(path + ": matches none of anyOf");
  }
  if (doc.is_object()) {
    for (const auto& r : schema.value("required", nlohmann::json::array()))
      if (!doc.contains(r.get<std::string>())) errors.push_back(path + ": missing " + r.get<std::string>());
    if (schema.contains("properties"))
      for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it)
        if (doc.contains(it.key())) schema_check(root, it.value(), doc[it.key()], path + "." + it.key(), errors);
    // additionalProperties as a schema: every member `properties` does not name.
    if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object())
      for (auto it = doc.begin(); it != doc.end(); ++it)
        if (!schema.value("properties", nlohmann::json::object()).contains(it.key()))
          schema_check(root, schema["additionalProperties"], it.value(), path + "." + it.key(), errors);
  }
  if (doc.is_array() && schema.contains("items"))
    for (size_t i = 0; i < doc.size(); ++i)
      schema_check(root, schema["items"], doc[i], path + "[" + std::to_string(i) + "]", errors);
}

inline std::vector<std::string> schema_errors(const nlohmann::json& schema, const nlohmann::json& doc) {
  std::vector<std::string> errors;
  schema_check(schema, schema, doc, "$", errors);
  return errors;
}

}  // namespace dstest
