// A one-input text plan is a records plan at parse time: its input reads the record field "text"
// through the text featurizer (core/features/input_features.h), so texts take the one records
// path (dataset_from_records) and give the dataset — and the training — of the text featurizer
// over texts back to back (build_hashed_text_dataset), bit for bit.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/data/dataset.h"
#include "core/features/input_features.h"
#include "core/features/records_dataset.h"
#include "core/features/text_features.h"
#include "core/train/executor.h"
#include "core/train/plan.h"
#include "tests/core/error_matchers.h"
#include "tests/fixtures/spamassassin_fixture.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

// scripts/demo/spam_plan.json's model and features, with `features` for its top-level
// "features" (none when empty) and `input` for its only input.
std::string text_plan(const std::string& features,
                      const std::string& input = R"("tokens": "sparse_ids")") {
  return R"({"model": {"inputs": {)" + input + R"(},
      "layers": [{"type": "embedding_bag", "name": "emb", "vocab": 262144, "dim": 16,
                  "combiner": "sqrtn"},
                 {"type": "dense", "name": "out", "units": 2}],
      "loss": "softmax_cross_entropy"},
    "train": {"optimizer": {"type": "adam", "learning_rate": 0.03}, "batch_size": 32},
    "updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
                "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
                "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}})" +
         (features.empty() ? "" : R"(, "features": )" + features) + "}";
}

const std::string kSpamFeatures =
    R"({"hash": "murmur3_32", "num_buckets": 262144, "ngrams": 1, "binary": true})";

void check_same(const Dataset& a, const Dataset& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.num_inputs() == b.num_inputs());
  CHECK(a.input_name(0) == b.input_name(0));
  CHECK(a.labels() == b.labels());
  CHECK(a.num_features() == b.num_features());
  CHECK(a.offsets() == b.offsets());
  CHECK(a.compact_ids() == b.compact_ids());
  CHECK(a.distinct_ids().rows() == b.distinct_ids().rows());
  CHECK(a.weights() == b.weights());
}

// `texts` back to back, and as records [{"text": ...}].
struct Texts {
  std::string joined;
  std::vector<std::uint32_t> offsets{0};
  nlohmann::json records = nlohmann::json::array();
  std::vector<std::int32_t> labels;

  void add(const std::string& text, std::int32_t label) {
    joined += text;
    offsets.push_back(static_cast<std::uint32_t>(joined.size()));
    records.push_back({{"text", text}});
    labels.push_back(label);
  }
};

}  // namespace

TEST_CASE("a_one_input_text_plan_is_rewritten_into_a_records_plan_reading_text", "[text_records]") {
  const Plan plan = parse_plan(text_plan(kSpamFeatures));
  REQUIRE(plan.input_features.size() == 1);
  const InputFeatures& text = plan.input_features[0];
  CHECK(text.input.empty());  // the only input, whatever its name
  CHECK(text.path == "plan.features");
  CHECK(text.kind == FeatureKind::kText);
  CHECK(text.fields == std::vector<std::string>{"text"});
  CHECK(text.text.binary);
  CHECK(text.text.num_buckets == 262144);
  // The same from the plan's JSON alone (the featurizer's parser).
  REQUIRE(parse_input_features(text_plan(kSpamFeatures)).size() == 1);
  CHECK(parse_input_features(text_plan(kSpamFeatures, R"("t": {"type": "sparse_ids"})"))[0].input ==
        "");

  // No top-level "features": ids come from elsewhere (a CSR dataset), nothing is rewritten.
  CHECK(parse_plan(text_plan("")).input_features.empty());
  // An input with features of its own keeps them; the top-level ones are not its.
  const Plan own = parse_plan(text_plan(
      kSpamFeatures, R"("tokens": {"type": "sparse_ids", "features": {"text": "body"}})"));
  REQUIRE(own.input_features.size() == 1);
  CHECK(own.input_features[0].input == "tokens");
  CHECK(own.input_features[0].fields == std::vector<std::string>{"body"});
}

TEST_CASE("texts_as_records_give_the_dataset_and_the_training_of_the_text_featurizer",
          "[text_records]") {
  Texts t;
  t.add("Subject: WIN cash now!!\n\nClick here to win, win, WIN", 1);
  t.add("", 0);
  t.add("naïve café — 東京 mañana \xF0\x9F\x98\x80 emoji", 0);
  t.add(std::string("nul\0inside the text", 19), 1);
  t.add("\"quoted\" \\ back\\slash\ttab\r\nline", 0);
  // And a slice of the SpamAssassin fixture: real emails, headers and all.
  const fedleaf::test::SpamAssassinCorpus corpus =
      fedleaf::test::read_spamassassin_fixture(FEDLEAF_SPAMASSASSIN_FIXTURE).train;
  for (std::size_t i = 0; i < 300 && i + 1 < corpus.offsets.size(); ++i) {
    t.add(corpus.texts.substr(corpus.offsets[i], corpus.offsets[i + 1] - corpus.offsets[i]),
          corpus.labels[i]);
  }
  const std::string plan_json = text_plan(kSpamFeatures);
  const Plan plan = parse_plan(plan_json);
  const Dataset records = dataset_from_records(plan.input_features, t.records.dump(), t.labels);
  const Dataset texts =
      build_hashed_text_dataset(t.joined.data(), t.joined.size(), t.offsets.data(), t.labels.size(),
                                t.labels.data(), *plan.features);
  check_same(records, texts);

  const std::vector<std::uint8_t> model = initialize_model(plan_json, 7);
  ExecuteOptions options;
  options.task_id = "text-records";
  CHECK(execute(plan_json, model.data(), model.size(), records, options) ==
        execute(plan_json, model.data(), model.size(), texts, options));
}

TEST_CASE("a_text_plans_buckets_are_checked_against_its_table_as_before", "[text_records]") {
  // The rewritten input feeds every table: the error names the top-level field.
  const std::string small = R"({"model": {"inputs": {"x": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "emb", "vocab": 100, "dim": 2},
                 {"type": "dense", "name": "out", "units": 1}],
      "loss": "sigmoid_cross_entropy"},
    "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}},
    "updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "sum"}},
    "features": {"num_buckets": 101}})";
  CHECK_THROWS_MATCHES(
      parse_plan(small), fedleaf::InvalidInput,
      MessageContains("plan.features.num_buckets: 101 buckets exceed the vocab 100 "
                      "of table 'emb/weight' (an id would fall outside the table)"));
}
