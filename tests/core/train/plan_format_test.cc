// The plan's format version (plan_format.h): read by every parse_plan, leaf and server alike.
#include <catch2/catch.hpp>
#include <string>

#include "core/train/plan.h"
#include "core/train/plan_format.h"
#include "core/version.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::kDesignPlan;
using fedleaf::test::MessageContains;

namespace {

// kDesignPlan with `field` (e.g. "\"format_version\": 2") first in its top-level object.
std::string design_plan_with(const std::string& field) {
  const std::string plan = kDesignPlan;
  return "{" + field + ", " + plan.substr(plan.find('{') + 1);
}

}  // namespace

TEST_CASE("plan_without_a_format_version_or_with_one_this_build_reads_parses", "[plan]") {
  const Plan unstated = parse_plan(kDesignPlan);
  const Plan first = parse_plan(design_plan_with("\"format_version\": 1"));
  const Plan current =
      parse_plan(design_plan_with("\"format_version\": " + std::to_string(kPlanFormatVersion)));

  CHECK(unstated.model.layers.size() == 2);
  CHECK(first.model.layers.size() == 2);
  CHECK(current.model.layers.size() == 2);
}

TEST_CASE("plan_of_a_newer_format_is_refused_naming_both_versions_before_its_fields", "[plan]") {
  const int newer = kPlanFormatVersion + 1;
  // A field this build does not know, as a newer format's plan would have: the version is what
  // the message names, not the field.
  const std::string plan = design_plan_with("\"format_version\": " + std::to_string(newer) +
                                            ", \"field_of_a_later_format\": {}");

  CHECK_THROWS_MATCHES(
      parse_plan(plan), fedleaf::InvalidInput,
      MessageContains("plan.format_version: the plan's format is " + std::to_string(newer) +
                      ", newer than this fedleaf (" + fedleaf::kVersion + ") reads (formats 1 to " +
                      std::to_string(kPlanFormatVersion) + ")"));
}

TEST_CASE("plan_format_version_that_is_not_an_integer_of_at_least_1_is_refused", "[plan]") {
  for (const char* value : {"0", "-1", "2.5", "\"2\"", "null"}) {
    INFO(value);
    CHECK_THROWS_MATCHES(parse_plan(design_plan_with(std::string("\"format_version\": ") + value)),
                         fedleaf::InvalidInput, MessageContains("plan.format_version: expected"));
  }
}
