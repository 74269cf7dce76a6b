// How a plan asks a tensor's update to travel: "dense", "coo" or "row_sparse".
//
//   UpdateEncoding e = parse_update_encoding("row_sparse", "plan.updates['emb/weight'].encoding");
//   update_encoding_name(e) == "row_sparse";
//   update_encoding_of(tensor) == UpdateEncoding::kCoo;   // for a SparseTensor
#pragma once

#include <string>
#include <string_view>

#include "core/tensor/tensor.h"

namespace fedleaf::core {

enum class UpdateEncoding { kDense, kCoo, kRowSparse };
inline constexpr UpdateEncoding kUpdateEncodings[] = {UpdateEncoding::kDense, UpdateEncoding::kCoo,
                                                      UpdateEncoding::kRowSparse};

std::string_view update_encoding_name(UpdateEncoding encoding);
// Throws InvalidInput naming `context` for any other name.
UpdateEncoding parse_update_encoding(std::string_view name, const std::string& context);
UpdateEncoding update_encoding_of(const Tensor& tensor);

}  // namespace fedleaf::core
