#include "core/train/plan.h"

#include <algorithm>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/features/input_features.h"
#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/train/optimizer.h"
#include "core/train/plan_format.h"

namespace fedleaf::core {
namespace {

using namespace plan_json;

TrainSpec parse_train(const json& train) {
  const std::string path = "plan.train";
  TrainSpec spec;
  check_known_fields(train, path, kTrainFields);
  spec.optimizer =
      parse_optimizer_spec(require_object(train, path, "optimizer"), path + ".optimizer");
  spec.epochs = get_size(train, path, "epochs", 1, 1, 1000000);
  spec.batch_size = get_size(train, path, "batch_size", 32, 1, 1u << 20);
  spec.shuffle = get_bool(train, path, "shuffle", true);
  spec.shuffle_seed = get_integer(train, path, "shuffle_seed", 0, 0, ~std::uint64_t{0});
  if (find_field(train, "clip_norm") != nullptr) {
    spec.clip_norm =
        get_float(train, path, "clip_norm", std::nullopt, "> 0", [](double d) { return d > 0; });
  }
  return spec;
}

// The updates section is parsed by the aggregation library (one parser for every reader); the
// plan adds that each entry names a parameter of its model.
void check_update_names(const UpdatePlan& updates, const std::vector<ParameterSpec>& params) {
  std::string known;
  for (const ParameterSpec& p : params) known += (known.empty() ? "" : ", ") + p.name;
  for (const TensorUpdatePlan& t : updates.tensors) {
    const bool declared = std::any_of(params.begin(), params.end(),
                                      [&](const ParameterSpec& p) { return p.name == t.name; });
    if (!declared) fail(t.path, "not a parameter of the model (parameters: " + known + ")");
  }
}

// The one-input plan's top-level "features": the text featurizer's options, parsed where every
// reader of them parses them (text_features.h).
TextFeatureOptions parse_features(const json& f) {
  return parse_text_feature_options(f, "plan.features");
}

// Each input's "features" (how records become the input), parsed by the records featurizer's
// parser (core/features/input_features.h: the one parser of them, which also rewrites a one-input
// text plan into its text input), then checked against the graph: a sparse input's ids must fit
// every table it feeds (one feed per input and table), since a bucket past a table's vocab would
// fail every leaf's training. A text plan's input is unnamed: the plan's only input, feeding
// every table.
std::vector<InputFeatures> parse_records_features(const json& plan, const ModelSpec& model,
                                                  const std::vector<PlanTable>& tables) {
  std::vector<InputFeatures> out = parse_input_features(plan);
  for (const InputFeatures& f : out) {
    for (const PlanTable& table : tables) {
      for (const std::size_t input : table.inputs) {
        if (!f.input.empty() && model.inputs[input].name != f.input) continue;
        check_buckets_fit_vocab(f, table.vocab, table.parameter);
        break;
      }
    }
  }
  return out;
}

json parse_json(const std::string& text) {
  json plan = parse_text(text);
  if (!plan.is_object()) fail("plan", "expected a JSON object");
  return plan;
}

}  // namespace

Plan parse_plan(const std::string& plan_json, PlanUse use) {
  const json plan = parse_json(plan_json);
  Plan out;
  check_plan_format(plan);  // first: a newer plan's fields are refused by its version, not by name
  check_known_fields(plan, "plan", kPlanFields);
  out.kind = get_choice(plan, "plan", "kind", "train", "kind", kPlanKinds);
  out.model = parse_model_spec(plan);
  out.tables = plan_tables(out.model);
  out.input_features = parse_records_features(plan, out.model, out.tables);
  const bool trains = use == PlanUse::kTask && out.kind == PlanKind::kTrain;
  if (const json* train = find_field(plan, "train")) {
    if (!train->is_object()) fail("plan.train", "expected an object");
    out.train = parse_train(*train);
  } else if (trains) {
    fail("plan.train", "missing");
  }
  out.updates = parse_update_plan(plan);
  check_update_names(out.updates, parameter_specs(out.model));
  if (trains && out.updates.tensors.empty()) {
    fail("plan.updates", "missing (a train plan names at least one tensor to update)");
  }
  if (const json* features = find_field(plan, "features")) {
    if (!features->is_object()) fail("plan.features", "expected an object");
    out.features = parse_features(*features);
  }
  // Read by the TF.js export alone (js_bindings/src/interop/), never by training.
  if (const json* tfjs = find_field(plan, "tfjs"); tfjs != nullptr && !tfjs->is_object()) {
    fail("plan.tfjs", "expected an object");
  }
  if (const json* eval = find_field(plan, "eval")) {
    if (!eval->is_object()) fail("plan.eval", "expected an object");
    check_known_fields(*eval, "plan.eval", kEvalFields);
    out.eval_batch_size = get_size(*eval, "plan.eval", "batch_size", 256, 1, 1u << 20);
  }
  return out;
}

TextFeatureOptions text_features_from_plan(const std::string& plan_json) {
  const json plan = parse_json(plan_json);
  const json* features = find_field(plan, "features");
  if (features == nullptr) return TextFeatureOptions{};
  if (!features->is_object()) fail("plan.features", "expected an object");
  return parse_features(*features);
}

}  // namespace fedleaf::core
