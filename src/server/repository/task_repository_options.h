// TaskRepositoryOptions: how a TaskRepository checkpoints, makes models, logs, closes rounds
// and keeps models.
//
//   TaskRepositoryOptions options;
//   options.close_in_background = true;
//   TaskRepository repo(store, clock, metrics, options);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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
  // The largest model a population may have, in bytes of F32 parameters: a plan declaring more,
  // or an initial model holding more, is InvalidInput before anything is allocated (a plan with a
  // 10^8-row table asked for 25 GB).
  std::uint64_t max_model_bytes = std::uint64_t{2} << 30;
  // Round life-cycle events (created, closed, finished); null: no logging.
  std::shared_ptr<spdlog::logger> logger;
  // Close training rounds on the repository's closer thread (RoundCloser) instead of on the
  // request that finds them due (round_lifecycle.h, "Round close"). Ignored with a shared
  // store, whose closes stay on the request path.
  bool close_in_background = false;
  // Model retention: each round close drops the models of rounds more than this many below the
  // newly published one (it keeps the last keep_models models, the current one included),
  // except those of rounds a task still holds a valid lease of (Store::drop_models). 0: keep
  // every model.
  int keep_models = 0;
};

}  // namespace fedleaf::server
