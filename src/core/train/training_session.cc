#include "core/train/training_session.h"
#include "core/wire/text_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/tensor/half_float.h"
#include "core/train/compact_rows.h"
#include "core/train/seeded_random.h"
#include "core/wire/result_format.h"
#include "core/wire/safetensors.h"
#include "core/wire/safetensors_layout.h"

namespace fedleaf::core {

namespace {

// Where a trained parameter's initial values are in the model: the session reads them again
// when it writes the update (value now - value read), instead of keeping a copy.
struct StoredValues {
  std::uint64_t begin = 0;  // model byte offset of stored row 0 (a dense array or selection values)
  DType dtype = DType::F32;     // as stored: F32, F16 or BF16 (widened when read)
  bool compact = false;         // local rows are the session's compact rows (an embedding table)
  bool from_selection = false;  // stored rows are a model:select answer's rows, not global rows
  // The selection row of each compact row when the selection holds rows the data do not touch;
  // empty when it holds exactly the compact rows (compact row r is selection row r).
  std::vector<std::uint32_t> positions;
};

}  // namespace

struct TrainingSession::TrainedParameter {
  ParameterSpec spec;
  StoredValues stored;

  std::size_t row_size() const { return spec.shape.size() == 1 ? 1 : spec.shape[1]; }
};

namespace {

// `count` floats of dtype `stored` at model byte `begin`, widened to F32 into out.
void read_floats_from(const ModelByteReader& read, DType stored, std::uint64_t begin,
                      std::size_t count, float* out) {
  if (count == 0) return;
  if (stored == DType::F32) {
    read(begin, count * 4, reinterpret_cast<std::uint8_t*>(out));
    return;
  }
  std::vector<std::uint8_t> halves(count * 2);
  read(begin, halves.size(), halves.data());
  widen_to_f32(stored, halves.data(), count, out);
}

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

  // `count` floats of dtype `stored` (F32, F16 or BF16) from byte `begin` into out, as F32.
  void read_floats(DType stored, std::uint64_t begin, std::size_t count, float* out) const {
    read_floats_from(read_, stored, begin, count, out);
  }

 private:
  const SafetensorsIndex& index_;
  const ModelByteReader& read_;
};

// Branch-free over the whole array, which a compiler vectorizes: a float is NaN or infinite when
// its exponent bits are all set. (A test and branch per value was a tenth of a session's setup.)
void check_finite(const std::string& name, const float* values, std::size_t count) {
  std::uint32_t non_finite = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, values + i, sizeof bits);
    non_finite |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  if (non_finite != 0) {
    throw InvalidInput("model tensor '" + name + "': a value is not finite (NaN or infinity)");
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

// Parameters are F32; a model may store them as F16 or BF16, widened when read.
bool is_parameter_dtype(DType dtype) { return dtype == DType::F32 || is_half_float(dtype); }

// A dense F32 (or F16, BF16) array of the declared shape.
const SafetensorsArray& dense_array(const ModelView& model, const ParameterSpec& p) {
  check_missing_or_sparse(model, p);
  const SafetensorsArray& a = model.array(p.name);
  if (!is_parameter_dtype(a.dtype)) {
    throw InvalidInput("model tensor '" + p.name + "': dtype " + std::string(dtype_name(a.dtype)) +
                       ", expected F32 (or F16, BF16)");
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
  model.read_floats(a.dtype, a.begin, value.size(), value.data<float>());
  check_finite(p.name, value.data<float>(), value.size());
  return value;
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

// Where the compact rows `rows` of an embedding table are stored: in the whole table (a dense
// array) or in the rows the server selected (a row-sparse tuple). Every row the dataset touches
// must be in a selection; other selected rows (padding) are ignored, so training on a selection
// gives the same bytes as training on the whole table.
void locate_rows(const ModelView& model, const ParameterSpec& p, const CompactRows& rows,
                 StoredValues& source) {
  const std::size_t dim = p.shape[1];
  if (model.encoding(p.name) != "row_sparse") {
    const SafetensorsArray& table = dense_array(model, p);
    source.begin = table.begin;
    source.dtype = table.dtype;
    source.compact = true;
    return;
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
  if (!is_parameter_dtype(values.dtype) || values.shape != Shape{selected.size(), dim}) {
    throw InvalidInput("model tensor '" + p.name + "': values must be F32 (or F16, BF16) " +
                       shape_to_string(Shape{selected.size(), dim}));
  }
  source.begin = values.begin;
  source.dtype = values.dtype;
  source.compact = true;
  source.from_selection = true;
  std::vector<std::uint32_t> positions(rows.size());  // compact row → row of the selection
  std::size_t k = 0;
  rows.for_each_row(0, rows.size(), [&](std::size_t r, std::uint32_t global) {
    const std::int64_t row = global;
    while (k < selected.size() && selected[k] < row) ++k;
    if (k == selected.size() || selected[k] != row) {
      throw InvalidInput("model tensor '" + p.name + "': the data touch row " +
                         std::to_string(row) + ", which the selected rows do not hold");
    }
    positions[r] = static_cast<std::uint32_t>(k);
  });
  // Every compact row found in a selection of as many rows: the selection is the compact rows.
  if (selected.size() != rows.size()) source.positions = std::move(positions);
}

}  // namespace

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

namespace {

// Buffers a result's bytes into chunks for the sink: the update is never held whole.
class ChunkWriter {
 public:
  explicit ChunkWriter(const ResultSink& sink) : sink_(sink), buffer_(kChunkBytes) {}

  void put(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const std::uint8_t*>(data);
    while (size > 0) {
      const std::size_t n = std::min(size, kChunkBytes - used_);
      std::memcpy(buffer_.data() + used_, bytes, n);
      used_ += n;
      bytes += n;
      size -= n;
      if (used_ == kChunkBytes) flush();
    }
  }
  void put_i64(std::int64_t value) { put(&value, sizeof value); }
  void put_zeros(std::size_t size) {
    while (size > 0) {
      const std::size_t n = std::min(size, kChunkBytes - used_);
      std::memset(buffer_.data() + used_, 0, n);
      used_ += n;
      size -= n;
      if (used_ == kChunkBytes) flush();
    }
  }
  void flush() {
    if (used_ != 0) sink_.write(buffer_.data(), used_);
    used_ = 0;
  }

 private:
  static constexpr std::size_t kChunkBytes = 64 * 1024;
  const ResultSink& sink_;
  std::vector<std::uint8_t> buffer_;
  std::size_t used_ = 0;
};

// Rows per block when a parameter's update is computed block by block.
std::size_t block_rows(std::size_t row_size) { return std::max<std::size_t>(1, 4096 / row_size); }

}  // namespace

template <class Block>
void TrainingSession::for_each_delta_block(const TrainedParameter& trained, Block block) const {
  const std::size_t row_size = trained.row_size();
  const float* now = parameters_.at(trained.spec.name).data<float>();
  const std::size_t local_rows = parameters_.at(trained.spec.name).size() / row_size;
  const std::size_t rows_per_block = block_rows(row_size);
  std::vector<float> delta(rows_per_block * row_size);
  std::vector<std::uint32_t> global(rows_per_block);
  for (std::size_t begin = 0; begin < local_rows; begin += rows_per_block) {
    const std::size_t end = std::min(local_rows, begin + rows_per_block);
    read_initial(trained, begin, end, delta.data());
    bool finite = true;
    for (std::size_t i = 0; i < (end - begin) * row_size; ++i) {
      delta[i] = now[begin * row_size + i] - delta[i];
      finite &= std::isfinite(delta[i]);
    }
    if (!finite) {
      throw InvalidInput("training: the update of " + in_quotes(trained.spec.name) +
                         " is not finite (training diverged: a smaller learning_rate or a "
                         "clip_norm keeps it finite)");
    }
    if (trained.stored.compact) {
      rows_->for_each_row(begin, end,
                          [&](std::size_t r, std::uint32_t g) { global[r - begin] = g; });
    } else {
      for (std::size_t r = begin; r < end; ++r) global[r - begin] = static_cast<std::uint32_t>(r);
    }
    block(end - begin, global.data(), delta.data());
  }
}

void TrainingSession::write_result(const std::string& task_id, const ResultSink& sink) const {
  if (!done()) {
    throw InvalidInput("training session: result requested after " +
                       std::to_string(completed_steps_) + " of " + std::to_string(total_steps_) +
                       " steps");
  }
  if (!std::isfinite(mean_loss())) {
    throw InvalidInput(
        "training: the mean loss is not finite (training diverged: a smaller "
        "learning_rate or a clip_norm keeps it finite)");
  }
  ResultReport report;
  report.num_examples = dataset_.size();
  report.loss = mean_loss();
  report.accuracy = accuracy();
  report.task_id = task_id;
  Metadata metadata = result_metadata(report);
  // The arrays of the update (write_safetensors' layout of the same tensors), each with the
  // function that writes its bytes.
  std::vector<SafetensorsArraySpec> arrays;
  std::vector<std::function<void(ChunkWriter&)>> writers;
  const auto add = [&](std::string name, DType dtype, Shape shape,
                       std::function<void(ChunkWriter&)> write) {
    arrays.push_back({std::move(name), dtype, std::move(shape)});
    writers.push_back(std::move(write));
  };
  for (const auto& owned : trained_) {
    const TrainedParameter& trained = *owned;
    const ParameterSpec& p = trained.spec;
    const TensorUpdatePlan* update = plan_.updates.find(p.name);
    if (update == nullptr) continue;
    const std::size_t row_size = trained.row_size();
    const std::size_t local_rows = parameters_.at(p.name).size() / row_size;
    const auto dense_shape = [p](ChunkWriter& w) {
      for (const std::size_t d : p.shape) w.put_i64(static_cast<std::int64_t>(d));
    };
    switch (update->encoding) {
      case UpdateEncoding::kDense:
        // Rows the session did not train are zero.
        add(p.name, DType::F32, p.shape, [this, &trained, row_size, p](ChunkWriter& w) {
          std::size_t next_row = 0;
          for_each_delta_block(
              trained, [&](std::size_t count, const std::uint32_t* global, const float* delta) {
                for (std::size_t r = 0; r < count; ++r) {
                  w.put_zeros((global[r] - next_row) * row_size * 4);
                  w.put(delta + r * row_size, row_size * 4);
                  next_row = std::size_t{global[r]} + 1;
                }
              });
          w.put_zeros((p.shape[0] - next_row) * row_size * 4);
        });
        break;
      case UpdateEncoding::kRowSparse: {
        metadata[p.name + ":encoding"] = "row_sparse";
        add(p.name + ":indices", DType::I64, {local_rows}, [this, &trained](ChunkWriter& w) {
          if (!trained.stored.compact) {
            const std::size_t rows = parameters_.at(trained.spec.name).size() / trained.row_size();
            for (std::size_t r = 0; r < rows; ++r) w.put_i64(static_cast<std::int64_t>(r));
            return;
          }
          rows_->for_each_row(0, rows_->size(),
                              [&](std::size_t, std::uint32_t global) { w.put_i64(global); });
        });
        Shape values_shape{local_rows};
        if (p.shape.size() == 2) values_shape.push_back(row_size);
        add(p.name + ":values", DType::F32, values_shape,
            [this, &trained, row_size](ChunkWriter& w) {
              for_each_delta_block(
                  trained, [&](std::size_t count, const std::uint32_t*, const float* delta) {
                    w.put(delta, count * row_size * 4);
                  });
            });
        add(p.name + ":dense_shape", DType::I64, {p.shape.size()}, dense_shape);
        break;
      }
      case UpdateEncoding::kCoo: {
        metadata[p.name + ":encoding"] = "coo";
        std::size_t changed = 0;
        for_each_delta_block(trained,
                             [&](std::size_t count, const std::uint32_t*, const float* delta) {
                               for (std::size_t i = 0; i < count * row_size; ++i)
                                 changed += delta[i] != 0.0f;
                             });
        const std::size_t rank = p.shape.size();
        add(p.name + ":indices", DType::I64, {changed, rank},
            [this, &trained, row_size, rank](ChunkWriter& w) {
              for_each_delta_block(
                  trained, [&](std::size_t count, const std::uint32_t* global, const float* delta) {
                    for (std::size_t i = 0; i < count * row_size; ++i) {
                      if (delta[i] == 0.0f) continue;
                      if (rank == 2) {
                        w.put_i64(std::int64_t{global[i / row_size]});
                        w.put_i64(static_cast<std::int64_t>(i % row_size));
                      } else {
                        w.put_i64(std::int64_t{global[i]});
                      }
                    }
                  });
            });
        add(p.name + ":values", DType::F32, {changed}, [this, &trained, row_size](ChunkWriter& w) {
          for_each_delta_block(trained,
                               [&](std::size_t count, const std::uint32_t*, const float* delta) {
                                 for (std::size_t i = 0; i < count * row_size; ++i) {
                                   if (delta[i] != 0.0f) w.put(delta + i, 4);
                                 }
                               });
        });
        add(p.name + ":dense_shape", DType::I64, {rank}, dense_shape);
        break;
      }
    }
  }
  const SafetensorsLayout layout = layout_safetensors(arrays, metadata);
  std::vector<std::size_t> order(arrays.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return layout.offsets[a] < layout.offsets[b]; });
  sink.begin(layout.file_size);
  ChunkWriter writer(sink);
  writer.put(layout.header.data(), layout.header.size());
  for (const std::size_t i : order) writers[i](writer);
  writer.flush();
}

std::vector<std::uint8_t> TrainingSession::result(const std::string& task_id) const {
  std::vector<std::uint8_t> out;
  write_result(task_id,
               ResultSink{[&](std::uint64_t size) { out.reserve(static_cast<std::size_t>(size)); },
                          [&](const std::uint8_t* data, std::size_t size) {
                            out.insert(out.end(), data, data + size);
                          }});
  return out;
}

}  // namespace fedleaf::core
