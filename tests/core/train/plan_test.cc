#include <catch2/catch.hpp>
#include <cstdint>

#include "core/model/embedding_bag.h"
#include "core/train/plan.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::kDesignPlan;
using fedleaf::test::MessageContains;

namespace {

// A plan with `model` spliced in and a minimal valid train/updates section.
std::string plan_with_model(
    const std::string& model,
    const std::string& updates = R"({"out/bias": {"encoding": "dense", "aggregator": "sum"}})") {
  return R"({"model": )" + model +
         R"(, "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}},
             "updates": )" +
         updates + "}";
}

void check_rejects(const std::string& plan, const std::string& fragment) {
  INFO(plan);
  CHECK_THROWS_MATCHES(parse_plan(plan), fedleaf::InvalidInput, MessageContains(fragment));
}

}  // namespace

TEST_CASE("design_example_plan_parses", "[plan]") {
  const Plan p = parse_plan(kDesignPlan);

  CHECK(p.kind == PlanKind::kTrain);
  REQUIRE(p.model.inputs.size() == 1);
  CHECK(p.model.inputs[0].name == "tokens");
  CHECK(p.model.inputs[0].kind == InputKind::kSparseIds);
  REQUIRE(p.model.layers.size() == 2);
  CHECK(std::string(p.model.layers[0].kind->type) == "embedding_bag");
  CHECK(layer_config<EmbeddingBagConfig>(p.model.layers[0]).vocab == 262144);
  CHECK(layer_config<EmbeddingBagConfig>(p.model.layers[0]).combiner == Combiner::kMean);
  CHECK(p.model.layers[1].input_width == 16);
  CHECK(p.model.output_width == 2);
  CHECK(p.model.loss == LossType::kSoftmaxCrossEntropy);
  REQUIRE(p.train.has_value());
  CHECK(p.train->optimizer.type == OptimizerType::kSgd);
  CHECK(p.train->optimizer.learning_rate == 0.1f);
  CHECK(p.train->batch_size == 32);
  REQUIRE(p.updates.tensors.size() == 3);
  CHECK(p.updates.find("emb/weight")->encoding == UpdateEncoding::kRowSparse);
  CHECK(p.updates.find("emb/weight")->download == DownloadMode::kSelect);
  CHECK(p.updates.find("out/bias")->op.op == SparseSumOperator::kWeightedMean);
  CHECK(p.updates.find("out/bias")->download == DownloadMode::kFull);
  CHECK_FALSE(p.features.has_value());

  const auto params = parameter_specs(p.model);
  REQUIRE(params.size() == 3);
  CHECK(params[0].name == "emb/weight");
  CHECK(params[0].shape == std::vector<std::size_t>{262144, 16});
  CHECK(params[0].row_sparse_gradient);
  CHECK(params[1].name == "out/weight");
  CHECK(params[1].shape == std::vector<std::size_t>{16, 2});
  CHECK(params[2].name == "out/bias");
}

TEST_CASE("dense_inputs_activations_and_train_settings_parse", "[plan]") {
  const Plan p = parse_plan(R"({"kind": "train",
    "model": {"inputs": {"pixels": {"type": "dense", "dim": 784}},
              "layers": [{"type": "dense", "name": "h", "units": 32, "activation": "relu"},
                         {"type": "tanh"},
                         {"type": "dense", "name": "out", "units": 1, "use_bias": false}],
              "loss": "sigmoid_cross_entropy"},
    "train": {"optimizer": {"type": "adam", "learning_rate": 0.01, "beta1": 0.8, "beta2": 0.99,
                            "epsilon": 1e-6},
              "epochs": 3, "batch_size": 64, "shuffle": false, "shuffle_seed": 5, "clip_norm": 2.5},
    "updates": {"h/weight": {"encoding": "coo", "aggregator": "clipped_weighted_mean",
                             "clip_norm": 1.0}},
    "eval": {"batch_size": 100}})");

  REQUIRE(p.model.layers.size() == 4);  // dense + its relu, tanh, dense
  CHECK(std::string(p.model.layers[1].kind->type) == "relu");
  CHECK(std::string(p.model.layers[2].kind->type) == "tanh");
  CHECK(p.model.layers[3].input_width == 32);
  CHECK(p.model.inputs[0].dim == 784);
  CHECK(p.train->optimizer.type == OptimizerType::kAdam);
  CHECK(p.train->optimizer.beta1 == 0.8f);
  CHECK(p.train->optimizer.epsilon_form == AdamEpsilonForm::kKeras);
  CHECK(p.train->epochs == 3);
  CHECK_FALSE(p.train->shuffle);
  CHECK(p.train->shuffle_seed == 5);
  CHECK(p.train->clip_norm == 2.5f);
  CHECK(p.updates.find("h/weight")->op ==
        OperatorSpec{SparseSumOperator::kClippedWeightedMean, 1.0});
  CHECK(p.eval_batch_size == 100);
  const auto params = parameter_specs(p.model);
  CHECK(params.size() == 3);  // h/weight, h/bias, out/weight
}

TEST_CASE("evaluate_plans_need_no_train_or_updates", "[plan]") {
  const Plan p = parse_plan(R"({"kind": "evaluate", "model": {"inputs": {"t": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "e", "vocab": 10, "dim": 1}],
      "loss": "sigmoid_cross_entropy"}})");
  CHECK(p.kind == PlanKind::kEvaluate);
  CHECK_FALSE(p.train.has_value());
}

TEST_CASE("inference_plans_need_only_the_model_and_still_check_what_they_give", "[plan]") {
  const std::string model = R"({"inputs": {"t": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "e", "vocab": 10, "dim": 1}],
      "loss": "sigmoid_cross_entropy"})";
  const std::string model_only = R"({"model": )" + model + "}";
  const std::string train_without_updates = R"({"kind": "train", "model": )" + model +
                                            R"(, "train": {"optimizer": {"type": "sgd",
                                                "learning_rate": 0.1}}})";

  const Plan p = parse_plan(model_only, PlanUse::kInference);

  CHECK(p.model.layers.size() == 1);
  CHECK_FALSE(p.train.has_value());
  CHECK(p.updates.tensors.empty());
  CHECK(parse_plan(train_without_updates, PlanUse::kInference).train.has_value());
  check_rejects(model_only, "plan.train: missing");
  check_rejects(train_without_updates, "plan.updates: missing");
  CHECK_THROWS_MATCHES(
      parse_plan(R"({"model": )" + model + R"(, "train": {"optimizer": {"type": "sgd"}}})",
                 PlanUse::kInference),
      fedleaf::InvalidInput, MessageContains("plan.train.optimizer.learning_rate: missing"));
}

TEST_CASE("parameter_bytes_is_the_f32_size_of_every_declared_parameter", "[plan]") {
  // emb 100 x 4, out/weight 4 x 2, out/bias 2: (400 + 8 + 2) floats.
  const Plan p = parse_plan(R"({"kind": "evaluate", "model": {"inputs": {"t": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "emb", "input": "t", "vocab": 100, "dim": 4},
                 {"type": "dense", "name": "out", "units": 2}], "loss": "softmax_cross_entropy"}})");
  CHECK(parameter_bytes(p.model) == 4 * (400 + 8 + 2));
  // The largest table a plan may declare: 8 PiB, counted exactly (in 64 bits, not size_t).
  const Plan huge = parse_plan(R"({"kind": "evaluate", "model": {"inputs": {"t": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "emb", "input": "t", "vocab": 2147483647,
                  "dim": 1048576},
                 {"type": "dense", "name": "out", "units": 2}], "loss": "softmax_cross_entropy"}})");
  CHECK(parameter_bytes(huge.model) ==
        4 * (std::uint64_t{2147483647} * 1048576 + std::uint64_t{1048576} * 2 + 2));
}

TEST_CASE("plans_nested_past_the_json_limit_are_rejected_before_parsing", "[plan]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  check_rejects(R"({"extra": )" + deep + R"(, "model": {}})", "plan: JSON nested deeper than 64");
}

// Regression: an unknown field was skipped, so a typo ("learning_rte") trained with the default
// on every leaf.
TEST_CASE("plans_with_an_unknown_field_are_rejected_naming_it_and_the_known_ones", "[plan]") {
  const std::string model =
      R"({"inputs": {"t": "sparse_ids"}, "layers": [{"type": "embedding_bag", "name": "emb",
          "vocab": 10, "dim": 2}, {"type": "dense", "name": "out", "units": 2}],
          "loss": "softmax_cross_entropy"})";
  const std::string valid = plan_with_model(model);
  CHECK_NOTHROW(parse_plan(valid));
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string plan = valid;
    plan.replace(plan.find(from), from.size(), to);
    return plan;
  };
  check_rejects(with(R"("learning_rate": 0.1)", R"("learning_rte": 0.1)"),
                "plan.train.optimizer: unknown field 'learning_rte' (the fields are type, "
                "learning_rate, momentum, beta1, beta2, epsilon, epsilon_form)");
  check_rejects(with(R"("optimizer")", R"("epoch": 3, "optimizer")"),
                "plan.train: unknown field 'epoch'");
  check_rejects(with(R"("vocab": 10)", R"("vocab": 10, "vocab_size": 20)"),
                "plan.model.layers[0]: unknown field 'vocab_size'");
  check_rejects(with(R"("units": 2)", R"("units": 2, "dropout": 0.5)"),
                "plan.model.layers[1]: unknown field 'dropout'");
  check_rejects(
      with(R"("loss")", R"("optimizer": {}, "loss")"),
      "plan.model: unknown field 'optimizer' (the fields are inputs, layers, output, loss)");
  check_rejects(with(R"({"model")", R"({"modle": {}, "model")"), "plan: unknown field 'modle'");
  check_rejects(with(R"("sparse_ids")", R"({"type": "sparse_ids", "size": 3})"),
                "plan.model.inputs.t: unknown field 'size'");
  check_rejects(with(R"({"model")", R"({"features": {"buckets": 8}, "model")"),
                "plan.features: unknown field 'buckets'");
  check_rejects(with(R"({"model")", R"({"eval": {"batch": 8}, "model")"),
                "plan.eval: unknown field 'batch'");
}

// The "tfjs" section is the TF.js export's (js_bindings/src/interop/tfjs_plan_origin.js): any
// object passes, and training reads nothing of it; anything else is refused naming it.
TEST_CASE("a_plans_tfjs_section_is_an_object_the_core_does_not_read", "[plan]") {
  const std::string model = R"({"inputs": {"t": "sparse_ids"}, "layers": [
      {"type": "embedding_bag", "name": "emb", "vocab": 10, "dim": 2},
      {"type": "dense", "name": "out", "units": 2}], "loss": "softmax_cross_entropy"})";
  const std::string plan = plan_with_model(model);
  const std::string with_section =
      R"({"tfjs": {"name": "topics", "mask_zero": {"emb": [0.5, -0.25]}, "loss": "x"}, )" +
      plan.substr(1);
  const Plan parsed = parse_plan(with_section);
  CHECK(parsed.model.layers.size() == parse_plan(plan).model.layers.size());
  check_rejects(R"({"tfjs": [1], )" + plan.substr(1), "plan.tfjs: expected an object");
}

// Regression: a key given twice kept its last value, so a leaf whose JSON reader keeps the first
// (or refuses) read another plan than the server validated.
TEST_CASE("plans_with_a_key_given_twice_are_rejected_naming_it", "[plan]") {
  check_rejects(R"({"model": {}, "model": {}})", "plan: the key 'model' appears twice");
  check_rejects(R"({"model": {"inputs": {}, "inputs": {}}})",
                "plan: the key 'inputs' (in 'model') appears twice");
}

// Regression: ranges were checked on the JSON number, then it became a float: 1e300 → inf,
// 1e-300 → 0 (a learning rate that trains nothing), 0.99999999999 → 1 (Adam divides by zero).
TEST_CASE("plan_numbers_keep_their_range_as_32_bit_floats", "[plan]") {
  const std::string emb = R"({"type": "embedding_bag", "name": "emb", "vocab": 100, "dim": 4)";
  const std::string model = R"({"inputs": {"t": "sparse_ids"}, "layers": [)" + emb +
                            R"(}, {"type": "dense", "name": "out", "units": 2}],
                              "loss": "softmax_cross_entropy"})";
  const auto with_optimizer = [&](const std::string& optimizer) {
    return R"({"model": )" + model + R"(, "train": {"optimizer": )" + optimizer +
           R"(}, "updates": {"out/bias": {"encoding": "dense", "aggregator": "sum"}}})";
  };
  check_rejects(
      with_optimizer(R"({"type": "sgd", "learning_rate": 1e300})"),
      "plan.train.optimizer.learning_rate: expected a number > 0, also as a 32-bit float");
  check_rejects(
      with_optimizer(R"({"type": "sgd", "learning_rate": 1e-300})"),
      "plan.train.optimizer.learning_rate: expected a number > 0, also as a 32-bit float");
  check_rejects(with_optimizer(R"({"type": "adam", "learning_rate": 0.1, "epsilon_form": "TFJS"})"),
                "plan.train.optimizer.epsilon_form: unknown epsilon form 'TFJS' (expected keras or "
                "tfjs)");
  CHECK(parse_plan(
            with_optimizer(R"({"type": "adam", "learning_rate": 0.1, "epsilon_form": "tfjs"})"))
            .train->optimizer.epsilon_form == AdamEpsilonForm::kTfjs);
  check_rejects(with_optimizer(R"({"type": "adam", "learning_rate": 0.1, "beta1": 0.99999999999})"),
                "plan.train.optimizer.beta1: expected a number in [0, 1), also as a 32-bit float");
  const std::string scaled =
      R"({"inputs": {"t": "sparse_ids"}, "layers": [)" + emb +
      R"(, "init_scale": 1e300}, {"type": "dense", "name": "out", "units": 2}],
                               "loss": "softmax_cross_entropy"})";
  check_rejects(plan_with_model(scaled),
                "init_scale: expected a number >= 0, also as a 32-bit float");
  CHECK_NOTHROW(parse_plan(with_optimizer(R"({"type": "sgd", "learning_rate": 1e-30})")));
}

TEST_CASE("plan_errors_name_the_json_path", "[plan]") {
  const std::string emb = R"({"type": "embedding_bag", "name": "emb", "vocab": 100, "dim": 4})";
  check_rejects(
      plan_with_model(R"({"inputs": {"t": "sparse_ids"}, "layers": [)" + emb +
                      R"(, {"type": "dense", "name": "out"}], "loss": "softmax_cross_entropy"})"),
      "plan.model.layers[1].units: missing");
  check_rejects(
      plan_with_model(R"({"inputs": {"t": "sparse_ids"}, "layers": [)" + emb +
                      R"(, {"type": "conv2d", "name": "c"}], "loss": "softmax_cross_entropy"})"),
      "plan.model.layers[1].type: unknown layer type 'conv2d'");
  check_rejects(
      plan_with_model(
          R"({"inputs": {"t": "sparse_ids"}, "layers": [{"type": "embedding_bag", "name": "emb", "dim": 4}], "loss": "sigmoid_cross_entropy"})"),
      "plan.model.layers[0].vocab: missing");
  check_rejects(
      plan_with_model(R"({"inputs": {"t": "sparse_ids"}, "layers": [)" + emb +
                      R"(, {"type": "dense", "units": 2}], "loss": "softmax_cross_entropy"})"),
      "plan.model.layers[1].name: missing");
  check_rejects(
      plan_with_model(
          R"({"inputs": {"t": "sparse_ids"}, "layers": [)" + emb +
          R"(, {"type": "dense", "name": "emb", "units": 2}], "loss": "softmax_cross_entropy"})"),
      "plan.model.layers[1].name: duplicate layer name 'emb'");
  check_rejects(
      plan_with_model(
          R"({"inputs": {"t": "sparse_ids"}, "layers": [)" + emb +
          R"(, {"type": "dense", "name": "out", "units": 1}], "loss": "softmax_cross_entropy"})"),
      "plan.model.loss: softmax_cross_entropy needs an output width >= 2");
  check_rejects(plan_with_model(R"({"inputs": {"t": "sparse_ids"}, "layers": [)" + emb +
                                R"(], "loss": "sigmoid_cross_entropy"})"),
                "plan.model.loss: sigmoid_cross_entropy needs an output width of 1");
  check_rejects(plan_with_model(R"({"inputs": {"t": "sparse_ids"}, "layers": [)" + emb +
                                R"(], "loss": "hinge"})"),
                "plan.model.loss: unknown loss 'hinge'");
  check_rejects(
      plan_with_model(
          R"({"inputs": {"t": "sparse_ids"}, "layers": [{"type": "dense", "name": "d", "units": 2}], "loss": "softmax_cross_entropy"})"),
      "plan.model.layers[0].type: a sparse_ids input needs an embedding_bag first layer");
  check_rejects(
      plan_with_model(
          R"({"inputs": {"t": "dense"}, "layers": [{"type": "dense", "name": "d", "units": 2}], "loss": "softmax_cross_entropy"})"),
      "plan.model.inputs.t.dim: missing");
  // The updates section of a plan whose model is the embedding alone (parameter emb/weight).
  const std::string emb_model = R"({"inputs": {"t": "sparse_ids"}, "layers": [)" + emb +
                                R"(], "loss": "softmax_cross_entropy"})";
  const std::pair<const char*, const char*> update_rules[] = {
      {R"({"nope/weight": {"encoding": "dense", "aggregator": "sum"}})",
       "plan.updates['nope/weight']: not a parameter of the model (parameters: emb/weight)"},
      {R"({"emb/weight": {"encoding": "csr", "aggregator": "sum"}})",
       "plan.updates['emb/weight'].encoding: unknown encoding 'csr'"},
      {R"({"emb/weight": {"encoding": "coo", "aggregator": "clipped_weighted_mean"}})",
       "plan.updates['emb/weight'].clip_norm: missing"},
      {R"({"emb/weight": {"encoding": "coo", "aggregator": "median"}})",
       "plan.updates['emb/weight'].aggregator: unknown aggregator 'median'"},
      {R"({"emb/weight": {"encoding": "dense", "aggregator": "sum", "download": "select"}})",
       R"(plan.updates['emb/weight'].download: "select" needs encoding "row_sparse")"},
  };
  for (const auto& [updates, message] : update_rules) {
    check_rejects(plan_with_model(emb_model, updates), message);
  }
  check_rejects(kDesignPlan + std::string("x"), "plan: not valid JSON");
  check_rejects(
      R"({"model": {"inputs": {"t": "sparse_ids"}, "layers": [{"type": "embedding_bag", "name": "e", "vocab": 10, "dim": 2}], "loss": "softmax_cross_entropy"},
                   "updates": {"e/weight": {"encoding": "dense", "aggregator": "sum"}}})",
      "plan.train: missing");
  check_rejects(
      R"({"model": {"inputs": {"t": "sparse_ids"}, "layers": [{"type": "embedding_bag", "name": "e", "vocab": 10, "dim": 2}], "loss": "softmax_cross_entropy"},
                   "train": {"optimizer": {"type": "rmsprop", "learning_rate": 0.1}},
                   "updates": {"e/weight": {"encoding": "dense", "aggregator": "sum"}}})",
      "plan.train.optimizer.type: unknown optimizer 'rmsprop'");
  check_rejects(
      R"({"model": {"inputs": {"t": "sparse_ids"}, "layers": [{"type": "embedding_bag", "name": "e", "vocab": 10, "dim": 2}], "loss": "softmax_cross_entropy"},
                   "train": {"optimizer": {"type": "sgd", "learning_rate": -1}},
                   "updates": {"e/weight": {"encoding": "dense", "aggregator": "sum"}}})",
      "plan.train.optimizer.learning_rate: expected a number > 0");
  check_rejects(
      R"({"model": {"inputs": {"t": "sparse_ids"}, "layers": [{"type": "embedding_bag", "name": "e", "vocab": 10, "dim": 2}], "loss": "softmax_cross_entropy"},
                   "train": {"optimizer": {"type": "sgd", "learning_rate": 1}, "batch_size": 0},
                   "updates": {"e/weight": {"encoding": "dense", "aggregator": "sum"}}})",
      "plan.train.batch_size: expected an integer in [1,");
  check_rejects(
      R"({"model": {"inputs": {"t": "sparse_ids"}, "layers": [{"type": "embedding_bag", "name": "e", "vocab": 10, "dim": 2}], "loss": "softmax_cross_entropy"},
                   "train": {"optimizer": {"type": "sgd", "learning_rate": 1}}})",
      "plan.updates: missing");
}
