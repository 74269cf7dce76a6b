// Updates and a dense float64 reference for the private-sum tests: random devices over a small
// model (a dense bias, a row-sparse embedding, a COO matrix), from fixed seeds (tests only).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/privacy/tensor_layout.h"
#include "core/tensor/tensor.h"
#include "tests/core/to_dense.h"

namespace fedleaf::test {

inline core::TensorLayouts private_test_layouts() {
  return {{"bias", {core::DType::F64, {3}}},
          {"emb", {core::DType::F64, {50, 4}}},
          {"mat", {core::DType::F32, {6, 5}}}};
}

// One device: the bias dense, a few embedding rows (possibly repeated), a few COO entries; every
// value times `magnitude`, so some devices are below the clip and some above.
inline core::NamedTensors random_private_update(std::mt19937_64& rng, double magnitude) {
  std::normal_distribution<double> value(0.0, magnitude);
  std::uniform_int_distribution<std::int64_t> emb_row(0, 49);
  std::uniform_int_distribution<std::int64_t> mat_row(0, 5);
  std::uniform_int_distribution<std::int64_t> mat_col(0, 4);
  core::NamedTensors update;
  update.emplace("bias", core::DenseTensor(xt::xarray<double>{value(rng), value(rng), value(rng)}));
  const std::size_t rows = 1 + rng() % 4;
  core::RowIndices indices = xt::zeros<std::int64_t>({rows});
  xt::xarray<double> emb = xt::zeros<double>({rows, std::size_t{4}});
  for (std::size_t r = 0; r < rows; ++r) {
    indices(r) = emb_row(rng);
    for (std::size_t j = 0; j < 4; ++j) emb(r, j) = value(rng);
  }
  update.emplace("emb", core::RowSparseTensor(indices, core::DenseTensor(emb), {50, 4}, "emb"));
  const std::size_t nnz = rng() % 4;  // sometimes no entry at all
  core::CooIndices coo = xt::zeros<std::int64_t>({nnz, std::size_t{2}});
  xt::xarray<double> coo_values = xt::zeros<double>({nnz});
  for (std::size_t k = 0; k < nnz; ++k) {
    coo(k, 0) = mat_row(rng);
    coo(k, 1) = mat_col(rng);
    coo_values(k) = value(rng);
  }
  update.emplace("mat", core::SparseTensor(coo, core::DenseTensor(coo_values), {6, 5}, "mat"));
  return update;
}

// The update as one float64 vector per tensor, row-major over the full shape (tests only).
inline std::map<std::string, std::vector<double>> dense_reference(
    const core::NamedTensors& update, const core::TensorLayouts& layouts) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, layout] : layouts) {
    std::vector<double>& dense = out[name];
    dense.assign(core::shape_element_count(layout.shape, name), 0.0);
    const auto found = update.find(name);
    if (found == update.end()) continue;
    const core::DenseTensor d = std::visit(
        [](const auto& t) -> core::DenseTensor {
          if constexpr (std::is_same_v<std::decay_t<decltype(t)>, core::DenseTensor>) {
            return t;
          } else {
            return to_dense(t);
          }
        },
        found->second);
    for (std::size_t i = 0; i < dense.size(); ++i) dense[i] = d.data<double>()[i];
  }
  return out;
}

// What a device adds, by the rule written out densely: clip the whole update to clip_norm in
// float64, truncate each coordinate toward zero to whole grid units.
inline std::map<std::string, std::vector<std::int64_t>> reference_units(
    const core::NamedTensors& update, const core::TensorLayouts& layouts, double clip_norm,
    double grid) {
  const auto dense = dense_reference(update, layouts);
  double squared = 0;
  for (const auto& [name, values] : dense) {
    for (double v : values) squared += v * v;
  }
  const double norm = std::sqrt(squared);
  const double scale = norm > clip_norm ? clip_norm / norm : 1.0;
  std::map<std::string, std::vector<std::int64_t>> out;
  for (const auto& [name, values] : dense) {
    for (double v : values)
      out[name].push_back(static_cast<std::int64_t>(std::trunc(v * scale / grid)));
  }
  return out;
}

}  // namespace fedleaf::test
