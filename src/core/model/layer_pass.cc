#include "core/model/layer_pass.h"

#include <algorithm>

namespace fedleaf::core {

const float* LayerPass::rows(const NodeRef& source) const {
  if (source.is_input) return feed(spec_.inputs[source.index].feed).dense;
  return layers_[source.index].output.data();
}

std::size_t LayerPass::width(const NodeRef& source) const {
  return source.is_input ? spec_.inputs[source.index].dim : layers_[source.index].width;
}

float* LayerPass::gradient_target(const NodeRef& source) {
  if (source.is_input) return nullptr;
  return buffers_.sent[source.index] ? buffers_.scratch.data()
                                     : layers_[source.index].grad_output.data();
}

void LayerPass::gradient_sent(const NodeRef& source, std::size_t count) {
  if (source.is_input) return;
  if (!buffers_.sent[source.index]) {
    buffers_.sent[source.index] = true;
    return;
  }
  float* into = layers_[source.index].grad_output.data();
  for (std::size_t k = 0; k < count; ++k) into[k] += buffers_.scratch[k];
}

bool LayerPass::first_write(int index) {
  const auto g = static_cast<std::size_t>(index);
  if (buffers_.table_written[g]) return false;
  buffers_.table_written[g] = true;
  return true;
}

void LayerPass::merge_row_sparse(int index, const ParameterGradient& add) {
  ParameterGradient& into = gradient(index);
  std::vector<std::uint32_t>& rows = buffers_.merged_rows;
  std::vector<float>& values = buffers_.merged_values;
  const std::size_t d = into.row_size;
  rows.clear();
  values.clear();
  std::size_t i = 0, j = 0;
  const std::size_t ni = into.touched_rows.size(), nj = add.touched_rows.size();
  while (i < ni || j < nj) {
    const bool take_i = j == nj || (i < ni && into.touched_rows[i] <= add.touched_rows[j]);
    const bool take_j = i == ni || (j < nj && add.touched_rows[j] <= into.touched_rows[i]);
    rows.push_back(take_i ? into.touched_rows[i] : add.touched_rows[j]);
    const std::size_t at = values.size();
    values.resize(at + d, 0.0f);
    if (take_i) {
      std::copy(into.values.begin() + i * d, into.values.begin() + (i + 1) * d,
                values.begin() + at);
      ++i;
    }
    if (take_j) {
      for (std::size_t k = 0; k < d; ++k) values[at + k] += add.values[j * d + k];
      ++j;
    }
  }
  into.touched_rows.swap(rows);
  into.values.swap(values);
}

}  // namespace fedleaf::core
