// JS API of the sparse-sum family: RoundAggregator for hierarchical aggregation in a browser or
// Node process. Bytes in, bytes out (safetensors), like the server uses it.
//
//   const agg = module.RoundAggregator.create(planJson, modelBytes);
//   agg.addResult(uploadBytes);                 // all-or-nothing; throws Error on bad input
//   const next = agg.nextModel();               // Uint8Array (safetensors)
//   agg.delete();                               // embind objects are freed explicitly
//   const trained = module.applyUpdate(planJson, modelBytes, resultBytes);   // local training
#include <emscripten/bind.h>

#include "core/aggregation/round/apply_update.h"
#include "core/aggregation/round/round_aggregator.h"
#include "core/wire/safetensors.h"
#include "js_interop.h"

namespace fedleaf::wasm {
namespace {

class RoundAggregatorHandle {
 public:
  explicit RoundAggregatorHandle(core::RoundAggregator aggregator)
      : aggregator_(std::move(aggregator)) {}

  static RoundAggregatorHandle* create(const std::string& plan_json, val model_bytes) {
    return call_from_js([&] {
      const std::vector<std::uint8_t> bytes = bytes_from_js(model_bytes);
      return new RoundAggregatorHandle(core::RoundAggregator(
          core::parse_update_plan(plan_json), core::read_safetensors(bytes).tensors));
    });
  }

  static RoundAggregatorHandle* restore(const std::string& plan_json, val model_bytes,
                                        val checkpoint) {
    return call_from_js([&] {
      const std::vector<std::uint8_t> model = bytes_from_js(model_bytes);
      const std::vector<std::uint8_t> state = bytes_from_js(checkpoint);
      return new RoundAggregatorHandle(core::RoundAggregator::restore(
          core::parse_update_plan(plan_json), core::read_safetensors(model).tensors, state.data(),
          state.size()));
    });
  }

  void add_result(val result) {
    call_from_js([&] {
      const std::vector<std::uint8_t> bytes = bytes_from_js(result);
      aggregator_.add_result(bytes.data(), bytes.size());
    });
  }

  void merge(const RoundAggregatorHandle& other) {
    call_from_js([&] { aggregator_.merge(other.aggregator_); });
  }

  double num_reports() const { return static_cast<double>(aggregator_.num_reports()); }
  double total_weight() const { return aggregator_.total_weight(); }

  val next_model() const {
    return call_from_js(
        [&] { return bytes_to_js(core::write_safetensors(aggregator_.next_model())); });
  }

  val checkpoint() const {
    return call_from_js([&] { return bytes_to_js(aggregator_.checkpoint()); });
  }

 private:
  core::RoundAggregator aggregator_;
};

// The model (safetensors) with one train result applied without the robust rules
// (core/aggregation/round/apply_update.h).
val apply_update(const std::string& plan_json, val model_bytes, val result_bytes) {
  return call_from_js([&] {
    const std::vector<std::uint8_t> model = bytes_from_js(model_bytes);
    const std::vector<std::uint8_t> result = bytes_from_js(result_bytes);
    return bytes_to_js(core::write_safetensors(
        core::apply_update(core::parse_update_plan(plan_json),
                           core::read_safetensors(model).tensors, result.data(), result.size())));
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(fedleaf_aggregation) {
  emscripten::function("applyUpdate", &apply_update);
  emscripten::class_<RoundAggregatorHandle>("RoundAggregator")
      .class_function("create", &RoundAggregatorHandle::create, emscripten::allow_raw_pointers())
      .class_function("restore", &RoundAggregatorHandle::restore, emscripten::allow_raw_pointers())
      .function("addResult", &RoundAggregatorHandle::add_result)
      .function("merge", &RoundAggregatorHandle::merge)
      .function("numReports", &RoundAggregatorHandle::num_reports)
      .function("totalWeight", &RoundAggregatorHandle::total_weight)
      .function("nextModel", &RoundAggregatorHandle::next_model)
      .function("checkpoint", &RoundAggregatorHandle::checkpoint);
}

}  // namespace fedleaf::wasm
