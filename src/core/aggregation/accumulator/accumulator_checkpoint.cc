// SparseSumAccumulator's checkpoint codec: save()/load() of its state as named arrays and
// metadata, and the safetensors wrapping of one accumulator.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "core/aggregation/accumulator/for_each_touched.h"
#include "core/error.h"
#include "core/text/text_format.h"
#include "core/wire/safetensors.h"

namespace fedleaf::core {
namespace {

double parse_double(const std::string& text, const std::string& what) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) {
    throw InvalidInput(what + " " + in_quotes(text) + " is not a number");
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) {
    throw InvalidInput(what + " " + in_quotes(text) + " is not a finite number");
  }
  return v;
}

std::uint64_t parse_count(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 19 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw InvalidInput(what + " " + in_quotes(text) + " is not a non-negative integer");
  }
  return std::stoull(text);
}

std::string format_shape(const DenseShape& shape) {
  std::string out;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d) out += ',';
    out += std::to_string(shape[d]);
  }
  return out;
}

DenseShape parse_shape(const std::string& text, const std::string& what) {
  DenseShape shape;
  if (text.empty()) return shape;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t comma = text.find(',', begin);
    const std::string part = text.substr(begin, comma == std::string::npos ? comma : comma - begin);
    const std::uint64_t dim = parse_count(part, what + " dimension");
    if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw InvalidInput(what + " dimension " + part + " is too large");
    }
    shape.push_back(static_cast<std::int64_t>(dim));
    if (comma == std::string::npos) return shape;
    begin = comma + 1;
  }
}

}  // namespace

void SparseSumAccumulator::save(const std::string& prefix, NamedTensors& tensors,
                                Metadata& metadata) const {
  metadata[prefix + "@operator"] = std::string(operator_name(spec_.op));
  if (operator_rules(spec_.op).clips_to_norm) {
    metadata[prefix + "@clip_norm"] = format_double_exact(spec_.clip_norm);
  }
  metadata[prefix + "@encoding"] = std::string(update_encoding_name(encoding_));
  metadata[prefix + "@dtype"] = std::string(dtype_name(dtype_));
  metadata[prefix + "@dense_shape"] = format_shape(dense_shape_);
  metadata[prefix + "@num_updates"] = std::to_string(num_updates_);
  metadata[prefix + "@num_clipped"] = std::to_string(num_clipped_);
  if (spec_.clip.kind != ClipKind::kOff) {
    metadata[prefix + "@clip"] =
        std::string(spec_.clip.kind == ClipKind::kNorm ? "norm:" : "rms:") +
        format_double_exact(spec_.clip.bound);
  }
  if (spec_.row_clip > 0.0) {
    metadata[prefix + "@row_clip"] = format_double_exact(spec_.row_clip);
    metadata[prefix + "@num_rows_clipped"] = std::to_string(num_rows_clipped_);
  }
  if (spec_.min_contributors > 1) {
    metadata[prefix + "@min_contributors"] = std::to_string(spec_.min_contributors);
  }
  metadata[prefix + "@total_weight"] = format_double_exact(total_weight_);
  if (encoding_ == UpdateEncoding::kDense) {
    if (tracks_values(spec_.op)) {
      xt::xarray<double> sums = xt::xarray<double>::from_shape({sums_.size()});
      std::copy(sums_.begin(), sums_.end(), sums.begin());
      tensors.insert_or_assign(prefix + "@sums", DenseTensor(std::move(sums)));
    }
    return;
  }
  const auto n = static_cast<std::size_t>(num_touched());  // touched keys are in memory
  xt::xarray<std::int64_t> keys = xt::xarray<std::int64_t>::from_shape({n});
  xt::xarray<double> sums =
      xt::xarray<double>::from_shape({tracks_values(spec_.op) ? n : 0, width_});
  xt::xarray<double> contributors =
      xt::xarray<double>::from_shape({tracks_contributors(spec_.op) ? n : 0});
  xt::xarray<double> reports = xt::xarray<double>::from_shape({counts_reports() ? n : 0});
  std::size_t e = 0;
  for_each_touched([&](std::uint64_t key, std::size_t pos) {
    keys(e) = static_cast<std::int64_t>(key);
    if (tracks_values(spec_.op)) {
      std::copy_n(sums_.data() + pos * width_, width_, sums.data() + e * width_);
    }
    if (tracks_contributors(spec_.op)) contributors(e) = contributors_[pos];
    if (counts_reports()) reports(e) = reports_[pos];
    ++e;
  });
  tensors.insert_or_assign(prefix + "@keys", DenseTensor(std::move(keys)));
  if (tracks_values(spec_.op)) {
    tensors.insert_or_assign(prefix + "@sums", DenseTensor(std::move(sums)));
  }
  if (tracks_contributors(spec_.op)) {
    tensors.insert_or_assign(prefix + "@contributors", DenseTensor(std::move(contributors)));
  }
  if (counts_reports()) {
    tensors.insert_or_assign(prefix + "@reports", DenseTensor(std::move(reports)));
  }
}

SparseSumAccumulator SparseSumAccumulator::load(const std::string& prefix,
                                                const NamedTensors& tensors,
                                                const Metadata& metadata,
                                                AccumulatorOptions options) {
  const std::string where = "checkpoint of accumulator " + in_quotes(prefix);
  const auto meta = [&](const std::string& key) -> const std::string& {
    const auto it = metadata.find(prefix + "@" + key);
    if (it == metadata.end()) {
      throw InvalidInput(where + ": metadata " + in_quotes(prefix + "@" + key) + " is missing");
    }
    return it->second;
  };
  std::optional<double> clip;
  if (metadata.count(prefix + "@clip_norm")) {
    clip = parse_double(meta("clip_norm"), where + ": clip_norm");
  }
  OperatorSpec spec = parse_operator_spec(meta("operator"), clip, where);
  if (metadata.count(prefix + "@clip")) {
    const std::string& text = meta("clip");
    const std::size_t colon = text.find(':');
    const std::string kind = text.substr(0, colon);
    if (colon == std::string::npos || (kind != "norm" && kind != "rms")) {
      throw InvalidInput(where + ": clip " + in_quotes(text) +
                         " is not norm:<bound> or rms:<bound>");
    }
    spec.clip.kind = kind == "norm" ? ClipKind::kNorm : ClipKind::kRms;
    spec.clip.bound = parse_double(text.substr(colon + 1), where + ": clip bound");
  }
  // Absent: the row clip was off (or the checkpoint predates it, see RoundAggregator::restore).
  std::uint64_t num_rows_clipped = 0;
  if (metadata.count(prefix + "@row_clip")) {
    spec.row_clip = parse_double(meta("row_clip"), where + ": row_clip");
    num_rows_clipped = parse_count(meta("num_rows_clipped"), where + ": num_rows_clipped");
  }
  // Absent: the threshold was off (or the checkpoint predates it, see RoundAggregator::restore).
  if (metadata.count(prefix + "@min_contributors")) {
    spec.min_contributors = parse_count(meta("min_contributors"), where + ": min_contributors");
    if (spec.min_contributors < 2) {
      throw InvalidInput(where + ": min_contributors " + meta("min_contributors") +
                         " is stored only when it is 2 or more");
    }
  }
  const UpdateEncoding encoding = parse_update_encoding(meta("encoding"), where);
  const DType dtype = parse_dtype(meta("dtype"), where + ": dtype");
  DenseShape shape = parse_shape(meta("dense_shape"), where + ": dense_shape");
  const std::uint64_t num_updates = parse_count(meta("num_updates"), where + ": num_updates");
  // Checkpoints written before robust clipping carry no @num_clipped: none was clipped.
  const std::uint64_t num_clipped = metadata.count(prefix + "@num_clipped")
                                        ? parse_count(meta("num_clipped"), where + ": num_clipped")
                                        : 0;
  if (num_clipped > num_updates) {
    throw InvalidInput(where + ": num_clipped " + std::to_string(num_clipped) +
                       " exceeds num_updates " + std::to_string(num_updates));
  }
  const double total_weight = parse_double(meta("total_weight"), where + ": total_weight");
  if (total_weight < 0.0 || (num_updates == 0) != (total_weight == 0.0)) {
    throw InvalidInput(where + ": total_weight " + format_double_exact(total_weight) +
                       " is inconsistent with num_updates " + std::to_string(num_updates) +
                       " (must be > 0 exactly when there are updates)");
  }
  SparseSumAccumulator acc(prefix, spec, encoding, dtype, std::move(shape), options);
  const auto array = [&](const std::string& suffix, DType want, const Shape& want_shape) {
    const auto it = tensors.find(prefix + suffix);
    if (it == tensors.end()) {
      throw InvalidInput(where + ": tensor " + in_quotes(prefix + suffix) + " is missing");
    }
    const auto* t = std::get_if<DenseTensor>(&it->second);
    if (!t || t->dtype() != want || t->shape() != want_shape) {
      throw InvalidInput(where + ": tensor " + in_quotes(prefix + suffix) + " must be a dense " +
                         std::string(dtype_name(want)) + " array of shape " +
                         shape_to_string(want_shape));
    }
    return t;
  };
  const auto require_finite = [&](const double* v, std::size_t count, const std::string& what) {
    for (std::size_t i = 0; i < count; ++i) {
      if (!std::isfinite(v[i])) {
        throw InvalidInput(where + ": " + what + " value " + std::to_string(i) + " is not finite");
      }
    }
  };
  const bool with_values = tracks_values(spec.op);
  const bool with_contributors = tracks_contributors(spec.op);
  if (encoding == UpdateEncoding::kDense) {
    if (with_values) {
      const DenseTensor* sums =
          array("@sums", DType::F64, Shape{static_cast<std::size_t>(acc.num_keys_)});
      require_finite(sums->data<double>(), sums->size(), "sums");
      std::copy_n(sums->data<double>(), sums->size(), acc.sums_.begin());
    }
  } else {
    const auto it = tensors.find(prefix + "@keys");
    const auto* key_tensor = it == tensors.end() ? nullptr : std::get_if<DenseTensor>(&it->second);
    if (!key_tensor || key_tensor->dtype() != DType::I64 || key_tensor->rank() != 1) {
      throw InvalidInput(where + ": tensor " + in_quotes(prefix + "@keys") +
                         " must be a dense I64 array of shape [n]");
    }
    const std::size_t n = key_tensor->size();
    const std::int64_t* keys = key_tensor->data<std::int64_t>();
    if (num_updates == 0 && n > 0) {
      throw InvalidInput(where + ": holds " + std::to_string(n) + " keys but no updates");
    }
    for (std::size_t e = 0; e < n; ++e) {
      if (keys[e] < 0 || static_cast<std::uint64_t>(keys[e]) >= acc.num_keys_) {
        throw InvalidInput(where + ": key " + std::to_string(keys[e]) + " is out of range [0, " +
                           std::to_string(acc.num_keys_) + ")");
      }
      if (e > 0 && keys[e] <= keys[e - 1]) {
        throw InvalidInput(where + ": keys are not sorted and unique at entry " +
                           std::to_string(e));
      }
    }
    const double* sums = nullptr;
    if (with_values) {
      sums = array("@sums", DType::F64, Shape{n, acc.width_})->data<double>();
      require_finite(sums, n * acc.width_, "sums");
    }
    const double* contributors = nullptr;
    if (with_contributors) {
      contributors = array("@contributors", DType::F64, Shape{n})->data<double>();
      require_finite(contributors, n, "contributors");
      for (std::size_t e = 0; e < n; ++e) {
        const double c = contributors[e];
        if (!operator_rules(spec.op).valid_contributor(c, num_updates)) {
          throw InvalidInput(where + ": contributor weight " + format_double_exact(c) + " of key " +
                             std::to_string(keys[e]) + " is impossible for " +
                             std::to_string(num_updates) + " updates");
        }
      }
    }
    const double* reports = nullptr;
    if (acc.counts_reports()) {
      reports = array("@reports", DType::F64, Shape{n})->data<double>();
      for (std::size_t e = 0; e < n; ++e) {
        const double r = reports[e];
        // Each report counts once per key: a whole number in [1, num_updates].
        if (!(r >= 1.0 && r == std::floor(r) && r <= static_cast<double>(num_updates))) {
          throw InvalidInput(where + ": report count " + format_double_exact(r) + " of key " +
                             std::to_string(keys[e]) + " is impossible for " +
                             std::to_string(num_updates) + " updates");
        }
      }
    }
    acc.reserve_keys(n);
    for (std::size_t e = 0; e < n; ++e) {
      const std::size_t pos = acc.position_for(static_cast<std::uint64_t>(keys[e]));
      if (sums) std::copy_n(sums + e * acc.width_, acc.width_, acc.sums_.data() + pos * acc.width_);
      if (contributors) acc.contributors_[pos] = contributors[e];
      if (reports) acc.reports_[pos] = reports[e];
    }
  }
  acc.num_updates_ = num_updates;
  acc.num_clipped_ = num_clipped;
  acc.num_rows_clipped_ = num_rows_clipped;
  acc.total_weight_ = total_weight;
  acc.note_bytes();
  return acc;
}

std::vector<std::uint8_t> SparseSumAccumulator::to_safetensors() const {
  NamedTensors tensors;
  Metadata metadata{{"accumulator", name_}};
  save(name_, tensors, metadata);
  return write_safetensors(tensors, metadata);
}

SparseSumAccumulator SparseSumAccumulator::from_safetensors(const std::uint8_t* data,
                                                            std::size_t size,
                                                            AccumulatorOptions options) {
  SafetensorsReadOptions read;
  read.require_finite = true;
  const SafetensorsFile file = read_safetensors(data, size, read);
  const auto it = file.metadata.find("accumulator");
  if (it == file.metadata.end()) {
    throw InvalidInput("accumulator checkpoint: metadata 'accumulator' (its name) is missing");
  }
  for (const auto& [tensor_name, tensor] : file.tensors) {
    if (tensor_name != it->second + "@keys" && tensor_name != it->second + "@sums" &&
        tensor_name != it->second + "@contributors" && tensor_name != it->second + "@reports") {
      throw InvalidInput("accumulator checkpoint: unexpected tensor " + in_quotes(tensor_name));
    }
  }
  return load(it->second, file.tensors, file.metadata, options);
}

}  // namespace fedleaf::core
