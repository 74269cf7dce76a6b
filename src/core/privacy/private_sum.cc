#include "core/privacy/private_sum.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

const PrivateSumSettings& checked(const PrivateSumSettings& settings) {
  if (!(std::isfinite(settings.clip_norm) && settings.clip_norm > 0)) {
    throw InvalidInput("clip_norm: must be a finite number above 0, got " +
                       std::to_string(settings.clip_norm));
  }
  if (!(std::isfinite(settings.noise_multiplier) && settings.noise_multiplier > 0)) {
    throw InvalidInput("noise_multiplier: must be a finite number above 0, got " +
                       std::to_string(settings.noise_multiplier));
  }
  if (settings.denominator < 1) {
    throw InvalidInput(
        "denominator: must be at least 1 (the round's target number of reports), "
        "got " +
        std::to_string(settings.denominator));
  }
  if (settings.max_reports < 1) {
    throw InvalidInput("max_reports: must be at least 1, got " +
                       std::to_string(settings.max_reports));
  }
  return settings;
}

template <class T>
void write_row(const std::int64_t* units, std::size_t n, double grid, double denominator, T* out) {
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<T>(static_cast<double>(units[i]) * grid / denominator);
  }
}

}  // namespace

PrivateSum::PrivateSum(TensorLayouts layouts, const PrivateSumSettings& settings)
    : layouts_(std::move(layouts)),
      settings_(checked(settings)),
      noise_(settings.noise_multiplier * settings.clip_norm) {
  const std::int64_t per_device = max_units_per_coordinate(settings_.clip_norm, noise_.grid());
  if (per_device > (std::int64_t{1} << 52) / settings_.max_reports) {
    throw InvalidInput(
        "max_reports: max_reports x clip_norm / grid must be at most 2^52 so the "
        "integer sum cannot overflow; clip_norm / grid is " +
        std::to_string(per_device) + ", max_reports " + std::to_string(settings_.max_reports));
  }
  for (const auto& [name, layout] : layouts_) {
    sums_.push_back({row_split(name, layout).row_size, {}, {}});
  }
}

void PrivateSum::add(const NamedTensors& update) {
  if (reports_ >= settings_.max_reports) {
    throw Conflict("max_reports: the round already has its " +
                   std::to_string(settings_.max_reports) + " reports");
  }
  const ClippedContribution contribution =
      clip_to_grid(update, layouts_, settings_.clip_norm, noise_.grid());
  for (const ContributionRows& rows : contribution.tensors) {
    Accumulator& sum = sums_[rows.tensor];
    for (std::size_t r = 0; r < rows.rows.size(); ++r) {
      const auto [at, inserted] = sum.offsets.try_emplace(rows.rows[r], sum.units.size());
      if (inserted) sum.units.resize(sum.units.size() + sum.row_size, 0);
      std::int64_t* target = sum.units.data() + at->second;
      const std::int64_t* source = rows.units.data() + r * rows.row_size;
      for (std::size_t i = 0; i < rows.row_size; ++i) target[i] += source[i];
    }
  }
  ++reports_;
  if (contribution.clipped) ++clipped_reports_;
}

template <class AddNoise>
NamedTensors PrivateSum::release_rows(const AddNoise& add_noise) const {
  const auto denominator = static_cast<double>(settings_.denominator);
  NamedTensors out;
  std::uint32_t ordinal = 0;
  for (const auto& [name, layout] : layouts_) {
    const Accumulator& sum = sums_[ordinal];
    const RowSplit split = row_split(name, layout);
    DenseTensor released = DenseTensor::zeros(layout.dtype, layout.shape);
    std::vector<std::int64_t> units(split.row_size);
    for (std::uint64_t row = 0; row < split.rows; ++row) {
      const auto touched = sum.offsets.find(row);
      if (touched == sum.offsets.end()) {
        std::fill(units.begin(), units.end(), 0);
      } else {
        std::copy_n(sum.units.begin() + static_cast<std::ptrdiff_t>(touched->second),
                    split.row_size, units.begin());
      }
      add_noise(ordinal, row, units.data(), units.size());
      const std::size_t first = static_cast<std::size_t>(row) * split.row_size;
      if (layout.dtype == DType::F32) {
        write_row(units.data(), units.size(), noise_.grid(), denominator,
                  released.data<float>() + first);
      } else {
        write_row(units.data(), units.size(), noise_.grid(), denominator,
                  released.data<double>() + first);
      }
    }
    out.emplace(name, std::move(released));
    ++ordinal;
  }
  return out;
}

NamedTensors PrivateSum::release(const TreeNoiseSecret& secret, std::uint64_t round) const {
  const TreeNoise tree_noise = TreeNoise::for_round(secret, noise_, round);
  return release_rows([&](std::uint32_t ordinal, std::uint64_t row, std::int64_t* units,
                          std::size_t n) { tree_noise.add_to_row(ordinal, row, units, n); });
}

NamedTensors PrivateSum::release(const RoundNoise& noise) const {
  if (noise.grid() != noise_.grid() || noise.scale() != noise_.scale()) {
    throw InvalidInput("noise: drawn for another Gaussian (scale " + std::to_string(noise.scale()) +
                       " units, this sum's is " + std::to_string(noise_.scale()) + ")");
  }
  if (noise.tensors() != layouts_.size()) {
    throw InvalidInput("noise: drawn for " + std::to_string(noise.tensors()) +
                       " tensors, this sum releases " + std::to_string(layouts_.size()));
  }
  std::uint32_t ordinal = 0;
  for (const auto& [name, layout] : layouts_) {
    const RowSplit split = row_split(name, layout);
    if (noise.units(ordinal).size() != split.rows * split.row_size) {
      throw InvalidInput("noise: drawn for another layout of '" + name + "'");
    }
    ++ordinal;
  }
  return release_rows(
      [&](std::uint32_t ordinal, std::uint64_t row, std::int64_t* units, std::size_t n) {
        const std::int64_t* drawn = noise.units(ordinal).data() + row * n;
        for (std::size_t i = 0; i < n; ++i) units[i] += drawn[i];
      });
}

std::size_t PrivateSum::touched_rows() const {
  std::size_t rows = 0;
  for (const Accumulator& sum : sums_) rows += sum.offsets.size();
  return rows;
}

}  // namespace fedleaf::core
