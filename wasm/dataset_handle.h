// The dataset object of the JS API (module.Dataset): a core::Dataset owned by an embind handle,
// built from whole buffers. Registered with embind in bind_train.cc; other bindings (predict)
// take it as `const DatasetHandle&`.
//
//   const data = module.Dataset.fromTexts(utf8Bytes, byteOffsets, labels, planJson);
//   data.size(); data.numDistinctIds(); data.delete();
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/train/dataset.h"
#include "core/train/plan.h"
#include "core/train/svmlight.h"
#include "core/train/text_features.h"
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

class DatasetHandle {
 public:
  explicit DatasetHandle(core::Dataset dataset)
      : dataset_(std::make_shared<const core::Dataset>(std::move(dataset))) {}

  // texts: UTF-8 bytes of every text back to back; offsets: Uint32Array of num_texts + 1 byte
  // offsets; labels: Int32Array; plan_or_features_json: a plan (its "features" section is used)
  // or "{}" for the defaults.
  static DatasetHandle* from_texts(val texts, val offsets, val labels,
                                   const std::string& plan_json) {
    return call_from_js([&] {
      const std::vector<std::uint8_t> bytes = bytes_from_js(texts);
      const auto offs = typed_vector_from_js<std::uint32_t>(offsets, "offsets");
      const auto labs = typed_vector_from_js<std::int32_t>(labels, "labels");
      if (offs.size() != labs.size() + 1) {
        throw InvalidInput("offsets: expected " + std::to_string(labs.size() + 1) +
                           " entries (one more than labels), got " + std::to_string(offs.size()));
      }
      return new DatasetHandle(core::build_hashed_text_dataset(
          reinterpret_cast<const char*>(bytes.data()), bytes.size(), offs.data(), labs.size(),
          labs.data(), core::text_features_from_plan(plan_json)));
    });
  }

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
