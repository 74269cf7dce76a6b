#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/activation.h"
#include "core/model/dense_layer.h"
#include "core/model/dropout.h"
#include "core/model/embedding_bag.h"
#include "core/model/layer_registry.h"
#include "core/model/model_layer.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;
using nlohmann::json;

namespace {

// Parses one layer object through the table, as plan.cc does after checking type, input and name.
std::vector<LayerSpec> parse_layer(const std::string& object, const LayerInput& input,
                                   const std::string& name = "") {
  const json l = json::parse(object);
  const LayerKind& kind = layer_kind_named(l.at("type").get<std::string>(), "layers[0].type");
  LayerSpec spec;
  spec.kind = &kind;
  spec.name = name;
  spec.path = "layers[0]";
  std::vector<LayerSpec> layers;
  kind.parse(l, input, spec, layers);
  return layers;
}

void check_rejects(const std::string& object, const LayerInput& input, const std::string& message) {
  INFO(object);
  CHECK_THROWS_MATCHES(parse_layer(object, input, "l"), fedleaf::InvalidInput,
                       MessageContains(message));
}

std::vector<ParameterSpec> parameters_of(const LayerSpec& spec) {
  std::vector<ParameterSpec> out;
  if (spec.kind->parameters != nullptr) spec.kind->parameters(spec, out);
  return out;
}

// Hands out the given tensors in order, numbering their gradients from 0.
class FakeBinder : public ParameterBinder {
 public:
  explicit FakeBinder(std::vector<DenseTensor>& tensors) : tensors_(tensors) {}
  Bound next() override {
    const int i = next_++;
    return {&tensors_[static_cast<std::size_t>(i)], i};
  }
  Bound bound(const std::string& name) override {
    throw fedleaf::InvalidInput("fake binder: nothing bound as '" + name + "'");
  }

 private:
  std::vector<DenseTensor>& tensors_;
  int next_ = 0;
};

// What a layer reads: a sparse_ids input, a dense input of width 6, a layer's output of width w.
const LayerInput kSparseFirst{0, {{"t", true, InputKind::kSparseIds, 0}}};
const LayerInput kDenseFirst{0, {{"x", true, InputKind::kDense, 6}}};
LayerInput after_layer(std::size_t index, std::size_t width) {
  return LayerInput{index, {{"prev", false, InputKind::kDense, width}}};
}

}  // namespace

TEST_CASE("layer_table_finds_each_type_by_name", "[layer_registry]") {
  const std::vector<std::string> types = {"embedding_bag", "dense", "relu",     "sigmoid", "tanh",
                                          "concatenate",   "add",   "multiply", "dropout"};
  for (const std::string& name : types) {
    const LayerKind* kind = find_layer_kind(name);
    REQUIRE(kind != nullptr);
    CHECK(kind->type == name);
    CHECK(&layer_kind_named(name, "p") == kind);
    CHECK(kind->has_parameters == (name == "embedding_bag" || name == "dense"));
  }
  CHECK(layer_kinds().size() == types.size());
  CHECK(find_layer_kind("conv2d") == nullptr);
  CHECK(find_layer_kind("Dense") == nullptr);
}

TEST_CASE("layer_table_unknown_type_lists_every_known_type", "[layer_registry]") {
  CHECK_THROWS_MATCHES(
      layer_kind_named("conv2d", "plan.model.layers[2].type"), fedleaf::InvalidInput,
      MessageContains("plan.model.layers[2].type: unknown layer type 'conv2d' (expected "
                      "embedding_bag, dense, relu, sigmoid, tanh, concatenate, add, multiply or "
                      "dropout)"));
}

TEST_CASE("embedding_bag_spec_parses_through_the_table", "[layer_registry]") {
  std::vector<LayerSpec> layers =
      parse_layer(R"({"type": "embedding_bag", "vocab": 100, "dim": 8})", kSparseFirst, "emb");
  REQUIRE(layers.size() == 1);
  const LayerSpec& e = layers[0];
  CHECK(std::string(e.kind->type) == "embedding_bag");
  CHECK(e.name == "emb");
  const auto& config = layer_config<EmbeddingBagConfig>(e);
  CHECK(config.vocab == 100);
  CHECK(config.dim == 8);
  CHECK(config.combiner == Combiner::kMean);
  CHECK(config.initializer == Initializer::kUniform);
  CHECK(config.init_scale == 0.05f);
  REQUIRE(e.owned_table.has_value());
  CHECK(e.owned_table->parameter == "emb/weight");
  CHECK(e.owned_table->rows == 100);
  CHECK(e.owned_table->rows_field == "layers[0].vocab");
  CHECK(e.table_layer == 0);
  CHECK(e.input_width == 0);
  CHECK(e.output_width == 8);
  const std::vector<ParameterSpec> params = parameters_of(e);
  REQUIRE(params.size() == 1);
  CHECK(params[0].name == "emb/weight");
  CHECK(params[0].shape == std::vector<std::size_t>{100, 8});
  CHECK(params[0].row_sparse_gradient);
  CHECK(params[0].declared_by == "layers[0]");

  layers = parse_layer(
      R"({"type": "embedding_bag", "vocab": 3, "dim": 2, "combiner": "sqrtn",
          "initializer": "zeros", "init_scale": 0.5})",
      kSparseFirst);
  CHECK(layer_config<EmbeddingBagConfig>(layers[0]).combiner == Combiner::kSqrtn);
  CHECK(layer_config<EmbeddingBagConfig>(layers[0]).initializer == Initializer::kZeros);
  CHECK(layer_config<EmbeddingBagConfig>(layers[0]).init_scale == 0.5f);

  check_rejects(R"({"type": "embedding_bag", "vocab": 3, "dim": 2, "units": 4})", kSparseFirst,
                "layers[0]: unknown field 'units'");
  check_rejects(R"({"type": "embedding_bag", "dim": 2})", kSparseFirst, "layers[0].vocab: missing");
  check_rejects(R"({"type": "embedding_bag", "vocab": 3, "dim": 2, "combiner": "max"})",
                kSparseFirst,
                "layers[0].combiner: unknown combiner 'max' (expected sum, mean or sqrtn)");
  check_rejects(R"({"type": "embedding_bag", "vocab": 3, "dim": 2})", kDenseFirst,
                "layers[0].input: embedding_bag reads a sparse_ids input, 'x' is a dense input");
  check_rejects(R"({"type": "embedding_bag", "vocab": 3, "dim": 2})", after_layer(1, 2),
                "layers[0].input: embedding_bag reads a sparse_ids input, 'prev' is a layer's "
                "output");
}

TEST_CASE("dense_spec_parses_through_the_table", "[layer_registry]") {
  std::vector<LayerSpec> layers = parse_layer(R"({"type": "dense", "units": 3})", kDenseFirst, "d");
  REQUIRE(layers.size() == 1);
  CHECK(std::string(layers[0].kind->type) == "dense");
  CHECK(layer_config<DenseConfig>(layers[0]).units == 3);
  CHECK(layer_config<DenseConfig>(layers[0]).use_bias);
  CHECK(layer_config<DenseConfig>(layers[0]).initializer == Initializer::kGlorotUniform);
  CHECK_FALSE(layers[0].owned_table.has_value());
  // A kind reads back only its own config.
  CHECK_THROWS_MATCHES(layer_config<DropoutConfig>(layers[0]), fedleaf::InvalidInput,
                       MessageContains("layers[0]: the layer's config is not its kind's"));
  CHECK(layers[0].input_width == 6);
  CHECK(layers[0].output_width == 3);
  std::vector<ParameterSpec> params = parameters_of(layers[0]);
  REQUIRE(params.size() == 2);
  CHECK(params[0].name == "d/weight");
  CHECK(params[0].shape == std::vector<std::size_t>{6, 3});
  CHECK(params[0].fan_in == 6);
  CHECK(params[0].fan_out == 3);
  CHECK_FALSE(params[0].row_sparse_gradient);
  CHECK(params[1].name == "d/bias");
  CHECK(params[1].shape == std::vector<std::size_t>{3});
  CHECK(params[1].initializer == Initializer::kZeros);

  layers = parse_layer(R"({"type": "dense", "units": 2, "use_bias": false, "activation": "tanh"})",
                       after_layer(1, 4), "h");
  REQUIRE(layers.size() == 2);
  CHECK(layers[0].input_width == 4);
  CHECK(parameters_of(layers[0]).size() == 1);
  CHECK(std::string(layers[1].kind->type) == "tanh");
  CHECK(layer_config<ActivationConfig>(layers[1]).function == Activation::kTanh);
  CHECK(layers[1].sources.size() == 1);
  CHECK(layers[1].name.empty());
  CHECK(layers[1].path == "layers[0].activation");
  CHECK(layers[1].input_width == 2);
  CHECK(layers[1].output_width == 2);

  check_rejects(R"({"type": "dense", "units": 2, "vocab": 4})", kDenseFirst,
                "layers[0]: unknown field 'vocab'");
  check_rejects(R"({"type": "dense"})", kDenseFirst, "layers[0].units: missing");
  check_rejects(R"({"type": "dense", "units": 2, "activation": "gelu"})", kDenseFirst,
                "layers[0].activation: expected relu, sigmoid or tanh");
  check_rejects(R"({"type": "dense", "units": 2})", kSparseFirst,
                "layers[0].type: a sparse_ids input needs an embedding_bag first layer");
}

TEST_CASE("activation_specs_parse_through_the_table", "[layer_registry]") {
  for (const std::string type : {"relu", "sigmoid", "tanh"}) {
    const std::vector<LayerSpec> layers =
        parse_layer(R"({"type": ")" + type + R"("})", after_layer(2, 5));
    REQUIRE(layers.size() == 1);
    CHECK(layers[0].kind == find_layer_kind(type));
    CHECK(kActivations[static_cast<std::size_t>(layer_config<ActivationConfig>(layers[0]).function)]
              .first == type);
    CHECK(layers[0].input_width == 5);
    CHECK(layers[0].output_width == 5);
    CHECK(parameters_of(layers[0]).empty());
    check_rejects(R"({"type": ")" + type + R"(", "units": 2})", kDenseFirst,
                  "layers[0]: unknown field 'units'");
    check_rejects(R"({"type": ")" + type + R"("})", kSparseFirst,
                  "layers[0].type: a sparse_ids input needs an embedding_bag first layer");
  }
}

TEST_CASE("layer_table_makes_layers_over_the_bound_tensors", "[layer_registry]") {
  std::vector<LayerSpec> layers =
      parse_layer(R"({"type": "dense", "units": 2})", after_layer(1, 3), "d");
  std::vector<DenseTensor> tensors;
  tensors.push_back(DenseTensor::zeros(DType::F32, Shape{3, 2}));
  tensors.push_back(DenseTensor::zeros(DType::F32, Shape{2}));
  FakeBinder binder(tensors);
  ModelLayer dense;
  layers[0].kind->make(layers[0], binder, 8, dense);
  CHECK(dense.op != nullptr);
  CHECK(dense.weight_gradient == 0);
  CHECK(dense.bias_gradient == 1);

  layers = parse_layer(R"({"type": "embedding_bag", "vocab": 10, "dim": 2})", kSparseFirst, "e");
  std::vector<DenseTensor> table;
  table.push_back(
      DenseTensor::zeros(DType::F32, Shape{4, 2}));  // a compact table: any number of rows
  FakeBinder table_binder(table);
  ModelLayer embedding;
  layers[0].kind->make(layers[0], table_binder, 8, embedding);
  CHECK(embedding.op != nullptr);
  CHECK(embedding.weight_gradient == 0);
  CHECK(embedding.bias_gradient == -1);

  // Every kind makes an op: the graph walk calls it without asking the layer's type.
  for (const LayerKind* kind : layer_kinds()) CHECK(kind->make != nullptr);
}

TEST_CASE("concatenate_add_and_dropout_specs_parse_through_the_table", "[layer_registry]") {
  const LayerInput two{3, {{"a", false, InputKind::kDense, 4}, {"x", true, InputKind::kDense, 2}}};
  std::vector<LayerSpec> layers =
      parse_layer(R"({"type": "concatenate", "inputs": ["a", "x"]})", two, "c");
  REQUIRE(layers.size() == 1);
  CHECK(std::string(layers[0].kind->type) == "concatenate");
  CHECK(layers[0].input_width == 6);
  CHECK(layers[0].output_width == 6);
  CHECK(parameters_of(layers[0]).empty());
  check_rejects(R"({"type": "add", "inputs": ["a", "x"]})", two,
                "layers[0]: add needs equal widths, got 4 ('a') and 2 ('x')");
  const LayerInput same{3,
                        {{"a", false, InputKind::kDense, 4}, {"b", false, InputKind::kDense, 4}}};
  layers = parse_layer(R"({"type": "add", "inputs": ["a", "b"]})", same, "s");
  CHECK(layers[0].output_width == 4);
  check_rejects(R"({"type": "concatenate", "inputs": ["a"], "units": 3})", same,
                "layers[0]: unknown field 'units'");

  layers = parse_layer(R"({"type": "dropout", "rate": 0.25, "seed": 9})", after_layer(2, 5));
  CHECK(std::string(layers[0].kind->type) == "dropout");
  CHECK(layer_config<DropoutConfig>(layers[0]).rate == 0.25f);
  CHECK(layer_config<DropoutConfig>(layers[0]).seed == 9);
  CHECK(layers[0].output_width == 5);
  check_rejects(R"({"type": "dropout"})", after_layer(2, 5), "layers[0].rate: missing");
  check_rejects(R"({"type": "dropout", "rate": 0.5})", kSparseFirst,
                "layers[0].type: a sparse_ids input needs an embedding_bag first layer");
  for (const std::string t : {"concatenate", "add", "multiply", "dropout"}) {
    CHECK(find_layer_kind(t)->several_inputs == (t != "dropout"));
  }
}

TEST_CASE("multiply_spec_parses_through_the_table", "[layer_registry]") {
  const LayerInput three{3,
                         {{"a", false, InputKind::kDense, 4},
                          {"b", false, InputKind::kDense, 4},
                          {"x", true, InputKind::kDense, 4}}};
  const std::vector<LayerSpec> layers =
      parse_layer(R"({"type": "multiply", "inputs": ["a", "b", "x"]})", three, "m");
  REQUIRE(layers.size() == 1);
  CHECK(std::string(layers[0].kind->type) == "multiply");
  CHECK_FALSE(layers[0].kind->has_parameters);
  CHECK(layers[0].input_width == 4);
  CHECK(layers[0].output_width == 4);
  CHECK(layers[0].config == nullptr);
  CHECK_FALSE(layers[0].owned_table.has_value());
  CHECK(parameters_of(layers[0]).empty());
  std::vector<DenseTensor> none;
  FakeBinder binder(none);
  ModelLayer multiply;
  layers[0].kind->make(layers[0], binder, 8, multiply);
  CHECK(multiply.op != nullptr);
  CHECK(multiply.weight_gradient == -1);

  const LayerInput unequal{3,
                           {{"a", false, InputKind::kDense, 4}, {"x", true, InputKind::kDense, 2}}};
  check_rejects(R"({"type": "multiply", "inputs": ["a", "x"]})", unequal,
                "layers[0]: multiply needs equal widths, got 4 ('a') and 2 ('x')");
  const LayerInput one{3, {{"a", false, InputKind::kDense, 4}}};
  check_rejects(R"({"type": "multiply", "inputs": ["a"]})", one,
                "layers[0].inputs: multiply needs \"inputs\": at least two names");
  const LayerInput ids{3,
                       {{"a", false, InputKind::kDense, 4}, {"t", true, InputKind::kSparseIds, 0}}};
  check_rejects(R"({"type": "multiply", "inputs": ["a", "t"]})", ids,
                "layers[0].inputs[1]: 't' is a sparse_ids input: an embedding_bag reads it");
  check_rejects(R"({"type": "multiply", "inputs": ["a", "b"], "units": 3})", three,
                "layers[0]: unknown field 'units'");
}
