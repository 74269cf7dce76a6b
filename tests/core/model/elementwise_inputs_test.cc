#include "core/model/elementwise_inputs.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/layer_registry.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;
using nlohmann::json;

namespace {

// Parses `object` as a layer of kind `type` at "layers[2]" reading `sources`.
std::vector<LayerSpec> parse_as(const std::string& type, const std::string& object,
                                const std::vector<LayerSource>& sources) {
  LayerSpec spec;
  spec.kind = find_layer_kind(type);
  spec.path = "layers[2]";
  std::vector<LayerSpec> layers;
  parse_elementwise_inputs(json::parse(object), LayerInput{2, sources}, spec, layers);
  return layers;
}

const LayerSource kA{"a", false, InputKind::kDense, 4};
const LayerSource kB{"b", true, InputKind::kDense, 4};
const LayerSource kNarrow{"x", true, InputKind::kDense, 2};
const LayerSource kIds{"t", true, InputKind::kSparseIds, 0};

}  // namespace

TEST_CASE("elementwise_inputs_take_two_or_more_float_rows_of_one_width", "[layer_registry]") {
  for (const std::string type : {"add", "multiply"}) {
    INFO(type);
    const std::vector<LayerSpec> layers =
        parse_as(type, R"({"inputs": ["a", "b", "a"]})", {kA, kB, kA});
    REQUIRE(layers.size() == 1);
    CHECK(std::string(layers[0].kind->type) == type);
    CHECK(layers[0].path == "layers[2]");
    CHECK(layers[0].input_width == 4);
    CHECK(layers[0].output_width == 4);
    CHECK(layers[0].config == nullptr);
  }
}

TEST_CASE("elementwise_inputs_name_the_kind_and_the_rule_a_plan_breaks", "[layer_registry]") {
  const auto rejects = [](const std::string& type, const std::string& object,
                          const std::vector<LayerSource>& sources, const std::string& message) {
    INFO(type << " " << object);
    CHECK_THROWS_MATCHES(parse_as(type, object, sources), fedleaf::InvalidInput,
                         MessageContains(message));
  };
  for (const std::string type : {"add", "multiply"}) {
    rejects(type, R"({"inputs": ["a", "x"]})", {kA, kNarrow},
            "layers[2]: " + type + " needs equal widths, got 4 ('a') and 2 ('x')");
    rejects(type, R"({"inputs": ["a"]})", {kA},
            "layers[2].inputs: " + type + " needs \"inputs\": at least two names");
    rejects(type, R"({"inputs": ["a", "t"]})", {kA, kIds},
            "layers[2].inputs[1]: 't' is a sparse_ids input: an embedding_bag reads it");
    rejects(type, R"({"inputs": ["a", "b"], "units": 3})", {kA, kB},
            "layers[2]: unknown field 'units'");
  }
}

TEST_CASE("add_and_multiply_parse_as_elementwise_layers_in_the_table", "[layer_registry]") {
  for (const std::string type : {"add", "multiply"}) {
    const LayerKind* kind = find_layer_kind(type);
    REQUIRE(kind != nullptr);
    CHECK(kind->parse == &parse_elementwise_inputs);
    CHECK(kind->several_inputs);
    CHECK(
        std::vector<std::string>(kind->fields.begin(), kind->fields.end()) ==
        std::vector<std::string>(kElementwiseInputsFields.begin(), kElementwiseInputsFields.end()));
  }
}
