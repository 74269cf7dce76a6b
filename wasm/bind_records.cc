// JS API of records in: plain records → the dataset of a plan's inputs in one call
// (core/features/records_dataset.h: the records cross into wasm once, as JSON text, and only the
// dataset's handle comes back), and the columns alone for inspection
// (core/features/featurize_records.h).
//
//   const data = module.Dataset.fromRecords(planJson, JSON.stringify(records), labels, 0);
//   const same = plan.datasetFromRecords(JSON.stringify(records), labels, 0);  // plan: module.Plan
//   const texts = module.Dataset.fromTexts(planJson, JSON.stringify([{text: 'win'}]), labels);
//   const inputs = module.featurizeRecords(planJson, JSON.stringify(records));
//   const again = plan.featurizeRecords(JSON.stringify(records));
//   // [{name: 'body', kind: 'sparse_ids', offsets: Uint32Array, ids: Uint32Array,
//   //   weights: Float32Array, numFeatures: 262144},
//   //  {name: 'numeric', kind: 'dense', dense: Float32Array, width: 3}, ...]
//
// featurizeRecords gives one entry per plan input that has "features", in the order of the inputs'
// names. An Error with the core's message ("records[17].sender_domain: ...") when the plan or a
// record breaks a rule. The JSON forms parse only the plan's inputs (a plan of inputs alone
// featurizes); a Plan's were parsed with it.
#include <emscripten/bind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/features/featurize_records.h"
#include "core/features/input_features.h"
#include "core/features/records_dataset.h"
#include "core/train/plan.h"
#include "dataset_handle.h"
#include "js_interop.h"
#include "plan_handle.h"

namespace fedleaf::wasm {
namespace {

// A new JS typed array of type `js_type` holding a copy of `values`.
template <class T>
val typed_array_to_js(const std::vector<T>& values, const char* js_type) {
  const val bytes =
      bytes_to_js(reinterpret_cast<const std::uint8_t*>(values.data()), values.size() * sizeof(T));
  return val::global(js_type).new_(bytes["buffer"], bytes["byteOffset"],
                                   static_cast<double>(values.size()));
}

val input_to_js(const core::InputColumns& c) {
  val out = val::object();
  out.set("name", c.name);
  if (c.kind == core::InputKind::kDense) {
    out.set("kind", std::string("dense"));
    out.set("dense", typed_array_to_js(c.dense, "Float32Array"));
    out.set("width", static_cast<double>(c.width));
  } else {
    out.set("kind", std::string("sparse_ids"));
    out.set("offsets", typed_array_to_js(c.offsets, "Uint32Array"));
    out.set("ids", typed_array_to_js(c.ids, "Uint32Array"));
    out.set("weights", typed_array_to_js(c.weights, "Float32Array"));
    out.set("numFeatures", static_cast<double>(c.num_features));
  }
  return out;
}

val columns_to_js(std::vector<core::InputColumns> columns) {
  val out = val::array();
  for (std::size_t i = 0; i < columns.size(); ++i) {
    out.set(i, input_to_js(columns[i]));
    // Each input's arrays are in JS now: free them before converting the next.
    columns[i] = core::InputColumns{};
  }
  return out;
}

val featurize_records(const std::string& plan_json, const std::string& records_json) {
  return call_from_js(
      [&] { return columns_to_js(core::featurize_records(plan_json, records_json)); });
}

// labels: class labels (target_width 0) or float targets, as DatasetHandle::from_records says.
core::Dataset records_dataset(const std::vector<core::InputFeatures>& inputs,
                              const std::string& records_json, const val& labels,
                              double target_width) {
  if (target_width == 0) {
    return core::dataset_from_records(inputs, records_json,
                                      typed_vector_from_js<std::int32_t>(labels, "labels"));
  }
  core::Dataset::Targets targets;
  targets.values = typed_vector_from_js<float>(labels, "labels.targets");
  targets.width = static_cast<std::size_t>(target_width);
  return core::dataset_from_records(inputs, records_json, std::move(targets));
}

}  // namespace

DatasetHandle* DatasetHandle::from_records(const std::string& plan_json,
                                           const std::string& records_json, val labels,
                                           double target_width) {
  return call_from_js([&] {
    return new DatasetHandle(
        records_dataset(core::parse_input_features(plan_json), records_json, labels, target_width));
  });
}

DatasetHandle* DatasetHandle::from_texts(const std::string& plan_json,
                                         const std::string& records_json, val labels) {
  return call_from_js([&] {
    const std::vector<core::InputFeatures> text{
        core::text_input_features(core::text_features_from_plan(plan_json))};
    return new DatasetHandle(records_dataset(text, records_json, labels, 0));
  });
}

DatasetHandle* PlanHandle::dataset_from_records(const std::string& records_json, val labels,
                                                double target_width) const {
  return call_from_js([&] {
    return new DatasetHandle(
        records_dataset(plan_->input_features, records_json, labels, target_width));
  });
}

val PlanHandle::featurize_records(const std::string& records_json) const {
  return call_from_js(
      [&] { return columns_to_js(core::featurize_records(plan_->input_features, records_json)); });
}

EMSCRIPTEN_BINDINGS(fedleaf_records) {
  emscripten::function("featurizeRecords", &featurize_records);
}

}  // namespace fedleaf::wasm
