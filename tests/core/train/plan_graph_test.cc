// The plan's model as a graph: several named inputs, layers naming what they read, shared
// tables, concatenate / add / dropout, "output", mean_squared_error, and each validation rule.
#include <catch2/catch.hpp>
#include <string>

#include <nlohmann/json.hpp>

#include "core/model/dropout.h"
#include "core/model/embedding_bag.h"
#include "core/train/plan.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

// The wide & deep model of the issue's spec (section 1), verbatim but for smaller vocabularies.
const char* kWideDeep = R"({"model": {
   "inputs": {
     "body":    {"type": "sparse_ids", "features": {"text": "body", "num_buckets": 1000}},
     "subject": {"type": "sparse_ids"},
     "sender":  {"type": "sparse_ids"},
     "cross":   {"type": "sparse_ids"},
     "numeric": {"type": "dense", "dim": 8}
   },
   "layers": [
     {"type": "embedding_bag", "name": "tokens", "input": "body", "vocab": 1000, "dim": 16},
     {"type": "embedding_bag", "name": "subject_emb", "input": "subject", "table": "tokens",
      "combiner": "mean"},
     {"type": "embedding_bag", "name": "sender_emb", "input": "sender", "vocab": 64, "dim": 8},
     {"type": "concatenate", "name": "deep_in", "inputs": ["tokens", "subject_emb", "sender_emb", "numeric"]},
     {"type": "dense", "name": "h1", "input": "deep_in", "units": 64, "activation": "relu"},
     {"type": "dropout", "name": "drop1", "input": "h1", "rate": 0.2, "seed": 7},
     {"type": "dense", "name": "deep_logit", "input": "drop1", "units": 1},
     {"type": "embedding_bag", "name": "wide", "input": "cross", "vocab": 4096, "dim": 1,
      "combiner": "sum", "initializer": "zeros"},
     {"type": "add", "name": "logit", "inputs": ["deep_logit", "wide"]}
   ],
   "output": "logit",
   "loss": "sigmoid_cross_entropy"}})";

// An evaluate plan around `model` (no train / updates needed).
std::string plan_for(const std::string& model) {
  return R"({"kind": "evaluate", "model": )" + model + "}";
}

void check_rejects(const std::string& model, const std::string& message) {
  INFO(model);
  CHECK_THROWS_MATCHES(parse_plan(plan_for(model)), fedleaf::InvalidInput,
                       MessageContains(message));
}

}  // namespace

TEST_CASE("wide_and_deep_plan_parses_into_a_graph", "[plan_graph]") {
  const Plan p = parse_plan(kWideDeep, PlanUse::kInference);
  const ModelSpec& m = p.model;
  REQUIRE(m.inputs.size() == 5);
  // The JSON object's keys, in nlohmann's (sorted) order.
  CHECK(m.inputs[0].name == "body");
  CHECK(m.inputs[1].name == "cross");
  CHECK(m.inputs[2].name == "numeric");
  CHECK(m.inputs[2].kind == InputKind::kDense);
  CHECK(m.inputs[2].dim == 8);
  CHECK(nlohmann::json::parse(m.inputs[0].features_json) ==
        nlohmann::json::parse(R"({"text": "body", "num_buckets": 1000})"));
  CHECK(m.inputs[1].features_json.empty());
  REQUIRE(m.layers.size() == 10);  // h1 expands into dense + relu
  const LayerSpec& subject = m.layers[1];
  CHECK(layer_config<EmbeddingBagConfig>(subject).table == "tokens");
  CHECK(subject.table_layer == 0);
  CHECK_FALSE(subject.owned_table.has_value());
  CHECK(layer_config<EmbeddingBagConfig>(subject).vocab == 1000);
  CHECK(layer_config<EmbeddingBagConfig>(subject).dim == 16);
  REQUIRE(m.layers[0].owned_table.has_value());
  CHECK(m.layers[0].owned_table->parameter == "tokens/weight");
  CHECK(m.layers[0].owned_table->rows == 1000);
  CHECK(m.layers[0].owned_table->rows_field == "plan.model.layers[0].vocab");
  const LayerSpec& deep_in = m.layers[3];
  CHECK(std::string(deep_in.kind->type) == "concatenate");
  CHECK(deep_in.output_width == 16 + 16 + 8 + 8);
  REQUIRE(deep_in.sources.size() == 4);
  CHECK_FALSE(deep_in.sources[0].is_input);
  CHECK(deep_in.sources[0].index == 0);
  CHECK(deep_in.sources[3].is_input);
  CHECK(deep_in.sources[3].index == 2);
  // drop1 reads "h1": the relu the dense layer expanded into.
  CHECK(std::string(m.layers[5].kind->type) == "relu");
  CHECK(std::string(m.layers[6].kind->type) == "dropout");
  CHECK(m.layers[6].sources[0].index == 5);
  CHECK(layer_config<DropoutConfig>(m.layers[6]).rate == 0.2f);
  CHECK(layer_config<DropoutConfig>(m.layers[6]).seed == 7);
  CHECK(std::string(m.layers[9].kind->type) == "add");
  CHECK(m.output_width == 1);

  // One table per owner: the shared lookup declares nothing.
  const auto params = parameter_specs(m);
  std::vector<std::string> names;
  for (const ParameterSpec& s : params) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"tokens/weight", "sender_emb/weight", "h1/weight",
                                          "h1/bias", "deep_logit/weight", "deep_logit/bias",
                                          "wide/weight"});

  // Feeds: body and subject into "tokens", sender, numeric, cross, in first-read order.
  REQUIRE(m.feeds.size() == 5);
  CHECK(m.feeds[0].input == 0);
  CHECK(m.feeds[0].table_layer == 0);
  CHECK(m.feeds[1].input == 4);  // subject
  CHECK(m.feeds[1].table_layer == 0);
  CHECK(m.layers[1].feed == 1);
  CHECK(m.feeds[3].input == 2);  // numeric, read by the concatenate
  CHECK_FALSE(m.feeds[3].sparse);
  CHECK(m.inputs[2].feed == 3);
  CHECK(m.layers[8].feed == 4);  // wide on cross
}

TEST_CASE("one_input_chain_plans_keep_their_meaning", "[plan_graph]") {
  const Plan p = parse_plan(plan_for(R"({"inputs": {"t": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "e", "vocab": 10, "dim": 4},
                 {"type": "dense", "name": "h", "units": 3, "activation": "tanh"},
                 {"type": "dense", "name": "out", "units": 2}],
      "loss": "softmax_cross_entropy"})"));
  const ModelSpec& m = p.model;
  REQUIRE(m.layers.size() == 4);
  CHECK(m.layers[0].sources[0].is_input);
  for (std::size_t i = 1; i < 4; ++i) {
    REQUIRE(m.layers[i].sources.size() == 1);
    CHECK_FALSE(m.layers[i].sources[0].is_input);
    CHECK(m.layers[i].sources[0].index == i - 1);
  }
  CHECK(m.feeds.size() == 1);
  CHECK(m.inputs[0].name == "t");
}

TEST_CASE("mean_squared_error_and_output_parse", "[plan_graph]") {
  const Plan p = parse_plan(plan_for(R"({"inputs": {"x": {"type": "dense", "dim": 3}},
      "layers": [{"type": "dense", "name": "out", "units": 2}], "output": "out",
      "loss": "mean_squared_error"})"));
  CHECK(p.model.loss == LossType::kMeanSquaredError);
  CHECK(p.model.output_width == 2);
}

TEST_CASE("graph_validation_names_each_rule", "[plan_graph]") {
  const std::string two = R"("inputs": {"a": "sparse_ids", "b": {"type": "dense", "dim": 8}})";
  const std::string emb =
      R"({"type": "embedding_bag", "name": "e", "input": "a", "vocab": 10, "dim": 16})";
  // A later layer, the layer itself.
  check_rejects(R"({"inputs": {"x": {"type": "dense", "dim": 4}}, "layers": [
      {"type": "dense", "name": "h1", "units": 4},
      {"type": "relu", "name": "r", "input": "x"},
      {"type": "dense", "name": "h2", "input": "h2", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[2].input: 'h2' is this layer itself (a cycle)");
  check_rejects(R"({"inputs": {"x": {"type": "dense", "dim": 4}}, "layers": [
      {"type": "dense", "name": "h1", "units": 4},
      {"type": "relu", "name": "r", "input": "x"},
      {"type": "dense", "name": "h3", "input": "h4", "units": 4},
      {"type": "dense", "name": "h4", "input": "h3", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[2].input: 'h4' is defined later (layers are listed in order; a "
                "cycle?)");
  // Unknown names.
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "concatenate", "name": "c", "inputs": ["e", "numerc"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1].inputs[1]: unknown input or layer 'numerc'");
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "concatenate", "name": "c", "inputs": ["e", "b"]},
      {"type": "dense", "name": "o", "units": 1}], "output": "out", "loss": "sigmoid_cross_entropy"})",
                "plan.model.output: unknown input or layer 'out'");
  // Unused inputs and layers.
  check_rejects(
      R"({"inputs": {"a": "sparse_ids", "extra": "sparse_ids"}, "layers": [{"type": "embedding_bag", "name": "e", "input": "a", "vocab": 10, "dim": 1}], "loss": "sigmoid_cross_entropy"})",
      "plan.model.inputs.extra: unused input (no layer reads it)");
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "dense", "name": "side", "input": "b", "units": 3},
      {"type": "dense", "name": "o", "input": "e", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1]: unused layer 'side' (its output reaches no layer on the way "
                "to the output)");
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "concatenate", "name": "c", "inputs": ["e", "b"]},
      {"type": "dense", "name": "o", "units": 1, "activation": "sigmoid"},
      {"type": "dense", "name": "after", "units": 1}], "output": "o", "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[3]: unused layer 'after' (after the output 'o')");
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "concatenate", "name": "c", "inputs": ["e", "b"]}], "output": "b", "loss": "sigmoid_cross_entropy"})",
                "plan.model.output: expected a layer's name, got an input's");
  // Width mismatches.
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "dense", "name": "d", "input": "b", "units": 8},
      {"type": "add", "name": "s", "inputs": ["e", "d"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[2]: add needs equal widths, got 16 ('e') and 8 ('d')");
  // A table shared across different dims (or vocabularies).
  check_rejects(R"({"inputs": {"a": "sparse_ids", "c": "sparse_ids"}, "layers": [)" + emb + R"(,
      {"type": "embedding_bag", "name": "f", "input": "c", "table": "e", "dim": 8},
      {"type": "concatenate", "name": "j", "inputs": ["e", "f"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1].table: 'e' has dim 16, this layer says dim 8 (a table shared "
                "across different dims)");
  check_rejects(R"({"inputs": {"a": "sparse_ids", "c": "sparse_ids"}, "layers": [)" + emb + R"(,
      {"type": "embedding_bag", "name": "f", "input": "c", "table": "e", "vocab": 11},
      {"type": "add", "name": "j", "inputs": ["e", "f"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1].table: 'e' has vocab 10, this layer says vocab 11");
  check_rejects(R"({"inputs": {"a": "sparse_ids", "c": "sparse_ids"}, "layers": [)" + emb + R"(,
      {"type": "embedding_bag", "name": "f", "input": "c", "table": "nope"},
      {"type": "add", "name": "j", "inputs": ["e", "f"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1].table: no earlier embedding_bag layer named 'nope' owns a "
                "table");
  check_rejects(R"({"inputs": {"a": "sparse_ids", "c": "sparse_ids"}, "layers": [)" + emb + R"(,
      {"type": "embedding_bag", "name": "f", "input": "c", "table": "e", "init_scale": 0.1},
      {"type": "add", "name": "j", "inputs": ["e", "f"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1].init_scale: set by the table's owner 'e'");
  // An embedding on a dense input, a dense layer on a sparse one.
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "embedding_bag", "name": "f", "input": "b", "vocab": 10, "dim": 16},
      {"type": "add", "name": "j", "inputs": ["e", "f"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1].input: embedding_bag reads a sparse_ids input, 'b' is a "
                "dense input");
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "concatenate", "name": "c", "inputs": ["e", "a", "b"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1].inputs[1]: 'a' is a sparse_ids input: an embedding_bag reads "
                "it");
  // Several inputs and a first layer naming none.
  check_rejects(
      "{" + two + R"(, "layers": [{"type": "embedding_bag", "name": "e", "vocab": 10, "dim": 16},
      {"type": "concatenate", "name": "c", "inputs": ["e", "b"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
      "plan.model.layers[0].input: missing: the model has several inputs (a, b), name "
      "the one this layer reads");
  // One namespace; "inputs" only where several are read; at least two of them.
  check_rejects(
      "{" + two +
          R"(, "layers": [{"type": "embedding_bag", "name": "b", "input": "a", "vocab": 10, "dim": 8},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
      "plan.model.layers[0].name: 'b' is also an input's name (inputs and layers share "
      "one namespace)");
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "dense", "name": "o", "inputs": ["e", "b"], "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1].inputs: dense reads one \"input\" (only concatenate, add and "
                "multiply read several)");
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "concatenate", "name": "c", "input": "e"},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1].inputs: concatenate needs \"inputs\": at least two names");
  check_rejects("{" + two + R"(, "layers": [)" + emb + R"(,
      {"type": "concatenate", "name": "c", "input": "e", "inputs": ["e", "b"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1]: give \"input\" or \"inputs\", not both");
  // Dropout's rate; an input's features must be an object.
  check_rejects(R"({"inputs": {"x": {"type": "dense", "dim": 4}}, "layers": [
      {"type": "dropout", "rate": 1.0}, {"type": "dense", "name": "o", "units": 1}],
      "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[0].rate: expected a number in [0, 1)");
  check_rejects(R"({"inputs": {"x": {"type": "dense", "dim": 4, "features": 3}}, "layers": [
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.inputs.x.features: expected an object");
}

TEST_CASE("embedding_bag_use_bias_declares_a_dense_bias_and_is_off_by_default", "[plan_graph]") {
  // A Keras Dense reading a sparse input: sum over the row's values, plus a bias.
  const Plan p = parse_plan(R"({"model": {"inputs": {"x": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "d", "vocab": 30, "dim": 4,
                  "combiner": "sum", "use_bias": true},
                 {"type": "embedding_bag", "name": "plain", "input": "x", "table": "d",
                  "use_bias": false},
                 {"type": "concatenate", "name": "j", "inputs": ["d", "plain"]},
                 {"type": "dense", "name": "o", "units": 1}],
      "loss": "sigmoid_cross_entropy"},
    "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}},
    "updates": {"d/weight": {"encoding": "row_sparse", "aggregator": "weighted_mean"},
                "d/bias": {"encoding": "dense", "aggregator": "weighted_mean"}}})");
  CHECK(layer_config<EmbeddingBagConfig>(p.model.layers[0]).use_bias);
  CHECK_FALSE(layer_config<EmbeddingBagConfig>(p.model.layers[1]).use_bias);
  const auto params = parameter_specs(p.model);
  REQUIRE(params.size() == 4);
  CHECK(params[0].name == "d/weight");
  CHECK(params[1].name == "d/bias");
  CHECK(params[1].shape == std::vector<std::size_t>{4});
  CHECK_FALSE(params[1].row_sparse_gradient);
  CHECK(params[1].initializer == Initializer::kZeros);
  CHECK(params[1].declared_by == "plan.model.layers[0]");
  CHECK(parameter_bytes(p.model) == (30 * 4 + 4 + 8 + 1) * 4);

  // Absent: no bias, as every plan written before the field.
  const Plan q = parse_plan(plan_for(R"({"inputs": {"x": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "d", "vocab": 30, "dim": 1,
                  "combiner": "sum"}], "loss": "sigmoid_cross_entropy"})"));
  CHECK_FALSE(layer_config<EmbeddingBagConfig>(q.model.layers[0]).use_bias);
  CHECK(parameter_specs(q.model).size() == 1);

  check_rejects(R"({"inputs": {"x": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "d", "vocab": 30, "dim": 1,
                  "use_bias": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[0].use_bias: expected");
  // A second lookup of a shared table has no parameter of its own, so no bias.
  check_rejects(R"({"inputs": {"a": "sparse_ids", "c": "sparse_ids"}, "layers": [
      {"type": "embedding_bag", "name": "e", "input": "a", "vocab": 10, "dim": 2},
      {"type": "embedding_bag", "name": "f", "input": "c", "table": "e", "use_bias": true},
      {"type": "add", "name": "j", "inputs": ["e", "f"]},
      {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"})",
                "plan.model.layers[1].use_bias: a lookup of the table of 'e' has no parameter of "
                "its own: no bias");
}
