// The reference the executor's compact training is checked against: the same epochs run on the
// full parameters (every row of every table, Model + Optimizer, no compact tables), and each
// tensor of the result compared bit for bit with the change that training made.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/data/batch.h"
#include "core/model/model.h"
#include "core/train/executor.h"
#include "core/train/forward_over_dataset.h"
#include "core/train/optimizer.h"
#include "core/wire/safetensors.h"
#include "tests/core/train/train_test_util.h"

namespace fedleaf::test {

// execute(plan, initialize_model(plan, model_seed), data) must equal `epochs` epochs of batches
// of `batch` examples, shuffled as the session shuffles them with `order_seed`, trained on the
// full model (fused sparse SGD where the plan's optimizer is SGD, as the session does).
inline void check_result_equals_full_model_training(const std::string& plan_json,
                                                    const core::Dataset& data,
                                                    std::uint64_t model_seed, std::size_t epochs,
                                                    std::uint64_t order_seed, std::size_t batch) {
  using namespace core;
  const auto model = initialize_model(plan_json, model_seed);
  const SafetensorsFile result =
      read_safetensors(execute(plan_json, model.data(), model.size(), data));

  const Plan plan = parse_plan(plan_json);
  const Parameters initial = initial_parameters(plan_json, model_seed);
  Parameters params = initial;
  Model full(plan.model, params, batch);
  if (plan.train->optimizer.type == OptimizerType::kSgd) {
    full.fuse_sparse_sgd(plan.train->optimizer.learning_rate);
  }
  Optimizer opt(plan.train->optimizer, full.gradients());
  std::vector<std::vector<std::uint32_t>> global;
  BatchGatherer gather(data, global_feed_sources(plan.model, data, global));
  for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
    const auto order = shuffled_order(data.size(), mix_seed(order_seed, epoch));
    for (std::size_t begin = 0; begin < order.size(); begin += batch) {
      full.forward_backward(
          gather.gather(order.data() + begin, std::min<std::size_t>(batch, order.size() - begin)));
      opt.apply(full.gradients());
    }
  }
  for (const auto& [name, tensor] : result.tensors) {
    INFO(name);
    const float* before = initial.at(name).data<float>();
    const float* after = params.at(name).data<float>();
    if (const auto* rows = std::get_if<RowSparseTensor>(&tensor)) {
      const std::size_t dim = rows->values().shape()[1];
      for (std::size_t r = 0; r < rows->indices().size(); ++r) {
        const auto g = static_cast<std::size_t>(rows->indices()(r));
        for (std::size_t k = 0; k < dim; ++k) {
          CHECK(rows->values().data<float>()[r * dim + k] ==
                after[g * dim + k] - before[g * dim + k]);
        }
      }
    } else {
      const DenseTensor& d = std::get<DenseTensor>(tensor);
      for (std::size_t i = 0; i < d.size(); ++i) {
        CHECK(d.data<float>()[i] == after[i] - before[i]);
      }
    }
  }
}

}  // namespace fedleaf::test
