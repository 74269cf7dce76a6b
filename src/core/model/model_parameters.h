// The parameters a plan's model declares, taken out of decoded model bytes and checked.
//
//   Parameters params = declared_parameters(plan.model, read_safetensors(bytes).tensors);
//
// Every declared parameter must be present as a dense tensor of the declared shape; otherwise
// InvalidInput names the tensor and the layer that declares it. Tensors the model does not
// declare are ignored. Evaluation and prediction read every row, so they take whole tables;
// training takes only the rows its data touch (training_session.cc).
#pragma once

#include "core/model/model.h"
#include "core/model/model_spec.h"
#include "core/tensor/tensor.h"

namespace fedleaf::core {

Parameters declared_parameters(const ModelSpec& spec, NamedTensors decoded);

}  // namespace fedleaf::core
