// Whether a dataset fits a model, checked before any work is done: which dataset input feeds
// each model input, each input's kind and width, every id below the vocab of each table it
// feeds, every label valid for the loss.
#pragma once

#include <cstddef>
#include <vector>

#include "core/data/dataset.h"
#include "core/model/model_spec.h"

namespace fedleaf::core {

// Which dataset input feeds each of the model's inputs: a one-input dataset whose input name is ""
// feeds a one-input model; otherwise by name. Throws InvalidInput naming a model input the
// dataset lacks, or a dataset input the model does not read.
std::vector<std::size_t> dataset_inputs_for(const ModelSpec& spec, const Dataset& dataset);

// Checks a whole dataset against a model before any work is done: each input's kind and width,
// every id below the vocab of each table its input feeds, every label (target) valid for the
// loss, at least one example. Throws InvalidInput naming the example and the plan field.
void check_dataset_fits(const ModelSpec& spec, const Dataset& dataset);

}  // namespace fedleaf::core
