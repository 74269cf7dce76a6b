// Central training on the SpamAssassin train split, evaluated on its eval split: the reference
// real-data check of the whole leaf path (tokenizer, hashing, training, update, evaluation).
// The fixture is written by tests/fixtures/make_spamassassin_fixture.mjs at build time; a
// missing fixture is a failure, never a skip.
#include <catch2/catch.hpp>

#include <cstdio>
#include <iostream>

#include "core/features/text_features.h"
#include "core/train/executor.h"
#include "core/train/plan.h"
#include "core/wire/safetensors.h"
#include "tests/core/to_dense.h"
#include "tests/fixtures/spamassassin_fixture.h"

using namespace fedleaf::core;

namespace {

struct Corpus : fedleaf::test::SpamAssassinCorpus {
  Dataset featurize(const TextFeatureOptions& options) const {
    return build_hashed_text_dataset(texts.data(), texts.size(), offsets.data(), labels.size(),
                                     labels.data(), options);
  }
};

struct Fixture {
  Corpus train;
  Corpus eval;
};

// Reads the fixture once; the reader checks every record's split against the documented rule.
const Fixture& fixture() {
  static const Fixture loaded = [] {
    fedleaf::test::SpamAssassinFixture read;
    try {
      read = fedleaf::test::read_spamassassin_fixture(FEDLEAF_SPAMASSASSIN_FIXTURE);
    } catch (const std::exception& e) {
      FAIL(e.what());
    }
    Fixture f;
    static_cast<fedleaf::test::SpamAssassinCorpus&>(f.train) = std::move(read.train);
    static_cast<fedleaf::test::SpamAssassinCorpus&>(f.eval) = std::move(read.eval);
    return f;
  }();
  return loaded;
}

// Global model + train delta (the next model of a one-client round).
std::vector<std::uint8_t> apply_update(const std::vector<std::uint8_t>& model,
                                       const std::vector<std::uint8_t>& update) {
  NamedTensors tensors = read_safetensors(model).tensors;
  for (const auto& [name, delta] : read_safetensors(update).tensors) {
    DenseTensor d = std::holds_alternative<RowSparseTensor>(delta)
                        ? fedleaf::test::to_dense(std::get<RowSparseTensor>(delta))
                        : std::get<DenseTensor>(delta);
    DenseTensor& target = std::get<DenseTensor>(tensors.at(name));
    for (std::size_t i = 0; i < d.size(); ++i) target.data<float>()[i] += d.data<float>()[i];
  }
  return write_safetensors(tensors);
}

struct Figures {
  double accuracy, auc, train_loss;
};

Figures train_and_evaluate(const std::string& plan, const char* name) {
  const Fixture& f = fixture();
  const TextFeatureOptions features = text_features_from_plan(plan);
  const Dataset train = f.train.featurize(features);
  const Dataset eval = f.eval.featurize(features);
  const auto model = initialize_model(plan, 1);

  const auto update = execute(plan, model.data(), model.size(), train);
  const auto trained = apply_update(model, update);
  std::string eval_plan = plan;
  eval_plan.replace(0, 1, R"({"kind": "evaluate", )");
  const SafetensorsFile result =
      read_safetensors(execute(eval_plan, trained.data(), trained.size(), eval));
  const Figures figures{std::stod(result.metadata.at("accuracy")),
                        std::stod(result.metadata.at("auc")),
                        std::stod(read_safetensors(update).metadata.at("loss"))};
  std::cout << "spamassassin " << name << ": eval accuracy " << figures.accuracy << ", auc "
            << figures.auc << " (train " << train.size() << ", eval " << eval.size()
            << " emails; mean train loss " << figures.train_loss << ")\n";
  return figures;
}

}  // namespace

TEST_CASE("spamassassin_fixture_has_both_classes_in_both_splits", "[spamassassin]") {
  const Fixture& f = fixture();
  const auto spam = [](const Corpus& c) { return std::count(c.labels.begin(), c.labels.end(), 1); };
  CHECK(f.train.labels.size() + f.eval.labels.size() > 6000);
  CHECK(f.eval.labels.size() * 6 > f.train.labels.size());  // about 20% in eval
  CHECK(f.eval.labels.size() * 3 < f.train.labels.size());
  CHECK(spam(f.train) > 1000);
  CHECK(spam(f.eval) > 200);
}

TEST_CASE("spamassassin_hashed_logistic_regression_reaches_97_percent", "[spamassassin]") {
  const Figures f = train_and_evaluate(R"({
    "model": {"inputs": {"tokens": "sparse_ids"},
              "layers": [{"type": "embedding_bag", "name": "lr", "vocab": 262144, "dim": 1,
                          "combiner": "sqrtn", "initializer": "zeros"}],
              "loss": "sigmoid_cross_entropy"},
    "train": {"optimizer": {"type": "adam", "learning_rate": 0.05},
              "epochs": 5, "batch_size": 32, "shuffle_seed": 1},
    "updates": {"lr/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"}},
    "features": {"hash": "murmur3_32", "num_buckets": 262144, "ngrams": 1, "binary": true}})",
                                       "logistic regression");
  CHECK(f.accuracy >= 0.97);
  CHECK(f.auc >= 0.98);
}

TEST_CASE("spamassassin_embedding_bag_model_reaches_97_percent", "[spamassassin]") {
  const Figures f = train_and_evaluate(R"({
    "model": {"inputs": {"tokens": "sparse_ids"},
              "layers": [{"type": "embedding_bag", "name": "emb", "vocab": 262144, "dim": 16,
                          "combiner": "sqrtn"},
                         {"type": "dense", "name": "out", "units": 2}],
              "loss": "softmax_cross_entropy"},
    "train": {"optimizer": {"type": "adam", "learning_rate": 0.01},
              "epochs": 5, "batch_size": 32, "shuffle_seed": 1},
    "updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
                "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
                "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}},
    "features": {"hash": "murmur3_32", "num_buckets": 262144, "ngrams": 1, "binary": true}})",
                                       "embedding bag");
  CHECK(f.accuracy >= 0.97);
  CHECK(f.auc >= 0.98);
}
