#include "core/aggregation/robust/adaptive_example_cap.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/aggregation/round/next_round_plan.h"
#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/updates/update_plan.h"
#include "core/error.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

using core::AdaptiveExampleCap;
using test::MessageContains;

constexpr std::uint64_t k2To53 = std::uint64_t{1} << 53;

TEST_CASE("median_claim_is_the_lower_median_and_zero_without_claims") {
  CHECK(core::median_claim({}) == 0);
  CHECK(core::median_claim({7}) == 7);
  CHECK(core::median_claim({9, 1}) == 1);
  CHECK(core::median_claim({303, k2To53, 302, 303, 1}) == 303);
  // A minority claiming 2^53 does not move it; a majority does.
  CHECK(core::median_claim({300, 300, 300, k2To53, k2To53}) == 300);
  CHECK(core::median_claim({300, 300, k2To53, k2To53, k2To53}) == k2To53);
}

TEST_CASE("next_example_cap_is_the_multiple_of_the_median_kept_in_range") {
  const AdaptiveExampleCap twice{2.0};
  CHECK(core::next_example_cap(10000, 303, twice) == 606);
  CHECK(core::next_example_cap(10000, 0, twice) == 10000);  // a round without reports
  CHECK(core::next_example_cap(5, 1, AdaptiveExampleCap{1.5}) == 1);
  CHECK(core::next_example_cap(5, k2To53, twice) == k2To53);
  CHECK(core::next_example_cap(5, 3, AdaptiveExampleCap{1e6}) == 3000000);
  CHECK_THROWS_MATCHES(core::next_example_cap(0, 3, twice), InvalidInput,
                       MessageContains("the cap 0 is not an integer in [1, 2^53]"));
}

TEST_CASE("with_example_cap_sets_only_an_adaptive_cap_and_rejects_bad_ones") {
  const core::UpdatePlan adaptive = core::parse_update_plan(std::string("{}"));
  REQUIRE(adaptive.adaptive_example_cap);
  CHECK(core::with_example_cap(adaptive, 606).max_examples_per_report == 606);
  CHECK_THROWS_MATCHES(core::with_example_cap(adaptive, k2To53 + 1), InvalidInput,
                       MessageContains("plan.max_examples_per_report: the round's adaptive cap"));
  const core::UpdatePlan fixed =
      core::parse_update_plan(std::string(R"({"max_examples_per_report": 500})"));
  CHECK(core::with_example_cap(fixed, 606).max_examples_per_report == 500);
}

core::NamedTensors model() {
  core::NamedTensors m;
  m.emplace("w", core::DenseTensor(xt::xarray<float>(xt::zeros<float>({4}))));
  return m;
}

std::vector<std::uint8_t> report(float value, const std::string& num_examples) {
  core::NamedTensors t;
  t.emplace("w", core::DenseTensor(xt::xarray<float>(xt::ones<float>({4}) * value)));
  return core::write_safetensors(
      t, {{"kind", "train"}, {"num_examples", num_examples}, {"loss", "1"}});
}

void add(core::RoundAggregator& round, float value, const std::string& num_examples) {
  const auto bytes = report(value, num_examples);
  round.add_result(bytes.data(), bytes.size());
}

const std::string kPlan = R"({"updates": {
    "w": {"encoding": "dense", "aggregator": "weighted_mean", "clip": "off"}}})";

TEST_CASE("round_stats_give_the_median_claim_through_merge_and_checkpoint") {
  const core::UpdatePlan plan = core::with_example_cap(core::parse_update_plan(kPlan), 606);
  core::RoundAggregator a(plan, model()), b(plan, model());
  add(a, 0.1f, "303");
  add(a, 0.2f, "9007199254740992");  // weighed as 606, claimed 2^53
  add(b, 0.3f, "302");
  a.merge(b);
  core::RoundStats stats = a.stats();
  CHECK(stats.example_cap == 606);
  CHECK(stats.num_capped == 1);
  CHECK(stats.median_claim == 303);
  CHECK(core::next_example_cap(plan, stats) == std::optional<std::uint64_t>(606));

  const auto ckpt = a.checkpoint();
  const auto resumed = core::RoundAggregator::restore(plan, model(), ckpt.data(), ckpt.size());
  CHECK(resumed.stats().median_claim == 303);
  CHECK(resumed.next_model() == a.next_model());

  auto file = core::read_safetensors(ckpt);
  file.metadata["claims"] = "303,302";
  auto bad = core::write_safetensors(file.tensors, file.metadata);
  CHECK_THROWS_MATCHES(core::RoundAggregator::restore(plan, model(), bad.data(), bad.size()),
                       InvalidInput, MessageContains("claims lists 2 reports' num_examples"));
  file.metadata["claims"] = "303,,302";
  bad = core::write_safetensors(file.tensors, file.metadata);
  CHECK_THROWS_MATCHES(core::RoundAggregator::restore(plan, model(), bad.data(), bad.size()),
                       InvalidInput, MessageContains("must be an integer in [1, 2^53]"));
  // A checkpoint from before claims were kept restores; its median is unknown (0), so the next
  // round keeps the cap.
  file.metadata.erase("claims");
  bad = core::write_safetensors(file.tensors, file.metadata);
  const auto old = core::RoundAggregator::restore(plan, model(), bad.data(), bad.size());
  CHECK(old.stats().median_claim == 0);
  CHECK(core::next_example_cap(plan, old.stats()) == std::optional<std::uint64_t>(606));
}

TEST_CASE("next_example_cap_of_a_fixed_or_off_cap_is_none") {
  const auto stats_of = [](const std::string& cap) {
    core::RoundAggregator round(
        core::parse_update_plan(R"({"max_examples_per_report": )" + cap + R"(, "updates": {
            "w": {"encoding": "dense", "aggregator": "weighted_mean"}}})"),
        model());
    add(round, 0.1f, "303");
    return std::make_pair(round.stats(),
                          core::parse_update_plan(R"({"max_examples_per_report": )" + cap + "}"));
  };
  for (const std::string cap : {"500", "\"off\""}) {
    const auto [stats, plan] = stats_of(cap);
    CHECK_FALSE(core::next_example_cap(plan, stats));
  }
}

TEST_CASE("check_example_cap_takes_integers_in_1_to_2_pow_53") {
  CHECK_NOTHROW(core::check_example_cap(1, "cap"));
  CHECK_NOTHROW(core::check_example_cap(std::uint64_t{1} << 53, "cap"));
  CHECK_THROWS_MATCHES(core::check_example_cap(0, "the cap"), InvalidInput,
                       MessageContains("the cap 0 is not an integer in [1, 2^53]"));
  CHECK_THROWS_MATCHES(core::check_example_cap((std::uint64_t{1} << 53) + 1, "cap"), InvalidInput,
                       MessageContains("is not an integer in [1, 2^53]"));
}

}  // namespace
}  // namespace fedleaf
