#include "server/store/store.h"

#include <utility>

#include "core/error.h"

namespace fedleaf::server {
namespace {

template <class Enum, std::size_t N>
Enum parse_name(const std::string& text, const char* what, const char* const (&names)[N]) {
  for (std::size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<Enum>(i);
  }
  throw Error(std::string("store: '") + text + "' is not a " + what);
}

constexpr const char* kTaskKinds[] = {"train", "evaluate"};
constexpr const char* kTaskStates[] = {"leased", "done"};
constexpr const char* kRoundStatuses[] = {"open", "closed"};
constexpr const char* kRunStates[] = {"running", "finished"};

}  // namespace

const char* to_string(TaskKind kind) { return kTaskKinds[static_cast<int>(kind)]; }
const char* to_string(TaskState state) { return kTaskStates[static_cast<int>(state)]; }
const char* to_string(RoundStatus status) { return kRoundStatuses[static_cast<int>(status)]; }
const char* to_string(RunState state) { return kRunStates[static_cast<int>(state)]; }

TaskKind parse_task_kind(const std::string& text) {
  return parse_name<TaskKind>(text, "task kind", kTaskKinds);
}
TaskState parse_task_state(const std::string& text) {
  return parse_name<TaskState>(text, "task state", kTaskStates);
}
RoundStatus parse_round_status(const std::string& text) {
  return parse_name<RoundStatus>(text, "round status", kRoundStatuses);
}
RunState parse_run_state(const std::string& text) {
  return parse_name<RunState>(text, "population state", kRunStates);
}

std::optional<TaskWithLeases> Store::find_task_with_leases(std::int64_t id) {
  std::optional<TaskRecord> task = find_task(id);
  if (!task) return std::nullopt;
  return TaskWithLeases{std::move(*task), list_leases(id)};
}

std::optional<PopulationProgress> Store::find_progress(const std::string& population_id,
                                                       int number) {
  std::optional<PopulationRecord> population = find_population(population_id);
  if (!population) return std::nullopt;
  return PopulationProgress{population->state, population->current_round, population->paused,
                            population->tokens_epoch, find_round(population_id, number)};
}

}  // namespace fedleaf::server
