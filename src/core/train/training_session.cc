#include "core/train/training_session.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/train/compact_rows.h"
#include "core/train/model_view.h"
#include "core/train/seeded_random.h"
#include "core/train/trained_parameter.h"

namespace fedleaf::core {

TrainingSession::TrainingSession(const std::string& plan_json, const std::uint8_t* model,
                                 std::size_t model_size, const Dataset& dataset)
    : TrainingSession(
          plan_json, index_safetensors(model, model_size),
          [model, model_size](std::uint64_t begin, std::size_t size, std::uint8_t* out) {
            // The index vouches for every range it hands out; a read past the bytes would be a
            // bug here, not bad input, and must not become a read of unrelated memory.
            if (begin > model_size || size > model_size - begin) {
              throw Error("training session: model bytes [" + std::to_string(begin) + ", " +
                          std::to_string(begin + size) + ") are outside the " +
                          std::to_string(model_size) + "-byte model");
            }
            std::memcpy(out, model + begin, size);
          },
          dataset) {}

TrainingSession::TrainingSession(const std::string& plan_json, const SafetensorsIndex& index,
                                 ModelByteReader read, const Dataset& dataset)
    : plan_(parse_plan(plan_json)), dataset_(dataset), read_(std::move(read)) {
  if (plan_.kind != PlanKind::kTrain) {
    throw InvalidInput("plan.kind: a training session needs kind \"train\"");
  }
  check_dataset_fits(plan_.model, dataset_);
  const ModelView view(index, read_);

  if (plan_.model.input_kind == InputKind::kSparseIds) {
    rows_ = &dataset_.distinct_ids();
  }
  for (const ParameterSpec& p : parameter_specs(plan_.model)) {
    auto trained = std::make_unique<TrainedParameter>();
    trained->spec = p;
    if (p.row_sparse_gradient) {
      locate_rows(view, p, *rows_, trained->stored);
      DenseTensor value = DenseTensor::zeros(DType::F32, {rows_->size(), p.shape[1]});
      read_initial(*trained, 0, rows_->size(), value.data<float>());
      check_finite(p.name, value.data<float>(), value.size());
      parameters_.emplace(p.name, std::move(value));
    } else {
      parameters_.emplace(p.name, take_parameter(view, p));
      trained->stored.begin = view.array(p.name).begin;
      trained->stored.dtype = view.array(p.name).dtype;
    }
    trained_.push_back(std::move(trained));
  }

  const TrainSpec& train = *plan_.train;
  const std::size_t batch_size = std::min(train.batch_size, dataset_.size());
  gatherer_ = std::make_unique<BatchGatherer>(dataset_, BatchIds::kCompact);
  model_ = std::make_unique<Model>(plan_.model, parameters_, batch_size);
  if (train.optimizer.type == OptimizerType::kSgd && train.clip_norm == 0.0f) {
    model_->fuse_sparse_sgd(train.optimizer.learning_rate);
  }
  optimizer_ = std::make_unique<Optimizer>(train.optimizer, model_->gradients(), train.clip_norm);
  steps_per_epoch_ = (dataset_.size() + batch_size - 1) / batch_size;
  total_steps_ = steps_per_epoch_ * train.epochs;
}

void TrainingSession::read_initial(const TrainedParameter& trained, std::size_t begin,
                                   std::size_t end, float* out) const {
  const StoredValues& stored = trained.stored;
  const std::size_t row_size = trained.row_size();
  const std::uint64_t stored_row_bytes = std::uint64_t{row_size} * dtype_size(stored.dtype);
  const auto read_rows = [&](std::uint64_t source_row, std::size_t count, float* dst) {
    if (count == 0) return;
    read_floats_from(read_, stored.dtype, stored.begin + source_row * stored_row_bytes,
                     count * row_size, dst);
  };
  if (!stored.compact || (stored.from_selection && stored.positions.empty())) {
    read_rows(begin, end - begin, out);
  } else if (!stored.from_selection) {
    // A reader outside wasm memory pays per call: rows within one span of kModelRowBlockBytes are
    // read as one window (over-reading the gaps) and copied out row by row, a window whose rows
    // are all trained straight into place. Row by row, not a memcpy per run of rows: a sparse
    // model's runs are a row or two, and the calls were most of a session's setup.
    const std::size_t row_bytes = row_size * 4;  // as read (F32)
    const std::size_t window_rows =
        std::max<std::size_t>(1, kModelRowBlockBytes / stored_row_bytes);
    constexpr std::size_t kChunkRows = 4096;
    std::vector<std::uint32_t> global(std::min(kChunkRows, end - begin));
    std::vector<float> window;
    for (std::size_t chunk = begin; chunk < end; chunk += kChunkRows) {
      const std::size_t n = std::min(kChunkRows, end - chunk);
      rows_->for_each_row(chunk, chunk + n,
                          [&](std::size_t r, std::uint32_t g) { global[r - chunk] = g; });
      for (std::size_t i = 0; i < n;) {
        const std::uint64_t first = global[i];
        std::size_t j = i + 1;
        while (j < n && global[j] - first < window_rows) ++j;
        float* dst = out + (chunk + i - begin) * row_size;
        const std::uint64_t span = global[j - 1] - first + 1;
        if (span == j - i) {
          read_rows(first, j - i, dst);
        } else {
          window.resize(static_cast<std::size_t>(span) * row_size);
          read_rows(first, static_cast<std::size_t>(span), window.data());
          if (row_size == 1) {
            for (std::size_t k = i; k < j; ++k) dst[k - i] = window[global[k] - first];
          } else {
            for (std::size_t k = i; k < j; ++k) {
              std::memcpy(dst + (k - i) * row_size, window.data() + (global[k] - first) * row_size,
                          row_bytes);
            }
          }
        }
        i = j;
      }
    }
  } else {
    // One read per run of consecutive selection rows (a reader outside wasm memory pays per call).
    const std::vector<std::uint32_t>& position = stored.positions;
    for (std::size_t r = begin; r < end;) {
      std::size_t run_end = r + 1;
      while (run_end < end && position[run_end] == position[r] + (run_end - r)) ++run_end;
      read_rows(position[r], run_end - r, out + (r - begin) * row_size);
      r = run_end;
    }
  }
}

TrainingSession::~TrainingSession() = default;

bool TrainingSession::step() {
  if (done()) return false;
  const TrainSpec& train = *plan_.train;
  const std::size_t epoch = completed_steps_ / steps_per_epoch_;
  const std::size_t in_epoch = completed_steps_ % steps_per_epoch_;
  if (in_epoch == 0) {
    if (train.shuffle) {
      order_ = shuffled_order(dataset_.size(), mix_seed(train.shuffle_seed, epoch));
    } else if (order_.empty()) {
      order_.resize(dataset_.size());
      for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<std::uint32_t>(i);
    }
  }
  const std::size_t batch_size = std::min(train.batch_size, dataset_.size());
  const std::size_t begin = in_epoch * batch_size;
  const std::size_t count = std::min(batch_size, dataset_.size() - begin);
  const Batch batch = gatherer_->gather(order_.data() + begin, count);
  const LossSums sums = model_->forward_backward(batch);
  optimizer_->apply(model_->gradients());
  loss_sum_ += sums.loss;
  correct_ += sums.correct;
  examples_seen_ += count;
  ++completed_steps_;
  return true;
}

double TrainingSession::mean_loss() const {
  return examples_seen_ ? loss_sum_ / static_cast<double>(examples_seen_) : 0.0;
}

double TrainingSession::accuracy() const {
  return examples_seen_ ? static_cast<double>(correct_) / static_cast<double>(examples_seen_) : 0.0;
}

}  // namespace fedleaf::core
