#include "core/privacy/private_sum.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "tests/core/error_matchers.h"
#include "tests/core/privacy/private_test_updates.h"
#include "tests/core/privacy/test_secret.h"

using fedleaf::core::DenseTensor;
using fedleaf::core::DType;
using fedleaf::core::NamedTensors;
using fedleaf::core::PrivateSum;
using fedleaf::core::PrivateSumSettings;
using fedleaf::core::RoundNoise;
using fedleaf::core::RoundNoiseShape;
using fedleaf::core::RowSparseTensor;
using fedleaf::core::TensorLayouts;
using fedleaf::core::TreeNoise;
using fedleaf::core::TreeNoiseSecret;
using fedleaf::test::MessageContains;
using fedleaf::test::test_secret;

namespace {

std::vector<double> values_of(const DenseTensor& t) {
  std::vector<double> out(t.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = t.dtype() == DType::F32 ? t.data<float>()[i] : t.data<double>()[i];
  }
  return out;
}

std::vector<double> released(const NamedTensors& tensors, const std::string& name) {
  return values_of(std::get<DenseTensor>(tensors.at(name)));
}

}  // namespace

TEST_CASE("private_sum_releases_the_clipped_sum_over_the_fixed_denominator_plus_the_tree_noise") {
  const TensorLayouts layouts = fedleaf::test::private_test_layouts();
  const PrivateSumSettings settings{1.0, 0.8, /*denominator=*/40, /*max_reports=*/40};
  PrivateSum sum(layouts, settings);
  const double grid = sum.noise().grid();
  std::mt19937_64 rng(23);
  std::map<std::string, std::vector<std::int64_t>> reference;
  for (const auto& [name, layout] : layouts) {
    reference[name].assign(fedleaf::core::shape_element_count(layout.shape, name), 0);
  }
  const int devices = 25;  // fewer than the denominator: still divided by 40
  for (int device = 0; device < devices; ++device) {
    const NamedTensors update = fedleaf::test::random_private_update(rng, device % 3 ? 0.1 : 2.0);
    sum.add(update);
    for (const auto& [name, units] : fedleaf::test::reference_units(update, layouts, 1.0, grid)) {
      for (std::size_t i = 0; i < units.size(); ++i) reference[name][i] += units[i];
    }
  }
  CHECK(sum.reports() == devices);
  CHECK(sum.clipped_reports() > 0);
  CHECK(sum.clipped_reports() < devices);

  const TreeNoiseSecret secret = test_secret(3);
  const std::uint64_t round = 6;
  const NamedTensors out = sum.release(secret, round);
  const TreeNoise noise = TreeNoise::for_round(secret, sum.noise(), round);
  std::uint32_t ordinal = 0;
  for (const auto& [name, layout] : layouts) {
    INFO(name);
    const auto split = fedleaf::core::row_split(name, layout);
    const std::vector<double> values = released(out, name);
    REQUIRE(values.size() == reference[name].size());
    for (std::size_t row = 0; row < split.rows; ++row) {
      const auto first =
          reference[name].begin() + static_cast<std::ptrdiff_t>(row * split.row_size);
      std::vector<std::int64_t> units(first, first + static_cast<std::ptrdiff_t>(split.row_size));
      noise.add_to_row(ordinal, row, units.data(), units.size());
      for (std::size_t j = 0; j < split.row_size; ++j) {
        double expected = static_cast<double>(units[j]) * grid / 40.0;
        if (layout.dtype == DType::F32) expected = static_cast<float>(expected);
        CHECK(values[row * split.row_size + j] == expected);
      }
    }
    ++ordinal;
  }
}

TEST_CASE("private_sum_puts_noise_of_the_configured_scale_on_untouched_rows") {
  const TensorLayouts layouts{{"emb", {DType::F64, {3000, 8}}}, {"bias", {DType::F32, {}}}};
  PrivateSum sum(layouts, {0.5, 2.0, /*denominator=*/100, /*max_reports=*/100});
  NamedTensors update;
  update.emplace("emb", RowSparseTensor(fedleaf::core::RowIndices{4},
                                        DenseTensor(xt::xarray<double>{{1, 1, 1, 1, 1, 1, 1, 1}}),
                                        {3000, 8}, "emb"));
  sum.add(update);
  CHECK(sum.touched_rows() == 1);
  // Round 1: one tree node, so the noise of a coordinate has sd sigma = 2.0 x 0.5 (at least).
  const NamedTensors out = sum.release(test_secret(8), 1);
  const std::vector<double> emb = released(out, "emb");
  double total = 0;
  double total_sq = 0;
  double count = 0;
  for (std::size_t row = 0; row < 3000; ++row) {
    if (row == 4) continue;
    for (std::size_t j = 0; j < 8; ++j) {
      const double v = emb[row * 8 + j] * 100.0;  // undo the denominator
      total += v;
      total_sq += v * v;
      ++count;
    }
  }
  const double sigma = sum.noise().sigma();
  CHECK(sigma >= 1.0);
  CHECK(sigma < 1.0 * (1 + 1.0 / 4096));
  CHECK(std::abs(total / count) < 5 * sigma / std::sqrt(count));
  CHECK(std::sqrt(total_sq / count) == Approx(sigma).epsilon(0.02));
  CHECK(std::get<DenseTensor>(out.at("bias")).shape().empty());  // a scalar gets noise too
  CHECK(released(out, "bias")[0] != 0.0);
}

TEST_CASE("private_sum_gives_the_same_release_after_a_restart") {
  const TensorLayouts layouts = fedleaf::test::private_test_layouts();
  const auto run = [&](std::uint64_t round) {
    PrivateSum sum(layouts, {1.0, 1.1, 10, 10});  // fresh objects, as after a kill -9
    std::mt19937_64 rng(99);
    for (int device = 0; device < 10; ++device)
      sum.add(fedleaf::test::random_private_update(rng, 0.3));
    return sum.release(test_secret(5), round);
  };
  CHECK(run(9) == run(9));
  CHECK_FALSE(run(9) == run(10));
}

TEST_CASE("private_sum_releases_bit_identically_with_the_noise_drawn_ahead") {
  const TensorLayouts layouts = fedleaf::test::private_test_layouts();
  PrivateSum sum(layouts, {1.0, 0.7, 12, 12});
  std::mt19937_64 rng(5);
  for (int device = 0; device < 12; ++device)
    sum.add(fedleaf::test::random_private_update(rng, 0.4));
  for (const std::uint64_t round : {1, 2, 8, 11}) {
    INFO("round " << round);
    const RoundNoise drawn = RoundNoise::draw(sum.noise_shape(), test_secret(4), round);
    CHECK(sum.release(drawn) == sum.release(test_secret(4), round));
  }
}

TEST_CASE("private_sum_refuses_noise_drawn_for_another_shape") {
  const TensorLayouts layouts = fedleaf::test::private_test_layouts();
  PrivateSum sum(layouts, {1.0, 0.7, 12, 12});
  PrivateSum louder(layouts, {1.0, 3.0, 12, 12});
  CHECK_THROWS_MATCHES(sum.release(RoundNoise::draw(louder.noise_shape(), test_secret(4), 1)),
                       fedleaf::InvalidInput, MessageContains("noise: drawn for another Gaussian"));
  RoundNoiseShape fewer = sum.noise_shape();
  fewer.layouts.erase("bias");
  CHECK_THROWS_MATCHES(sum.release(RoundNoise::draw(fewer, test_secret(4), 1)),
                       fedleaf::InvalidInput,
                       MessageContains("noise: drawn for 2 tensors, this sum releases 3"));
  RoundNoiseShape wider = sum.noise_shape();
  wider.layouts.at("emb").shape = {51, 4};
  CHECK_THROWS_MATCHES(sum.release(RoundNoise::draw(wider, test_secret(4), 1)),
                       fedleaf::InvalidInput,
                       MessageContains("noise: drawn for another layout of 'emb'"));
}

TEST_CASE("private_sum_changes_by_at_most_the_clip_when_one_device_comes_or_goes") {
  const TensorLayouts layouts = fedleaf::test::private_test_layouts();
  const PrivateSumSettings settings{0.7, 1.0, 20, 20};
  std::mt19937_64 rng(41);
  std::vector<NamedTensors> updates;
  for (int device = 0; device < 8; ++device)
    updates.push_back(fedleaf::test::random_private_update(rng, 5.0));
  PrivateSum with(layouts, settings);
  PrivateSum without(layouts, settings);
  for (std::size_t i = 0; i < updates.size(); ++i) {
    with.add(updates[i]);
    if (i != 3) without.add(updates[i]);
  }
  const NamedTensors a = with.release(test_secret(1), 2);
  const NamedTensors b = without.release(test_secret(1), 2);
  double squared = 0;
  for (const auto& [name, layout] : layouts) {
    if (layout.dtype != DType::F64) continue;  // F32 rounding would blur the exact bound
    const std::vector<double> va = released(a, name);
    const std::vector<double> vb = released(b, name);
    for (std::size_t i = 0; i < va.size(); ++i) {
      const double difference = (va[i] - vb[i]) * 20.0;  // the same noise cancels exactly
      CHECK(std::abs(difference) <= 0.7 * (1 + 1e-12));
      squared += difference * difference;
    }
  }
  CHECK(std::sqrt(squared) <= 0.7 * (1 + 1e-12));
  CHECK(std::sqrt(squared) > 0.0);
}

TEST_CASE("private_sum_refuses_bad_settings_and_reports_past_max_reports") {
  const TensorLayouts layouts{{"w", {DType::F32, {2}}}};
  const auto check_error = [&](const PrivateSumSettings& s, const std::string& message) {
    CHECK_THROWS_MATCHES(PrivateSum(layouts, s), fedleaf::InvalidInput, MessageContains(message));
  };
  check_error({0.0, 1.0, 1, 1}, "clip_norm: must be a finite number above 0");
  check_error({1.0, -1.0, 1, 1}, "noise_multiplier: must be a finite number above 0");
  check_error({1.0, std::nan(""), 1, 1}, "noise_multiplier: must be a finite number above 0");
  check_error({1.0, 1.0, 0, 1}, "denominator: must be at least 1");
  check_error({1.0, 1.0, 1, 0}, "max_reports: must be at least 1");
  // clip / grid is about 2^13 / noise_multiplier: a tiny multiplier and many reports could
  // overflow the integer sum, so they are refused up front.
  check_error({1.0, 1e-9, 1000, 1'000'000}, "max_reports: max_reports x clip_norm / grid must be");
  CHECK_NOTHROW(PrivateSum(layouts, {1.0, 1e-9, 1000, 1000}));
  CHECK_THROWS_MATCHES(PrivateSum(TensorLayouts{{"w", {DType::I32, {2}}}}, {1.0, 1.0, 1, 1}),
                       fedleaf::InvalidInput,
                       MessageContains("layouts['w']: dtype must be F32 or F64, got I32"));

  PrivateSum sum(layouts, {1.0, 1.0, 2, 2});
  NamedTensors update;
  update.emplace("w", DenseTensor(xt::xarray<float>{0.5f, 0.25f}));
  sum.add(update);
  sum.add(update);
  CHECK_THROWS_MATCHES(sum.add(update), fedleaf::Conflict,
                       MessageContains("max_reports: the round already has its 2 reports"));
  CHECK(sum.reports() == 2);
}

TEST_CASE("private_sum_is_unchanged_by_a_rejected_update") {
  const TensorLayouts layouts{{"a", {DType::F64, {4}}}, {"b", {DType::F64, {2}}}};
  PrivateSum sum(layouts, {1.0, 1.0, 5, 5});
  NamedTensors good;
  good.emplace("a", DenseTensor(xt::xarray<double>{0.1, 0.2, 0.3, 0.4}));
  sum.add(good);
  const NamedTensors before = sum.release(test_secret(2), 3);
  NamedTensors bad = good;  // "a" is fine and comes first; "b" breaks a rule
  bad.emplace("b", DenseTensor(xt::xarray<double>{0.1, std::nan("")}));
  CHECK_THROWS_MATCHES(sum.add(bad), fedleaf::InvalidInput,
                       MessageContains("update['b']: values must be finite"));
  CHECK(sum.reports() == 1);
  CHECK(sum.release(test_secret(2), 3) == before);
  CHECK_THROWS_MATCHES(sum.release(test_secret(2), 0), fedleaf::InvalidInput,
                       MessageContains("round: must be in [1, 2^56 - 1]"));
}
