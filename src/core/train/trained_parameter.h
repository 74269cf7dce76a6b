// A parameter a TrainingSession trains, and where its initial values are in the model (read
// again when the update is written). Shared by the session's setup and steps
// (training_session.cc) and its result writer (training_session_result.cc).
#pragma once

#include <cstddef>

#include "core/model/model_view.h"
#include "core/train/training_session.h"

namespace fedleaf::core {

struct TrainingSession::TrainedParameter {
  ParameterSpec spec;
  StoredValues stored;
  // An embedding table: its compact rows (the distinct ids of every input feeding it).
  const CompactRows* rows = nullptr;

  std::size_t row_size() const { return spec.shape.size() == 1 ? 1 : spec.shape[1]; }
};

}  // namespace fedleaf::core
