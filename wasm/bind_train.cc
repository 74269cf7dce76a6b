// JS API of local training: datasets built from whole buffers, a training session driven one
// batch per call (so V8 tiers the code up and the page stays responsive), the stateless
// execute() and evaluate(), and model initialization; each takes the plan parsed once
// (module.Plan, plan_handle.h).
//
//   const data = module.Dataset.fromTexts(planJson, JSON.stringify([{text: 'win'}]), labels);
//   const plan = module.Plan.parse(planJson, false);
//   const s = module.TrainingSession.create(plan, modelBytes, data);
//   while (s.step(16)) report(s.completedSteps(), s.meanLoss());
//   const update = s.result('task-7');     // Uint8Array (safetensors)
//   s.delete(); data.delete();             // embind objects are freed explicitly
#include <emscripten/bind.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/data/dataset.h"
#include "core/data/svmlight.h"
#include "core/train/executor.h"
#include "core/train/plan.h"
#include "core/train/training_session.h"
#include "core/wire/safetensors_index.h"
#include "dataset_handle.h"
#include "js_interop.h"
#include "plan_handle.h"

namespace fedleaf::wasm {
namespace {

class TrainingSessionHandle {
 public:
  // Keeps the dataset alive as long as the session (the session borrows it), even when JS deletes
  // the dataset between two steps: a read of freed memory before. The model stays in
  // JS (the session holds a reference: model_bytes must not change until result()): only its
  // header and the byte ranges the session trains (dense parameters, the embedding rows the data
  // touch) are copied into wasm memory, and read again to compute the update.
  static TrainingSessionHandle* create(const PlanHandle& plan, val model_bytes,
                                       const DatasetHandle& dataset) {
    return call_from_js([&] {
      const std::uint64_t size = byte_length_of_js(model_bytes);
      std::uint64_t header_size = 0;
      if (size >= 8) {
        copy_bytes_from_js(model_bytes, 0, 8, reinterpret_cast<std::uint8_t*>(&header_size));
      }
      // A header over the limit is indexed from its 8 length bytes, which index_safetensors
      // rejects before anything that large is copied.
      const std::uint64_t head_wanted =
          header_size <= core::kMaxSafetensorsHeaderBytes ? 8 + header_size : 8;
      const auto head_size = static_cast<std::size_t>(std::min(size, head_wanted));
      std::vector<std::uint8_t> head(head_size);
      copy_bytes_from_js(model_bytes, 0, head_size, head.data());
      const core::SafetensorsIndex index = core::index_safetensors(head.data(), head.size(), size);
      head = {};
      core::ModelByteReader read = [model_bytes](std::uint64_t begin, std::size_t count,
                                                 std::uint8_t* out) {
        copy_bytes_from_js(model_bytes, begin, count, out);
      };
      std::shared_ptr<const core::Dataset> data = dataset.shared_dataset();
      auto session = std::make_unique<core::TrainingSession>(plan.shared_plan(), index,
                                                             std::move(read), *data);
      return new TrainingSessionHandle(std::move(data), std::move(session));
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
  // A Uint8Array the update is written into piece by piece: wasm memory never holds it whole.
  val result(const std::string& task_id) const {
    return call_from_js([&] {
      val out = val::undefined();
      double offset = 0;
      session_->write_result(
          task_id,
          core::ResultSink{[&](std::uint64_t size) {
                             out = val::global("Uint8Array").new_(static_cast<double>(size));
                           },
                           [&](const std::uint8_t* data, std::size_t size) {
                             // Nothing allocates between making the view and copying it.
                             out.call<void>("set", val(emscripten::typed_memory_view(size, data)),
                                            offset);
                             offset += static_cast<double>(size);
                           }});
      return out;
    });
  }

 private:
  TrainingSessionHandle(std::shared_ptr<const core::Dataset> dataset,
                        std::unique_ptr<core::TrainingSession> session)
      : dataset_(std::move(dataset)), session_(std::move(session)) {}
  std::shared_ptr<const core::Dataset> dataset_;  // declared first: destroyed after the session
  std::unique_ptr<core::TrainingSession> session_;
};

val execute(const PlanHandle& plan, val model_bytes, const DatasetHandle& dataset,
            const std::string& task_id) {
  return call_from_js([&] {
    const std::vector<std::uint8_t> model = bytes_from_js(model_bytes);
    core::ExecuteOptions options;
    options.task_id = task_id;
    return bytes_to_js(
        core::execute(plan.shared_plan(), model.data(), model.size(), dataset.dataset(), options));
  });
}

// The evaluate result whatever the plan's kind (an evaluate task may carry a train plan).
val evaluate(const PlanHandle& plan, val model_bytes, const DatasetHandle& dataset,
             const std::string& task_id) {
  return call_from_js([&] {
    const std::vector<std::uint8_t> model = bytes_from_js(model_bytes);
    core::ExecuteOptions options;
    options.task_id = task_id;
    return bytes_to_js(
        core::evaluate(plan.plan(), model.data(), model.size(), dataset.dataset(), options));
  });
}

val initialize_model(const PlanHandle& plan, double seed) {
  return call_from_js([&] {
    return bytes_to_js(core::initialize_model_from(plan.plan(), static_cast<std::uint64_t>(seed)));
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(fedleaf_train) {
  using emscripten::allow_raw_pointers;
  emscripten::class_<DatasetHandle>("Dataset")
      .class_function("fromTexts", &DatasetHandle::from_texts, allow_raw_pointers())
      .class_function("fromRecords", &DatasetHandle::from_records, allow_raw_pointers())
      .class_function("fromSvmlight", &DatasetHandle::from_svmlight, allow_raw_pointers())
      .class_function("fromDense", &DatasetHandle::from_dense, allow_raw_pointers())
      .class_function("fromCsr", &DatasetHandle::from_csr, allow_raw_pointers())
      .class_function("fromInputs", &DatasetHandle::from_inputs, allow_raw_pointers())
      .class_function("fromInputsWithTargets", &DatasetHandle::from_inputs_with_targets,
                      allow_raw_pointers())
      .function("subset", &DatasetHandle::subset, allow_raw_pointers())
      .function("size", &DatasetHandle::size)
      .function("numFeatures", &DatasetHandle::num_features)
      .function("numNonzeros", &DatasetHandle::num_nonzeros)
      .function("numDistinctIds", &DatasetHandle::num_distinct_ids)
      .function("distinctIds", &DatasetHandle::distinct_ids)
      .function("distinctIdsFor", &DatasetHandle::distinct_ids_for)
      .function("numInputs", &DatasetHandle::num_inputs)
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
  emscripten::function("evaluate", &evaluate);
  emscripten::function("initializeModel", &initialize_model);
}

}  // namespace fedleaf::wasm
