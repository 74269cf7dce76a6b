#include "core/train/forward_over_dataset.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/data/batch.h"
#include "core/error.h"
#include "core/model/model_parameters.h"
#include "core/wire/safetensors.h"

namespace fedleaf::core {

std::vector<FeedSource> global_feed_sources(const ModelSpec& spec, const Dataset& dataset,
                                            std::vector<std::vector<std::uint32_t>>& global) {
  const std::vector<std::size_t> from = dataset_inputs_for(spec, dataset);
  global.resize(dataset.num_inputs());
  std::vector<FeedSource> sources;
  for (const FeedSpec& f : spec.feeds) {
    FeedSource source;
    source.input = from[f.input];
    if (f.sparse) {
      std::vector<std::uint32_t>& rows = global[source.input];
      if (rows.empty()) rows = dataset.distinct_ids(source.input).rows();
      source.map = &rows;
    }
    sources.push_back(source);
  }
  return sources;
}

void forward_over_dataset(const Plan& plan, const std::uint8_t* model_bytes, std::size_t model_size,
                          const Dataset& dataset, const ForwardVisitor& visit) {
  check_dataset_fits(plan.model, dataset);
  Parameters params = declared_parameters(
      plan.model, read_safetensors(model_bytes, model_size, {/*require_finite=*/true}).tensors);
  const std::size_t batch_size = std::min(plan.eval_batch_size, dataset.size());
  Model model(plan.model, params, batch_size);
  // Each sparse feed's batches hold global ids (the model's tables are whole).
  std::vector<std::vector<std::uint32_t>> global;
  BatchGatherer gatherer(dataset, global_feed_sources(plan.model, dataset, global));
  std::vector<std::uint32_t> examples(batch_size);
  for (std::size_t begin = 0; begin < dataset.size(); begin += batch_size) {
    const std::size_t count = std::min(batch_size, dataset.size() - begin);
    for (std::size_t b = 0; b < count; ++b) examples[b] = static_cast<std::uint32_t>(begin + b);
    const LossSums sums = model.forward(gatherer.gather(examples.data(), count));
    // Finite parameters can still overflow float on the way to the logits (3e38 × 2 is inf, and
    // inf − inf NaN): such outputs are no prediction and no metric.
    const float* outputs = model.outputs();
    for (std::size_t i = 0; i < count * model.output_width(); ++i) {
      if (!std::isfinite(outputs[i])) {
        throw InvalidInput("model: the outputs for example " +
                           std::to_string(begin + i / model.output_width()) +
                           " are not finite (the parameters overflow float on the way to them)");
      }
    }
    visit(model, begin, count, sums);
  }
}

}  // namespace fedleaf::core
