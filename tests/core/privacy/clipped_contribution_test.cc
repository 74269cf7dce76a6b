#include "core/privacy/clipped_contribution.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "tests/core/error_matchers.h"
#include "tests/core/privacy/private_test_updates.h"

using fedleaf::core::clip_to_grid;
using fedleaf::core::ClippedContribution;
using fedleaf::core::DenseTensor;
using fedleaf::core::DType;
using fedleaf::core::max_units_per_coordinate;
using fedleaf::core::NamedTensors;
using fedleaf::core::RowSparseTensor;
using fedleaf::core::TensorLayouts;
using fedleaf::test::MessageContains;

namespace {

constexpr double kGrid = 1.0 / 4096;

// The contribution spread back over the full shapes, in units.
std::map<std::string, std::vector<std::int64_t>> densify(const ClippedContribution& c,
                                                         const TensorLayouts& layouts) {
  std::map<std::string, std::vector<std::int64_t>> out;
  std::vector<std::string> names;
  for (const auto& [name, layout] : layouts) {
    names.push_back(name);
    out[name].assign(fedleaf::core::shape_element_count(layout.shape, name), 0);
  }
  for (const auto& rows : c.tensors) {
    std::vector<std::int64_t>& dense = out[names[rows.tensor]];
    for (std::size_t r = 0; r < rows.rows.size(); ++r) {
      for (std::size_t j = 0; j < rows.row_size; ++j) {
        dense[static_cast<std::size_t>(rows.rows[r]) * rows.row_size + j] =
            rows.units[r * rows.row_size + j];
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("clip_to_grid_matches_the_dense_reference_for_dense_row_sparse_and_coo_updates") {
  const TensorLayouts layouts = fedleaf::test::private_test_layouts();
  std::mt19937_64 rng(5);
  int clipped = 0;
  for (int device = 0; device < 300; ++device) {
    INFO("device " << device);
    const NamedTensors update = fedleaf::test::random_private_update(rng, device % 2 ? 0.05 : 1.0);
    const ClippedContribution c = clip_to_grid(update, layouts, 1.0, kGrid);
    CHECK(densify(c, layouts) == fedleaf::test::reference_units(update, layouts, 1.0, kGrid));
    clipped += c.clipped;
  }
  CHECK(clipped > 50);  // both sides of the clip were exercised
  CHECK(clipped < 250);
}

TEST_CASE("clip_to_grid_does_not_scale_a_device_below_the_clip") {
  const TensorLayouts layouts{{"w", {DType::F32, {4}}}};
  NamedTensors update;
  update.emplace("w", DenseTensor(xt::xarray<double>{0.3, -0.4, 0.0, 0.25 + 3 * kGrid / 4}));
  const ClippedContribution c = clip_to_grid(update, layouts, 1.0, kGrid);
  CHECK_FALSE(c.clipped);
  CHECK(c.norm == Approx(std::sqrt(0.09 + 0.16 + std::pow(0.25 + 3 * kGrid / 4, 2))));
  REQUIRE(c.tensors.size() == 1);
  // Truncated toward zero, unscaled: 0.3 / grid = 1228.8 -> 1228, -1638.4 -> -1638, 1024.75 ->
  // 1024. A rank-1 tensor's rows are its elements; the zero one is dropped.
  CHECK(c.tensors[0].rows == std::vector<std::uint64_t>{0, 1, 3});
  CHECK(c.tensors[0].units == std::vector<std::int64_t>{1228, -1638, 1024});
}

TEST_CASE("clip_to_grid_bounds_every_contribution_by_the_clip_norm") {
  const TensorLayouts layouts = fedleaf::test::private_test_layouts();
  std::mt19937_64 rng(17);
  for (double clip : {1.0, 0.37, 1e-3}) {
    const double grid = std::ldexp(1.0, -20);
    const std::int64_t max_units = max_units_per_coordinate(clip, grid);
    for (int device = 0; device < 200; ++device) {
      const NamedTensors update = fedleaf::test::random_private_update(rng, 3.0);
      const ClippedContribution c = clip_to_grid(update, layouts, clip, grid);
      double squared = 0;
      for (const auto& rows : c.tensors) {
        for (std::int64_t u : rows.units) {
          CHECK(std::llabs(u) <= max_units);
          squared += std::pow(static_cast<double>(u) * grid, 2);
        }
      }
      CHECK(std::sqrt(squared) <= clip);
      // Clipped to the bound, not below it: truncation loses under one unit per touched coordinate.
      CHECK(std::sqrt(squared) > clip - 5 * grid);
    }
  }
  // All the mass on one coordinate: exactly floor(clip / grid) units there.
  NamedTensors spike;
  spike.emplace("bias", DenseTensor(xt::xarray<double>{0.0, -1e6, 0.0}));
  const ClippedContribution c = clip_to_grid(spike, layouts, 0.37, kGrid);
  REQUIRE(c.tensors.size() == 1);
  CHECK(c.tensors[0].rows == std::vector<std::uint64_t>{1});
  CHECK(c.tensors[0].units == std::vector<std::int64_t>{-max_units_per_coordinate(0.37, kGrid)});
}

TEST_CASE("clip_to_grid_holds_the_clip_exactly_when_float_rounding_hides_the_excess") {
  // Units (2^30, 1) have squared norm 2^60 + 1 > (clip / grid)^2 = 2^60, but in float64 the sum
  // of squares rounds to 2^60, so the norm reads exactly clip_norm and nothing is scaled. The
  // exact integer check catches it and shrinks the scale until the units fit.
  const double grid = std::ldexp(1.0, -20);
  const double clip = std::ldexp(1.0, 10);
  const TensorLayouts layouts{{"w", {DType::F32, {2}}}};
  NamedTensors update;
  update.emplace("w", DenseTensor(xt::xarray<double>{clip, grid}));
  const ClippedContribution c = clip_to_grid(update, layouts, clip, grid);
  CHECK(c.norm == clip);
  CHECK_FALSE(c.clipped);
  REQUIRE(c.tensors.size() == 1);
  CHECK(c.tensors[0].rows == std::vector<std::uint64_t>{0});
  CHECK(c.tensors[0].units == std::vector<std::int64_t>{(std::int64_t{1} << 30) - 1});
}

TEST_CASE("clip_to_grid_sums_repeated_rows_before_taking_the_norm") {
  const TensorLayouts layouts{{"emb", {DType::F32, {10, 2}}}};
  NamedTensors repeated;
  repeated.emplace("emb", RowSparseTensor(fedleaf::core::RowIndices{7, 7},
                                          DenseTensor(xt::xarray<double>{{0.6, 0.0}, {0.6, 0.0}}),
                                          {10, 2}, "emb"));
  const ClippedContribution c = clip_to_grid(repeated, layouts, 1.0, kGrid);
  CHECK(c.norm == Approx(1.2));  // the row the sum adds is (1.2, 0), not two rows of 0.6
  CHECK(c.clipped);
  REQUIRE(c.tensors.size() == 1);
  CHECK(c.tensors[0].rows == std::vector<std::uint64_t>{7});
  CHECK(c.tensors[0].units == std::vector<std::int64_t>{4096, 0});
}

TEST_CASE("clip_to_grid_takes_a_scalar_as_one_row_of_one_element") {
  const TensorLayouts layouts{{"s", {DType::F64, {}}}};
  NamedTensors coo;  // two entries of a rank-0 tensor: both are the scalar, summed
  coo.emplace("s",
              fedleaf::core::SparseTensor(xt::zeros<std::int64_t>({std::size_t{2}, std::size_t{0}}),
                                          DenseTensor(xt::xarray<double>{0.25, 0.125}), {}, "s"));
  const ClippedContribution c = clip_to_grid(coo, layouts, 1.0, kGrid);
  REQUIRE(c.tensors.size() == 1);
  CHECK(c.tensors[0].rows == std::vector<std::uint64_t>{0});
  CHECK(c.tensors[0].units == std::vector<std::int64_t>{1536});  // 0.375 x 4096
  NamedTensors dense;
  dense.emplace("s", DenseTensor(xt::xarray<double>(0.375)));
  CHECK(clip_to_grid(dense, layouts, 1.0, kGrid).tensors[0].units == c.tensors[0].units);
}

TEST_CASE("clip_to_grid_drops_rows_whose_units_are_all_zero") {
  const TensorLayouts layouts{{"emb", {DType::F32, {1000, 2}}}};
  xt::xarray<double> values = xt::zeros<double>({std::size_t{1000}, std::size_t{2}});
  values(3, 1) = 0.5;
  values(9, 0) = kGrid / 2;  // below one grid unit: truncated to zero
  NamedTensors update;
  update.emplace("emb", DenseTensor(values));
  const ClippedContribution c = clip_to_grid(update, layouts, 1.0, kGrid);
  REQUIRE(c.tensors.size() == 1);
  CHECK(c.tensors[0].rows == std::vector<std::uint64_t>{3});
  CHECK(clip_to_grid(NamedTensors{}, layouts, 1.0, kGrid).tensors.empty());
}

TEST_CASE("clip_to_grid_rejects_bad_updates_naming_the_tensor_and_the_rule") {
  const TensorLayouts layouts{{"w", {DType::F32, {2, 3}}}};
  const auto one = [](const std::string& name, fedleaf::core::Tensor t) {
    NamedTensors update;
    update.emplace(name, std::move(t));
    return update;
  };
  const auto check_error = [&](const NamedTensors& update, const std::string& message) {
    CHECK_THROWS_MATCHES(clip_to_grid(update, layouts, 1.0, kGrid), fedleaf::InvalidInput,
                         MessageContains(message));
  };
  check_error(one("v", DenseTensor::zeros(DType::F32, {2, 3})),
              "update['v']: the model has no tensor of this name");
  check_error(one("w", DenseTensor::zeros(DType::F32, {3, 2})),
              "update['w']: shape [3, 2] must be the model's shape [2, 3]");
  check_error(one("w", RowSparseTensor(fedleaf::core::RowIndices{0},
                                       DenseTensor::zeros(DType::F32, {1, 3}), {4, 3})),
              "update['w']: dense_shape [4, 3] must be the model's shape [2, 3]");
  check_error(one("w", DenseTensor::zeros(DType::I32, {2, 3})),
              "update['w']: values must be F32 or F64, got I32");
  xt::xarray<float> bad = xt::zeros<float>({2, 3});
  bad(1, 2) = std::numeric_limits<float>::quiet_NaN();
  check_error(one("w", DenseTensor(bad)), "update['w']: values must be finite, element 5");
  bad(1, 2) = std::numeric_limits<float>::infinity();
  check_error(one("w", DenseTensor(bad)), "update['w']: values must be finite");
  // A row outside the shape never gets this far: the tensor refuses it.
  CHECK_THROWS_AS(RowSparseTensor(fedleaf::core::RowIndices{2},
                                  DenseTensor::zeros(DType::F32, {1, 3}), {2, 3}, "w"),
                  fedleaf::InvalidInput);
}

TEST_CASE("max_units_per_coordinate_checks_the_clip_and_the_grid") {
  CHECK(max_units_per_coordinate(1.0, kGrid) == 4096);
  CHECK(max_units_per_coordinate(0.37, kGrid) == 1515);  // 0.37 * 4096 = 1515.52
  CHECK_THROWS_MATCHES(max_units_per_coordinate(0.0, kGrid), fedleaf::InvalidInput,
                       MessageContains("clip_norm: must be a finite number above 0"));
  CHECK_THROWS_MATCHES(max_units_per_coordinate(std::nan(""), kGrid), fedleaf::InvalidInput,
                       MessageContains("clip_norm: must be a finite number above 0"));
  CHECK_THROWS_MATCHES(max_units_per_coordinate(1.0, 0.3), fedleaf::InvalidInput,
                       MessageContains("grid: must be a positive power of two, got 0.3"));
  CHECK_THROWS_MATCHES(max_units_per_coordinate(1.0, std::ldexp(1.0, -60)), fedleaf::InvalidInput,
                       MessageContains("clip_norm: clip_norm / grid must be at most 2^52"));
}
