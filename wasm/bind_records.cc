// JS API of records in: plain records → the columns of a plan's inputs, featurized by the core
// (core/features/featurize_records.h), for the executor's datasets.
//
//   const inputs = module.featurizeRecords(planJson, JSON.stringify(records));
//   const same = plan.featurizeRecords(JSON.stringify(records));   // plan: module.Plan
//   // [{name: 'body', kind: 'sparse_ids', offsets: Uint32Array, ids: Uint32Array,
//   //   weights: Float32Array, numFeatures: 262144},
//   //  {name: 'numeric', kind: 'dense', dense: Float32Array, width: 3}, ...]
//
// One entry per plan input that has "features", in the order of the inputs' names. An Error with
// the core's message ("records[17].sender_domain: ...") when the plan or a record breaks a rule.
// The JSON form parses only the plan's inputs (a plan of inputs alone featurizes); a Plan's were
// parsed with it.
#include <emscripten/bind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/features/featurize_records.h"
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

}  // namespace

val PlanHandle::featurize_records(const std::string& records_json) const {
  return call_from_js(
      [&] { return columns_to_js(core::featurize_records(plan_->input_features, records_json)); });
}

EMSCRIPTEN_BINDINGS(fedleaf_records) {
  emscripten::function("featurizeRecords", &featurize_records);
}

}  // namespace fedleaf::wasm
