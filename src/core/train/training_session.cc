#include "core/train/training_session.h"
#include "core/text_format.h"

#include <algorithm>
#include <cstdio>

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

DenseTensor take_parameter(NamedTensors& model, const ParameterSpec& p) {
  const auto it = model.find(p.name);
  if (it == model.end()) {
    throw InvalidInput("model: missing tensor '" + p.name + "' declared by " + p.declared_by);
  }
  DenseTensor* dense = std::get_if<DenseTensor>(&it->second);
  if (dense == nullptr) {
    throw InvalidInput("model tensor '" + p.name + "': expected a dense tensor, got " +
                       std::string(encoding_name(it->second)));
  }
  if (dense->dtype() != DType::F32) {
    throw InvalidInput("model tensor '" + p.name + "': dtype " +
                       std::string(dtype_name(dense->dtype())) + ", expected F32");
  }
  if (dense->shape() != p.shape) {
    throw InvalidInput("model tensor '" + p.name + "': shape " + shape_to_string(dense->shape()) +
                       " differs from " + shape_to_string(p.shape) + " declared by " +
                       p.declared_by);
  }
  return std::move(*dense);
}

bool same_shape(const DenseShape& dense_shape, const Shape& shape) {
  return dense_shape.size() == shape.size() &&
         std::equal(
             shape.begin(), shape.end(), dense_shape.begin(),
             [](std::size_t a, std::int64_t b) { return static_cast<std::int64_t>(a) == b; });
}

// The rows `rows` (sorted, unique) of an embedding table, from the whole table (a dense tensor)
// or from the rows the server selected (a row-sparse tensor, rows sorted): every row the dataset
// touches must be there, other selected rows (padding) are ignored, so training on a selection
// gives the same bytes as training on the whole table.
DenseTensor take_rows(NamedTensors& model, const ParameterSpec& p,
                      const std::vector<std::uint32_t>& rows) {
  const auto it = model.find(p.name);
  const auto* selected = it == model.end() ? nullptr : std::get_if<RowSparseTensor>(&it->second);
  if (selected == nullptr) {
    const DenseTensor table = take_parameter(model, p);
    const std::size_t dim = p.shape[1];
    DenseTensor compact = DenseTensor::zeros(DType::F32, {rows.size(), dim});
    const float* src = table.data<float>();
    float* dst = compact.data<float>();
    for (std::size_t r = 0; r < rows.size(); ++r) {
      std::copy(src + rows[r] * dim, src + (rows[r] + 1) * dim, dst + r * dim);
    }
    return compact;
  }
  if (selected->values().dtype() != DType::F32) {
    throw InvalidInput("model tensor '" + p.name + "': dtype " +
                       std::string(dtype_name(selected->values().dtype())) + ", expected F32");
  }
  if (!same_shape(selected->dense_shape(), p.shape)) {
    throw InvalidInput("model tensor '" + p.name + "': dense_shape " +
                       shape_to_string(selected->dense_shape()) + " differs from " +
                       shape_to_string(p.shape) + " declared by " + p.declared_by);
  }
  const std::size_t dim = p.shape[1];
  DenseTensor compact = DenseTensor::zeros(DType::F32, {rows.size(), dim});
  const RowIndices& indices = selected->indices();
  const float* src = selected->values().data<float>();
  float* dst = compact.data<float>();
  for (std::size_t k = 1; k < indices.size(); ++k) {
    if (indices(k) <= indices(k - 1)) {
      throw InvalidInput("model tensor '" + p.name + "': selected rows are not sorted and unique");
    }
  }
  std::size_t k = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto row = static_cast<std::int64_t>(rows[r]);
    while (k < indices.size() && indices(k) < row) ++k;
    if (k == indices.size() || indices(k) != row) {
      throw InvalidInput("model tensor '" + p.name + "': the data touch row " +
                         std::to_string(row) + ", which the selected rows do not hold");
    }
    std::copy(src + k * dim, src + (k + 1) * dim, dst + r * dim);
  }
  return compact;
}

}  // namespace

TrainingSession::TrainingSession(const std::string& plan_json, const std::uint8_t* model,
                                 std::size_t model_size, const Dataset& dataset)
    : plan_(parse_plan(plan_json)), dataset_(dataset) {
  if (plan_.kind != PlanKind::kTrain) {
    throw InvalidInput("plan.kind: a training session needs kind \"train\"");
  }
  check_dataset_fits(plan_.model, dataset_);
  NamedTensors global = read_safetensors(model, model_size, {/*require_finite=*/true}).tensors;

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
        p.row_sparse_gradient ? take_rows(global, p, touched) : take_parameter(global, p);
    if (p.row_sparse_gradient) trained->global_rows = touched;
    const float* v = value.data<float>();
    trained->initial.assign(v, v + value.size());
    parameters_.emplace(p.name, std::move(value));
    trained_.push_back(std::move(trained));
  }
  global.clear();

  const TrainSpec& train = *plan_.train;
  const std::size_t batch_size = std::min(train.batch_size, dataset_.size());
  gatherer_ = std::make_unique<BatchGatherer>(dataset_,
                                              compact_ids_.empty() ? nullptr : compact_ids_.data());
  model_ = std::make_unique<Model>(plan_.model, parameters_, batch_size);
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
    const auto update = plan_.updates.find(p.name);
    if (update == plan_.updates.end()) continue;
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
    switch (update->second.encoding) {
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
