// The round checkpoint's reader and writer (round_checkpoint.h): the round's fields read back as
// written, the accumulators' arrays and entries carried as they are, and each rule of the reader.
// That bytes written before are still read is pinned in tests/core/aggregation's
// wire_format_pin_test.cc, through RoundAggregator.
#include "core/wire/round_checkpoint.h"

#include <catch2/catch.hpp>

#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

core::RoundCheckpoint example() {
  core::RoundCheckpoint c;
  c.num_reports = 3;
  c.total_weight = 0.1 + 0.2;  // not a short decimal: written exactly
  c.num_capped = 1;
  c.claims = std::vector<std::uint64_t>{4, 9007199254740992ull, 7};
  c.arrays.emplace("w@sums", core::DenseTensor(xt::xarray<double>{1.5, -2.0}));
  c.metadata = {{"w@clip", "rms:0.25"}, {"v@clip", "norm:2"}, {"w@operator", "sum"}};
  return c;
}

void check_refused(const core::Metadata& metadata, const std::string& fragment) {
  const std::vector<std::uint8_t> bytes = core::write_safetensors({}, metadata);
  INFO(fragment);
  CHECK_THROWS_MATCHES(core::read_round_checkpoint(bytes.data(), bytes.size()), InvalidInput,
                       test::MessageContains(fragment));
}

TEST_CASE("round_checkpoint_reads_back_what_it_wrote") {
  const std::vector<std::uint8_t> bytes = core::write_round_checkpoint(example());
  const core::RoundCheckpoint c = core::read_round_checkpoint(bytes.data(), bytes.size());
  CHECK_FALSE(c.v1);
  CHECK(c.num_reports == 3);
  CHECK(c.total_weight == 0.1 + 0.2);
  CHECK(c.num_capped == 1);
  CHECK(*c.claims == std::vector<std::uint64_t>{4, 9007199254740992ull, 7});
  CHECK(c.arrays == example().arrays);
  CHECK(c.metadata.at("w@operator") == "sum");
  CHECK(c.metadata.at("format") == core::kRoundCheckpointFormat);
  CHECK(core::write_round_checkpoint(c) == bytes);
  const auto bounds = core::read_round_checkpoint_clip_bounds(bytes.data(), bytes.size());
  CHECK(bounds == std::vector<std::pair<std::string, double>>{{"v", 2.0}, {"w", 0.25}});
}

TEST_CASE("round_checkpoint_reads_older_forms") {
  const std::vector<std::uint8_t> v1 = core::write_safetensors(
      {},
      {{"format", core::kRoundCheckpointFormatV1}, {"num_reports", "0"}, {"total_weight", "0"}});
  const core::RoundCheckpoint c = core::read_round_checkpoint(v1.data(), v1.size());
  CHECK(c.v1);
  CHECK(c.num_capped == 0);           // written before the weight cap
  CHECK_FALSE(c.claims.has_value());  // written before claims were kept
}

TEST_CASE("round_checkpoint_refuses_each_broken_field") {
  const core::Metadata good{
      {"format", core::kRoundCheckpointFormat}, {"num_reports", "2"}, {"total_weight", "3.5"}};
  auto with = [&](const std::string& key, const std::string& value) {
    core::Metadata m = good;
    m[key] = value;
    return m;
  };
  check_refused(with("format", "fedleaf.round_aggregator.v9"),
                "is not 'fedleaf.round_aggregator.v2'");
  check_refused({{"format", core::kRoundCheckpointFormat}, {"total_weight", "1"}},
                "round checkpoint: metadata 'num_reports' is missing");
  check_refused(with("num_reports", "-1"), "num_reports '-1' must be an integer in [1, 2^53]");
  check_refused(with("total_weight", "nan"), "total_weight 'nan' must be a finite number >= 0");
  check_refused(with("claims", "1,0"), "claims '0' must be an integer in [1, 2^53]");
  const std::vector<std::uint8_t> bad_clip = core::write_safetensors({}, with("w@clip", "max:1"));
  CHECK_THROWS_MATCHES(core::read_round_checkpoint_clip_bounds(bad_clip.data(), bad_clip.size()),
                       InvalidInput, test::MessageContains("is not \"norm:<bound>\""));
}

}  // namespace
}  // namespace fedleaf
