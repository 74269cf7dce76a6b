// The server optimizer state's reader and writer (server_optimizer_state.h): arrays read back as
// written, and the format, type and finiteness rules of the reader. That bytes written before are
// still read is pinned in tests/core/aggregation's wire_format_pin_test.cc.
#include "core/wire/server_optimizer_state.h"

#include <catch2/catch.hpp>
#include <limits>

#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

TEST_CASE("server_optimizer_state_reads_back_what_it_wrote") {
  const core::NamedTensors arrays = {{"w@m", core::DenseTensor(xt::xarray<float>{0.5f, -0.25f})},
                                     {"w@steps", core::DenseTensor(xt::xarray<std::int64_t>{3})}};
  const std::vector<std::uint8_t> bytes = core::write_server_optimizer_state("adam", arrays);
  CHECK(core::read_server_optimizer_state(bytes.data(), bytes.size(), "adam") == arrays);
  const core::SafetensorsFile file = core::read_safetensors(bytes);
  CHECK(file.metadata ==
        core::Metadata{{"format", "fedleaf.server_optimizer.v1"}, {"type", "adam"}});
}

TEST_CASE("server_optimizer_state_refuses_another_format_type_or_non_finite_arrays") {
  const auto refused = [](const std::vector<std::uint8_t>& bytes, const std::string& fragment) {
    INFO(fragment);
    CHECK_THROWS_MATCHES(core::read_server_optimizer_state(bytes.data(), bytes.size(), "adam"),
                         InvalidInput,
                         test::MessageContains("server optimizer state: " + fragment));
  };
  refused(core::write_server_optimizer_state("sgd", {}),
          "metadata \"type\" must be 'adam', the population's optimizer");
  refused(
      core::write_safetensors({}, {{"format", "fedleaf.server_optimizer.v0"}, {"type", "adam"}}),
      "metadata \"format\" must be 'fedleaf.server_optimizer.v1'");
  const core::NamedTensors inf = {
      {"w@m", core::DenseTensor(xt::xarray<float>{std::numeric_limits<float>::infinity()})}};
  refused(core::write_server_optimizer_state("adam", inf), "safetensors: tensor 'w@m'");
  refused({1, 2, 3}, "safetensors: truncated input");
}

}  // namespace
}  // namespace fedleaf
