// RoundAggregator of a private round (UpdatePlan::privacy): reports go to a PrivateSum, and the
// only output is the noised release.
#include <catch2/catch.hpp>
#include <random>

#include "core/aggregation/round/round_aggregator.h"
#include "core/error.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"
#include "tests/core/privacy/private_test_updates.h"

namespace fedleaf {
namespace {

const std::string kPlanJson = R"({
  "model": {"layers": []},
  "train": {"epochs": 1},
  "updates": {
    "bias": {"encoding": "dense", "aggregator": "weighted_mean"},
    "emb": {"encoding": "row_sparse", "aggregator": "sum"},
    "mat": {"encoding": "coo", "aggregator": "sum"}
  }
})";

core::UpdatePlan private_plan() {
  core::UpdatePlan plan = core::parse_update_plan(kPlanJson);
  plan.privacy = core::PrivateSumSettings{1.0, 0.9, /*denominator=*/12, /*max_reports=*/12};
  return plan;
}

core::NamedTensors model() {
  core::NamedTensors m;
  for (const auto& [name, layout] : test::private_test_layouts()) {
    m.emplace(name, core::DenseTensor::zeros(layout.dtype, layout.shape));
  }
  m.emplace("other", core::DenseTensor(xt::xarray<float>{1, 2}));  // not in the updates
  return m;
}

std::vector<std::uint8_t> result_bytes(const core::NamedTensors& tensors) {
  return core::write_safetensors(tensors,
                                 {{"kind", "train"}, {"num_examples", "3"}, {"loss", "0.5"}});
}

core::TreeNoiseSecret secret() {
  core::TreeNoiseSecret s{};
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint8_t>(7 * i + 1);
  return s;
}

}  // namespace

TEST_CASE("private_round_releases_what_a_private_sum_of_its_reports_releases") {
  const core::UpdatePlan plan = private_plan();
  core::RoundAggregator round(plan, model(), 12);
  core::PrivateSum reference(test::private_test_layouts(), *plan.privacy);
  std::mt19937_64 rng(5);
  for (int device = 0; device < 7; ++device) {
    const core::NamedTensors update = test::random_private_update(rng, device % 2 ? 0.2 : 3.0);
    const std::vector<std::uint8_t> bytes = result_bytes(update);
    round.add_result(bytes.data(), bytes.size());
    reference.add(update);
  }
  CHECK(round.is_private());
  CHECK(round.num_reports() == 7);
  const core::RoundStats stats = round.stats();  // the operators never ran: nothing per tensor
  CHECK(stats.num_reports == 7);
  CHECK(stats.clipped_per_tensor.empty());
  CHECK(stats.clip_bound_per_tensor.empty());
  CHECK(stats.withheld_per_tensor.empty());
  const std::vector<core::TensorAggregate> released = round.private_aggregates(secret(), 4);
  const core::NamedTensors expected = reference.release(secret(), 4);
  REQUIRE(released.size() == expected.size());
  for (const core::TensorAggregate& a : released) {
    INFO(a.name);
    CHECK(a.encoding == core::UpdateEncoding::kDense);
    CHECK_FALSE(a.withheld);
    CHECK(a.delta == expected.at(a.name));
  }
  CHECK_FALSE(round.private_aggregates(secret(), 5)[0].delta == released[0].delta);

  // The noise drawn ahead, while the round was open, gives the same release.
  const core::RoundNoise drawn = core::RoundNoise::draw(round.private_noise_shape(), secret(), 4);
  const std::vector<core::TensorAggregate> ahead = round.private_aggregates(secret(), 4, &drawn);
  REQUIRE(ahead.size() == released.size());
  for (std::size_t i = 0; i < ahead.size(); ++i) CHECK(ahead[i].delta == released[i].delta);
  CHECK_THROWS_MATCHES(round.private_aggregates(secret(), 5, &drawn), InvalidInput,
                       test::MessageContains("noise: drawn for tree round 4, the release is of "
                                             "round 5"));
}

TEST_CASE("private_round_refuses_every_output_but_the_noised_release") {
  const core::UpdatePlan plan = private_plan();
  core::RoundAggregator round(plan, model());
  using test::MessageContains;
  CHECK_THROWS_MATCHES(round.checkpoint(), Conflict, MessageContains("checkpoint: not for a"));
  CHECK_THROWS_MATCHES(round.next_model(), Conflict, MessageContains("next_model"));
  CHECK_THROWS_MATCHES(round.take_next_model(), Conflict, MessageContains("take_next_model"));
  CHECK_THROWS_MATCHES(round.aggregates(), Conflict, MessageContains("aggregates"));
  CHECK_THROWS_MATCHES(round.merge(round), Conflict, MessageContains("merge"));
  core::RoundAggregator plain(core::parse_update_plan(kPlanJson), model());
  CHECK_FALSE(plain.is_private());
  CHECK_THROWS_MATCHES(plain.private_aggregates(secret(), 1), Conflict,
                       MessageContains("not private"));
  CHECK_THROWS_MATCHES(plain.private_noise_shape(), Conflict, MessageContains("not private"));
  CHECK_THROWS_MATCHES(core::RoundAggregator::restore(plan, model(), nullptr, 0), Conflict,
                       MessageContains("restore"));
}

TEST_CASE("private_round_leaves_its_sum_unchanged_when_a_report_is_refused") {
  const core::UpdatePlan plan = private_plan();
  core::RoundAggregator round(plan, model());
  core::RoundAggregator clean(plan, model());
  std::mt19937_64 rng(9);
  core::NamedTensors update = test::random_private_update(rng, 1.0);
  const std::vector<std::uint8_t> good = result_bytes(update);
  round.add_result(good.data(), good.size());
  clean.add_result(good.data(), good.size());
  core::NamedTensors bad = update;
  bad.erase("mat");
  const std::vector<std::uint8_t> lacking = result_bytes(bad);
  CHECK_THROWS_AS(round.add_result(lacking.data(), lacking.size()), InvalidInput);
  bad = update;
  bad.insert_or_assign("bias", core::DenseTensor(xt::xarray<double>{1, 2}));  // wrong shape
  const std::vector<std::uint8_t> misshaped = result_bytes(bad);
  CHECK_THROWS_AS(round.add_result(misshaped.data(), misshaped.size()), InvalidInput);
  CHECK(round.num_reports() == 1);
  CHECK(round.private_aggregates(secret(), 2)[1].delta ==
        clean.private_aggregates(secret(), 2)[1].delta);
}

}  // namespace fedleaf
