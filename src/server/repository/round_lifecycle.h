// RoundLifecycle: how a population's rounds move on — a round due to close is locked, closed
// (inline, or on the RoundCloser without the mutex) and its next model published; a finished
// population is marked so; deadlines and expired leases are checked by tick(); open rounds are
// checkpointed. See "Crash safety" in task_repository.h.
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
//   std::lock_guard lock(parts.mutex);
//   PopulationState& st = parts.populations.state_of(id);
//   rounds.advance(st, parts.clock.now());   // closes, publishes, finishes as due
//
// Locking: advance() and the other methods expect parts.mutex held, except tick(),
// checkpoint_all(), wait_for_close_past() and wait_for_closes(), which take it themselves, and
// the close job, which runs on the closer's thread and takes it for the close step.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "server/repository/population_state.h"
#include "server/repository/repository_parts.h"
#include "server/repository/round_closer.h"
#include "server/repository/version_staleness.h"

namespace fedleaf::server {

struct RoundClose;

class RoundLifecycle {
 public:
  // Starts the closer thread when options.close_in_background and the store is not shared.
  explicit RoundLifecycle(RepositoryParts& parts);
  ~RoundLifecycle();
  RoundLifecycle(const RoundLifecycle&) = delete;
  RoundLifecycle& operator=(const RoundLifecycle&) = delete;

  // Runs the closes in flight (they take the mutex) and stops the closer: call without the
  // mutex, before the parts go.
  void stop_closer();
  // Closes or finishes what is due at `now` and wakes the claims waiting on a new round.
  void advance(PopulationState& state, double now);
  // Closes rounds whose deadline has passed and wakes the claims waiting on a population with an
  // expired lease (in a buffered population, a train lease of any version expired since the
  // previous tick that frees a slot); commits and syncs what it changed. Takes the mutex.
  void tick();
  // Writes a checkpoint of every open round with reports since its last one, once the
  // background closes in flight are done. Takes the mutex.
  void checkpoint_all();
  // Waits for the background closes when one of the population is in flight and `round` is
  // past its current round: a read after the 201 of the upload completing a round (a status,
  // the next round's model) sees the next round, as with an inline close. Takes the mutex.
  void wait_for_close_past(const std::string& population_id, int round);
  // Returns once no background close is queued or running.
  void wait_for_closes();

 private:
  // In a step: locks the open round for its close and re-reads it. False when it is not due
  // after all, or closed by another server (then state.round.status is closed).
  bool lock_round_to_close(PopulationState& state, double now);
  // A shared store: commits the open batch, so that this server holds no lock on the round it
  // is about to close (lock_open_round waits for every other server's accepts; two closers each
  // holding accepts of the round would wait for each other). A failure is Unavailable (the
  // batch is abandoned: the in-memory state is dropped).
  void commit_before_close();
  // Closes the open training round (RoundClose) and opens the next with the published model.
  void publish_next_model(PopulationState& state, double now);
  // Inside a close's step, after the round's lock: a buffered version's reports by staleness,
  // counted from the stored results and their tasks; nullopt for a synchronous round.
  std::optional<VersionStaleness> buffered_staleness(const PopulationState& state);
  // Inside a close's step, after the model of `published_round` is written: the retention
  // policy (options.keep_models).
  void drop_old_models(const std::string& population_id, int published_round, double now);
  // The results a background close left (PopulationState::results_to_drop_through), as a step
  // of their own when the next round's close is scheduled (it runs alongside the close job's
  // finalize, encode, hash and model file, which take no lock).
  void drop_closed_results(PopulationState& state);
  // close_in_background, a private synchronous round: posts the draw of its release noise to
  // closer_ (once per round), so its close need not draw it (noise_ahead.h).
  void draw_noise_ahead(PopulationState& state);
  // close_in_background: hands the round's aggregator to a close job on closer_ (once per round).
  void schedule_close(PopulationState& state, double now);
  // The close job: runs without the mutex until the close step; consumes the snapshot's
  // aggregator (close_training_round).
  void run_close(std::uint64_t close_id, PopulationState& snapshot, double now);
  // After the close step: metrics, log, and the state moved to the next round.
  void apply_close(PopulationState& state, RoundClose& close, double persist_s, double store_s);
  void finish(PopulationState& state, double now);
  // Whether a claim on this server could get a task of the population's round now (one to
  // create, a never-leased one, or an expired lease).
  bool has_task_to_offer(const PopulationState& state, double now);

  // A buffered population with a free train slot that a lease expiring since the last tick
  // freed (a leaf that vanished): its parked claims can have the slot.
  bool buffered_slot_freed(const PopulationState& state, double now);

  RepositoryParts& parts_;
  std::uint64_t last_close_id_ = 0;
  double last_tick_at_ = 0;              // the clock at the previous tick (0: every expiry is new)
  std::unique_ptr<RoundCloser> closer_;  // close_in_background
};

}  // namespace fedleaf::server
