// Readers of plan JSON fields, shared by the plan's parsers (train/plan.cc: model, train and
// data; each layer type's file: its layer's fields; aggregation/updates/update_plan.cc: updates),
// so all answer a broken field alike: InvalidInput "<path>: <rule>", with the path in the plan's
// own syntax.
//
//   using namespace plan_json;
//   const json* v = find_field(object, "epochs");                    // nullptr when absent
//   std::string loss = get_string(model, "plan.model", "loss");      // "plan.model.loss: missing"
//   std::string hash = get_string(f, path, "hash", "murmur3_32");    // with a default
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json/json_duplicate_keys.h"
#include "core/json/json_nesting.h"

namespace fedleaf::core::plan_json {

using json = nlohmann::json;

[[noreturn]] inline void fail(const std::string& path, const std::string& rule) {
  throw InvalidInput(path + ": " + rule);
}

inline const json* find_field(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// Field `key` of `object` (at `path`), which must be present: "<path>.<key>: missing".
inline const json& require(const json& object, const std::string& path, const char* key) {
  const json* v = find_field(object, key);
  if (v == nullptr) fail(path + "." + key, "missing");
  return *v;
}

// Field `key` of `object`, which must be present and an object.
inline const json& require_object(const json& object, const std::string& path, const char* key) {
  const json& v = require(object, path, key);
  if (!v.is_object()) fail(path + "." + key, "expected an object");
  return v;
}

// String field `key` of `object` (at `path`); `fallback` when absent, or missing is an error
// when there is none.
inline std::string get_string(const json& object, const std::string& path, const char* key,
                              const char* fallback = nullptr) {
  const json* v = find_field(object, key);
  if (v == nullptr) {
    if (fallback == nullptr) fail(path + "." + key, "missing");
    return fallback;
  }
  if (!v->is_string()) fail(path + "." + key, "expected a string");
  return v->get<std::string>();
}

// The plan's text as JSON; "plan: not valid JSON (...)" when it is not, "plan: JSON nested
// deeper than ..." past kMaxJsonNesting, "plan: the key 'epochs' (in 'train') appears twice".
// The value named by string field `key` (`fallback` when absent). An unknown name fails naming
// what the field is (`what`) and every accepted name. `choices` is a braced list of
// {"name", value} pairs, or a constant std::array of them (then the plan's schema export,
// core/train/plan_schema.h, lists the same names).
template <class Value>
Value get_choice(const json& object, const std::string& path, const char* key, const char* fallback,
                 const char* what, const std::pair<const char*, Value>* first, std::size_t count) {
  const std::string name = get_string(object, path, key, fallback);
  std::string expected;
  for (std::size_t k = 0; k < count; ++k) {
    if (name == first[k].first) return first[k].second;
    expected += (k == 0 ? "" : k + 1 == count ? " or " : ", ") + std::string(first[k].first);
  }
  fail(path + "." + key,
       "unknown " + std::string(what) + " '" + name + "' (expected " + expected + ")");
}

template <class Value>
Value get_choice(const json& object, const std::string& path, const char* key, const char* fallback,
                 const char* what, std::initializer_list<std::pair<const char*, Value>> choices) {
  return get_choice(object, path, key, fallback, what, choices.begin(), choices.size());
}

template <class Value, std::size_t N>
Value get_choice(const json& object, const std::string& path, const char* key, const char* fallback,
                 const char* what, const std::array<std::pair<const char*, Value>, N>& choices) {
  return get_choice(object, path, key, fallback, what, choices.data(), N);
}

inline std::uint64_t get_integer(const json& object, const std::string& path, const char* key,
                                 std::optional<std::uint64_t> fallback, std::uint64_t min,
                                 std::uint64_t max = 0xffffffffull) {
  const json* v = find_field(object, key);
  if (v == nullptr) {
    if (!fallback) fail(path + "." + key, "missing");
    return *fallback;
  }
  const std::string range =
      "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!v->is_number_integer()) fail(path + "." + key, range);
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u < min || u > max) fail(path + "." + key, range);
    return u;
  }
  const auto s = v->get<std::int64_t>();
  if (s < 0 || static_cast<std::uint64_t>(s) < min || static_cast<std::uint64_t>(s) > max) {
    fail(path + "." + key, range);
  }
  return static_cast<std::uint64_t>(s);
}

// get_integer for sizes; every bound used is below 2^32, so the value fits size_t on wasm32.
inline std::size_t get_size(const json& object, const std::string& path, const char* key,
                            std::optional<std::uint64_t> fallback, std::uint64_t min,
                            std::uint64_t max = 0xffffffffull) {
  return static_cast<std::size_t>(get_integer(object, path, key, fallback, min, max));
}

// A finite number; `rule` describes the allowed range and `ok` checks it, on the number and on
// the 32-bit float training uses (1e300 is inf there, 1e-300 zero, 0.99999999999 one).
template <class Check>
float get_float(const json& object, const std::string& path, const char* key,
                std::optional<float> fallback, const char* rule, Check ok) {
  const json* v = find_field(object, key);
  if (v == nullptr) {
    if (!fallback) fail(path + "." + key, "missing");
    return *fallback;
  }
  if (!v->is_number()) fail(path + "." + key, std::string("expected a number ") + rule);
  const double d = v->get<double>();
  if (!std::isfinite(d) || !ok(d)) fail(path + "." + key, std::string("expected a number ") + rule);
  const auto f = static_cast<float>(d);
  if (!std::isfinite(f) || !ok(static_cast<double>(f))) {
    fail(path + "." + key, std::string("expected a number ") + rule + ", also as a 32-bit float");
  }
  return f;
}

inline bool get_bool(const json& object, const std::string& path, const char* key, bool fallback) {
  const json* v = find_field(object, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) fail(path + "." + key, "expected true or false");
  return v->get<bool>();
}

inline json parse_text(const std::string& text) {
  check_json_nesting(text, kMaxJsonNesting, "plan");
  DuplicateKeys duplicates;
  json plan;
  try {
    plan = json::parse(text, duplicates.callback());
  } catch (const json::exception& e) {
    fail("plan", std::string("not valid JSON (") + e.what() + ")");
  }
  if (duplicates.found()) fail("plan", "the key " + duplicates.describe() + " appears twice");
  return plan;
}

}  // namespace fedleaf::core::plan_json
