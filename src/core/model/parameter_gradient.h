// The gradient of one parameter for one batch, dense or row-sparse, as the model produces it
// and the optimizer consumes it.
//
//   for (ParameterGradient& g : model.gradients())
//     if (g.row_sparse) { /* g.touched_rows[k] holds g.values[k*row_size ..] */ }
//
// A parameter is viewed as a [rows, row_size] matrix (a bias is one row). Row-sparse gradients
// (embedding tables) hold only the rows the batch touched, each once, in the deterministic order
// the layer produces them (not sorted); nothing of the table's size is allocated for them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fedleaf::core {

struct ParameterGradient {
  std::string name;
  float* parameter = nullptr;  // borrowed: the model's parameter storage
  std::size_t rows = 0;
  std::size_t row_size = 0;
  bool row_sparse = false;
  // dense: rows * row_size values; row_sparse: touched_rows.size() * row_size values.
  std::vector<float> values;
  std::vector<std::uint32_t> touched_rows;
};

}  // namespace fedleaf::core
