// TaskRepository: populations, rounds, leases and streaming aggregation — the transport-
// independent core of the task repository. The HTTP router translates requests into these calls.
//
//   SqliteStore store("tasks.db");
//   SystemClock clock;
//   ServerMetrics metrics;
//   TaskRepository repo(store, clock, metrics, {});
//   (results are typed; api/wire_json renders them for the wire)
//   CreatedPopulation p = repo.create_population(parse_population_spec(body));
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
// Errors (the HTTP status the router maps them to): NotFound (404) unknown population, task or
// model; Forbidden (403) a token that does not match; Gone (410) expired lease or closed round;
// Conflict (409) different bytes for a finished task, or an existing population id;
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
// Round close: by default the call that finds a training round due (the upload completing it,
// a claim or tick past its deadline) closes it in its own step. With close_in_background (and a
// store of its own) that call only hands the round's aggregator to the closer thread and
// returns: the closer computes the next model and writes its file outside the mutex, then
// takes the mutex for the close step (the rows). Meanwhile the round takes no train upload
// (410, as a closed round) and hands out no train task; claims wait (long poll) for the next
// round, woken when the close step is done. Reads that would reveal the next round (status, the
// next round's model) wait for the close. A crash before that step's commit leaves the round
// open with its stored results: the restarted repository closes it again from them.
//
// Thread-safe: every public method holds one mutex (the store has a single writer anyway); the
// commit of a batch holds it briefly, the sync does not.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "server/repository/claim_waiters.h"
#include "server/repository/population_spec.h"
#include "server/repository/results.h"
#include "server/repository/round_closer.h"
#include "server/repository/round_rules.h"
#include "server/repository/store_batch.h"
#include "server/store/store.h"
#include "server/util/clock.h"
#include "server/util/server_metrics.h"

namespace spdlog {
class logger;
}

namespace fedleaf::server {

struct PopulationState;
struct RoundClose;

// Makes the round-0 model (safetensors bytes) of a plan from a seed (core initialize_model).
using ModelInitializer =
    std::function<std::vector<std::uint8_t>(const std::string& plan_json, std::uint64_t seed)>;

struct TaskRepositoryOptions {
  // Checkpoint an open round's accumulator every this many accepted reports (0: only at
  // shutdown). Between checkpoints the stored results are replayed on restart.
  int checkpoint_every = 256;
  // Used for populations created with a seed; empty: such requests are InvalidInput.
  ModelInitializer model_initializer;
  // The largest model a population may have, in bytes of F32 parameters: a plan declaring more,
  // or an initial model holding more, is InvalidInput before anything is allocated (a plan with a
  // 10^8-row table asked for 25 GB).
  std::uint64_t max_model_bytes = std::uint64_t{2} << 30;
  // Round life-cycle events (created, closed, finished); null: no logging.
  std::shared_ptr<spdlog::logger> logger;
  // Close training rounds on the repository's closer thread (RoundCloser) instead of on the
  // request that finds them due (see "Round close" above). Ignored with a shared store, whose
  // closes stay on the request path.
  bool close_in_background = false;
  // Model retention: each round close drops the models of rounds more than this many below the
  // newly published one (it keeps the last keep_models models, the current one included),
  // except those of rounds a task still holds a valid lease of (Store::drop_models). 0: keep
  // every model.
  int keep_models = 0;
};

class TaskRepository {
 public:
  // A shared store: how long after a failed load a quarantined population is loaded again.
  static constexpr double kQuarantineRecheckS = 10;

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
  ClaimOutcome claim(const std::string& population_id, const std::string& client_token,
                     int min_round = 0);
  // Gives back a lease whose claim answer could not be delivered (the client closed its
  // connection): the task is leasable at once, and the waiting claims are woken, instead of the
  // task sitting out a whole lease. Does nothing when the token is not the task's current,
  // unexpired lease. In the open batch when it returns (committed with the next claim's answer).
  void release_lease(std::int64_t task_id, const std::string& lease_token);
  // In the open batch when it returns (see "Crash safety"): answer only after commit_batch()
  // and Store::sync().
  UploadOutcome upload(std::int64_t task_id, const std::string& lease_token,
                       const std::string& body);
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
  // Closes rounds whose deadline has passed and wakes the claims waiting on a population with an
  // expired lease (DeadlineTicker calls it periodically); commits and syncs what it changed.
  void tick();
  // The claims parked until a task may be available (long poll); claim()'s RetryLater carries
  // the epoch to park with.
  ClaimWaiters& waiters() { return waiters_; }
  // Writes a checkpoint of every open round with reports since its last one (at shutdown), once
  // the background closes in flight are done.
  void checkpoint_all();
  // Returns once no background close is queued or running (at once without close_in_background).
  void wait_for_closes();
  std::int64_t open_leases();
  // Commits the open batch of steps, if any (kNormal: survives a killed process; a
  // Store::sync() afterwards makes it survive power loss). On a store failure it rolls the batch
  // back, drops the in-memory state (reloaded from the store on next use) and throws
  // fedleaf::Error. GroupCommit calls it.
  void commit_batch();

 private:
  // The population's in-memory state, loaded on first use. Throws NotFound for an unknown id and
  // Unavailable for a quarantined one.
  PopulationState& state_of(const std::string& population_id);
  // Marks a population that cannot be loaded (e.g. its stored model or checkpoint is invalid) as
  // failed: its calls answer 503 with the reason, its status says state "failed", the others
  // serve on.
  void quarantine(const std::string& population_id, const std::string& reason);
  // Whether a population's calls answer "quarantined" now: always on a store this server owns;
  // on a shared store until kQuarantineRecheckS after the failed load, when the next call (or
  // tick) loads it again.
  bool quarantine_holds(const std::string& population_id) const;
  // A shared store (Store::shared()): re-reads the round's counters, or the whole state when
  // another server closed the round.
  void refresh(PopulationState& state);
  void reload(PopulationState& state);
  // In a step: locks the open round for its close and re-reads it. False when it is not due
  // after all, or closed by another server (then state.round.status is closed).
  bool lock_round_to_close(PopulationState& state, double now);
  // A shared store: commits the open batch, so that this server holds no lock on the round it
  // is about to close (lock_open_round waits for every other server's accepts; two closers each
  // holding accepts of the round would wait for each other). A failure is Unavailable (the
  // batch is abandoned: the in-memory state is dropped).
  void commit_before_close();
  void advance(PopulationState& state, double now);
  // Closes the open training round (RoundClose) and opens the next with the published model.
  void publish_next_model(PopulationState& state, double now);
  // Inside a close's step, after the model of `published_round` is written: the retention
  // policy (options_.keep_models).
  void drop_old_models(const std::string& population_id, int published_round, double now);
  // The results a background close left (PopulationState::results_to_drop_through), as a step
  // of their own when the next round's close is scheduled (it runs alongside the close job's
  // finalize, encode, hash and model file, which take no lock).
  void drop_closed_results(PopulationState& state);
  // Waits for the background closes when one of the population is in flight and `round` is
  // past its current round: a read after the 201 of the upload completing a round (a status,
  // the next round's model) sees the next round, as with an inline close.
  void wait_for_close_past(const std::string& population_id, int round);
  // close_in_background: hands the round's aggregator to a close job on closer_ (once per round).
  void schedule_close(PopulationState& state, double now);
  // The close job: runs without the mutex until the close step.
  void run_close(std::uint64_t close_id, const PopulationState& snapshot, double now);
  // After the close step: metrics, log, and the state moved to the next round.
  void apply_close(PopulationState& state, RoundClose& close, double persist_s, double store_s);
  void finish(PopulationState& state, double now);
  // Counts a refused upload in the store and the metrics, unless it repeats the lease's last
  // counted refusal (Store::add_rejection).
  void reject(const RefusedUpload& upload);
  UploadOutcome accept_train(PopulationState& state, const TaskRecord& task, std::int64_t lease_id,
                             const std::string& body, const std::string& sha, double now);
  UploadOutcome accept_evaluate(PopulationState& state, const TaskRecord& task,
                                std::int64_t lease_id, const std::string& body,
                                const std::string& sha, double now);
  // The answer to an upload (under lease_id, of bytes hashing to sha) the store did not accept
  // now: 200 with the first receipt for a repeat, else the rejection is counted and Conflict or
  // Gone thrown.
  UploadOutcome answer_refused(const std::string& population_id, AcceptStatus status,
                               const TaskRecord& task, std::int64_t lease_id,
                               const std::string& sha);
  // Whether a claim on this server could get a task of the population's round now (one to
  // create, a never-leased one, or an expired lease).
  bool has_task_to_offer(const PopulationState& st, double now);
  // A step of the open batch that changes a loaded population: on failure its in-memory state
  // (which may already hold the change) is dropped, to be reloaded from the store.
  template <class Body>
  void population_step(const std::string& population_id, const std::string& what, Body&& body);

  Store& store_;
  const Clock& clock_;
  ServerMetrics& metrics_;
  TaskRepositoryOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<PopulationState>> populations_;
  struct Quarantine {
    std::string reason;  // why it failed to load
    double recheck_at = 0;
  };
  std::map<std::string, Quarantine> quarantined_;  // by population id
  StoreBatch batch_;  // after populations_: its abandon handler clears them
  ClaimWaiters waiters_;
  std::uint64_t last_close_id_ = 0;
  std::unique_ptr<RoundCloser> closer_;  // close_in_background; stopped first by the destructor
};

template <class Body>
inline void TaskRepository::population_step(const std::string& population_id,
                                            const std::string& what, Body&& body) {
  try {
    batch_.step(what, std::forward<Body>(body));
  } catch (...) {
    populations_.erase(population_id);
    throw;
  }
}

}  // namespace fedleaf::server
