// The typed results of TaskRepository's calls: what a claim, an upload, a population's creation,
// status and listing, and a model download answer. They carry no JSON of the wire: api/wire_json
// renders them.
//
//   ClaimOutcome c = repo.claim(p.id, p.client_token);
//   if (auto* task = std::get_if<TaskAssignment>(&c)) render(task_json(*task));
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/aggregation/updates/update_plan.h"
#include "core/wire/safetensors_index.h"
#include "server/repository/round_robustness.h"
#include "server/repository/round_rules.h"
#include "server/repository/upload_receipt.h"
#include "server/store/store.h"

namespace fedleaf::server {

struct CreatedPopulation {
  std::string id;
  std::string client_token;  // shown once; the store keeps only its hash
  std::string model_etag;    // of round 0
};

struct TaskAssignment {
  std::int64_t task_id = 0;
  std::string population;
  int round = 0;
  TaskKind kind = TaskKind::kTrain;
  std::string lease_token;
  double lease_expires_at = 0;  // unix seconds
  std::string plan_json;        // with "kind" set to the task's kind
  std::string model_etag;
};

// Nothing to hand out now (RetryLater, round_rules.h): every task of the open round is leased
// (retry when a lease may expire or the round may close), or the population is finished.
using ClaimOutcome = std::variant<TaskAssignment, RetryLater>;

struct UploadOutcome {
  int status = 201;  // 201 accepted now, 200 the same bytes were accepted before
  UploadReceipt receipt;
};

// A round as the status shows it: its row, and what robust aggregation did in it.
struct RoundReport {
  RoundRecord record;
  RoundRobustness robust;  // read from record.robust_json
};

// A population as GET /v1/populations/{p} shows it.
struct PopulationStatus {
  PopulationRecord record;
  std::optional<std::string> failure_reason;  // set: quarantined (state "failed"), rest empty
  RoundRecord round;                          // the current round
  std::string model_etag;                     // of the current round
  std::string plan_json;                      // the train plan
  std::vector<RoundReport> history;
  std::map<std::string, std::int64_t> rejections;  // reason -> count
  // A buffered population's train tasks out now (leased, the lease valid), what its concurrency
  // bounds; nullopt for a synchronous one.
  std::optional<std::int64_t> tasks_out;
  // A private population's "privacy" object (private_round.h: privacy_status) as JSON text; ""
  // when not private. record.privacy_secret is always empty here.
  std::string privacy_json;
};

// A private population's ε as /metrics shows it: spent so far, and at the end of the run.
struct PrivacyEpsilon {
  std::string population_id;
  double spent = 0;
  double planned = 0;
};

// The state the wire shows: "paused" for a running population an operator paused, else
// "running" or "finished".
inline std::string state_name(const PopulationRecord& p) {
  return p.state == RunState::kRunning && p.paused ? "paused" : to_string(p.state);
}

// A population as GET /v1/populations lists it.
struct PopulationSummary {
  std::string id;
  std::string state;  // "running" | "paused" | "finished" | "failed"
  int round = 0;
  int rounds = 0;
  int clients_per_round = 0;
  bool buffered = false;  // listed as "mode": "buffered"; its round is its model version
};

struct ModelBlob {
  std::string etag;
  std::shared_ptr<const std::string> bytes;
};

// What model:select needs of a round: the model, the index of its bytes (built once per
// published model of the current round; per call for older rounds), and the plan's updates.
struct SelectableModel {
  ModelBlob model;
  std::shared_ptr<const core::SafetensorsIndex> index;
  std::shared_ptr<const core::UpdatePlan> plan;
};

// A model:select answer: safetensors with the asked rows of each selected tensor (a row-sparse
// tuple) and every other tensor whole.
struct SelectedRows {
  std::string bytes;
  std::map<std::string, std::size_t> rows_per_tensor;  // ids asked per tensor (for a log: no ids)
};

}  // namespace fedleaf::server
