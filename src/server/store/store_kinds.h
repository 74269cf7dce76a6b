// The kinds and states of the store's records (a task's kind and state, a round's status, a
// population's run state), and the names the wire and the stored rows give them.
//
//   parse_task_kind(to_string(TaskKind::kTrain)) == TaskKind::kTrain;  // "train"
#pragma once

#include <string>

namespace fedleaf::server {

enum class TaskKind { kTrain, kEvaluate };
enum class TaskState { kLeased, kDone };
enum class RoundStatus { kOpen, kClosed };
enum class RunState { kRunning, kFinished };  // of a population

// The names the wire and the stored rows use ("train", "leased", "open", "running", ...); the
// parsers throw fedleaf::Error for any other text (a stored row no server wrote).
const char* to_string(TaskKind kind);
const char* to_string(TaskState state);
const char* to_string(RoundStatus status);
const char* to_string(RunState state);
TaskKind parse_task_kind(const std::string& text);
TaskState parse_task_state(const std::string& text);
RoundStatus parse_round_status(const std::string& text);
RunState parse_run_state(const std::string& text);

}  // namespace fedleaf::server
