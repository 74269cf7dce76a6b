#include "core/train/plan_schema.h"

#include <iterator>

#include <nlohmann/json.hpp>

#include "core/aggregation/operators/operator_table.h"
#include "core/aggregation/updates/update_plan.h"
#include "core/features/input_features.h"
#include "core/features/text_features.h"
#include "core/json/json_known_fields.h"
#include "core/model/layer_registry.h"
#include "core/train/plan.h"
#include "core/wire/update_compression.h"

namespace fedleaf::core {
namespace {

std::vector<std::string> names(FieldList fields) { return {fields.begin(), fields.end()}; }

template <class Values, class Name>
std::vector<std::string> named(const Values& values, Name name) {
  std::vector<std::string> out;
  out.reserve(std::size(values));
  for (const auto& value : values) out.emplace_back(name(value));
  return out;
}

template <class Choices>
std::vector<std::string> first_names(const Choices& choices) {
  return named(choices, [](const auto& choice) { return choice.first; });
}

}  // namespace

PlanSchema plan_schema() {
  PlanSchema s;
  auto& o = s.objects;
  auto& c = s.choices;
  o["plan"] = names(kPlanFields);
  c["plan.kind"] = first_names(kPlanKinds);
  o["plan.model"] = names(kModelFields);
  c["plan.model.loss"] = first_names(kLosses);
  o["plan.model.inputs.*"] = names(kInputFields);
  c["plan.model.inputs.*.type"] = first_names(kInputKinds);
  const std::string layers = "plan.model.layers.*";
  for (const LayerKind* kind : layer_kinds()) {
    const std::string form = layers + "[type=" + kind->type + "]";
    c[layers + ".type"].emplace_back(kind->type);
    o[form] = names(kind->fields);
    for (const LayerChoice& choice : kind->choices) {
      c[form + "." + choice.field] = names(choice.names);
    }
  }
  o["plan.train"] = names(kTrainFields);
  o["plan.train.optimizer"] = names(kOptimizerFields);
  c["plan.train.optimizer.type"] = first_names(kOptimizerTypes);
  c["plan.train.optimizer.epsilon_form"] = first_names(kAdamEpsilonForms);
  o["plan.eval"] = names(kEvalFields);

  const std::string update = "plan.updates.*";
  o[update] = names(kTensorUpdateFields);
  c[update + ".encoding"] = named(kUpdateEncodings, update_encoding_name);
  c[update + ".aggregator"] = named(kSparseSumOperators, operator_name);
  c[update + ".download"] = first_names(kDownloadModes);
  c[update + ".download_values"] = named(kDownloadValues, values_compression_name);
  o[update + ".compression"] = names(kCompressionFields);
  c[update + ".compression.values"] = named(kValuesCompressions, values_compression_name);
  c[update + ".compression.ids"] = named(kIdsCompressions, ids_compression_name);
  o[update + ".clip"] = names(kClipFields);
  o[update + ".select_padding"] = names(kSelectPaddingFields);
  o["plan.max_examples_per_report"] = names(kExampleCapFields);

  o["plan.features"] = names(kTextFeatureFields);
  c["plan.features.hash"] = names(kTextHashes);
  const std::string features = "plan.model.inputs.*.features";
  o[features + "[text]"] = names(kTextInputFields);
  c[features + "[text].hash"] = names(kTextHashes);
  o[features + "[column]"] = names(kColumnInputFields);
  o[features + "[cross]"] = names(kCrossInputFields);
  o[features + "[numeric]"] = names(kNumericInputFields);
  o[features + "[numeric].numeric.*"] = names(kNumericEntryFields);
  c[features + "[numeric].numeric.*.transform"] = first_names(kNumericTransforms);
  o[features + "[numeric].numeric.*.transform"] = names(kNumericTransformFields);
  o[features + "[numeric].numeric.*.transform.standardize"] = names(kStandardizeFields);
  return s;
}

std::string plan_schema_json() {
  const PlanSchema s = plan_schema();
  return nlohmann::json{{"objects", s.objects}, {"choices", s.choices}}.dump();
}

}  // namespace fedleaf::core
