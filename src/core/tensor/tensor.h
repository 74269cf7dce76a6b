// A named tensor of any encoding, as models, updates and aggregates carry them.
//
//   NamedTensors model;
//   model.emplace("out/bias", DenseTensor::zeros(DType::F32, {2}));
//   encoding_name(model.at("out/bias")) == "dense";
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "core/tensor/dense_tensor.h"
#include "core/tensor/row_sparse_tensor.h"
#include "core/tensor/sparse_tensor.h"

namespace fedleaf::core {

using Tensor = std::variant<DenseTensor, SparseTensor, RowSparseTensor>;
// Ordered by name, so every serialization of the same tensors is byte-identical.
using NamedTensors = std::map<std::string, Tensor>;
using Metadata = std::map<std::string, std::string>;

// "dense", "coo" or "row_sparse": the names plans and safetensors metadata use.
std::string_view encoding_name(const Tensor& tensor);

}  // namespace fedleaf::core
