#include "core/train/forward_over_dataset.h"

#include <algorithm>
#include <vector>

#include "core/safetensors.h"
#include "core/train/batch.h"
#include "core/train/model_parameters.h"

namespace fedleaf::core {

void forward_over_dataset(const Plan& plan, const std::uint8_t* model_bytes, std::size_t model_size,
                          const Dataset& dataset, const ForwardVisitor& visit) {
  check_dataset_fits(plan.model, dataset);
  Parameters params = declared_parameters(
      plan.model, read_safetensors(model_bytes, model_size, {/*require_finite=*/true}).tensors);
  const std::size_t batch_size = std::min(plan.eval_batch_size, dataset.size());
  Model model(plan.model, params, batch_size);
  BatchGatherer gatherer(dataset, BatchIds::kGlobal);
  std::vector<std::uint32_t> examples(batch_size);
  for (std::size_t begin = 0; begin < dataset.size(); begin += batch_size) {
    const std::size_t count = std::min(batch_size, dataset.size() - begin);
    for (std::size_t b = 0; b < count; ++b) examples[b] = static_cast<std::uint32_t>(begin + b);
    const LossSums sums = model.forward(gatherer.gather(examples.data(), count));
    visit(model, begin, count, sums);
  }
}

}  // namespace fedleaf::core
