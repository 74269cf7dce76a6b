#include "server/repository/result_summary.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "tests/core/error_matchers.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {

using test::MessageContains;

namespace {
ResultSummary summarize(const std::string& bytes, const std::string& kind) {
  return summarize_result(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), kind);
}
std::string with_metadata(const core::Metadata& metadata) {
  return test::to_string(core::write_safetensors({}, metadata));
}
}  // namespace

TEST_CASE("summarize_result_reads_train_and_evaluate_metadata", "[result_summary]") {
  const ResultSummary train = summarize(test::train_result({1}, 1, 1, 12, 0.25), "train");
  const ResultSummary eval = summarize(test::eval_result(5, 0.5, 0.75), "evaluate");

  CHECK(train.kind == "train");
  CHECK(train.num_examples == 12);
  CHECK(train.metrics.at("loss") == Approx(0.25));
  CHECK(eval.metrics.at("accuracy") == Approx(0.75));
  CHECK(eval.num_examples == 5);
}

TEST_CASE("summarize_result_rejects_broken_rules_naming_the_key", "[result_summary]") {
  // Regression: a metadata key given twice counted its last value.
  const std::string header =
      R"({"__metadata__": {"kind": "evaluate", "num_examples": "1", "num_examples": "999", "loss": "1"}})";
  std::string twice(8, '\0');
  for (int i = 0; i < 8; ++i) twice[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  CHECK_THROWS_MATCHES(summarize(twice + header, "evaluate"), InvalidInput,
                       MessageContains("result: the safetensors header names 'num_examples' (in "
                                       "'__metadata__') twice"));
  CHECK_THROWS_MATCHES(summarize("short", "train"), InvalidInput, MessageContains("truncated"));
  CHECK_THROWS_MATCHES(summarize(std::string("\xff\xff\0\0\0\0\0\0{}", 10), "train"), InvalidInput,
                       MessageContains("header length"));
  CHECK_THROWS_MATCHES(summarize(test::train_result({1}, 1, 1, 1), "evaluate"), InvalidInput,
                       MessageContains("'kind'"));
  CHECK_THROWS_MATCHES(summarize(with_metadata({{"kind", "evaluate"}, {"loss", "1"}}), "evaluate"),
                       InvalidInput, MessageContains("'num_examples'"));
  CHECK_THROWS_MATCHES(
      summarize(with_metadata({{"kind", "evaluate"}, {"num_examples", "2.5"}, {"loss", "1"}}),
                "evaluate"),
      InvalidInput, MessageContains("'num_examples'"));
  CHECK_THROWS_MATCHES(
      summarize(with_metadata({{"kind", "evaluate"}, {"num_examples", "2"}, {"loss", "nan"}}),
                "evaluate"),
      InvalidInput, MessageContains("'loss'"));
  CHECK_THROWS_MATCHES(
      summarize(with_metadata({{"kind", "evaluate"}, {"num_examples", "2"}}), "evaluate"),
      InvalidInput, MessageContains("'loss': missing"));
}

// Regression: loss 1e308 (finite) × num_examples overflowed the round's loss sum to inf.
TEST_CASE("summarize_result_bounds_each_metric", "[result_summary]") {
  const auto train = [](const std::string& key, const std::string& value) {
    core::Metadata m = {{"num_examples", "10"}, {"loss", "0.5"}};
    m[key] = value;
    return summarize(with_metadata(m), "train");
  };
  CHECK(train("loss", "1e100").metrics.at("loss") == 1e100);
  CHECK(train("loss", "0").metrics.at("loss") == 0);
  CHECK(train("accuracy", "1").metrics.at("accuracy") == 1);
  CHECK(train("auc", "0").metrics.at("auc") == 0);
  CHECK_THROWS_MATCHES(train("loss", "1e308"), InvalidInput,
                       MessageContains("'loss': '1e308' is outside [0, 1e+100]"));
  CHECK_THROWS_MATCHES(train("loss", "-0.5"), InvalidInput,
                       MessageContains("'loss': '-0.5' is outside [0, 1e+100]"));
  CHECK_THROWS_MATCHES(train("accuracy", "-1e308"), InvalidInput,
                       MessageContains("'accuracy': '-1e308' is outside [0, 1]"));
  CHECK_THROWS_MATCHES(train("auc", "1.0001"), InvalidInput,
                       MessageContains("'auc': '1.0001' is outside [0, 1]"));
}

// Regression: client text with a NUL cut the message (a C string) short of its rule.
TEST_CASE("summarize_result_quotes_client_text_whole_in_its_messages", "[result_summary]") {
  CHECK_THROWS_MATCHES(
      summarize(with_metadata({{"kind", std::string("\0evaluate", 9)}, {"num_examples", "1"}}),
                "train"),
      InvalidInput, MessageContains("'kind': '\\x00evaluate' does not match the train task"));
  CHECK_THROWS_MATCHES(
      summarize(with_metadata({{"num_examples", std::string("5\0", 2)}, {"loss", "1"}}), "train"),
      InvalidInput, MessageContains("'num_examples': '5\\x00' is not an integer > 0"));
}

TEST_CASE("summarize_result_rejects_a_header_over_its_cap_before_parsing_it", "[result_summary]") {
  std::string header = R"({"__metadata__": {"num_examples": "1", "loss": "1"}, "pad": [)";
  header += std::string(kMaxResultHeaderBytes, '1') + "]}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(header.size() >> (8 * i));
  CHECK_THROWS_MATCHES(summarize(bytes + header, "train"), InvalidInput,
                       MessageContains("bytes exceeds the 4194304 bytes a result header may have"));
}

TEST_CASE("summarize_result_rejects_a_header_nested_past_the_json_limit", "[result_summary]") {
  const std::string header =
      R"({"__metadata__": {"a": )" + std::string(100000, '[') + std::string(100000, ']') + "}}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(header.size() >> (8 * i));
  CHECK_THROWS_MATCHES(summarize(bytes + header, "train"), InvalidInput,
                       MessageContains("result: safetensors header: JSON nested deeper than 64"));
}

TEST_CASE("summarize_result_rejects_tensors_in_an_evaluate_result", "[result_summary]") {
  core::NamedTensors t;
  t.emplace("x", test::dense_f32({1}, [](std::size_t) { return 1; }));
  const std::string bytes = test::to_string(
      core::write_safetensors(t, {{"kind", "evaluate"}, {"num_examples", "1"}, {"loss", "1"}}));

  CHECK_THROWS_MATCHES(summarize(bytes, "evaluate"), InvalidInput, MessageContains("no tensors"));
}

}  // namespace fedleaf::server
