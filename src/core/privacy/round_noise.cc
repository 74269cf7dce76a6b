#include "core/privacy/round_noise.h"

namespace fedleaf::core {

RoundNoise RoundNoise::draw(const RoundNoiseShape& shape, const TreeNoiseSecret& secret,
                            std::uint64_t round) {
  const TreeNoise tree_noise = TreeNoise::for_round(secret, shape.gaussian, round);
  RoundNoise out;
  out.round_ = round;
  out.grid_ = shape.gaussian.grid();
  out.scale_ = shape.gaussian.scale();
  std::uint32_t ordinal = 0;
  for (const auto& [name, layout] : shape.layouts) {
    const RowSplit split = row_split(name, layout);
    std::vector<std::int64_t>& units = out.units_.emplace_back(split.rows * split.row_size, 0);
    for (std::uint64_t row = 0; row < split.rows; ++row) {
      tree_noise.add_to_row(ordinal, row, units.data() + row * split.row_size, split.row_size);
    }
    ++ordinal;
  }
  return out;
}

RoundNoise::~RoundNoise() {
  for (std::vector<std::int64_t>& units : units_) {
    volatile std::int64_t* unit = units.data();
    for (std::size_t i = 0; i < units.size(); ++i) unit[i] = 0;
  }
}

}  // namespace fedleaf::core
