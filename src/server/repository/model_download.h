// The bytes GET /v1/populations/{p}/rounds/{r}/model sends for a round's published model: the
// F32 model as published, or — when the plan asks "download_values": "f16" for some tensor — the
// model with those tensors written as F16 (core::write_select_answer with no rows selected:
// every tensor whole, F16 where asked, "<T>:values_compression" = "f16", metadata model_etag
// and round added). Its ETag is the sha256 of the bytes sent, like every model's, so a cache never
// takes one representation for the other. Nothing is stored: the server aggregates, checkpoints
// and publishes the F32 model; this is only what it sends.
//
//   ModelBlob sent = current_download_model(state);                // under the repository's lock
//   ModelBlob sent = download_model_of(found.load(), plan, round);  // an earlier round's
//
// A plan without f16 tensors sends exactly the published model and its ETag.
#pragma once

#include "core/aggregation/updates/update_plan.h"
#include "server/repository/population_state.h"
#include "server/repository/results.h"

namespace fedleaf::server {

// `model` as GET .../model sends it under `plan` (encoded per call).
ModelBlob download_model_of(const ModelBlob& model, const core::UpdatePlan& plan, int round);

// The current round's model as GET .../model sends it: encoded once per published model and kept
// in `state` (one per population: replaced when the next round publishes); under the
// repository's lock.
ModelBlob current_download_model(PopulationState& state);

}  // namespace fedleaf::server
