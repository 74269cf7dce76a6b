// JS API of local training: datasets built from whole buffers, a training session driven one
// batch per call (so V8 tiers the code up and the page stays responsive), the stateless
// execute(), and model initialization.
//
//   const data = module.Dataset.fromTexts(utf8Bytes, byteOffsets, labels, featuresJson);
//   const s = module.TrainingSession.create(planJson, modelBytes, data);
//   while (s.step(16)) report(s.completedSteps(), s.meanLoss());
//   const update = s.result('task-7');     // Uint8Array (safetensors)
//   s.delete(); data.delete();             // embind objects are freed explicitly
#include <emscripten/bind.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/train/dataset.h"
#include "core/train/executor.h"
#include "core/train/plan.h"
#include "core/train/svmlight.h"
#include "core/train/text_features.h"
#include "core/train/training_session.h"
#include "js_interop.h"

namespace fedleaf::wasm {
namespace {

template <class T>
std::vector<T> typed_vector_from_js(const val& array, const std::string& what) {
  const std::vector<std::uint8_t> bytes = bytes_from_js(array);
  if (bytes.size() % sizeof(T) != 0) {
    throw InvalidInput(what + ": byte length " + std::to_string(bytes.size()) +
                       " is not a multiple of " + std::to_string(sizeof(T)));
  }
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

class DatasetHandle {
 public:
  explicit DatasetHandle(core::Dataset dataset) : dataset_(std::move(dataset)) {}

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
      return new DatasetHandle(core::Dataset::from_csr(
          typed_vector_from_js<std::uint32_t>(offsets, "offsets"),
          typed_vector_from_js<std::uint32_t>(ids, "ids"),
          typed_vector_from_js<float>(weights, "weights"),
          typed_vector_from_js<std::int32_t>(labels, "labels"),
          static_cast<std::uint32_t>(num_features)));
    });
  }

  DatasetHandle* subset(val examples) const {
    return call_from_js([&] {
      return new DatasetHandle(
          dataset_.subset(typed_vector_from_js<std::uint32_t>(examples, "examples")));
    });
  }

  double size() const { return static_cast<double>(dataset_.size()); }
  double num_features() const { return static_cast<double>(dataset_.num_features()); }
  double num_nonzeros() const { return static_cast<double>(dataset_.num_nonzeros()); }
  bool is_sparse() const { return dataset_.is_sparse(); }
  // Distinct feature ids the dataset touches: the embedding rows a leaf trains and uploads.
  double num_distinct_ids() const {
    std::vector<std::uint32_t> ids = dataset_.ids();
    std::sort(ids.begin(), ids.end());
    return static_cast<double>(std::unique(ids.begin(), ids.end()) - ids.begin());
  }
  val labels() const {
    const auto& l = dataset_.labels();
    return bytes_to_js(reinterpret_cast<const std::uint8_t*>(l.data()), l.size() * sizeof(std::int32_t));
  }

  const core::Dataset& dataset() const { return dataset_; }

 private:
  core::Dataset dataset_;
};

class TrainingSessionHandle {
 public:
  // Keeps the dataset alive as long as the session: the session borrows it.
  static TrainingSessionHandle* create(const std::string& plan_json, val model_bytes,
                                       const DatasetHandle& dataset) {
    return call_from_js([&] {
      const std::vector<std::uint8_t> model = bytes_from_js(model_bytes);
      return new TrainingSessionHandle(std::make_unique<core::TrainingSession>(
          plan_json, model.data(), model.size(), dataset.dataset()));
    });
  }

  // Trains up to max_steps batches; false once training is done.
  bool step(double max_steps) {
    return call_from_js([&] {
      for (double i = 0; i < max_steps; ++i) {
        if (!session_->step()) return false;
      }
      return !session_->done();
    });
  }

  double completed_steps() const { return static_cast<double>(session_->completed_steps()); }
  double total_steps() const { return static_cast<double>(session_->total_steps()); }
  double mean_loss() const { return session_->mean_loss(); }
  double accuracy() const { return session_->accuracy(); }
  val result(const std::string& task_id) const {
    return call_from_js([&] { return bytes_to_js(session_->result(task_id)); });
  }

 private:
  explicit TrainingSessionHandle(std::unique_ptr<core::TrainingSession> session)
      : session_(std::move(session)) {}
  std::unique_ptr<core::TrainingSession> session_;
};

val execute(const std::string& plan_json, val model_bytes, const DatasetHandle& dataset,
            const std::string& task_id) {
  return call_from_js([&] {
    const std::vector<std::uint8_t> model = bytes_from_js(model_bytes);
    core::ExecuteOptions options;
    options.task_id = task_id;
    return bytes_to_js(
        core::execute(plan_json, model.data(), model.size(), dataset.dataset(), options));
  });
}

val initialize_model(const std::string& plan_json, double seed) {
  return call_from_js([&] {
    return bytes_to_js(core::initialize_model(plan_json, static_cast<std::uint64_t>(seed)));
  });
}

// The plan normalized by the core's parser, or an Error naming the JSON path.
void validate_plan(const std::string& plan_json) {
  call_from_js([&] { core::parse_plan(plan_json); });
}

}  // namespace

EMSCRIPTEN_BINDINGS(fedleaf_train) {
  using emscripten::allow_raw_pointers;
  emscripten::class_<DatasetHandle>("Dataset")
      .class_function("fromTexts", &DatasetHandle::from_texts, allow_raw_pointers())
      .class_function("fromSvmlight", &DatasetHandle::from_svmlight, allow_raw_pointers())
      .class_function("fromDense", &DatasetHandle::from_dense, allow_raw_pointers())
      .class_function("fromCsr", &DatasetHandle::from_csr, allow_raw_pointers())
      .function("subset", &DatasetHandle::subset, allow_raw_pointers())
      .function("size", &DatasetHandle::size)
      .function("numFeatures", &DatasetHandle::num_features)
      .function("numNonzeros", &DatasetHandle::num_nonzeros)
      .function("numDistinctIds", &DatasetHandle::num_distinct_ids)
      .function("isSparse", &DatasetHandle::is_sparse)
      .function("labels", &DatasetHandle::labels);
  emscripten::class_<TrainingSessionHandle>("TrainingSession")
      .class_function("create", &TrainingSessionHandle::create, allow_raw_pointers())
      .function("step", &TrainingSessionHandle::step)
      .function("completedSteps", &TrainingSessionHandle::completed_steps)
      .function("totalSteps", &TrainingSessionHandle::total_steps)
      .function("meanLoss", &TrainingSessionHandle::mean_loss)
      .function("accuracy", &TrainingSessionHandle::accuracy)
      .function("result", &TrainingSessionHandle::result);
  emscripten::function("execute", &execute);
  emscripten::function("initializeModel", &initialize_model);
  emscripten::function("validatePlan", &validate_plan);
}

}  // namespace fedleaf::wasm
