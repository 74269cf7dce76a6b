#include "server/repository/buffered_step.h"

#include <algorithm>
#include <string>
#include <variant>

#include "core/aggregation/operators/operator_table.h"

namespace fedleaf::server {
namespace {

template <class T>
void scale(core::DenseTensor& values, double factor) {
  T* data = values.data<T>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    data[i] = static_cast<T>(static_cast<double>(data[i]) * factor);
  }
}

core::DenseTensor& values_of(core::Tensor& tensor) {
  if (auto* dense = std::get_if<core::DenseTensor>(&tensor)) return *dense;
  if (auto* coo = std::get_if<core::SparseTensor>(&tensor)) return coo->values();
  return std::get<core::RowSparseTensor>(tensor).values();
}

// Whether the operator of tensor `name` weighs a report's values by its weight (the staleness
// weight among them).
bool weighted_by_report(const core::UpdatePlan& plan, const std::string& name) {
  for (const core::TensorUpdatePlan& tensor : plan.tensors) {
    if (tensor.name == name) {
      return core::operator_rules(tensor.op.op).values == core::Weighting::kWeight;
    }
  }
  return false;
}

}  // namespace

double staleness_scale(double folded_weight, double folded_examples) {
  if (!(folded_examples > 0)) return 1.0;
  return std::clamp(folded_weight / folded_examples, 0.0, 1.0);
}

void scale_aggregates(std::vector<core::TensorAggregate>& aggregates, const core::UpdatePlan& plan,
                      double factor) {
  for (core::TensorAggregate& aggregate : aggregates) {
    if (aggregate.counts || aggregate.withheld || !weighted_by_report(plan, aggregate.name)) {
      continue;
    }
    core::DenseTensor& values = values_of(aggregate.delta);
    if (values.dtype() == core::DType::F32) scale<float>(values, factor);
    if (values.dtype() == core::DType::F64) scale<double>(values, factor);
  }
}

}  // namespace fedleaf::server
