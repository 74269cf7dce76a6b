// PopulationControl: what an operator does to a population (the admin endpoints
// POST /v1/populations/{p}:pause, :resume and :finish) — pause it, resume it, finish it before
// its last round.
//
//   PopulationControl control(parts, rounds);
//   control.pause("spam");                      // claims answer "paused" (204)
//   control.resume("spam");                     // they hand out tasks again
//   control.finish("spam", "enough accuracy");  // as a population that ran its rounds
//
// Paused: claims hand out no task (RetryLater::paused); nothing else stops — leases in flight
// report and are folded, and rounds close by their rules, deadlines included (the deadline
// ticks on during a pause: the simplest rule, and the one a server sharing its store cannot
// get wrong). Finished: the open round closes without a next model (its train reports are
// dropped, uploads to it are 410 as to any closed round), the population's state is
// "finished" and the reason is kept (status "finish_reason").
//
// Each call is one step committed and synced before it returns (Durability::kFull), and holds
// on every server sharing the store: the pause is a column claim_task reads. Errors: NotFound
// (404) an unknown population; Conflict (409), changing nothing, for a transition its state does
// not allow (resume a running one, pause a paused one, anything on a finished or failed one).
//
// Locking: each call takes parts.mutex itself.
#pragma once

#include <string>

#include "server/repository/repository_parts.h"
#include "server/repository/round_lifecycle.h"

namespace fedleaf::server {

class PopulationControl {
 public:
  PopulationControl(RepositoryParts& parts, RoundLifecycle& rounds);

  void pause(const std::string& population_id);
  void resume(const std::string& population_id);
  // reason: why (kept and shown by status); "" is recorded as "finished by an operator".
  void finish(const std::string& population_id, const std::string& reason);

 private:
  // The population's state, due closes done, when it may change: Conflict for a quarantined
  // (failed) or finished one, naming `action`.
  PopulationState& changeable(const std::string& population_id, const char* action);
  void set_paused(const std::string& population_id, bool paused);

  RepositoryParts& parts_;
  RoundLifecycle& rounds_;
};

}  // namespace fedleaf::server
