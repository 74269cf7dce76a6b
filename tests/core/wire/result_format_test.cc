#include "core/wire/result_format.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::core {

using test::MessageContains;

namespace {

std::vector<std::uint8_t> bytes_of(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}
ResultHeader read(const std::vector<std::uint8_t>& bytes, ResultKind kind) {
  return read_result_header(index_result(bytes.data(), bytes.size()), kind);
}
ResultHeader read(const std::string& bytes, ResultKind kind) { return read(bytes_of(bytes), kind); }
std::vector<std::uint8_t> with_metadata(const Metadata& metadata) {
  return write_safetensors({}, metadata);
}
// A safetensors file whose header is `header`, verbatim.
std::string with_header(const std::string& header) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header;
}
std::vector<std::uint8_t> train_result(const std::string& num_examples) {
  NamedTensors t;
  t.emplace("out/bias", DenseTensor::zeros(DType::F32, {2}));
  return write_safetensors(t,
                           {{"kind", "train"}, {"num_examples", num_examples}, {"loss", "0.25"}});
}

}  // namespace

TEST_CASE("result_metadata_writes_what_read_result_header_reads", "[result_format]") {
  ResultReport train;
  train.num_examples = 12;
  train.loss = 0.25;
  train.accuracy = 0.5;
  train.task_id = "7";
  ResultReport eval;
  eval.kind = ResultKind::kEvaluate;
  eval.num_examples = 5;
  eval.loss = 1.0 / 3.0;
  eval.accuracy = 0.75;
  eval.auc = 0.875;

  const ResultHeader t = read(with_metadata(result_metadata(train)), ResultKind::kTrain);
  const ResultHeader e = read(with_metadata(result_metadata(eval)), ResultKind::kEvaluate);

  CHECK(result_metadata(train) == Metadata{{"kind", "train"},
                                           {"num_examples", "12"},
                                           {"loss", "0.25"},
                                           {"accuracy", "0.5"},
                                           {"task_id", "7"}});
  CHECK(result_metadata(eval).at("loss") == "0.333333333");
  CHECK(result_metadata(eval).count("task_id") == 0);
  CHECK(t.kind == ResultKind::kTrain);
  CHECK(t.num_examples == 12);
  CHECK(t.metrics.at("loss") == Approx(0.25));
  CHECK(t.task_id == "7");
  CHECK(e.kind == ResultKind::kEvaluate);
  CHECK(e.num_examples == 5);
  CHECK(e.metrics.at("accuracy") == Approx(0.75));
  CHECK(e.metrics.at("auc") == Approx(0.875));
  CHECK(e.task_id.empty());
}

TEST_CASE("read_result_header_takes_an_absent_kind_as_train", "[result_format]") {
  const ResultHeader h =
      read(with_metadata({{"num_examples", "3"}, {"loss", "1"}}), ResultKind::kTrain);

  CHECK(h.kind == ResultKind::kTrain);
  CHECK(h.num_examples == 3);
  CHECK_THROWS_MATCHES(
      read(with_metadata({{"num_examples", "3"}, {"loss", "1"}}), ResultKind::kEvaluate),
      InvalidInput, MessageContains("'kind': 'train' does not match the evaluate task"));
}

TEST_CASE("read_result_header_rejects_broken_rules_naming_the_key", "[result_format]") {
  // Regression: a metadata key given twice counted its last value. The header's framing and JSON
  // are the safetensors index's rules (its messages), the fields the result's.
  const std::string twice = with_header(
      R"({"__metadata__": {"kind": "evaluate", "num_examples": "1", "num_examples": "999", "loss": "1"}})");
  CHECK_THROWS_MATCHES(read(twice, ResultKind::kEvaluate), InvalidInput,
                       MessageContains("safetensors: the header names 'num_examples' (in "
                                       "'__metadata__') twice"));
  CHECK_THROWS_MATCHES(read(std::string("short"), ResultKind::kTrain), InvalidInput,
                       MessageContains("truncated"));
  CHECK_THROWS_MATCHES(read(std::string("\xff\xff\0\0\0\0\0\0{}", 10), ResultKind::kTrain),
                       InvalidInput, MessageContains("header length"));
  CHECK_THROWS_MATCHES(read(with_header("[1]"), ResultKind::kTrain), InvalidInput,
                       MessageContains("safetensors: the header must start with '{'"));
  CHECK_THROWS_MATCHES(read(with_header("{}"), ResultKind::kTrain), InvalidInput,
                       MessageContains("result metadata 'num_examples': missing"));
  CHECK_THROWS_MATCHES(read(train_result("1"), ResultKind::kEvaluate), InvalidInput,
                       MessageContains("'kind'"));
  CHECK_THROWS_MATCHES(
      read(with_metadata({{"kind", "evaluate"}, {"loss", "1"}}), ResultKind::kEvaluate),
      InvalidInput, MessageContains("result metadata 'num_examples': missing"));
  CHECK_THROWS_MATCHES(
      read(with_metadata({{"kind", "evaluate"}, {"num_examples", "2"}, {"loss", "nan"}}),
           ResultKind::kEvaluate),
      InvalidInput, MessageContains("'loss': 'nan' is not a finite number"));
  CHECK_THROWS_MATCHES(
      read(with_metadata({{"kind", "evaluate"}, {"num_examples", "2"}, {"loss", ""}}),
           ResultKind::kEvaluate),
      InvalidInput, MessageContains("'loss': empty, expected a number"));
  CHECK_THROWS_MATCHES(
      read(with_metadata({{"kind", "evaluate"}, {"num_examples", "2"}}), ResultKind::kEvaluate),
      InvalidInput, MessageContains("'loss': missing"));
  CHECK_THROWS_MATCHES(
      read(with_header(R"({"__metadata__": {"num_examples": 2, "loss": "1"}})"),
           ResultKind::kTrain),
      InvalidInput,
      MessageContains("safetensors: __metadata__ value of 'num_examples' must be a string"));
}

// One rule for num_examples wherever a result is read: digits only, in [1, 2^53] (the server's
// summary took strtoll > 0, the aggregator [1, 2^53]).
TEST_CASE("read_result_header_takes_num_examples_in_1_to_2_pow_53", "[result_format]") {
  CHECK(read(train_result("1"), ResultKind::kTrain).num_examples == 1);
  CHECK(read(train_result("9007199254740992"), ResultKind::kTrain).num_examples ==
        9007199254740992u);
  for (const char* bad :
       {"0", "9007199254740993", "2.5", "-3", "+5", " 5", "5 ", "1e3", "", "00000000000000001"}) {
    INFO(bad);
    CHECK_THROWS_MATCHES(read(train_result(bad), ResultKind::kTrain), InvalidInput,
                         MessageContains("result metadata 'num_examples': '" + std::string(bad) +
                                         "' is not an integer in [1, 2^53]"));
  }
}

// Regression: loss 1e308 (finite) × num_examples overflowed the round's loss sum to inf.
TEST_CASE("read_result_header_bounds_each_metric", "[result_format]") {
  const auto train = [](const std::string& key, const std::string& value) {
    Metadata m = {{"num_examples", "10"}, {"loss", "0.5"}};
    m[key] = value;
    return read(with_metadata(m), ResultKind::kTrain);
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
TEST_CASE("read_result_header_quotes_client_text_whole_in_its_messages", "[result_format]") {
  CHECK_THROWS_MATCHES(
      read(with_metadata({{"kind", std::string("\0evaluate", 9)}, {"num_examples", "1"}}),
           ResultKind::kTrain),
      InvalidInput, MessageContains("'kind': '\\x00evaluate' does not match the train task"));
  CHECK_THROWS_MATCHES(read(with_metadata({{"num_examples", std::string("5\0", 2)}, {"loss", "1"}}),
                            ResultKind::kTrain),
                       InvalidInput,
                       MessageContains("'num_examples': '5\\x00' is not an integer in [1, 2^53]"));
}

TEST_CASE("read_result_header_rejects_a_header_over_its_cap_before_parsing_it", "[result_format]") {
  std::string header = R"({"__metadata__": {"num_examples": "1", "loss": "1"}, "pad": [)";
  header += std::string(kMaxResultHeaderBytes, '1') + "]}";
  CHECK_THROWS_MATCHES(read(with_header(header), ResultKind::kTrain), InvalidInput,
                       MessageContains("bytes exceeds the 4194304 bytes a result header may have"));
}

TEST_CASE("read_result_header_rejects_a_header_nested_past_the_json_limit", "[result_format]") {
  const std::string header =
      R"({"__metadata__": {"a": )" + std::string(100000, '[') + std::string(100000, ']') + "}}";
  CHECK_THROWS_MATCHES(read(with_header(header), ResultKind::kTrain), InvalidInput,
                       MessageContains("safetensors: header: JSON nested deeper than 64"));
}

TEST_CASE("read_result_header_rejects_tensors_in_an_evaluate_result", "[result_format]") {
  NamedTensors t;
  t.emplace("x", DenseTensor::zeros(DType::F32, {1}));
  const auto bytes =
      write_safetensors(t, {{"kind", "evaluate"}, {"num_examples", "1"}, {"loss", "1"}});

  CHECK_THROWS_MATCHES(read(bytes, ResultKind::kEvaluate), InvalidInput,
                       MessageContains("an evaluate result carries no tensors, got 1"));
}

// The header is parsed once, by the index: what the index refuses (here bytes the arrays do not
// cover) is refused before any field is read, and the fields are read from the index alone.
TEST_CASE("read_result_header_reads_the_fields_of_the_index_of_the_result", "[result_format]") {
  std::vector<std::uint8_t> trailing = train_result("3");
  trailing.push_back(0);
  const std::vector<std::uint8_t> bytes = train_result("3");
  SafetensorsIndex index = index_result(bytes.data(), bytes.size());

  CHECK_THROWS_MATCHES(index_result(trailing.data(), trailing.size()), InvalidInput,
                       MessageContains("(trailing bytes)"));
  CHECK(read_result_header(index, ResultKind::kTrain).num_examples == 3);
  index.metadata["num_examples"] = "4";
  CHECK(read_result_header(index, ResultKind::kTrain).num_examples == 4);
}

TEST_CASE("result_kind_name_names_both_kinds", "[result_format]") {
  CHECK(result_kind_name(ResultKind::kTrain) == "train");
  CHECK(result_kind_name(ResultKind::kEvaluate) == "evaluate");
}

}  // namespace fedleaf::core
