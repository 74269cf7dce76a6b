#include "server/repository/population_state.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "core/aggregation/round/next_round_plan.h"
#include "core/error.h"
#include "core/wire/safetensors.h"
#include "server/repository/private_round.h"
#include "server/repository/round_clip_bounds.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "server/util/tokens.h"

namespace fedleaf::server {

// Reports a round expects: lets each accumulator size itself up front (results never depend on
// it; see AccumulatorOptions).
std::size_t expected_reports(const PopulationRecord& record) {
  return static_cast<std::size_t>(std::max(1, record.settings.clients_per_round));
}

std::string plan_with_kind(const std::string& plan_json, const char* kind) {
  nlohmann::json plan = nlohmann::json::parse(plan_json);
  plan["kind"] = kind;
  return plan.dump();
}

core::NamedTensors decode_model(const std::string& bytes) {
  core::SafetensorsReadOptions options;
  options.require_finite = true;
  return core::read_safetensors(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(),
                                options)
      .tensors;
}

std::string widen_half_floats(std::string bytes) {
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const core::SafetensorsIndex index = core::index_safetensors(data, bytes.size());
  const bool holds_half = std::any_of(index.arrays.begin(), index.arrays.end(), [](const auto& a) {
    return core::is_half_float(a.second.dtype);
  });
  if (!holds_half) return bytes;
  const core::SafetensorsFile file = core::read_safetensors(data, bytes.size());
  return to_string_bytes(core::write_safetensors(file.tensors, file.metadata));
}

std::string to_string_bytes(const std::vector<std::uint8_t>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

namespace {

// A stored model's bytes must hash to its ETag: a model file damaged or replaced on disk is
// caught here, not served.
bool hashes_to_etag(const ModelRecord& model) { return sha256_hex(model.bytes) == model.etag; }

std::string damaged_model(const std::string& population_id, int round) {
  return "population '" + population_id + "': the stored model of round " + std::to_string(round) +
         " does not hash to its ETag (a damaged model file)";
}

}  // namespace

std::unique_ptr<PopulationState> load_population_state(Store& store,
                                                       const PopulationRecord& record) {
  auto st = std::make_unique<PopulationState>();
  st->record = record;
  auto round = store.find_round(record.id, record.current_round);
  auto model = store.find_model(record.id, record.current_round);
  if (!round || !model) {
    throw Error("population '" + record.id + "': round " + std::to_string(record.current_round) +
                " or its model is missing from the store");
  }
  if (!hashes_to_etag(*model)) throw Error(damaged_model(record.id, record.current_round));
  st->round = *round;
  st->train_plan_json = plan_with_kind(record.plan_json, "train");
  st->eval_plan_json = plan_with_kind(record.plan_json, "evaluate");
  st->model = {model->etag, std::make_shared<const std::string>(std::move(model->bytes))};
  st->update_plan = std::make_shared<const core::UpdatePlan>(
      private_update_plan(core::parse_update_plan(record.plan_json), record.settings));
  st->privacy = privacy_ledger_of(record);
  if (st->privacy) st->device_limits = device_limits_of(st->privacy->spec());
  st->optimizer = core::server_optimizer_from_text(
      record.settings.server_optimizer_json, "population '" + record.id + "': server_optimizer");
  st->buffered = core::buffered_spec_from_text(record.settings.buffered_json,
                                               "population '" + record.id + "': buffered");
  if (record.state == RunState::kRunning && round->number < record.settings.rounds &&
      round->status == RoundStatus::kOpen) {
    rebuild_aggregator(store, *st);
    load_optimizer_state(store, *st);
  }
  load_client_tokens(store, *st);
  return st;
}

void load_client_tokens(Store& store, PopulationState& st) {
  // The epoch first: a token issued between the two reads is then read again on the next refresh.
  if (std::optional<PopulationRecord> found = store.find_population(st.record.id)) {
    st.record.tokens_epoch = found->tokens_epoch;
  }
  st.client_token_hashes.clear();
  for (const ClientTokenRecord& token : store.list_client_tokens(st.record.id)) {
    if (token.revoked_at == 0) st.client_token_hashes.push_back(token.token_hash);
  }
}

bool holds_client_token(const PopulationState& st, const std::string& token_hash) {
  bool held = false;
  for (const std::string& hash : st.client_token_hashes) {
    held = constant_time_equals(token_hash, hash) || held;  // every one compared: no early exit
  }
  return held;
}

void load_optimizer_state(Store& store, PopulationState& st) {
  st.optimizer_state.reset();
  const core::ServerOptimizer optimizer(st.optimizer);
  if (!optimizer.stateful()) return;
  std::optional<OptimizerStateRecord> stored =
      store.find_optimizer_state(st.record.id, st.round.number);
  if (!stored) {
    // Every close of a population with a stateful optimizer stores one with its model.
    if (st.round.number == 0) return;
    throw Error("population '" + st.record.id + "': the server optimizer's state of round " +
                std::to_string(st.round.number) + " is missing from the store");
  }
  if (sha256_hex(stored->bytes) != stored->etag) {
    throw Error("population '" + st.record.id + "': the stored server optimizer state of round " +
                std::to_string(st.round.number) + " does not hash to its ETag (a damaged file)");
  }
  st.optimizer_state = std::make_shared<const core::NamedTensors>(
      optimizer.load_state(reinterpret_cast<const std::uint8_t*>(stored->bytes.data()),
                           stored->bytes.size(), *st.update_plan, st.aggregator->model()));
}

void rebuild_aggregator(Store& store, PopulationState& st) {
  const PopulationRecord& record = st.record;
  const RoundRecord& round = st.round;
  core::NamedTensors tensors = decode_model(*st.model.bytes);
  st.aggregator.reset();
  st.result_seq = st.checkpoint_seq = 0;
  auto checkpoint = store.find_checkpoint(record.id, round.number);
  // The round's own bounds; a round opened by a server before adaptive clipping stored none, and
  // its checkpoint, if any, says what it clipped at.
  core::ClipBounds bounds = round_clip_bounds(round);
  if (bounds.empty() && checkpoint) {
    bounds = core::RoundAggregator::checkpoint_clip_bounds(
        reinterpret_cast<const std::uint8_t*>(checkpoint->bytes.data()), checkpoint->bytes.size());
  }
  core::UpdatePlan round_plan = core::with_clip_bounds(*st.update_plan, bounds);
  if (const auto cap = round_example_cap(round)) {
    round_plan = core::with_example_cap(std::move(round_plan), *cap);
  }
  if (checkpoint) {
    st.aggregator = core::RoundAggregator::restore(
        round_plan, std::move(tensors),
        reinterpret_cast<const std::uint8_t*>(checkpoint->bytes.data()), checkpoint->bytes.size());
    st.checkpoint_seq = st.result_seq = checkpoint->seq;
  } else {
    st.aggregator.emplace(round_plan, std::move(tensors), expected_reports(record));
  }
  for (const ResultRecord& result :
       store.list_results(record.id, round.number, st.checkpoint_seq)) {
    st.aggregator->add_result(reinterpret_cast<const std::uint8_t*>(result.bytes.data()),
                              result.bytes.size(), result_weight_scale(store, st, result.task_id));
    st.result_seq = result.seq;
  }
  st.aggregator_in_seq_order = true;
  // On a shared store the results were read after the round: reports other servers committed
  // in between are among them (the round's counters are re-read by the next request, and a
  // close rebuilds under its lock, where both agree). Fewer results than reports means the
  // round closed in between (its results dropped), or a corrupt store.
  const auto held = static_cast<std::int64_t>(st.aggregator->num_reports());
  if (store.shared() ? held < round.reports : held != round.reports) {
    throw Error("population '" + record.id + "' round " + std::to_string(round.number) +
                ": the store records " + std::to_string(round.reports) +
                " reports but its results and checkpoint hold " +
                std::to_string(st.aggregator->num_reports()));
  }
}

double result_weight_scale(Store& store, const PopulationState& st, std::int64_t task_id) {
  if (!st.buffered) return 1.0;
  const std::optional<TaskRecord> task = store.find_task(task_id);
  if (!task || task->round > st.round.number) {
    throw Error("population '" + st.record.id + "' round " + std::to_string(st.round.number) +
                ": the task of stored result " + std::to_string(task_id) +
                " is missing or of a later round");
  }
  return core::staleness_weight(*st.buffered,
                                static_cast<std::uint64_t>(st.round.number - task->round));
}

std::unique_ptr<PopulationState> new_population_state(
    const PopulationRecord& record, const RoundRecord& round0, std::string etag,
    std::string model_bytes, std::shared_ptr<const core::UpdatePlan> update_plan,
    core::RoundAggregator aggregator) {
  auto st = std::make_unique<PopulationState>();
  st->record = record;
  st->client_token_hashes = {record.client_token_hash};
  st->round = round0;
  st->train_plan_json = plan_with_kind(record.plan_json, "train");
  st->eval_plan_json = plan_with_kind(record.plan_json, "evaluate");
  st->model = {std::move(etag), std::make_shared<const std::string>(std::move(model_bytes))};
  st->update_plan = std::move(update_plan);
  st->aggregator.emplace(std::move(aggregator));
  st->privacy = privacy_ledger_of(record);
  if (st->privacy) st->device_limits = device_limits_of(st->privacy->spec());
  st->optimizer = core::server_optimizer_from_text(
      record.settings.server_optimizer_json, "population '" + record.id + "': server_optimizer");
  st->buffered = core::buffered_spec_from_text(record.settings.buffered_json,
                                               "population '" + record.id + "': buffered");
  return st;
}

std::unique_ptr<PopulationState> load_population_state_consistently(Store& store,
                                                                    PopulationRecord record) {
  // On a shared store the reads of a load see other servers' commits between statements (an
  // upload accepted, or the round closed and its results dropped, between reading the round and
  // its results): such a load does not add up and is read again. What still fails is the store's.
  constexpr int kSharedAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    try {
      return load_population_state(store, record);
    } catch (const std::exception&) {
      if (!store.shared() || attempt == kSharedAttempts) throw;
      std::optional<PopulationRecord> again = store.find_population(record.id);
      if (!again) throw;
      record = std::move(*again);
    }
  }
}

PublishedModel find_published_model(Store& store, const PopulationState& state, int round) {
  if (round == state.round.number) return PublishedModel(state.model);
  if (round < 0 || round > state.round.number) {
    throw NotFound("round " + std::to_string(round) + " of population '" + state.record.id +
                   "' has no published model (current round " + std::to_string(state.round.number) +
                   ")");
  }
  std::optional<ModelReader> stored = store.find_model_reader(state.record.id, round);
  // A round below the current one had a model: without its row, retention dropped it.
  if (!stored) {
    throw Gone("the model of round " + std::to_string(round) + " of population '" +
               state.record.id + "' was dropped by the retention policy (--keep-models)");
  }
  return PublishedModel(state.record.id, round, std::move(*stored));
}

ModelBlob PublishedModel::load() {
  if (current_) return *current_;
  ModelRecord record{population_id_, round_, stored_->etag, {}};
  try {
    record.bytes = stored_->read_bytes();
  } catch (const Error& e) {
    // Its file is missing, unreadable or not a file: the server's state is damaged, not the
    // request (503, as for a model that does not hash).
    throw Unavailable("population '" + population_id_ + "': the stored model of round " +
                      std::to_string(round_) + " cannot be read (" + e.what() + ")");
  }
  if (!hashes_to_etag(record)) throw Unavailable(damaged_model(population_id_, round_));
  return {record.etag, std::make_shared<const std::string>(std::move(record.bytes))};
}

std::shared_ptr<const core::SafetensorsIndex> select_index_of(const std::string& model_bytes) {
  return std::make_shared<const core::SafetensorsIndex>(core::index_safetensors(
      reinterpret_cast<const std::uint8_t*>(model_bytes.data()), model_bytes.size()));
}

std::shared_ptr<const core::SafetensorsIndex> current_select_index(PopulationState& state) {
  if (state.select_index_etag != state.model.etag) {
    state.select_index = select_index_of(*state.model.bytes);
    state.select_index_etag = state.model.etag;
  }
  return state.select_index;
}

}  // namespace fedleaf::server
