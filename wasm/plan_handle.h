// The plan object of the JS API (module.Plan): a plan parsed once by the core (core::Plan) and
// held by an embind handle, which execute, evaluate, TrainingSession.create, predict,
// initializeModel and the records featurizer take in place of the plan's JSON, so no call parses
// it again. Registered with embind in bind_plan.cc, which also gives its facts (the tables, the
// rows a dataset needs of each: core/train/plan_tables.h) to JS.
//
//   const plan = module.Plan.parse(planJson, /*inference=*/false);
//   plan.tables(); plan.selectRequest(data); module.execute(plan, model, data, 'task-7');
//   plan.delete();
#pragma once

#include <memory>
#include <string>

#include "core/train/plan.h"
#include "dataset_handle.h"
#include "js_interop.h"

namespace fedleaf::wasm {

class PlanHandle {
 public:
  // inference: core::PlanUse::kInference (a plan needing only its model: predict, evaluate).
  static PlanHandle* parse(const std::string& plan_json, bool inference) {
    return call_from_js([&] {
      return new PlanHandle(std::make_shared<const core::Plan>(core::parse_plan(
          plan_json, inference ? core::PlanUse::kInference : core::PlanUse::kTask)));
    });
  }

  std::string kind() const;
  // [{name, owner, lookups: [layer], inputs: [input], vocab, dim, download: 'full' | 'select',
  //   maxSelectRows (0: no cap), padding: null | {multiple} | {count}}], by owner layer.
  val tables() const;
  // The sorted distinct ids (Uint8Array of u32) the dataset holds for table `tensor`.
  val table_rows(const DatasetHandle& dataset, const std::string& tensor) const;
  // [{name, ids (Uint8Array of u32), vocab, maxSelectRows, padding}] of the tables downloading
  // by select: what a leaf asks model:select for (before padding).
  val select_request(const DatasetHandle& dataset) const;
  // The records featurizer's columns (bind_records.cc) of the plan's inputs with "features".
  val featurize_records(const std::string& records_json) const;
  // The dataset of the records (bind_records.cc), featurized and built in one call: labels as
  // DatasetHandle::from_records takes them.
  DatasetHandle* dataset_from_records(const std::string& records_json, val labels,
                                      double target_width) const;

  const core::Plan& plan() const { return *plan_; }
  // Shared with what outlives a call (a training session): JS may delete() the handle while a
  // session still trains under the plan.
  std::shared_ptr<const core::Plan> shared_plan() const { return plan_; }

 private:
  explicit PlanHandle(std::shared_ptr<const core::Plan> plan) : plan_(std::move(plan)) {}
  std::shared_ptr<const core::Plan> plan_;
};

}  // namespace fedleaf::wasm
