#include "core/train/plan_format.h"

#include <string>

#include "core/json/plan_json.h"
#include "core/version.h"

namespace fedleaf::core {

void check_plan_format(const nlohmann::json& plan) {
  const std::uint64_t format =
      plan_json::get_integer(plan, "plan", "format_version", kPlanFormatVersion, 1, 1'000'000'000);
  if (format > kPlanFormatVersion) {
    plan_json::fail("plan.format_version",
                    "the plan's format is " + std::to_string(format) +
                        ", newer than this fedleaf (" + kVersion + ") reads (formats 1 to " +
                        std::to_string(kPlanFormatVersion) +
                        "): a newer fedleaf wrote it; update fedleaf to run it");
  }
}

}  // namespace fedleaf::core
