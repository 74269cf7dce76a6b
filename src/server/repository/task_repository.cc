#include "server/repository/task_repository.h"

#include <spdlog/spdlog.h>

#include <limits>
#include <optional>
#include <utility>

#include "core/train/plan.h"
#include "server/repository/model_download.h"
#include "server/repository/new_population.h"
#include "server/repository/population_state.h"
#include "server/repository/private_round.h"
#include "server/repository/select_rows.h"
#include "server/util/server_errors.h"
#include "server/util/tokens.h"

namespace fedleaf::server {

TaskRepository::TaskRepository(Store& store, const Clock& clock, ServerMetrics& metrics,
                               TaskRepositoryOptions options)
    : parts_(store, clock, metrics, std::move(options)),
      rounds_(parts_),
      claims_(parts_, rounds_),
      uploads_(parts_, rounds_),
      control_(parts_, rounds_),
      tokens_(parts_),
      devices_(parts_) {
  parts_.populations.load_all();
}

TaskRepository::~TaskRepository() {
  rounds_.stop_closer();  // runs the closes in flight, which take the mutex
  std::lock_guard lock(parts_.mutex);
  try {
    parts_.batch.commit(false);
  } catch (const std::exception& e) {
    // Nothing of the open batch was answered (answers wait for its commit): losing it is safe.
    if (parts_.options.logger) {
      parts_.options.logger->error("event=final_commit_failed error=\"{}\"", e.what());
    }
  }
}

void TaskRepository::commit_batch() {
  std::lock_guard lock(parts_.mutex);
  parts_.batch.commit(false);
}

ClaimOutcome TaskRepository::claim(const std::string& population_id,
                                   const std::string& client_token, int min_round,
                                   const std::string& device_credential) {
  return claims_.claim(population_id, client_token, min_round, device_credential);
}

void TaskRepository::release_lease(std::int64_t task_id, const std::string& lease_token) {
  claims_.release_lease(task_id, lease_token);
}

UploadOutcome TaskRepository::upload(std::int64_t task_id, const std::string& lease_token,
                                     std::string body) {
  return uploads_.upload(task_id, lease_token, std::move(body));
}

void TaskRepository::tick() { rounds_.tick(); }

void TaskRepository::checkpoint_all() { rounds_.checkpoint_all(); }

void TaskRepository::wait_for_closes() { rounds_.wait_for_closes(); }

CreatedPopulation TaskRepository::create_population(const PopulationSpec& spec) {
  // The model is made and checked before the lock: a large one takes seconds and gigabytes, and
  // one over max_model_bytes is refused before it is allocated.
  PopulationInputs inputs =
      prepare_population(spec, parts_.options.model_initializer, parts_.options.max_model_bytes);
  NewPopulation made = make_new_population(spec, std::move(inputs.plan),
                                           std::move(inputs.model_bytes), parts_.clock.now());
  std::lock_guard lock(parts_.mutex);
  const PopulationRecord& record = made.record;
  CreatedPopulation created{record.id, made.client_token, made.model_etag};
  parts_.batch.step(
      "create population",
      [&] {
        if (parts_.populations.loaded(record.id) || parts_.store.find_population(record.id)) {
          throw Conflict("population '" + record.id + "' already exists");
        }
        parts_.store.create_population(record, made.round0,
                                       {record.id, 0, made.model_etag, made.model_bytes});
      },
      Durability::kFull);
  parts_.populations.add(
      new_population_state(record, made.round0, made.model_etag, std::move(made.model_bytes),
                           std::move(made.update_plan), std::move(made.aggregator)));
  if (parts_.options.logger) {
    parts_.options.logger->info(
        "event=population_created population={} rounds={} clients_per_round={}", record.id,
        record.settings.rounds, record.settings.clients_per_round);
  }
  return created;
}

// An earlier round's model is read, hashed and (f16 downloads) encoded after the lock is
// released (PublishedModel); the current one's encoding is made once and kept.
ModelBlob TaskRepository::model(const std::string& population_id, int round) {
  rounds_.wait_for_close_past(population_id, round);
  PublishedModel found;
  std::shared_ptr<const core::UpdatePlan> plan;
  {
    std::lock_guard lock(parts_.mutex);
    PopulationState& st = parts_.populations.state_of(population_id);
    rounds_.advance(st, parts_.clock.now());
    found = find_published_model(parts_.store, st, round);
    if (found.current()) return current_download_model(st);
    plan = st.update_plan;
  }
  return download_model_of(found.load(), *plan, round);
}

SelectableModel TaskRepository::selectable_model(const std::string& population_id,
                                                 const std::string& client_token, int round) {
  const std::string presented_hash = hash_token(client_token);  // outside the lock
  rounds_.wait_for_close_past(population_id, round);
  PublishedModel found;
  SelectableModel out;
  {
    std::lock_guard lock(parts_.mutex);
    PopulationState& st = parts_.populations.state_of(population_id);
    if (!holds_client_token(st, presented_hash)) {
      throw Forbidden("client token does not match a live token of population '" + population_id +
                      "'");
    }
    rounds_.advance(st, parts_.clock.now());
    found = find_published_model(parts_.store, st, round);
    if (found.current()) out.index = current_select_index(st);
    out.plan = st.update_plan;
  }
  out.model = found.load();
  if (!out.index) out.index = select_index_of(*out.model.bytes);
  return out;
}

SelectedRows TaskRepository::select_rows(const std::string& population_id,
                                         const std::string& client_token, int round,
                                         const std::string& body, const std::string& content_type) {
  return server::select_rows(selectable_model(population_id, client_token, round), round, body,
                             content_type);
}

PopulationStatus TaskRepository::status(const std::string& population_id) {
  rounds_.wait_for_close_past(population_id, std::numeric_limits<int>::max());
  std::lock_guard lock(parts_.mutex);
  PopulationStatus out;
  PopulationState* loaded = nullptr;
  if (!parts_.populations.quarantine_holds(population_id)) {
    try {
      loaded = &parts_.populations.state_of(population_id);
    } catch (const Unavailable&) {
      // A store failure, not a failed load.
      if (!parts_.populations.quarantine_reason(population_id)) throw;
    }
  }
  if (!loaded) {
    out.record.id = population_id;
    out.failure_reason = *parts_.populations.quarantine_reason(population_id);
    return out;
  }
  PopulationState& st = *loaded;
  rounds_.advance(st, parts_.clock.now());
  out.record = st.record;
  out.record.privacy_secret.clear();  // never served
  if (st.privacy) {
    out.privacy_json =
        privacy_status(*st.privacy, rounds_released(st.record, st.round.number)).dump();
  }
  out.round = st.round;
  out.model_etag = st.model.etag;
  out.plan_json = st.train_plan_json;
  for (RoundRecord& round : parts_.store.list_rounds(population_id)) {
    RoundRobustness robust = read_robustness(round.robust_json);
    out.history.push_back({std::move(round), std::move(robust)});
  }
  out.rejections = parts_.store.rejections(population_id);
  if (st.buffered) {
    out.tasks_out =
        parts_.store.count_out_tasks(population_id, TaskKind::kTrain, parts_.clock.now());
  }
  return out;
}

std::vector<PopulationSummary> TaskRepository::list_populations() {
  std::lock_guard lock(parts_.mutex);
  std::vector<PopulationSummary> out;
  for (const PopulationRecord& p : parts_.store.list_populations()) {
    const bool failed = parts_.populations.quarantine_reason(p.id) != nullptr;
    out.push_back({p.id, failed ? std::string("failed") : state_name(p), p.current_round,
                   p.settings.rounds, p.settings.clients_per_round,
                   !p.settings.buffered_json.empty()});
  }
  return out;
}

std::vector<PrivacyEpsilon> TaskRepository::privacy_epsilons() {
  std::lock_guard lock(parts_.mutex);
  std::vector<PrivacyEpsilon> out;
  for (auto& [id, st] : parts_.populations.all()) {
    if (!st->privacy) continue;
    out.push_back({id, st->privacy->epsilon_after(rounds_released(st->record, st->round.number)),
                   st->privacy->epsilon_at_end()});
  }
  return out;
}

std::int64_t TaskRepository::open_leases() {
  std::lock_guard lock(parts_.mutex);
  return parts_.store.count_active_leases(parts_.clock.now());
}

}  // namespace fedleaf::server
