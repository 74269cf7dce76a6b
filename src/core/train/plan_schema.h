// The plan's schema as its parsers check it: for each JSON object a plan may hold, the fields it
// accepts, and for each field that names one of a set, the names. Both are read from the
// constants the parsers themselves check against (kTrainFields, kLosses, each layer kind's fields
// and choices in the layer table...), so a field or name added to a parser appears here with no
// other edit (a new layer kind: its table line); the wasm module exports it (planSchema) and
// tests/js/plan_types.test.mjs compares it with js_bindings/index.d.ts.
//
//   const PlanSchema s = plan_schema();
//   s.objects["plan.train"] == {"optimizer", "epochs", "batch_size", ...};
//   s.choices["plan.model.loss"] == {"softmax_cross_entropy", ...};
//
// A path is the plan's JSON path with "*" for any key of an object of named entries
// ("plan.updates.*") or any element of a list ("plan.model.layers.*"), and a selector for one
// form of an object that has several: "[type=dense]" (the form whose "type" is dense) or
// "[column]" (the form that has the field "column").
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fedleaf::core {

struct PlanSchema {
  std::map<std::string, std::vector<std::string>> objects;  // path -> fields
  std::map<std::string, std::vector<std::string>> choices;  // path -> names
};

PlanSchema plan_schema();

// plan_schema() as JSON text: {"objects": {path: [field, ...]}, "choices": {path: [name, ...]}}.
std::string plan_schema_json();

}  // namespace fedleaf::core
