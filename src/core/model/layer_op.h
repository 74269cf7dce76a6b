// What one built layer does to a batch: its forward and backward passes, behind the one
// interface the graph walk (Model, model.cc) calls — once per layer per batch, never per example,
// so a virtual call costs nothing measurable (about 34 calls a batch for the demo's model) and the
// walk never names a layer type. Each layer's file defines its op next to its spec parsing and
// its parameters, and its LayerKind's `make` creates it (layer_kind.h).
//
//   class ReluOp : public LayerOp {
//     void forward(LayerPass& pass, ModelLayer& layer) override { ... layer.output ... }
//     void backward(LayerPass& pass, ModelLayer& layer) override { ... pass.gradient_target ... }
//   };
#pragma once

namespace fedleaf::core {

class LayerPass;
struct ModelLayer;

class LayerOp {
 public:
  LayerOp() = default;
  LayerOp(const LayerOp&) = delete;
  LayerOp& operator=(const LayerOp&) = delete;
  virtual ~LayerOp() = default;
  // Writes layer.output ([pass.size(), layer.width]) from what the layer reads
  // (pass.rows(source) / pass.feed(layer.feed)).
  virtual void forward(LayerPass& pass, ModelLayer& layer) = 0;
  // From layer.grad_output: sums into the layer's parameter gradients (pass.gradient(i)) and
  // sends each source its gradient (pass.gradient_target, then pass.gradient_sent).
  virtual void backward(LayerPass& pass, ModelLayer& layer) = 0;
};

}  // namespace fedleaf::core
