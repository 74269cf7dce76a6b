// The dataset object of the JS API (module.Dataset): a core::Dataset owned by an embind handle,
// built from whole buffers. Registered with embind in bind_train.cc; other bindings (predict)
// take it as `const DatasetHandle&`.
//
//   const data = module.Dataset.fromTexts(planJson, JSON.stringify([{text: 'win'}]), labels);
//   data.size(); data.numDistinctIds(); data.delete();
//   const multi = module.Dataset.fromInputs([{name: 'body', sparse: true, ...}], labels);
//   const records = module.Dataset.fromRecords(planJson, JSON.stringify(records), labels, 0);
//   multi.distinctIdsFor(planJson, 'tokens/weight');
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/svmlight.h"
#include "core/error.h"
#include "core/train/plan.h"
#include "core/train/table_rows.h"
#include "js_interop.h"

namespace fedleaf::wasm {

// The bytes of a TypedArray as a vector of T; InvalidInput naming `what` when the byte length is
// not a multiple of sizeof(T). Copied once, straight into the vector (a dataset's ids are the
// largest buffer of a session: no intermediate byte vector).
template <class T>
std::vector<T> typed_vector_from_js(const val& array, const std::string& what) {
  if (array.isUndefined() || array.isNull() || !array["buffer"].as<bool>()) {
    throw InvalidInput(what + ": expected a TypedArray or DataView");
  }
  const auto size = array["byteLength"].as<std::size_t>();
  if (size % sizeof(T) != 0) {
    throw InvalidInput(what + ": byte length " + std::to_string(size) + " is not a multiple of " +
                       std::to_string(sizeof(T)));
  }
  std::vector<T> out(size / sizeof(T));
  if (size == 0) return out;
  const val source = val::global("Uint8Array").new_(array["buffer"], array["byteOffset"], size);
  // The view is made after the allocation above, so memory growth cannot detach it.
  val(emscripten::typed_memory_view(size, reinterpret_cast<std::uint8_t*>(out.data())))
      .call<void>("set", source);
  return out;
}

// The columns of every input of a JS array (see DatasetHandle::from_inputs).
inline std::vector<core::InputColumns> input_columns_from_js(const val& inputs) {
  std::vector<core::InputColumns> out;
  const auto n = inputs["length"].as<std::size_t>();
  for (std::size_t i = 0; i < n; ++i) {
    const val input = inputs[i];
    core::InputColumns c;
    c.name = input["name"].as<std::string>();
    const std::string what = "inputs." + c.name;
    if (input["sparse"].as<bool>()) {
      c.kind = core::InputKind::kSparseIds;
      c.offsets = typed_vector_from_js<std::uint32_t>(input["offsets"], what + ".offsets");
      c.ids = typed_vector_from_js<std::uint32_t>(input["ids"], what + ".ids");
      c.weights = typed_vector_from_js<float>(input["weights"], what + ".weights");
      c.num_features = static_cast<std::uint32_t>(input["numFeatures"].as<double>());
    } else {
      c.kind = core::InputKind::kDense;
      c.dense = typed_vector_from_js<float>(input["dense"], what + ".dense");
      c.width = static_cast<std::size_t>(input["width"].as<double>());
    }
    out.push_back(std::move(c));
  }
  return out;
}

class DatasetHandle {
 public:
  explicit DatasetHandle(core::Dataset dataset)
      : dataset_(std::make_shared<const core::Dataset>(std::move(dataset))) {}

  // Texts as records: records_json is [{"text": ...}, ...] (JSON text), featurized on the records
  // path by the plan's top-level "features" (the defaults when absent; "{}" for the defaults)
  // into one unnamed input (core/features/input_features.h: text_input_features); labels an
  // Int32Array. Defined in bind_records.cc.
  static DatasetHandle* from_texts(const std::string& plan_json, const std::string& records_json,
                                   val labels);

  // Plain records (JSON text) featurized and built into a dataset by the core in one call
  // (core/features/records_dataset.h), the plan's inputs parsed from its JSON (bind_records.cc;
  // Plan.datasetFromRecords does the same with a parsed plan). labels: an Int32Array of class
  // labels when target_width is 0, else a Float32Array of float targets [records, target_width].
  static DatasetHandle* from_records(const std::string& plan_json, const std::string& records_json,
                                     val labels, double target_width);

  static DatasetHandle* from_svmlight(const std::string& text, int index_base,
                                      double num_features) {
    return call_from_js([&] {
      core::SvmlightOptions options;
      options.index_base = index_base;
      options.num_features = static_cast<std::uint32_t>(num_features);
      return new DatasetHandle(core::parse_svmlight(text, options));
    });
  }

  static DatasetHandle* from_dense(val values, double num_columns, val labels) {
    return call_from_js([&] {
      return new DatasetHandle(core::Dataset::from_dense(
          typed_vector_from_js<float>(values, "values"), static_cast<std::size_t>(num_columns),
          typed_vector_from_js<std::int32_t>(labels, "labels")));
    });
  }

  static DatasetHandle* from_csr(val offsets, val ids, val weights, val labels,
                                 double num_features) {
    return call_from_js([&] {
      return new DatasetHandle(
          core::Dataset::from_csr(typed_vector_from_js<std::uint32_t>(offsets, "offsets"),
                                  typed_vector_from_js<std::uint32_t>(ids, "ids"),
                                  typed_vector_from_js<float>(weights, "weights"),
                                  typed_vector_from_js<std::int32_t>(labels, "labels"),
                                  static_cast<std::uint32_t>(num_features)));
    });
  }

  // Several named inputs: `inputs` is a JS array of {name, sparse: true, offsets: Uint32Array,
  // ids: Uint32Array, weights: Float32Array (empty: all 1), numFeatures} or {name, sparse: false,
  // dense: Float32Array, width}, as executor.datasetFromInputs normalizes them; labels an
  // Int32Array.
  static DatasetHandle* from_inputs(val inputs, val labels) {
    return call_from_js([&] {
      return new DatasetHandle(core::Dataset::from_inputs(
          input_columns_from_js(inputs), typed_vector_from_js<std::int32_t>(labels, "labels")));
    });
  }

  // The same with float targets ([examples, width] row-major: mean_squared_error) for labels.
  static DatasetHandle* from_inputs_with_targets(val inputs, val targets, double width) {
    return call_from_js([&] {
      core::Dataset::Targets t;
      t.values = typed_vector_from_js<float>(targets, "targets");
      t.width = static_cast<std::size_t>(width);
      return new DatasetHandle(core::Dataset::from_inputs(input_columns_from_js(inputs), t));
    });
  }

  DatasetHandle* subset(val examples) const {
    return call_from_js([&] {
      return new DatasetHandle(
          dataset_->subset(typed_vector_from_js<std::uint32_t>(examples, "examples")));
    });
  }

  double size() const { return static_cast<double>(dataset_->size()); }
  double num_features() const { return static_cast<double>(dataset_->num_features()); }
  double num_nonzeros() const { return static_cast<double>(dataset_->num_nonzeros()); }
  bool is_sparse() const { return dataset_->is_sparse(); }
  // Distinct feature ids the dataset touches: the embedding rows a leaf trains and uploads.
  double num_distinct_ids() const { return static_cast<double>(dataset_->distinct_ids().size()); }
  // The same ids, sorted, as a Uint32Array: what a leaf asks model:select for.
  val distinct_ids() const {
    return call_from_js([&] {
      const std::vector<std::uint32_t> ids = dataset_->distinct_ids().rows();
      return bytes_to_js(reinterpret_cast<const std::uint8_t*>(ids.data()),
                         ids.size() * sizeof(std::uint32_t));
    });
  }
  // The sorted distinct ids of the embedding table `tensor` of the plan's model: the union over
  // the inputs feeding it (what model:select is asked for that table).
  val distinct_ids_for(const std::string& plan_json, const std::string& tensor) const {
    return call_from_js([&] {
      const core::Plan plan = core::parse_plan(plan_json, core::PlanUse::kInference);
      const std::vector<std::uint32_t> ids = core::table_distinct_ids(plan, *dataset_, tensor);
      return bytes_to_js(reinterpret_cast<const std::uint8_t*>(ids.data()),
                         ids.size() * sizeof(std::uint32_t));
    });
  }
  double num_inputs() const { return static_cast<double>(dataset_->num_inputs()); }
  val labels() const {
    const auto& l = dataset_->labels();
    return bytes_to_js(reinterpret_cast<const std::uint8_t*>(l.data()),
                       l.size() * sizeof(std::int32_t));
  }

  const core::Dataset& dataset() const { return *dataset_; }
  // Shared with whatever outlives a call (a training session): JS may delete() the handle while
  // a session still trains on the dataset, between two of its steps.
  std::shared_ptr<const core::Dataset> shared_dataset() const { return dataset_; }

 private:
  std::shared_ptr<const core::Dataset> dataset_;
};

}  // namespace fedleaf::wasm
