#include "core/model/concatenate.h"

#include <algorithm>
#include <memory>

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/model/layer_pass.h"
#include "core/model/model_layer.h"

namespace fedleaf::core {

void parse_concatenate_spec(const nlohmann::json& l, const LayerInput& input, LayerSpec spec,
                            std::vector<LayerSpec>& layers) {
  check_known_fields(l, spec.path, kConcatenateFields);
  if (input.sources.size() < 2) {
    plan_json::fail(spec.path + ".inputs", "concatenate needs \"inputs\": at least two names");
  }
  std::size_t width = 0;
  for (std::size_t k = 0; k < input.sources.size(); ++k) {
    const LayerSource& s = input.sources[k];
    if (s.kind != InputKind::kDense) {
      plan_json::fail(spec.path + ".inputs[" + std::to_string(k) + "]",
                      "'" + s.name + "' is a sparse_ids input: an embedding_bag reads it");
    }
    width += s.width;
  }
  spec.input_width = width;
  spec.output_width = width;
  layers.push_back(std::move(spec));
}

void concatenate_forward(const std::vector<const float*>& xs,
                         const std::vector<std::size_t>& widths, std::size_t batch, float* out) {
  std::size_t out_width = 0;
  for (const std::size_t w : widths) out_width += w;
  std::size_t offset = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const std::size_t w = widths[k];
    for (std::size_t b = 0; b < batch; ++b) {
      std::copy(xs[k] + b * w, xs[k] + (b + 1) * w, out + b * out_width + offset);
    }
    offset += w;
  }
}

void concatenate_backward(const float* gy, std::size_t out_width, std::size_t offset,
                          std::size_t width, std::size_t batch, float* gx) {
  for (std::size_t b = 0; b < batch; ++b) {
    const float* row = gy + b * out_width + offset;
    std::copy(row, row + width, gx + b * width);
  }
}

namespace {

class ConcatenateOp : public LayerOp {
 public:
  void forward(LayerPass& pass, ModelLayer& layer) override {
    sources_.clear();
    widths_.clear();
    for (const NodeRef& s : layer.sources) {
      sources_.push_back(pass.rows(s));
      widths_.push_back(pass.width(s));
    }
    concatenate_forward(sources_, widths_, pass.size(), layer.output.data());
  }
  void backward(LayerPass& pass, ModelLayer& layer) override {
    std::size_t offset = 0;
    for (const NodeRef& s : layer.sources) {
      const std::size_t width = pass.width(s);
      if (float* gx = pass.gradient_target(s)) {
        concatenate_backward(layer.grad_output.data(), layer.width, offset, width, pass.size(), gx);
        pass.gradient_sent(s, pass.size() * width);
      }
      offset += width;
    }
  }

 private:
  std::vector<const float*> sources_;
  std::vector<std::size_t> widths_;
};

}  // namespace

void make_concatenate(const LayerSpec& /*spec*/, ParameterBinder& /*binder*/,
                      std::size_t /*max_batch_size*/, ModelLayer& layer) {
  layer.op = std::make_unique<ConcatenateOp>();
}

}  // namespace fedleaf::core
