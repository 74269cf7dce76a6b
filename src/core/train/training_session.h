// One local training run of a train plan, one batch per step() — what execute() runs to the end
// in a single call, exposed so a caller (the wasm binding) can drive batches and report progress.
//
//   TrainingSession s(plan, model.data(), model.size(), dataset);   // plan: parse_plan's, shared
//   while (s.step()) report(s.completed_steps(), s.total_steps(), s.mean_loss());
//   std::vector<std::uint8_t> update = s.result("task-7");
//
// The session owns all its state (no globals): same plan, model bytes and dataset give
// byte-identical results. Each embedding table is trained as a compact copy of the rows the
// dataset touches (the sorted union of the distinct ids of every input feeding it), copied
// straight from the model's bytes, with optimizer state for those rows only: the model is never
// decoded whole and nothing of size vocab × dim is allocated. Its memory is the trained values, the
// optimizer state and small buffers: the dataset's compact ids are the compact table's rows already
// (no lookup, no copy of the ids), the update is computed at result time from values read again
// from the model (no copy of the initial values), and written in 64 kB pieces (write_result) rather
// than built whole. The dataset and the model bytes (or the reader) are borrowed and must outlive
// the session, unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/data/batch.h"
#include "core/data/compact_rows.h"
#include "core/data/dataset.h"
#include "core/model/model.h"
#include "core/model/model_view.h"
#include "core/train/optimizer.h"
#include "core/train/plan.h"
#include "core/wire/safetensors_index.h"

namespace fedleaf::core {

// The most bytes one read of embedding rows spans when it also covers rows the session does not
// train (the gaps between touched rows): a reader outside wasm memory pays per call (~µs), so
// rows close together are read as one block and copied out, at most this much scratch memory.
// A run of consecutive rows is read straight into place, whatever its length.
inline constexpr std::size_t kModelRowBlockBytes = 64 * 1024;

// Receives a result as it is written: begin(file size) once, then write(bytes) for consecutive
// pieces of the file, in order.
struct ResultSink {
  std::function<void(std::uint64_t size)> begin;
  std::function<void(const std::uint8_t* data, std::size_t size)> write;
};

class TrainingSession {
 public:
  // An embedding table may arrive whole (dense) or as the rows the server selected for this
  // leaf (model:select: a row-sparse tensor per table, rows sorted and unique, any superset of
  // the rows the dataset touches in that table); both give byte-identical results.
  // Throws InvalidInput for an invalid plan (naming the JSON path), a plan whose kind is not
  // "train", model bytes that are not valid safetensors or lack / mis-shape a declared
  // parameter, a selection that lacks a row the data touch (naming the tensor and the row), or
  // a dataset that does not fit the model (see check_dataset_fits).
  TrainingSession(std::shared_ptr<const Plan> plan, const std::uint8_t* model,
                  std::size_t model_size, const Dataset& dataset);
  // The same from the model's header index and a reader of its byte ranges: the session copies
  // out only the dense parameters and the embedding rows the dataset touches (with the rows
  // between them inside one kModelRowBlockBytes block), so a model held elsewhere (a leaf's
  // download, in JS) is never copied or decoded whole. `read` is called
  // during construction and again by result() / write_result() (the initial values of what was
  // trained), with ranges inside index.file_size; it must return the same bytes every time.
  TrainingSession(std::shared_ptr<const Plan> plan, const SafetensorsIndex& index,
                  ModelByteReader read, const Dataset& dataset);
  // The same from the plan's JSON, parsed here.
  TrainingSession(const std::string& plan_json, const std::uint8_t* model, std::size_t model_size,
                  const Dataset& dataset);
  ~TrainingSession();
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  // Trains the next batch; returns false, doing nothing, once every epoch is done.
  bool step();
  std::size_t completed_steps() const { return completed_steps_; }
  std::size_t total_steps() const { return total_steps_; }
  bool done() const { return completed_steps_ == total_steps_; }

  // Over every example trained so far (all epochs); 0 before the first step.
  double mean_loss() const;
  double accuracy() const;

  // The train result (safetensors, see executor.h). Throws InvalidInput before done(), and when
  // training diverged: a mean loss or an update value that is not finite, naming the tensor (a
  // leaf does not upload what the server would refuse).
  std::vector<std::uint8_t> result(const std::string& task_id = "") const;
  // The same bytes, handed to `sink` in pieces as they are computed (an update for a wasm leaf
  // goes straight to a JS buffer). The same errors: before done() or with a non-finite loss
  // before calling the sink; a non-finite update value once the sink has part of the bytes,
  // which are then no result.
  void write_result(const std::string& task_id, const ResultSink& sink) const;

 private:
  struct TrainedParameter;

  // Initial values of local rows [begin, end) of a parameter, read from the model into out.
  void read_initial(const TrainedParameter& trained, std::size_t begin, std::size_t end,
                    float* out) const;
  // Calls block(count, global_rows, delta) for consecutive blocks of a parameter's local rows:
  // their global rows and (value now - initial value), row-major.
  template <class Block>
  void for_each_delta_block(const TrainedParameter& trained, Block block) const;

  std::shared_ptr<const Plan> plan_;  // shared: the wasm Plan handle may go before the session
  const Dataset& dataset_;
  ModelByteReader read_;
  std::vector<std::unique_ptr<TrainedParameter>> trained_;
  Parameters parameters_;
  // Tables fed by several inputs: the union of their distinct ids, and per feed whose ids need
  // renumbering into such a union, the map (FeedSource::map). A table fed by one input uses the
  // dataset's distinct ids and compact ids as they are.
  std::vector<std::unique_ptr<CompactRows>> table_unions_;
  std::vector<std::unique_ptr<std::vector<std::uint32_t>>> feed_maps_;
  std::unique_ptr<BatchGatherer> gatherer_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<std::uint32_t> order_;
  std::size_t steps_per_epoch_ = 0;
  std::size_t total_steps_ = 0;
  std::size_t completed_steps_ = 0;
  double loss_sum_ = 0.0;
  std::size_t correct_ = 0;
  std::size_t examples_seen_ = 0;
};

}  // namespace fedleaf::core
