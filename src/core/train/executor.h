// The stateless leaf executor: plan + model bytes + local data → result bytes.
//
//   std::vector<std::uint8_t> model = initialize_model(plan_json, /*seed=*/1);
//   Dataset data = build_hashed_text_dataset(...);
//   std::vector<std::uint8_t> update = execute(plan_json, model.data(), model.size(), data);
//   const auto plan = std::make_shared<const Plan>(parse_plan(plan_json));   // parsed once
//   execute(plan, model.data(), model.size(), data);   // the same bytes
//
// Results are safetensors (see core/wire/safetensors.h) in the result format
// (core/wire/result_format.h):
//  - kind "train": for each tensor named in the plan's "updates", the delta (trained − received)
//    in the requested encoding: "dense" (the whole tensor), "row_sparse" (exactly the rows the
//    local data touched — every id in the dataset for an embedding table, all rows for other
//    tensors — sorted, unique) or "coo" (only the elements whose value changed, sorted). Metadata:
//    "kind": "train", "num_examples" (dataset size, the aggregation weight), "loss" and
//    "accuracy" (means over every example of every epoch, as trained), "task_id" if given.
//  - kind "evaluate": no tensors; metadata "kind": "evaluate", "num_examples", "loss",
//    "accuracy", and for binary tasks (sigmoid loss, or softmax over 2 classes) "auc" — left out
//    when the data holds only one class, where AUC is undefined.
//  - mean_squared_error: "loss" is the mean squared error; "accuracy" is 0 (not defined for a
//    regression, the result format requires the field).
// Numbers are written with printf's "%.9g". No state survives a call: the same inputs give
// byte-identical outputs. Errors are InvalidInput naming the plan path, tensor or example.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/train/plan.h"

namespace fedleaf::core {

struct ExecuteOptions {
  std::string task_id;  // copied into the result's metadata when not empty
};

std::vector<std::uint8_t> execute(const std::shared_ptr<const Plan>& plan,
                                  const std::uint8_t* model, std::size_t model_size,
                                  const Dataset& dataset, const ExecuteOptions& options = {});
// The same from the plan's JSON, parsed here.
std::vector<std::uint8_t> execute(const std::string& plan_json, const std::uint8_t* model,
                                  std::size_t model_size, const Dataset& dataset,
                                  const ExecuteOptions& options = {});

// The kind "evaluate" result of the plan's model on the dataset, whatever the plan's kind (a
// leaf's evaluate task may carry its population's train plan).
std::vector<std::uint8_t> evaluate(const Plan& plan, const std::uint8_t* model,
                                   std::size_t model_size, const Dataset& dataset,
                                   const ExecuteOptions& options = {});

// A fresh model for the plan: every parameter it declares, initialized from `seed` (embedding
// tables uniform in ±init_scale, dense weights Glorot-uniform, biases zero, or zeros when a layer
// asks). Each tensor draws from its own stream, seeded by (seed, murmur3_32 of its name), so
// adding a layer does not change the others. Safetensors bytes without metadata.
std::vector<std::uint8_t> initialize_model_from(const Plan& plan, std::uint64_t seed);
// The same from the plan's JSON, parsed here (the server's round-0 model: one name, not an
// overload, so that it converts to a ModelInitializer).
std::vector<std::uint8_t> initialize_model(const std::string& plan_json, std::uint64_t seed);

}  // namespace fedleaf::core
