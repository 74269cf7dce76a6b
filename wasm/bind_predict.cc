// JS API of inference: class probabilities of a model on a dataset ("try the model" in a page).
//
//   const {numClasses, probabilities} = module.predict(plan, modelBytes, data);  // a module.Plan
//   probabilities[i * numClasses + c];   // Float32Array, example i, class c
#include <emscripten/bind.h>

#include "core/train/predict.h"
#include "dataset_handle.h"
#include "js_interop.h"
#include "plan_handle.h"

namespace fedleaf::wasm {
namespace {

// {numClasses, probabilities: Float32Array [n, numClasses] row-major}; an Error with the core's
// message when the plan, model or dataset do not fit together (see core/train/predict.h).
val predict(const PlanHandle& plan, val model_bytes, const DatasetHandle& dataset) {
  return call_from_js([&] {
    const std::vector<std::uint8_t> model = bytes_from_js(model_bytes);
    const core::Predictions p =
        core::predict(plan.plan(), model.data(), model.size(), dataset.dataset());
    const val bytes = bytes_to_js(reinterpret_cast<const std::uint8_t*>(p.probabilities.data()),
                                  p.probabilities.size() * sizeof(float));
    val out = val::object();
    out.set("numClasses", static_cast<double>(p.num_classes));
    out.set("probabilities", val::global("Float32Array")
                                 .new_(bytes["buffer"], bytes["byteOffset"],
                                       static_cast<double>(p.probabilities.size())));
    return out;
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(fedleaf_predict) { emscripten::function("predict", &predict); }

}  // namespace fedleaf::wasm
