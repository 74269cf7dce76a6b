#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/features/featurize_records.h"
#include "core/features/input_features.h"
#include "core/features/records_dataset.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

const std::string kPlan = R"({"model": {"inputs": {
    "body": {"type": "sparse_ids", "features": {"text": "body", "num_buckets": 4096}},
    "sender": {"type": "sparse_ids", "features": {"column": "domain", "hash_buckets": 1000}},
    "cross": {"type": "sparse_ids", "features": {"cross": ["domain", "words"],
                                                 "hash_buckets": 5000}},
    "num": {"type": "dense", "dim": 2, "features": {"numeric": [
        {"field": "n", "transform": "log1p"}, {"field": "m", "default": 3}]}}}}})";

const std::string kRecords = R"([
  {"body": "Win CASH now, win!", "domain": "example.com", "words": ["win", "cash"], "n": 120},
  {"body": null, "domain": "mail.org", "words": [], "m": 2.5},
  {"domain": true, "words": ["a", "b", "c"], "n": 0}])";

// Every fact a Dataset holds, input by input: two datasets equal here train alike.
void check_same(const Dataset& a, const Dataset& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.num_inputs() == b.num_inputs());
  CHECK(a.labels() == b.labels());
  CHECK(a.targets() == b.targets());
  CHECK(a.target_width() == b.target_width());
  for (std::size_t i = 0; i < a.num_inputs(); ++i) {
    INFO("input " << a.input_name(i));
    CHECK(a.input_name(i) == b.input_name(i));
    CHECK(a.is_sparse(i) == b.is_sparse(i));
    CHECK(a.num_features(i) == b.num_features(i));
    CHECK(a.offsets(i) == b.offsets(i));
    CHECK(a.compact_ids(i) == b.compact_ids(i));
    CHECK(a.distinct_ids(i).rows() == b.distinct_ids(i).rows());
    CHECK(a.weights(i) == b.weights(i));
    CHECK(a.dense_values(i) == b.dense_values(i));
  }
}

}  // namespace

TEST_CASE("dataset_from_records_is_featurize_records_then_from_inputs", "[features]") {
  const std::vector<InputFeatures> inputs = parse_input_features(kPlan);
  const Dataset one = dataset_from_records(inputs, kRecords, {1, 0, 1});
  const Dataset two = Dataset::from_inputs(featurize_records(inputs, kRecords), {1, 0, 1});
  check_same(one, two);
  CHECK(one.num_inputs() == 4);
  CHECK(one.input_name(2) == "num");  // by name: body, cross, num, sender
  CHECK(one.offsets(0) != std::vector<std::uint32_t>{0, 0, 0, 0});  // the body hashed to ids

  const Dataset targets = dataset_from_records(inputs, kRecords, Dataset::Targets{{1, 2, 3}, 1});
  check_same(targets, Dataset::from_inputs(featurize_records(inputs, kRecords),
                                           Dataset::Targets{{1, 2, 3}, 1}));
  CHECK(targets.has_targets());
}

TEST_CASE("dataset_from_records_refuses_a_label_count_other_than_the_records", "[features]") {
  const std::vector<InputFeatures> inputs = parse_input_features(kPlan);
  CHECK_THROWS_MATCHES(dataset_from_records(inputs, kRecords, {1, 0}), fedleaf::InvalidInput,
                       MessageContains("labels: 2 labels for 3 records (one per record)"));
  CHECK_THROWS_MATCHES(dataset_from_records(inputs, kRecords, Dataset::Targets{{1, 2, 3, 4}, 2}),
                       fedleaf::InvalidInput,
                       MessageContains("labels: 2 rows of targets for 3 records"));
  CHECK_THROWS_MATCHES(dataset_from_records(inputs, kRecords, Dataset::Targets{{1, 2, 3, 4}, 3}),
                       fedleaf::InvalidInput,
                       MessageContains("not a multiple of the target width"));
  // The featurizer's and the dataset's own errors pass through unchanged.
  CHECK_THROWS_MATCHES(dataset_from_records(inputs, R"([{"n": "many"}])", {0}),
                       fedleaf::InvalidInput, MessageContains("records[0].n: expected a number"));
  CHECK_THROWS_MATCHES(dataset_from_records(inputs, kRecords, {1, -1, 0}), fedleaf::InvalidInput,
                       MessageContains("label -1 of example 1 is negative"));
  CHECK_THROWS_MATCHES(dataset_from_records({}, kRecords, {1, 0, 1}), fedleaf::InvalidInput,
                       MessageContains("dataset: no inputs"));
}
