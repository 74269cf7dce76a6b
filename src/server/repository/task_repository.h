// TaskRepository: populations, rounds, leases and streaming aggregation — the transport-
// independent core of the task repository. The HTTP router translates requests into these calls.
//
//   SqliteStore store("tasks.db");
//   SystemClock clock;
//   ServerMetrics metrics;
//   TaskRepository repo(store, clock, metrics, {});
//   (results are typed; api/wire_json renders them for the wire)
//   CreatedPopulation p = repo.create_population(parse_population_body(body));
//   ClaimOutcome c = repo.claim(p.id, p.client_token);
//   if (auto* task = std::get_if<TaskAssignment>(&c)) {
//     UploadOutcome u = repo.upload(task->task_id, task->lease_token, result_bytes);  // 201
//   }
//
// Round life cycle: round r opens with model_r. Claims lease train tasks (created on demand, at
// most train_tasks_per_round of them, so over-selection is possible) and evaluate tasks on
// model_r. Each valid train upload is folded into the round's RoundAggregator as it arrives. The
// round closes at clients_per_round reports, or once its deadline has passed with at least
// min_reports reports (the round stays open past its deadline until it has them); closing
// publishes model_{r+1} and opens round r+1. After the last training round, a round of evaluate
// tasks only (when eval_tasks_per_round > 0) evaluates the final model until all its tasks
// report or its deadline passes; then the population is finished.
//
// The rules of when a round closes and of the retry hint are round_rules.h; claims that wait
// park on waiters() and are woken when a task may have appeared (a round opened, the population
// finished, the tick saw a lease expire).
//
// The façade of the repository's roles, which share RepositoryParts: the loaded populations and
// their quarantine (PopulationCache), how rounds move on (RoundLifecycle), claims (TaskClaims)
// and uploads (UploadIntake); the typed results are results.h, the options
// task_repository_options.h.
//
// Errors (the HTTP status the router maps them to): NotFound (404) unknown population, task or
// model; Forbidden (403) a token that does not match; Gone (410) expired lease or closed round;
// Conflict (409) different bytes for a finished task, an existing population id, or an
// operator's transition the population's state does not allow;
// InvalidInput (400) an invalid spec or result; Unavailable (503) a store failure, or a
// population that failed to load (quarantined: state "failed" in its status; on a shared store
// loaded again kQuarantineRecheckS later).
//
// Crash safety (group commit): every state change is one all-or-nothing step (a nested store
// transaction) of the open *batch* transaction; commit_batch() commits the batch (kNormal: it
// then survives a killed process) and Store::sync() makes it survive power loss. Accepted train
// results are stored in the step that accepts them, so the open round's aggregate is rebuilt
// exactly on restart from its last checkpoint plus the results stored after it. claim() and
// upload() return with their step still uncommitted: the caller must not answer a claim before
// a commit_batch(), nor an upload before a commit_batch() and a Store::sync(), that started
// after the call returned (the router marks the answers, the HTTP layer waits for GroupCommit,
// which batches both). A round closed (or a population finished) by any call is a step of the
// batch too: every answer that reveals it waits for its commit (claims) or sync (uploads, model
// and status reads; the router marks them), and tick() commits and syncs what it changed. Steps
// that must be durable at once (create_population, checkpoint_all) commit the batch and sync the
// store before returning. A failed commit rolls the batch back and drops the in-memory state,
// which is reloaded from the store.
//
// Round close (inline, or on a closer thread off the request path): round_lifecycle.h.
//
// Thread-safe: every public method holds one mutex (the store has a single writer anyway); the
// commit of a batch holds it briefly, the sync does not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/repository/claim_waiters.h"
#include "server/repository/client_tokens.h"
#include "server/repository/devices.h"
#include "server/repository/population_cache.h"
#include "server/repository/population_control.h"
#include "server/repository/population_spec.h"
#include "server/repository/repository_parts.h"
#include "server/repository/results.h"
#include "server/repository/round_lifecycle.h"
#include "server/repository/task_claims.h"
#include "server/repository/task_repository_options.h"
#include "server/repository/upload_intake.h"
#include "server/store/store.h"
#include "server/util/clock.h"
#include "server/util/server_metrics.h"

namespace fedleaf::server {

class TaskRepository {
 public:
  // A shared store: how long after a failed load a quarantined population is loaded again.
  static constexpr double kQuarantineRecheckS = PopulationCache::kQuarantineRecheckS;

  // Loads every population from the store and resumes its open round. The store, clock and
  // metrics must outlive the repository.
  TaskRepository(Store& store, const Clock& clock, ServerMetrics& metrics,
                 TaskRepositoryOptions options);
  ~TaskRepository();
  TaskRepository(const TaskRepository&) = delete;
  TaskRepository& operator=(const TaskRepository&) = delete;

  // Validates the whole plan (core parse_plan: a plan no leaf can run is InvalidInput), the
  // model, and that the plan's updates fit the model.
  CreatedPopulation create_population(const PopulationSpec& spec);
  // min_round: hand out train tasks only of rounds >= min_round (a leaf that already trained on
  // round r asks for r + 1, so one leaf never reports its data twice in a round); evaluate tasks
  // are not limited. When the leaf must wait for the next round, the retry hint is short
  // (round_poll_s): a round can close at any moment.
  // In the open batch when it returns: answer only after commit_batch().
  // device_credential: the Fedleaf-Device header ("" when absent), which a private population's
  // claims must carry (task_claims.h).
  ClaimOutcome claim(const std::string& population_id, const std::string& client_token,
                     int min_round = 0, const std::string& device_credential = {});
  // Gives back a lease whose claim answer could not be delivered (the client closed its
  // connection): the task is leasable at once, and the waiting claims are woken, instead of the
  // task sitting out a whole lease. Does nothing when the token is not the task's current,
  // unexpired lease. In the open batch when it returns (committed with the next claim's answer).
  void release_lease(std::int64_t task_id, const std::string& lease_token);
  // In the open batch when it returns (see "Crash safety"): answer only after commit_batch()
  // and Store::sync().
  UploadOutcome upload(std::int64_t task_id, const std::string& lease_token, std::string body);
  // The published model of a round (0..current round). May close a round (in the open batch):
  // answer only after commit_batch() and Store::sync().
  ModelBlob model(const std::string& population_id, int round);
  // The model of a round for model:select, for holders of the population's client token
  // (Forbidden otherwise). Otherwise like model(): NotFound, and it may close a round.
  SelectableModel selectable_model(const std::string& population_id,
                                   const std::string& client_token, int round);
  // model:select (select_rows.h): the rows of round `round`'s model a body asks for. As
  // selectable_model() — Forbidden, NotFound, Gone, checked before the body — then InvalidInput
  // for a body that breaks a rule. The answer is built outside the lock.
  SelectedRows select_rows(const std::string& population_id, const std::string& client_token,
                           int round, const std::string& body, const std::string& content_type);
  // Status JSON (README "Population status"). May close a round, like model().
  PopulationStatus status(const std::string& population_id);
  std::vector<PopulationSummary> list_populations();
  // An operator's pause, resume and finish (population_control.h): durable when they return;
  // NotFound, or Conflict for a transition the population's state does not allow.
  void pause(const std::string& population_id) { control_.pause(population_id); }
  void resume(const std::string& population_id) { control_.resume(population_id); }
  void finish(const std::string& population_id, const std::string& reason) {
    control_.finish(population_id, reason);
  }
  // A population's client tokens (client_tokens.h): issued, revoked (Conflict when already),
  // listed; NotFound for an unknown population or token.
  IssuedToken issue_client_token(const std::string& population_id) {
    return tokens_.issue(population_id);
  }
  ClientTokenRecord revoke_client_token(const std::string& population_id, int token_id) {
    return tokens_.revoke(population_id, token_id);
  }
  std::vector<ClientTokenRecord> client_tokens(const std::string& population_id) {
    return tokens_.list(population_id);
  }
  // A private population's devices (devices.h): enrolled under a client token (Forbidden when
  // not live, Conflict without a privacy section, TooManyRequests past the hourly limit),
  // revoked (Conflict when already), listed a page at a time; NotFound for an unknown
  // population or device.
  EnrolledDevice enroll_device(const std::string& population_id, const std::string& client_token) {
    return devices_.enroll(population_id, client_token);
  }
  void revoke_device(const std::string& population_id, const std::string& device_id) {
    devices_.revoke(population_id, device_id);
  }
  DevicePage devices(const std::string& population_id, const std::string& after_id) {
    return devices_.list(population_id, after_id);
  }
  // Closes rounds whose deadline has passed and wakes the claims waiting on a population with an
  // expired lease (DeadlineTicker calls it periodically); commits and syncs what it changed.
  void tick();
  // The claims parked until a task may be available (long poll); claim()'s RetryLater carries
  // the epoch to park with.
  ClaimWaiters& waiters() { return parts_.waiters; }
  // Writes a checkpoint of every open round with reports since its last one (at shutdown), once
  // the background closes in flight are done.
  void checkpoint_all();
  // Returns once no background close is queued or running (at once without close_in_background).
  void wait_for_closes();
  std::int64_t open_leases();
  // ε spent and planned of each loaded private population (the /metrics gauges).
  std::vector<PrivacyEpsilon> privacy_epsilons();
  // Commits the open batch of steps, if any (kNormal: survives a killed process; a
  // Store::sync() afterwards makes it survive power loss). On a store failure it rolls the batch
  // back, drops the in-memory state (reloaded from the store on next use) and throws
  // fedleaf::Error. GroupCommit calls it.
  void commit_batch();

 private:
  RepositoryParts parts_;
  RoundLifecycle rounds_;  // its closer is stopped first by the destructor
  TaskClaims claims_;
  UploadIntake uploads_;
  PopulationControl control_;
  ClientTokens tokens_;
  Devices devices_;
};

}  // namespace fedleaf::server
