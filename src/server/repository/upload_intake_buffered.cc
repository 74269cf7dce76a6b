// A buffered population's train upload (upload_intake.h): staleness from the server's record,
// the staleness bound, and the weight the report folds with. Kept apart from the synchronous
// intake it calls into.
#include <optional>
#include <string>

#include "core/aggregation/round/buffered_spec.h"
#include "core/error.h"
#include "server/repository/upload_intake.h"

namespace fedleaf::server {

std::optional<UploadOutcome> UploadIntake::accept_buffered_train(
    PopulationState& st, const TaskRecord& task, std::int64_t lease_id, TrainUpload& upload,
    const std::string& sha, double now) {
  // The server's record of the version it handed out (the task's round), never the leaf's word.
  const std::int64_t staleness = static_cast<std::int64_t>(st.round.number) - task.round;
  if (staleness < 0) {
    throw Error("task " + std::to_string(task.id) + " of population '" + st.record.id +
                "' is of round " + std::to_string(task.round) + ", past the open version " +
                std::to_string(st.round.number));
  }
  const auto s = static_cast<std::uint64_t>(staleness);
  if (s > st.buffered->max_staleness) {
    reject({st.record.id, "stale", lease_id, sha});
    // The task will never fold: its slot (of concurrency, and of its client's bound) is free now,
    // not when its lease would have expired. The same upload again is then 410 (lease expired),
    // counted once.
    parts_.population_step(st.record.id, "release stale lease",
                           [&] { parts_.store.release_lease(task.id, lease_id, now); });
    parts_.waiters.notify(st.record.id);
    throw Conflict("task " + std::to_string(task.id) + ": staleness " + std::to_string(s) +
                   " exceeds max_staleness " + std::to_string(st.buffered->max_staleness) +
                   " (trained on version " + std::to_string(task.round) +
                   ", the current version is " + std::to_string(st.round.number) + "): not folded");
  }
  std::optional<UploadOutcome> accepted =
      accept_train(st, task, lease_id, upload, sha, now, core::staleness_weight(*st.buffered, s));
  // A task is no longer out: a leaf waiting for a free slot may claim one.
  if (accepted) parts_.waiters.notify(st.record.id);
  return accepted;
}

}  // namespace fedleaf::server
