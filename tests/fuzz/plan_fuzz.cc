// Any text either parses as a plan or raises fedleaf::InvalidInput (never another exception, a
// crash or a sanitizer report): the plan arrives from operators and, inside tasks, at leaves.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/train/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    fedleaf::core::parse_plan(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const fedleaf::InvalidInput&) {
  }
  return 0;
}
