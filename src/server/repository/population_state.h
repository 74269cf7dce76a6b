// PopulationState: a population's in-memory state — its records, the plan as each kind of task
// carries it, the current model and the open training round's accumulator — and how it is
// built: for a new population, or rebuilt exactly from the store (last checkpoint plus the
// results stored after it).
//
//   std::unique_ptr<PopulationState> st = load_population_state(store, record);
//   st->aggregator->num_reports() == st->round.reports;
//
// Owned and guarded by TaskRepository (not thread-safe on its own).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/aggregation/round/buffered_spec.h"
#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/server_optimizer/server_optimizer.h"
#include "core/aggregation/updates/update_plan.h"
#include "core/tensor/tensor.h"
#include "core/wire/safetensors_index.h"
#include "server/repository/device_limits.h"
#include "server/repository/noise_ahead.h"
#include "server/repository/privacy_spec.h"
#include "server/repository/results.h"
#include "server/store/store.h"

namespace fedleaf::server {

struct PopulationState {
  PopulationRecord record;
  // The hashes of the population's live client tokens (load_client_tokens), as of
  // record.tokens_epoch.
  std::vector<std::string> client_token_hashes;
  RoundRecord round;  // the current round
  std::string train_plan_json;
  std::string eval_plan_json;
  ModelBlob model;  // the current round's model
  // The plan's "updates", parsed once: the aggregators and model:select read it.
  std::shared_ptr<const core::UpdatePlan> update_plan;
  // model:select's index of `model` (built on first use; stale when its etag differs).
  std::shared_ptr<const core::SafetensorsIndex> select_index;
  std::string select_index_etag;
  // What GET .../model sends of `model` when the plan asks f16 downloads (model_download.h),
  // encoded on first use; stale when download_model_of differs from the model's etag.
  ModelBlob download_model;
  std::string download_model_of;
  // The open training round's accumulator; empty once training rounds are over.
  std::optional<core::RoundAggregator> aggregator;
  // The population's server optimizer (record.settings.server_optimizer_json), and its state
  // after the close that published `model`, what the round's close starts from (null: the
  // initial state; always null for an optimizer without state, and once training is over).
  core::ServerOptimizerSpec optimizer;
  // "mode": "buffered" (record.settings.buffered_json); nullopt for synchronous rounds. A
  // buffered population's round r is its model version r: the open round is the buffer, and a
  // train report of a task handed out on version v folds into it with weight num_examples ×
  // staleness_weight(r − v) (result_weight_scale).
  std::optional<core::BufferedSpec> buffered;
  std::shared_ptr<const core::NamedTensors> optimizer_state;
  // A private population's ε ledger (record.settings.privacy_json; null when not private): its
  // accountant's tables are built once per load, each round's ε computed once.
  std::shared_ptr<PrivacyLedger> privacy;
  // Its device limits, read from the same section once (nullopt when not private): every claim
  // and enrollment checks them.
  std::optional<DeviceLimits> device_limits;
  // A private round's release noise, drawn ahead on the closer's thread (noise_ahead.h): null
  // until the round lifecycle posts the draw for the open round.
  std::shared_ptr<NoiseAhead> noise_ahead;
  // When aggregator_in_seq_order, the aggregator holds exactly the round's stored results
  // 1..result_seq, folded in seq order (always so for a store one server owns). A server sharing
  // its store with others holds only the results it accepted: it rebuilds the aggregate from the
  // store before closing the round (rebuild_aggregator), in seq order like a single server.
  bool aggregator_in_seq_order = true;
  std::int64_t result_seq = 0;      // last stored result of the current round
  std::int64_t checkpoint_seq = 0;  // last result folded into the stored checkpoint
  // The background close in flight for the current round (0: none). While set, the aggregator
  // is with the close: the round takes no more train uploads and hands out no train tasks.
  std::uint64_t closing = 0;
  // A background close left its round's results to a later step (when the next round's close
  // is scheduled, off the path of the claims that wait for the next round): the rounds up to
  // this one (-1: none).
  int results_to_drop_through = -1;
};

// Rebuilds a stored population's state. Throws fedleaf::Error when its round or model is missing,
// its model does not hash to its ETag (a damaged model file), or its stored results do not add up
// to the round's report count, InvalidInput when its model or checkpoint is invalid (the repository
// quarantines it).
std::unique_ptr<PopulationState> load_population_state(Store& store,
                                                       const PopulationRecord& record);

// Rebuilds the open training round's aggregator from the store: its checkpoint, then the
// results stored after it in seq order (what a single server folded, in the same order, so the
// aggregate is bit-identical). Throws fedleaf::Error when the results do not add up to
// `round.reports` (on a shared store: are fewer; more were committed after the round was read);
// InvalidInput for an invalid checkpoint.
void rebuild_aggregator(Store& store, PopulationState& state);

// Reads the optimizer state stored with the current round into `state` (null when the optimizer
// keeps none, or round 0 has none yet: the initial state). Requires the round's aggregator (the
// model the state must fit). Throws fedleaf::Error when a later round's state is missing,
// InvalidInput when the stored state does not fit the plan and model.
void load_optimizer_state(Store& store, PopulationState& state);

// load_population_state, read again (up to 5 times, with the population's record read again) when
// the store is shared and the load did not add up: another server committed between its reads.
std::unique_ptr<PopulationState> load_population_state_consistently(Store& store,
                                                                    PopulationRecord record);

// The published model of `round` (0..current round), found under the repository's lock and
// loaded after it: the current one is in memory; an earlier one is read from the store by load(),
// which checks it, so a slow, large or damaged model file never holds the lock.
//
//   PublishedModel found;
//   { std::lock_guard lock(mutex_); found = find_published_model(store, state, round); }
//   ModelBlob model = found.load();
//
// find_published_model: NotFound for a round without one; Gone for an earlier round whose model
// the retention policy dropped (TaskRepositoryOptions::keep_models). load(): Unavailable when the
// stored bytes cannot be read (fedleaf::Error from the store: a missing, unreadable or
// non-regular file) or do not hash to their ETag (a damaged model file).
class PublishedModel {
 public:
  PublishedModel() = default;
  explicit PublishedModel(ModelBlob current) : current_(std::move(current)) {}
  PublishedModel(std::string population_id, int round, ModelReader stored)
      : population_id_(std::move(population_id)), round_(round), stored_(std::move(stored)) {}

  // The current round's model (no read needed), or null.
  const ModelBlob* current() const { return current_ ? &*current_ : nullptr; }
  ModelBlob load();

 private:
  std::optional<ModelBlob> current_;
  std::string population_id_;
  int round_ = 0;
  std::optional<ModelReader> stored_;
};

PublishedModel find_published_model(Store& store, const PopulationState& state, int round);

// The safetensors index of the current model for model:select, built once and kept in `state`
// (until the next round publishes); under the repository's lock.
std::shared_ptr<const core::SafetensorsIndex> current_select_index(PopulationState& state);
// The index of a model's bytes, built for one request (an earlier round's model).
std::shared_ptr<const core::SafetensorsIndex> select_index_of(const std::string& model_bytes);

// Reads the population's live client tokens (their hashes) and its tokens_epoch into `state`.
void load_client_tokens(Store& store, PopulationState& state);
// Whether `token_hash` is one of the population's live client tokens (compared in constant time).
bool holds_client_token(const PopulationState& state, const std::string& token_hash);

// The state of a population just created (round 0 open, no reports; its one client token).
std::unique_ptr<PopulationState> new_population_state(
    const PopulationRecord& record, const RoundRecord& round0, std::string etag,
    std::string model_bytes, std::shared_ptr<const core::UpdatePlan> update_plan,
    core::RoundAggregator aggregator);

// The weight scale a stored train result of the open round folds with: its staleness weight in
// a buffered population (the open round's number minus its task's round, the server's record),
// 1 in a synchronous one. Throws fedleaf::Error when the result's task is missing or its round
// is past the open one.
double result_weight_scale(Store& store, const PopulationState& state, std::int64_t task_id);

// Reports a round expects: lets each accumulator size itself up front (results never depend on
// it; see AccumulatorOptions).
std::size_t expected_reports(const PopulationRecord& record);
// The plan with "kind" set, as a task of that kind carries it.
std::string plan_with_kind(const std::string& plan_json, const char* kind);
// A model's tensors; InvalidInput for bytes that are not safetensors or hold non-finite values.
core::NamedTensors decode_model(const std::string& bytes);
// The initial model as the server publishes it: a model holding F16 or BF16 arrays is written
// again with them widened to F32 (leaves train and the aggregator folds in F32; the metadata is
// kept); any other model is returned byte for byte. InvalidInput for bytes that are not
// safetensors.
std::string widen_half_floats(std::string bytes);
std::string to_string_bytes(const std::vector<std::uint8_t>& bytes);

}  // namespace fedleaf::server
