#include "core/json/json_known_fields.h"

#include <catch2/catch.hpp>

#include "core/error.h"

namespace fedleaf::core {

TEST_CASE("json_known_fields_accepts_known_and_absent_fields_and_names_an_unknown_one", "[json]") {
  const auto parsed = [](const char* text) { return nlohmann::json::parse(text); };
  CHECK_NOTHROW(check_known_fields(parsed(R"({})"), "plan.train", {"epochs", "batch_size"}));
  CHECK_NOTHROW(
      check_known_fields(parsed(R"({"epochs": 1})"), "plan.train", {"epochs", "batch_size"}));
  CHECK_THROWS_AS(check_known_fields(parsed(R"({"epoch": 1})"), "plan.train", {"epochs"}),
                  InvalidInput);
  CHECK_THROWS_WITH(check_known_fields(parsed(R"({"epochs": 1, "epoch\n": 2})"), "plan.train",
                                       {"epochs", "batch_size"}),
                    "plan.train: unknown field 'epoch\\x0a' (the fields are epochs, batch_size)");
}

}  // namespace fedleaf::core
