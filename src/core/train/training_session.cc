#include "core/train/training_session.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/data/compact_rows.h"
#include "core/data/seeded_random.h"
#include "core/error.h"
#include "core/model/model_view.h"
#include "core/train/table_rows.h"
#include "core/train/trained_parameter.h"

namespace fedleaf::core {

TrainingSession::TrainingSession(const std::string& plan_json, const std::uint8_t* model,
                                 std::size_t model_size, const Dataset& dataset)
    : TrainingSession(std::make_shared<const Plan>(parse_plan(plan_json)), model, model_size,
                      dataset) {}

TrainingSession::TrainingSession(std::shared_ptr<const Plan> plan, const std::uint8_t* model,
                                 std::size_t model_size, const Dataset& dataset)
    : TrainingSession(
          std::move(plan), index_safetensors(model, model_size),
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

TrainingSession::TrainingSession(std::shared_ptr<const Plan> plan, const SafetensorsIndex& index,
                                 ModelByteReader read, const Dataset& dataset)
    : plan_(std::move(plan)), dataset_(dataset), read_(std::move(read)) {
  if (plan_->kind != PlanKind::kTrain) {
    throw InvalidInput("plan.kind: a training session needs kind \"train\"");
  }
  // A plan parsed for inference (PlanUse::kInference) may lack what training needs.
  if (!plan_->train) throw InvalidInput("plan.train: missing");
  check_dataset_fits(plan_->model, dataset_);
  const ModelView view(index, read_);
  const ModelSpec& model = plan_->model;
  const std::vector<std::size_t> from = dataset_inputs_for(model, dataset_);

  // Each table's compact rows: the distinct ids of the one input feeding it, or the union over
  // several, with each feeding input's ids renumbered into the union.
  std::map<std::size_t, const CompactRows*> table_rows;  // owner layer → its rows
  std::map<std::pair<std::size_t, std::size_t>, const std::vector<std::uint32_t>*> renumbered;
  std::map<std::string, std::size_t> table_of;  // "<owner>/weight" → owner layer
  for (const PlanTable& t : plan_->tables) {
    const std::size_t table = t.owner;
    table_of[t.parameter] = table;
    const std::vector<std::size_t> inputs = table_inputs(t, from);
    if (inputs.size() == 1) {
      table_rows[table] = &dataset_.distinct_ids(inputs.front());
      continue;
    }
    std::vector<const CompactRows*> sets;
    sets.reserve(inputs.size());
    for (const std::size_t k : inputs) sets.push_back(&dataset_.distinct_ids(k));
    std::vector<std::vector<std::uint32_t>> maps;
    table_unions_.push_back(std::make_unique<CompactRows>(CompactRows::union_of(sets, &maps)));
    table_rows[table] = table_unions_.back().get();
    for (std::size_t s = 0; s < inputs.size(); ++s) {
      // An input holding every row of the union keeps its compact ids: the map is the identity.
      if (maps[s].size() == table_rows[table]->size()) continue;
      feed_maps_.push_back(std::make_unique<std::vector<std::uint32_t>>(std::move(maps[s])));
      renumbered[{table, inputs[s]}] = feed_maps_.back().get();
    }
  }
  std::vector<FeedSource> sources;
  for (const FeedSpec& f : model.feeds) {
    FeedSource source;
    source.input = from[f.input];
    if (f.sparse) {
      const auto it = renumbered.find({f.table_layer, source.input});
      source.map = it == renumbered.end() ? nullptr : it->second;
      source.ids_below = static_cast<std::uint32_t>(table_rows.at(f.table_layer)->size());
    }
    sources.push_back(source);
  }
  for (const ParameterSpec& p : parameter_specs(model)) {
    auto trained = std::make_unique<TrainedParameter>();
    trained->spec = p;
    if (p.row_sparse_gradient) {
      const CompactRows& rows = *table_rows.at(table_of.at(p.name));
      trained->rows = &rows;
      locate_rows(view, p, rows, trained->stored);
      DenseTensor value = DenseTensor::zeros(DType::F32, {rows.size(), p.shape[1]});
      read_initial(*trained, 0, rows.size(), value.data<float>());
      check_finite(p.name, value.data<float>(), value.size());
      parameters_.emplace(p.name, std::move(value));
    } else {
      parameters_.emplace(p.name, take_parameter(view, p));
      trained->stored.begin = view.array(p.name).begin;
      trained->stored.dtype = view.array(p.name).dtype;
    }
    trained_.push_back(std::move(trained));
  }

  const TrainSpec& train = *plan_->train;
  const std::size_t batch_size = std::min(train.batch_size, dataset_.size());
  gatherer_ = std::make_unique<BatchGatherer>(dataset_, std::move(sources));
  model_ = std::make_unique<Model>(plan_->model, parameters_, batch_size);
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
      trained.rows->for_each_row(chunk, chunk + n,
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
            for (std::size_t k = i; k < j; ++k) {
              dst[k - i] = window[static_cast<std::size_t>(global[k] - first)];
            }
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
  const TrainSpec& train = *plan_->train;
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
