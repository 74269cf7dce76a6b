#include "core/json/json_known_fields.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

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

namespace {
enum class Shade { kLight, kDark };
constexpr std::array kShades{std::pair{"light", Shade::kLight}, std::pair{"dark", Shade::kDark}};
}  // namespace

TEST_CASE("choice_names_of_lists_the_names_of_name_value_pairs_in_order", "[json]") {
  static_assert(choice_names_of<kShades>.size() == 2);
  const FieldList names = choice_names_of<kShades>;
  CHECK(std::vector<std::string>(names.begin(), names.end()) ==
        std::vector<std::string>{"light", "dark"});
  CHECK(is_known_field("dark", names));
  CHECK_FALSE(is_known_field("Dark", names));
}

}  // namespace fedleaf::core
