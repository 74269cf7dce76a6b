// Buffered populations (buffered_spec.h): the spec's parsing, its stored form, and the
// staleness weights against the paper's formulas written out here.
#include "core/aggregation/round/buffered_spec.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

using core::BufferedSpec;
using core::StalenessWeightType;

BufferedSpec parse(const std::string& text) {
  return core::parse_buffered_spec(nlohmann::json::parse(text), "population");
}

void check_refused(const std::string& text, const std::string& fragment) {
  INFO(text);
  CHECK_THROWS_MATCHES(parse(text), InvalidInput, test::MessageContains(fragment));
}

}  // namespace

TEST_CASE("buffered_spec_defaults_are_concurrency_k_staleness_10_polynomial_half") {
  const BufferedSpec spec = parse(R"({"buffer_size": 8, "plan": {}})");
  CHECK(spec.buffer_size == 8);
  CHECK(spec.concurrency == 8);
  CHECK(spec.max_staleness == 10);
  CHECK(spec.weight == StalenessWeightType::kPolynomial);
  CHECK(spec.exponent == 0.5);
}

TEST_CASE("buffered_spec_reads_every_field") {
  const BufferedSpec a = parse(R"({"buffer_size": 3, "concurrency": 40, "max_staleness": 0,
      "staleness_weight": {"weight": "polynomial", "exponent": 2}})");
  CHECK(a.buffer_size == 3);
  CHECK(a.concurrency == 40);
  CHECK(a.max_staleness == 0);
  CHECK(a.exponent == 2.0);
  const BufferedSpec b = parse(R"({"buffer_size": 1, "staleness_weight": {"weight": "constant"}})");
  CHECK(b.weight == StalenessWeightType::kConstant);
}

TEST_CASE("buffered_spec_refuses_naming_the_field") {
  check_refused(R"({})", "population.buffer_size: missing");
  check_refused(R"({"buffer_size": 0})",
                "population.buffer_size: expected an integer in [1, 1000000]");
  check_refused(R"({"buffer_size": 2.5})", "population.buffer_size: expected an integer");
  check_refused(R"({"buffer_size": 2, "concurrency": 0})",
                "population.concurrency: expected an integer in [1, 10000000]");
  check_refused(R"({"buffer_size": 2, "max_staleness": -1})",
                "population.max_staleness: expected an integer in [0, 1000000]");
  check_refused(R"({"buffer_size": 2, "staleness_weight": "constant"})",
                "population.staleness_weight: expected an object");
  check_refused(R"({"buffer_size": 2, "staleness_weight": {}})",
                "population.staleness_weight.weight: missing");
  check_refused(R"({"buffer_size": 2, "staleness_weight": {"weight": "hinge"}})",
                "population.staleness_weight.weight: unknown staleness weight 'hinge'");
  check_refused(R"({"buffer_size": 2, "staleness_weight": {"weight": "constant", "exponent": 1}})",
                "population.staleness_weight: unknown field 'exponent'");
  check_refused(
      R"({"buffer_size": 2, "staleness_weight": {"weight": "polynomial", "exponent": 0}})",
      "population.staleness_weight.exponent: expected a number in (0, 100], got 0");
  check_refused(
      R"({"buffer_size": 2, "staleness_weight": {"weight": "polynomial", "exponent": 101}})",
      "population.staleness_weight.exponent: expected a number in (0, 100], got 101");
}

TEST_CASE("buffered_spec_json_round_trips_with_every_field_written_out") {
  const BufferedSpec spec = parse(R"({"buffer_size": 5})");
  const std::string text = core::buffered_spec_json(spec);
  CHECK(text == R"({"buffer_size":5,"concurrency":5,"max_staleness":10,)"
                R"("staleness_weight":{"exponent":0.5,"weight":"polynomial"}})");
  CHECK(core::buffered_spec_from_text(text, "stored") == spec);
  CHECK_FALSE(core::buffered_spec_from_text("", "stored").has_value());
  CHECK_THROWS_MATCHES(core::buffered_spec_from_text("{", "stored"), InvalidInput,
                       test::MessageContains("stored: not valid JSON"));
  CHECK_THROWS_MATCHES(core::buffered_spec_from_text(R"({"buffer_size": 1, "plan": 1})", "stored"),
                       InvalidInput, test::MessageContains("stored: unknown field 'plan'"));
}

TEST_CASE("staleness_weight_is_the_papers_polynomial_or_constant") {
  BufferedSpec spec;
  for (std::uint64_t s : {0, 1, 2, 3, 8, 99}) {
    INFO("staleness " << s);
    const auto x = static_cast<double>(s);
    spec.weight = StalenessWeightType::kPolynomial;
    spec.exponent = 0.5;
    CHECK(core::staleness_weight(spec, s) == Approx(1.0 / std::sqrt(1.0 + x)).epsilon(1e-15));
    spec.exponent = 2.0;
    CHECK(core::staleness_weight(spec, s) == Approx(1.0 / ((1.0 + x) * (1.0 + x))).epsilon(1e-15));
    spec.weight = StalenessWeightType::kConstant;
    CHECK(core::staleness_weight(spec, s) == 1.0);
  }
}

}  // namespace fedleaf
