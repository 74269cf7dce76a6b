// The plan format's version: which plans this build of fedleaf reads. A plan may say which format
// it is written in ("format_version", optional: a plan without it is read as this build's
// format); one newer than this build reads is refused before anything else in it is read, naming
// both versions, so a leaf never trains what it would misread. docs/design.md ("Versions") says
// what bumps it; format 1 is the plans of fedleaf 0.1, whose parser refuses the field itself.
//
//   check_plan_format(plan);   // InvalidInput "plan.format_version: the plan's format is 3, ..."
#pragma once

#include <nlohmann/json.hpp>

namespace fedleaf::core {

inline constexpr int kPlanFormatVersion = 2;

// Throws InvalidInput when `plan` (a plan's top-level object) has a "format_version" that is not
// an integer >= 1 or is newer than kPlanFormatVersion.
void check_plan_format(const nlohmann::json& plan);

}  // namespace fedleaf::core
