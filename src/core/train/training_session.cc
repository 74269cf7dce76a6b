#include "core/train/training_session.h"
#include "core/text_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/train/distinct_ids.h"
#include "core/train/seeded_random.h"

namespace fedleaf::core {

// What the session needs to turn a trained parameter back into an update.
struct TrainingSession::TrainedParameter {
  ParameterSpec spec;
  // Global row of each local row; empty when local rows are the global rows.
  std::vector<std::uint32_t> global_rows;
  std::vector<float> initial;  // local values before training
};

namespace {

// The model as the session reads it: the index of its header and a reader of byte ranges. Only
// the arrays (and, for embedding tables, the rows) the session trains are ever copied.
class ModelView {
 public:
  ModelView(const SafetensorsIndex& index, const ModelByteReader& read)
      : index_(index), read_(read) {}

  // The encoding of tensor `name`: "dense", the metadata's encoding of a sparse tuple, or "" when
  // the model holds neither.
  std::string encoding(const std::string& name) const {
    if (index_.arrays.count(name) != 0) return "dense";
    const auto it = index_.metadata.find(name + ":encoding");
    if (it != index_.metadata.end() && index_.arrays.count(name + ":values") != 0) {
      return it->second;
    }
    return "";
  }

  const SafetensorsArray& array(const std::string& name) const {
    const auto it = index_.arrays.find(name);
    if (it == index_.arrays.end()) throw InvalidInput("model: missing array '" + name + "'");
    return it->second;
  }

  // Bytes [begin, begin + size) of the model into out.
  void read(std::uint64_t begin, std::size_t size, void* out) const {
    if (size != 0) read_(begin, size, static_cast<std::uint8_t*>(out));
  }

 private:
  const SafetensorsIndex& index_;
  const ModelByteReader& read_;
};

void check_finite(const std::string& name, const float* values, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) {
      throw InvalidInput("model tensor '" + name + "': a value is not finite (NaN or infinity)");
    }
  }
}

void check_missing_or_sparse(const ModelView& model, const ParameterSpec& p) {
  const std::string encoding = model.encoding(p.name);
  if (encoding.empty()) {
    throw InvalidInput("model: missing tensor '" + p.name + "' declared by " + p.declared_by);
  }
  if (encoding != "dense") {
    throw InvalidInput("model tensor '" + p.name + "': expected a dense tensor, got " + encoding);
  }
}

// A dense F32 array of the declared shape.
const SafetensorsArray& dense_array(const ModelView& model, const ParameterSpec& p) {
  check_missing_or_sparse(model, p);
  const SafetensorsArray& a = model.array(p.name);
  if (a.dtype != DType::F32) {
    throw InvalidInput("model tensor '" + p.name + "': dtype " + std::string(dtype_name(a.dtype)) +
                       ", expected F32");
  }
  if (a.shape != p.shape) {
    throw InvalidInput("model tensor '" + p.name + "': shape " + shape_to_string(a.shape) +
                       " differs from " + shape_to_string(p.shape) + " declared by " +
                       p.declared_by);
  }
  return a;
}

DenseTensor take_parameter(const ModelView& model, const ParameterSpec& p) {
  const SafetensorsArray& a = dense_array(model, p);
  DenseTensor value = DenseTensor::zeros(DType::F32, p.shape);
  model.read(a.begin, static_cast<std::size_t>(a.end - a.begin), value.data<float>());
  check_finite(p.name, value.data<float>(), value.size());
  return value;
}

// Copies rows source_row(0..count) (ascending) of an F32 [*, dim] array stored at `begin` into
// dst with few reads (a reader outside wasm memory pays per call): a run of consecutive source
// rows is read straight into place; rows with gaps between them are read as one span of at most
// kModelRowBlockBytes into a scratch block and copied out.
template <class SourceRow>
void copy_row_runs(const ModelView& model, std::uint64_t begin, std::size_t dim, std::size_t count,
                   SourceRow source_row, float* dst) {
  const std::uint64_t row_bytes = std::uint64_t{dim} * 4;
  std::vector<float> scratch;
  for (std::size_t r = 0; r < count;) {
    const std::uint64_t first = source_row(r);
    std::size_t end = r + 1;
    bool consecutive = true;
    while (end < count) {
      const std::uint64_t next = source_row(end);
      if (consecutive && next == first + (end - r)) {
        ++end;
      } else if ((next + 1 - first) * row_bytes <= kModelRowBlockBytes) {
        consecutive = false;
        ++end;
      } else {
        break;
      }
    }
    if (consecutive) {
      model.read(begin + first * row_bytes, (end - r) * row_bytes, dst + r * dim);
    } else {
      const std::uint64_t span_rows = source_row(end - 1) + 1 - first;
      scratch.resize(span_rows * dim);
      model.read(begin + first * row_bytes, span_rows * row_bytes, scratch.data());
      for (std::size_t k = r; k < end; ++k) {
        const float* row = scratch.data() + (source_row(k) - first) * dim;
        std::copy(row, row + dim, dst + k * dim);
      }
    }
    r = end;
  }
}

// Row ids of a selection (T:indices, I64 or I32), checked sorted, unique and below `vocab`.
std::vector<std::int64_t> selected_rows(const ModelView& model, const ParameterSpec& p) {
  const SafetensorsArray& a = model.array(p.name + ":indices");
  if ((a.dtype != DType::I64 && a.dtype != DType::I32) || a.shape.size() != 1) {
    throw InvalidInput("model tensor '" + p.name + "': indices must be I64 or I32 of rank 1");
  }
  std::vector<std::int64_t> rows(a.shape[0]);
  if (a.dtype == DType::I64) {
    model.read(a.begin, rows.size() * 8, rows.data());
  } else {
    std::vector<std::int32_t> narrow(rows.size());
    model.read(a.begin, narrow.size() * 4, narrow.data());
    std::copy(narrow.begin(), narrow.end(), rows.begin());
  }
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (rows[k] < 0 || rows[k] >= static_cast<std::int64_t>(p.shape[0])) {
      throw InvalidInput("model tensor '" + p.name + "': selected row " + std::to_string(rows[k]) +
                         " is outside [0, " + std::to_string(p.shape[0]) + ")");
    }
    if (k > 0 && rows[k] <= rows[k - 1]) {
      throw InvalidInput("model tensor '" + p.name + "': selected rows are not sorted and unique");
    }
  }
  return rows;
}

// The rows `rows` (sorted, unique) of an embedding table, copied straight from the model's bytes:
// from the whole table (a dense array) or from the rows the server selected (a row-sparse tuple).
// Every row the dataset touches must be in a selection; other selected rows (padding) are
// ignored, so training on a selection gives the same bytes as training on the whole table.
DenseTensor take_rows(const ModelView& model, const ParameterSpec& p,
                      const std::vector<std::uint32_t>& rows) {
  const std::size_t dim = p.shape[1];
  DenseTensor compact = DenseTensor::zeros(DType::F32, {rows.size(), dim});
  float* dst = compact.data<float>();
  if (model.encoding(p.name) != "row_sparse") {
    const SafetensorsArray& table = dense_array(model, p);
    copy_row_runs(
        model, table.begin, dim, rows.size(), [&](std::size_t r) { return rows[r]; }, dst);
    check_finite(p.name, dst, compact.size());
    return compact;
  }
  const SafetensorsArray& values = model.array(p.name + ":values");
  const SafetensorsArray& dense_shape = model.array(p.name + ":dense_shape");
  std::int64_t shape[2] = {0, 0};
  if (dense_shape.dtype != DType::I64 || dense_shape.shape != Shape{2}) {
    throw InvalidInput("model tensor '" + p.name + "': dense_shape must be I64 [2], declared " +
                       shape_to_string(p.shape) + " by " + p.declared_by);
  }
  model.read(dense_shape.begin, sizeof shape, shape);
  if (shape[0] != static_cast<std::int64_t>(p.shape[0]) ||
      shape[1] != static_cast<std::int64_t>(dim)) {
    throw InvalidInput("model tensor '" + p.name + "': dense_shape " +
                       shape_to_string(std::vector<std::int64_t>{shape[0], shape[1]}) +
                       " differs from " + shape_to_string(p.shape) + " declared by " +
                       p.declared_by);
  }
  const std::vector<std::int64_t> selected = selected_rows(model, p);
  if (values.dtype != DType::F32 || values.shape != Shape{selected.size(), dim}) {
    throw InvalidInput("model tensor '" + p.name + "': values must be F32 " +
                       shape_to_string(Shape{selected.size(), dim}));
  }
  std::vector<std::size_t> position(rows.size());  // compact row → row of the selection
  std::size_t k = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto row = static_cast<std::int64_t>(rows[r]);
    while (k < selected.size() && selected[k] < row) ++k;
    if (k == selected.size() || selected[k] != row) {
      throw InvalidInput("model tensor '" + p.name + "': the data touch row " +
                         std::to_string(row) + ", which the selected rows do not hold");
    }
    position[r] = k;
  }
  copy_row_runs(
      model, values.begin, dim, rows.size(), [&](std::size_t r) { return position[r]; }, dst);
  check_finite(p.name, dst, compact.size());
  return compact;
}

}  // namespace

TrainingSession::TrainingSession(const std::string& plan_json, const std::uint8_t* model,
                                 std::size_t model_size, const Dataset& dataset)
    : TrainingSession(
          plan_json, index_safetensors(model, model_size),
          [model](std::uint64_t begin, std::size_t size, std::uint8_t* out) {
            std::memcpy(out, model + begin, size);
          },
          dataset) {}

TrainingSession::TrainingSession(const std::string& plan_json, const SafetensorsIndex& index,
                                 const ModelByteReader& read, const Dataset& dataset)
    : plan_(parse_plan(plan_json)), dataset_(dataset) {
  if (plan_.kind != PlanKind::kTrain) {
    throw InvalidInput("plan.kind: a training session needs kind \"train\"");
  }
  check_dataset_fits(plan_.model, dataset_);
  const ModelView view(index, read);

  std::vector<std::uint32_t> touched;
  if (plan_.model.input_kind == InputKind::kSparseIds) {
    RowCompaction compaction = compact_rows(dataset_.ids(), plan_.model.layers.front().vocab);
    touched = std::move(compaction.rows);
    compact_ids_ = std::move(compaction.compact_ids);
  }
  for (const ParameterSpec& p : parameter_specs(plan_.model)) {
    auto trained = std::make_unique<TrainedParameter>();
    trained->spec = p;
    DenseTensor value =
        p.row_sparse_gradient ? take_rows(view, p, touched) : take_parameter(view, p);
    if (p.row_sparse_gradient) trained->global_rows = touched;
    const float* v = value.data<float>();
    trained->initial.assign(v, v + value.size());
    parameters_.emplace(p.name, std::move(value));
    trained_.push_back(std::move(trained));
  }

  const TrainSpec& train = *plan_.train;
  const std::size_t batch_size = std::min(train.batch_size, dataset_.size());
  gatherer_ = std::make_unique<BatchGatherer>(dataset_,
                                              compact_ids_.empty() ? nullptr : compact_ids_.data());
  model_ = std::make_unique<Model>(plan_.model, parameters_, batch_size);
  if (train.optimizer.type == OptimizerType::kSgd && train.clip_norm == 0.0f) {
    model_->fuse_sparse_sgd(train.optimizer.learning_rate);
  }
  optimizer_ = std::make_unique<Optimizer>(train.optimizer, model_->gradients(), train.clip_norm);
  steps_per_epoch_ = (dataset_.size() + batch_size - 1) / batch_size;
  total_steps_ = steps_per_epoch_ * train.epochs;
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

std::vector<std::uint8_t> TrainingSession::result(const std::string& task_id) const {
  if (!done()) {
    throw InvalidInput("training session: result requested after " +
                       std::to_string(completed_steps_) + " of " + std::to_string(total_steps_) +
                       " steps");
  }
  NamedTensors out;
  for (const auto& trained : trained_) {
    const ParameterSpec& p = trained->spec;
    const TensorUpdatePlan* update = plan_.updates.find(p.name);
    if (update == nullptr) continue;
    const DenseTensor& value = parameters_.at(p.name);
    const float* now = value.data<float>();
    const float* before = trained->initial.data();
    const std::size_t row_size = p.shape.size() == 1 ? 1 : p.shape[1];
    const std::size_t local_rows = value.size() / row_size;
    const auto global_row = [&](std::size_t r) -> std::int64_t {
      return trained->global_rows.empty() ? static_cast<std::int64_t>(r)
                                          : static_cast<std::int64_t>(trained->global_rows[r]);
    };
    DenseShape dense_shape(p.shape.begin(), p.shape.end());
    switch (update->encoding) {
      case UpdateEncoding::kDense: {
        DenseTensor delta = DenseTensor::zeros(DType::F32, p.shape);
        float* d = delta.data<float>();
        for (std::size_t r = 0; r < local_rows; ++r) {
          float* row = d + static_cast<std::size_t>(global_row(r)) * row_size;
          for (std::size_t k = 0; k < row_size; ++k) {
            row[k] = now[r * row_size + k] - before[r * row_size + k];
          }
        }
        out.emplace(p.name, std::move(delta));
        break;
      }
      case UpdateEncoding::kRowSparse: {
        RowIndices rows = RowIndices::from_shape({local_rows});
        Shape values_shape{local_rows};
        if (p.shape.size() == 2) values_shape.push_back(row_size);
        DenseTensor values = DenseTensor::zeros(DType::F32, values_shape);
        float* d = values.data<float>();
        for (std::size_t r = 0; r < local_rows; ++r) rows(r) = global_row(r);
        for (std::size_t i = 0; i < local_rows * row_size; ++i) d[i] = now[i] - before[i];
        out.emplace(p.name, RowSparseTensor(std::move(rows), std::move(values),
                                            std::move(dense_shape), p.name));
        break;
      }
      case UpdateEncoding::kCoo: {
        std::vector<std::size_t> changed;
        for (std::size_t i = 0; i < local_rows * row_size; ++i) {
          if (now[i] != before[i]) changed.push_back(i);
        }
        CooIndices indices = CooIndices::from_shape({changed.size(), p.shape.size()});
        DenseTensor values = DenseTensor::zeros(DType::F32, {changed.size()});
        float* d = values.data<float>();
        for (std::size_t e = 0; e < changed.size(); ++e) {
          const std::size_t i = changed[e];
          if (p.shape.size() == 2) {
            indices(e, 0) = global_row(i / row_size);
            indices(e, 1) = static_cast<std::int64_t>(i % row_size);
          } else {
            indices(e, 0) = static_cast<std::int64_t>(i);
          }
          d[e] = now[i] - before[i];
        }
        out.emplace(p.name, SparseTensor(std::move(indices), std::move(values),
                                         std::move(dense_shape), p.name));
        break;
      }
    }
  }
  Metadata metadata{{"kind", "train"},
                    {"num_examples", std::to_string(dataset_.size())},
                    {"loss", format_decimal(mean_loss())},
                    {"accuracy", format_decimal(accuracy())}};
  if (!task_id.empty()) metadata["task_id"] = task_id;
  return write_safetensors(out, metadata);
}

}  // namespace fedleaf::core
