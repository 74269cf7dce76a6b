// UploadIntake: how results arrive — an upload's lease is checked, a train result is read and
// folded into the open round's aggregator and stored in one step (checkpointed every
// checkpoint_every reports), an evaluate result is added to its round's sums, and a refused
// upload is answered and counted (upload_refusal.h).
//
//   UploadOutcome u = uploads.upload(task_id, lease_token, body);   // 201, or 200 a repeat
//
// A train result's header is parsed once per upload (index_result, then read_result_header and
// the fold read that one index), and its bytes are moved, never copied, into the store.
//
// upload() takes the repository's mutex and leaves its step in the open batch (see "Crash
// safety" in task_repository.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/wire/result_format.h"
#include "server/repository/repository_parts.h"
#include "server/repository/results.h"
#include "server/repository/round_lifecycle.h"

namespace fedleaf::server {

class UploadIntake {
 public:
  UploadIntake(RepositoryParts& parts, RoundLifecycle& rounds);

  // TaskRepository::upload.
  UploadOutcome upload(std::int64_t task_id, const std::string& lease_token, std::string body);

 private:
  // A train upload's bytes and, once read, their index and header: read once, however often a
  // buffered population folds the upload again into a version that opened meanwhile.
  struct TrainUpload {
    std::string body;
    std::optional<core::SafetensorsIndex> index;
    core::ResultHeader header;
  };

  // The state of the task's population an upload is answered from: the loaded one, as it is,
  // for a train report of a shared store's open round that nothing would close yet; otherwise
  // PopulationCache::state_of (re-read on a shared store).
  PopulationState& state_for(const TaskRecord& task);
  // Counts a refused upload in the store and the metrics, unless it repeats the lease's last
  // counted refusal (Store::add_rejection).
  void reject(const RefusedUpload& upload);
  // weight_scale: the report's staleness weight (1 in a synchronous round); it is folded into
  // the open round (state.round), its task's own in a synchronous population. Nullopt only in a
  // buffered population whose open version another server closed after our read (the store
  // answered kRoundClosed, nothing stored): the caller reloads and folds it into the next, and
  // `upload` still holds the body. Otherwise its body has moved into the store.
  std::optional<UploadOutcome> accept_train(PopulationState& state, const TaskRecord& task,
                                            std::int64_t lease_id, TrainUpload& upload,
                                            const std::string& sha, double now,
                                            double weight_scale);
  // A buffered population's train upload: its staleness from the server's record (the open
  // version minus the task's round), 409 past max_staleness (counted as "stale", nothing
  // folded), else accept_train with its staleness weight (nullopt as accept_train's).
  std::optional<UploadOutcome> accept_buffered_train(PopulationState& state, const TaskRecord& task,
                                                     std::int64_t lease_id, TrainUpload& upload,
                                                     const std::string& sha, double now);
  UploadOutcome accept_evaluate(PopulationState& state, const TaskRecord& task,
                                std::int64_t lease_id, const std::string& body,
                                const std::string& sha, double now);
  // The answer to an upload (under lease_id, of bytes hashing to sha) the store did not accept
  // now: 200 with the first receipt for a repeat, else the rejection is counted and Conflict or
  // Gone thrown.
  UploadOutcome answer_refused(const std::string& population_id, AcceptStatus status,
                               const TaskRecord& task, std::int64_t lease_id,
                               const std::string& sha);

  RepositoryParts& parts_;
  RoundLifecycle& rounds_;
};

}  // namespace fedleaf::server
