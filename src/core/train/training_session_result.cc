// TrainingSession::write_result and result(): the update, computed block by block from the
// trained values and the initial values read again from the model, written in 64 kB pieces.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "core/error.h"
#include "core/tensor/half_float.h"
#include "core/text/text_format.h"
#include "core/train/trained_parameter.h"
#include "core/train/training_session.h"
#include "core/wire/result_format.h"
#include "core/wire/safetensors_layout.h"
#include "core/wire/update_compression.h"

namespace fedleaf::core {
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
  void put_u32(std::uint32_t value) { put(&value, sizeof value); }
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

// Cuts a stream of values into groups of `size` (the last may be shorter), for int8 scales.
class ValueGroups {
 public:
  explicit ValueGroups(std::size_t size) : size_(size) { buffer_.reserve(size); }

  template <class Emit>
  void put(const float* values, std::size_t n, Emit&& emit) {
    while (n > 0) {
      const std::size_t take = std::min(n, size_ - buffer_.size());
      buffer_.insert(buffer_.end(), values, values + take);
      values += take;
      n -= take;
      if (buffer_.size() == size_) {
        emit(buffer_.data(), buffer_.size());
        buffer_.clear();
      }
    }
  }
  template <class Emit>
  void finish(Emit&& emit) {
    if (!buffer_.empty()) emit(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

 private:
  std::size_t size_;
  std::vector<float> buffer_;
};

// Streams a tensor's values in file order: fn(values, count), called repeatedly.
using ValueStream = std::function<void(const std::function<void(const float*, std::size_t)>&)>;

// The values array `name` of tensor `tensor` (`count` values of `shape`) as the plan's
// compression asks (core/wire/update_compression.h): F32, F16, or I8 with an F32 scales array
// (one scale per group of `group` values). `add` declares an array and its writer.
template <class Add>
void add_values(const std::string& tensor, const std::string& name, const Shape& shape,
                std::size_t count, std::size_t group, ValuesCompression compression,
                ValueStream values, Metadata& metadata, Add&& add) {
  switch (compression) {
    case ValuesCompression::kF32:
      add(name, DType::F32, shape, [values = std::move(values)](ChunkWriter& w) {
        values([&](const float* v, std::size_t n) { w.put(v, n * 4); });
      });
      return;
    case ValuesCompression::kF16:
      metadata[values_compression_key(tensor)] = "f16";
      add(name, DType::F16, shape, [values = std::move(values), tensor](ChunkWriter& w) {
        values([&](const float* v, std::size_t n) {
          for (std::size_t i = 0; i < n; ++i) {
            const std::uint16_t h = f32_to_f16(v[i]);
            if ((h & 0x7c00u) == 0x7c00u) {
              throw InvalidInput("training: the update of " + in_quotes(tensor) + " has " +
                                 format_decimal(v[i]) +
                                 ", beyond F16's range (|v| < 65520): compression values "
                                 "\"int8\" or \"f32\" can send it");
            }
            const std::uint8_t bytes[2] = {static_cast<std::uint8_t>(h),
                                           static_cast<std::uint8_t>(h >> 8)};
            w.put(bytes, 2);
          }
        });
      });
      return;
    case ValuesCompression::kInt8:
      break;
  }
  metadata[values_compression_key(tensor)] = "int8";
  add(scales_array_name(tensor), DType::F32, Shape{int8_scale_count(count, group)},
      [values, group](ChunkWriter& w) {
        ValueGroups groups(group);
        const auto emit = [&](const float* g, std::size_t n) {
          const float scale = int8_scale(g, n);
          w.put(&scale, 4);
        };
        values([&](const float* v, std::size_t n) { groups.put(v, n, emit); });
        groups.finish(emit);
      });
  add(name, DType::I8, shape, [values = std::move(values), group](ChunkWriter& w) {
    ValueGroups groups(group);
    std::vector<std::int8_t> q(group);
    const auto emit = [&](const float* g, std::size_t n) {
      quantize_int8(g, n, int8_scale(g, n), q.data());
      w.put(q.data(), n);
    };
    values([&](const float* v, std::size_t n) { groups.put(v, n, emit); });
    groups.finish(emit);
  });
}

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
      trained.rows->for_each_row(begin, end,
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
    const TensorUpdatePlan* update = plan_->updates.find(p.name);
    if (update == nullptr) continue;
    const std::size_t row_size = trained.row_size();
    const std::size_t local_rows = parameters_.at(p.name).size() / row_size;
    const TensorCompression compression = update->compression;
    const auto dense_shape = [p](ChunkWriter& w) {
      for (const std::size_t d : p.shape) w.put_i64(static_cast<std::int64_t>(d));
    };
    // The global ids of the rows the session trained, in increasing order.
    const auto for_each_global = [&trained, local_rows](auto&& fn) {
      if (!trained.stored.compact) {
        for (std::size_t r = 0; r < local_rows; ++r) fn(static_cast<std::uint32_t>(r));
        return;
      }
      trained.rows->for_each_row(0, trained.rows->size(),
                                 [&](std::size_t, std::uint32_t g) { fn(g); });
    };
    switch (update->encoding) {
      case UpdateEncoding::kDense: {
        // Rows the session did not train are zero.
        ValueStream values = [this, &trained, row_size, p](const auto& put) {
          static const std::vector<float> kZeros(4096, 0.0f);
          const auto zeros = [&](std::size_t n) {
            for (std::size_t done = 0; done < n; done += kZeros.size()) {
              put(kZeros.data(), std::min(kZeros.size(), n - done));
            }
          };
          std::size_t next_row = 0;
          for_each_delta_block(
              trained, [&](std::size_t count, const std::uint32_t* global, const float* delta) {
                for (std::size_t r = 0; r < count; ++r) {
                  zeros((global[r] - next_row) * row_size);
                  put(delta + r * row_size, row_size);
                  next_row = std::size_t{global[r]} + 1;
                }
              });
          zeros((p.shape[0] - next_row) * row_size);
        };
        const std::size_t count = p.shape[0] * row_size;
        add_values(p.name, p.name, p.shape, count, int8_group_values(false, row_size),
                   compression.values, std::move(values), metadata, add);
        break;
      }
      case UpdateEncoding::kRowSparse: {
        metadata[p.name + ":encoding"] = "row_sparse";
        if (compression.ids == IdsCompression::kDeltaVarint) {
          metadata[ids_compression_key(p.name)] = "delta_varint";
          std::size_t bytes = 0;
          std::uint32_t last = 0;
          for_each_global([&](std::uint32_t g) {
            bytes += varint_size(g - last);
            last = g;
          });
          add(p.name + ":indices", DType::U8, {bytes}, [for_each_global](ChunkWriter& w) {
            std::uint32_t previous = 0;
            std::uint8_t varint[5];
            for_each_global([&](std::uint32_t g) {
              w.put(varint, put_varint(g - previous, varint));
              previous = g;
            });
          });
        } else if (compression.ids == IdsCompression::kU32) {
          add(p.name + ":indices", DType::U32, {local_rows}, [for_each_global](ChunkWriter& w) {
            for_each_global([&](std::uint32_t g) { w.put_u32(g); });
          });
        } else {
          add(p.name + ":indices", DType::I64, {local_rows}, [for_each_global](ChunkWriter& w) {
            for_each_global([&](std::uint32_t g) { w.put_i64(g); });
          });
        }
        Shape values_shape{local_rows};
        if (p.shape.size() == 2) values_shape.push_back(row_size);
        ValueStream values = [this, &trained, row_size](const auto& put) {
          for_each_delta_block(trained, [&](std::size_t count, const std::uint32_t*,
                                            const float* delta) { put(delta, count * row_size); });
        };
        add_values(p.name, p.name + ":values", values_shape, local_rows * row_size,
                   int8_group_values(p.shape.size() >= 2, row_size), compression.values,
                   std::move(values), metadata, add);
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
        const bool u32 = compression.ids == IdsCompression::kU32;
        add(p.name + ":indices", u32 ? DType::U32 : DType::I64, {changed, rank},
            [this, &trained, row_size, rank, u32](ChunkWriter& w) {
              const auto put_id = [&](std::uint32_t id) {
                if (u32) {
                  w.put_u32(id);
                } else {
                  w.put_i64(std::int64_t{id});
                }
              };
              for_each_delta_block(
                  trained, [&](std::size_t count, const std::uint32_t* global, const float* delta) {
                    for (std::size_t i = 0; i < count * row_size; ++i) {
                      if (delta[i] == 0.0f) continue;
                      if (rank == 2) {
                        put_id(global[i / row_size]);
                        put_id(static_cast<std::uint32_t>(i % row_size));
                      } else {
                        put_id(global[i]);
                      }
                    }
                  });
            });
        ValueStream values = [this, &trained, row_size](const auto& put) {
          for_each_delta_block(trained,
                               [&](std::size_t count, const std::uint32_t*, const float* delta) {
                                 for (std::size_t i = 0; i < count * row_size; ++i) {
                                   if (delta[i] != 0.0f) put(delta + i, 1);
                                 }
                               });
        };
        add_values(p.name, p.name + ":values", Shape{changed}, changed,
                   int8_group_values(false, row_size), compression.values, std::move(values),
                   metadata, add);
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
