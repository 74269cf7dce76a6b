// The body of POST /v1/populations (an admin's, but parsed before anything else is checked
// beyond the admin token): any bytes either parse into a PopulationSpec or raise
// fedleaf::InvalidInput (never another exception, a crash or a sanitizer report); a spec that
// parses keeps the documented ranges.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "server/api/population_body.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const fedleaf::server::PopulationSpec spec = fedleaf::server::parse_population_body(
        std::string(reinterpret_cast<const char*>(data), size));
    const bool in_range = spec.settings.rounds >= 1 && spec.settings.clients_per_round >= 1 &&
                          spec.settings.min_reports >= 1 &&
                          spec.settings.min_reports <= spec.settings.clients_per_round &&
                          spec.settings.round_deadline_s > 0 && spec.settings.lease_s > 0 &&
                          spec.settings.train_tasks_per_round >= spec.settings.clients_per_round &&
                          spec.settings.eval_tasks_per_round >= 0 &&
                          spec.initial_model.has_value() != spec.seed.has_value() &&
                          (!spec.id || fedleaf::server::is_valid_population_id(*spec.id));
    if (!in_range) std::abort();
  } catch (const fedleaf::InvalidInput&) {
  }
  return 0;
}
