// Inference over a whole dataset: what evaluation and prediction share.
//
//   forward_over_dataset(plan, bytes, size, dataset,
//                        [&](const Model& m, std::size_t first, std::size_t count,
//                            const LossSums& sums) { /* m.outputs(): count rows of logits */ });
//
// The model's parameters are read from safetensors bytes and checked against the plan
// (declared_parameters: InvalidInput naming a missing or mis-shaped tensor; non-finite values are
// rejected too), the dataset against the model (check_dataset_fits); outputs that are not finite
// (finite parameters can overflow float) are InvalidInput naming the example. The examples are
// visited in order, in batches of min(plan.eval_batch_size, dataset.size()); `visit` sees each
// batch's logits (model.outputs(), [count, model.output_width()]) before the next batch overwrites
// them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/data/batch.h"
#include "core/data/dataset.h"
#include "core/model/loss.h"
#include "core/model/model.h"
#include "core/train/plan.h"

namespace fedleaf::core {

// The feeds of `spec` from `dataset` with global ids (whole tables: evaluation, prediction, a
// model over a full parameter set): one FeedSource per ModelSpec::feeds entry; a sparse feed's map
// is its dataset input's distinct ids, kept in `global` (one entry per dataset input, filled as
// needed; it must outlive the gatherer). Throws what dataset_inputs_for throws.
std::vector<FeedSource> global_feed_sources(const ModelSpec& spec, const Dataset& dataset,
                                            std::vector<std::vector<std::uint32_t>>& global);

using ForwardVisitor =
    std::function<void(const Model& model, std::size_t first, std::size_t count, const LossSums&)>;

void forward_over_dataset(const Plan& plan, const std::uint8_t* model_bytes, std::size_t model_size,
                          const Dataset& dataset, const ForwardVisitor& visit);

}  // namespace fedleaf::core
