// TaskRepository: populations, rounds, leases and streaming aggregation — the transport-
// independent core of the task repository. The HTTP router translates requests into these calls.
//
//   SqliteStore store("tasks.db");
//   SystemClock clock;
//   Metrics metrics;
//   TaskRepository repo(store, clock, metrics, {});
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
// Errors (the HTTP status the router maps them to): NotFound (404) unknown population, task or
// model; Forbidden (403) a token that does not match; Gone (410) expired lease or closed round;
// Conflict (409) different bytes for a finished task, or an existing population id;
// InvalidInput (400) an invalid spec or result; Unavailable (503) a store failure.
//
// Crash safety: every state change is one store transaction, committed before the call
// returns; accepted train results are stored in the transaction that accepts them
// (Durability::kFull), so the open round's aggregate is rebuilt exactly on restart from its
// last checkpoint plus the results stored after it.
//
// Thread-safe: every public method holds one mutex (the store has a single writer anyway).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "server/clock.h"
#include "server/metrics.h"
#include "server/population_spec.h"
#include "server/store.h"

namespace spdlog {
class logger;
}

namespace fedleaf::server {

// Makes the round-0 model (safetensors bytes) of a plan from a seed (core initialize_model).
using ModelInitializer =
    std::function<std::vector<std::uint8_t>(const std::string& plan_json, std::uint64_t seed)>;

struct TaskRepositoryOptions {
  // Checkpoint an open round's accumulator every this many accepted reports (0: only at
  // shutdown). Between checkpoints the stored results are replayed on restart.
  int checkpoint_every = 256;
  // Used for populations created with a seed; empty: such requests are InvalidInput.
  ModelInitializer model_initializer;
  // Round life-cycle events (created, closed, finished); null: no logging.
  std::shared_ptr<spdlog::logger> logger;
};

struct CreatedPopulation {
  std::string id;
  std::string client_token;  // shown once; the store keeps only its hash
  std::string model_etag;    // of round 0
};

struct TaskAssignment {
  std::int64_t task_id = 0;
  std::string population;
  int round = 0;
  std::string kind;  // "train" | "evaluate"
  std::string lease_token;
  double lease_expires_at = 0;  // unix seconds
  std::string plan_json;        // with "kind" set to the task's kind
  std::string model_etag;
};

// Nothing to hand out now: every task of the open round is leased (retry when a lease may
// expire or the round may close), or the population is finished.
// Longest retry hint while a leaf waits for the open round to close.
inline constexpr double kRoundPollS = 0.5;

struct RetryLater {
  double retry_after_s = 1;  // whole seconds, >= 1 (HTTP Retry-After)
  bool finished = false;
  double retry_after_ms = 1000;  // finer hint: until the next lease expiry or deadline, >= 50
};

using ClaimOutcome = std::variant<TaskAssignment, RetryLater>;

struct UploadOutcome {
  int status = 201;  // 201 accepted now, 200 the same bytes were accepted before
  std::string body;  // JSON; byte-identical for every repeat of an accepted upload
};

struct ModelBlob {
  std::string etag;
  std::shared_ptr<const std::string> bytes;
};

class TaskRepository {
 public:
  // Loads every population from the store and resumes its open round. The store, clock and
  // metrics must outlive the repository.
  TaskRepository(Store& store, const Clock& clock, Metrics& metrics, TaskRepositoryOptions options);
  ~TaskRepository();
  TaskRepository(const TaskRepository&) = delete;
  TaskRepository& operator=(const TaskRepository&) = delete;

  CreatedPopulation create_population(const PopulationSpec& spec);
  // min_round: hand out train tasks only of rounds >= min_round (a leaf that already trained on
  // round r asks for r + 1, so one leaf never reports its data twice in a round); evaluate tasks
  // are not limited. When the leaf must wait for the next round, the retry hint is short
  // (kRoundPollS): a round can close at any moment.
  ClaimOutcome claim(const std::string& population_id, const std::string& client_token,
                     int min_round = 0);
  UploadOutcome upload(std::int64_t task_id, const std::string& lease_token,
                       const std::string& body);
  // The published model of a round (0..current round).
  ModelBlob model(const std::string& population_id, int round);
  // Status JSON (README "Population status").
  nlohmann::json status(const std::string& population_id);
  nlohmann::json list_populations();
  // Closes rounds whose deadline has passed (the server calls this from a timer).
  void tick();
  // Writes a checkpoint of every open round with reports since its last one (at shutdown).
  void checkpoint_all();
  std::int64_t open_leases();

 private:
  struct PopulationState;
  PopulationState& state_of(const std::string& population_id);
  std::unique_ptr<PopulationState> load(const PopulationRecord& record);
  void advance(PopulationState& state, double now);
  void close_training_round(PopulationState& state, double now);
  void finish(PopulationState& state, double now);
  void reject(const std::string& population_id, const std::string& reason);
  UploadOutcome accept_train(PopulationState& state, TaskRecord task, const std::string& body,
                             const std::string& sha, double now);
  UploadOutcome accept_evaluate(PopulationState& state, TaskRecord task, const std::string& body,
                                const std::string& sha, double now);

  Store& store_;
  const Clock& clock_;
  Metrics& metrics_;
  TaskRepositoryOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<PopulationState>> populations_;
};

}  // namespace fedleaf::server
