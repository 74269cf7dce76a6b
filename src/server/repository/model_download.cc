#include "server/repository/model_download.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/aggregation/updates/select_rules.h"
#include "core/wire/select_answer.h"
#include "server/util/sha256.h"

namespace fedleaf::server {
namespace {

ModelBlob encode(const ModelBlob& model, const core::SafetensorsIndex& index,
                 const std::set<std::string>& f16, int round) {
  const std::string& bytes = *model.bytes;
  const std::vector<std::uint8_t> encoded = core::write_select_answer(
      reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), index,
      core::SelectRequest{}, {{"model_etag", model.etag}, {"round", std::to_string(round)}}, f16);
  auto sent = std::make_shared<const std::string>(to_string_bytes(encoded));
  return {sha256_hex(*sent), std::move(sent)};
}

}  // namespace

ModelBlob download_model_of(const ModelBlob& model, const core::UpdatePlan& plan, int round) {
  const std::set<std::string> f16 = core::f16_download_tensors(plan);
  if (f16.empty()) return model;
  return encode(model, *select_index_of(*model.bytes), f16, round);
}

ModelBlob current_download_model(PopulationState& state) {
  const std::set<std::string> f16 = core::f16_download_tensors(*state.update_plan);
  if (f16.empty()) return state.model;
  if (state.download_model_of != state.model.etag) {
    state.download_model =
        encode(state.model, *current_select_index(state), f16, state.round.number);
    state.download_model_of = state.model.etag;
  }
  return state.download_model;
}

}  // namespace fedleaf::server
