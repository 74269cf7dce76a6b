#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/features/murmur3.h"
#include "core/features/text_features.h"
#include "core/train/plan.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;
using Strings = std::vector<std::string>;

TEST_CASE("tokenize_lowercases_splits_on_non_alphanumerics_and_bounds_lengths", "[text]") {
  TextFeatureOptions opt;
  opt.max_token_length = 6;
  CHECK(tokenize("Buy NOW!!! a 2x-cheaper_viagra, www.x.com $100", opt) ==
        Strings{"buy", "now", "2x", "viagra", "www", "com", "100"});
  opt.lowercase = false;
  opt.min_token_length = 1;
  CHECK(tokenize("Ab c", opt) == Strings{"Ab", "c"});
}

TEST_CASE("tokenize_keeps_utf8_bytes_inside_tokens", "[text]") {
  TextFeatureOptions opt;
  CHECK(tokenize("Caf\xc3\xa9 \xc3\x9c"
                 "ber!",
                 opt) == Strings{"caf\xc3\xa9",
                                 "\xc3\x9c"
                                 "ber"});
}

TEST_CASE("tokenize_skips_headers_up_to_the_first_empty_line", "[text]") {
  TextFeatureOptions opt;
  opt.skip_headers = true;
  CHECK(tokenize("Subject: hi\r\nFrom: me\r\n\r\nbody text\n\nmore", opt) ==
        Strings{"body", "text", "more"});
  CHECK(tokenize("Subject: hi\n\nbody", opt) == Strings{"body"});
  CHECK(tokenize("no empty line here", opt) == Strings{"no", "empty", "line", "here"});
}

TEST_CASE("hashed_features_are_murmur3_buckets_with_summed_counts", "[text]") {
  TextFeatureOptions opt;
  opt.num_buckets = 1000;
  std::vector<std::uint32_t> ids;
  std::vector<float> weights;

  hash_text_features("spam ham spam", opt, ids, weights);

  const std::uint32_t spam = murmur3_32("spam", 0) % 1000;
  const std::uint32_t ham = murmur3_32("ham", 0) % 1000;
  REQUIRE(ids.size() == 2);
  CHECK(ids == (spam < ham ? std::vector<std::uint32_t>{spam, ham}
                           : std::vector<std::uint32_t>{ham, spam}));
  CHECK(weights[ids[0] == spam ? 0 : 1] == 2.0f);
  CHECK(weights[ids[0] == ham ? 0 : 1] == 1.0f);

  opt.binary = true;
  hash_text_features("spam ham spam", opt, ids, weights);
  CHECK(weights == std::vector<float>{1.0f, 1.0f});
}

TEST_CASE("signed_hash_takes_the_sign_from_bit_31", "[text]") {
  TextFeatureOptions opt;
  opt.num_buckets = 1u << 30;
  opt.signed_hash = true;
  std::vector<std::uint32_t> ids;
  std::vector<float> weights;
  for (const char* word : {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}) {
    hash_text_features(word, opt, ids, weights);
    const std::uint32_t h = murmur3_32(word, 0);
    REQUIRE(ids.size() == 1);
    CHECK(ids[0] == h % opt.num_buckets);
    CHECK(weights[0] == ((h >> 31) ? -1.0f : 1.0f));
  }
}

TEST_CASE("ngrams_add_space_joined_runs_of_kept_tokens", "[text]") {
  TextFeatureOptions opt;
  opt.num_buckets = 1u << 31;
  opt.ngrams = 3;
  std::vector<std::uint32_t> ids;
  std::vector<float> weights;

  hash_text_features("aa, b bb cc", opt, ids, weights);  // "b" is too short and dropped

  std::vector<std::uint32_t> expected;
  for (const char* f : {"aa", "bb", "cc", "aa bb", "bb cc", "aa bb cc"}) {
    expected.push_back(murmur3_32(f, 0) % opt.num_buckets);
  }
  std::sort(expected.begin(), expected.end());
  CHECK(ids == expected);
}

TEST_CASE("build_hashed_text_dataset_reads_concatenated_texts", "[text]") {
  TextFeatureOptions opt;
  opt.num_buckets = 64;
  const std::string texts = "hello worldhello";
  const std::vector<std::uint32_t> offsets{0, 11, 11, 16};
  const std::vector<std::int32_t> labels{1, 0, 1};

  const Dataset d =
      build_hashed_text_dataset(texts.data(), texts.size(), offsets.data(), 3, labels.data(), opt);

  CHECK(d.size() == 3);
  CHECK(d.num_features() == 64);
  CHECK(d.offsets() == std::vector<std::uint32_t>{0, 2, 2, 3});
  CHECK(d.global_ids()[2] == murmur3_32("hello", 0) % 64);
  CHECK(d.labels() == labels);

  const std::vector<std::uint32_t> bad{0, 20};
  CHECK_THROWS_MATCHES(
      build_hashed_text_dataset(texts.data(), texts.size(), bad.data(), 1, labels.data(), opt),
      fedleaf::InvalidInput, MessageContains("text 0 spans bytes [0, 20)"));
  TextFeatureOptions zero = opt;
  zero.num_buckets = 0;
  CHECK_THROWS_MATCHES(
      build_hashed_text_dataset(texts.data(), texts.size(), offsets.data(), 3, labels.data(), zero),
      fedleaf::InvalidInput, MessageContains("features.num_buckets"));
}

TEST_CASE("text_features_come_from_the_plan_features_section", "[text]") {
  const TextFeatureOptions o = text_features_from_plan(
      R"({"features": {"hash": "murmur3_32", "num_buckets": 1024, "ngrams": 2, "signed": true,
                       "lowercase": false, "binary": true, "skip_headers": true,
                       "min_token_length": 3, "max_token_length": 20, "seed": 9}})");
  CHECK(o.num_buckets == 1024);
  CHECK(o.ngrams == 2);
  CHECK(o.signed_hash);
  CHECK_FALSE(o.lowercase);
  CHECK(o.binary);
  CHECK(o.skip_headers);
  CHECK(o.min_token_length == 3);
  CHECK(o.max_token_length == 20);
  CHECK(o.seed == 9);
  CHECK(text_features_from_plan("{}").num_buckets == TextFeatureOptions{}.num_buckets);
  CHECK_THROWS_MATCHES(text_features_from_plan(R"({"features": {"hash": "md5"}})"),
                       fedleaf::InvalidInput,
                       MessageContains("plan.features.hash: unknown hash 'md5'"));
  CHECK_THROWS_MATCHES(text_features_from_plan(R"({"features": {"ngrams": 0}})"),
                       fedleaf::InvalidInput, MessageContains("plan.features.ngrams"));
}

TEST_CASE("text_feature_options_parse_from_a_json_object_at_a_path", "[text]") {
  const auto o = parse_text_feature_options(
      nlohmann::json::parse(R"({"num_buckets": 64, "ngrams": 3, "signed": true, "seed": 4})"),
      "plan.model.inputs.body.features");
  CHECK(o.num_buckets == 64);
  CHECK(o.ngrams == 3);
  CHECK(o.signed_hash);
  CHECK(o.seed == 4);
  CHECK(o.lowercase == TextFeatureOptions{}.lowercase);
  const auto with_field = nlohmann::json::parse(R"({"text": "body", "ngrams": 2})");
  CHECK_THROWS_MATCHES(parse_text_feature_options(with_field, "p"), fedleaf::InvalidInput,
                       MessageContains("p: unknown field 'text'"));
  CHECK(parse_text_feature_options(with_field, "p", /*check_fields=*/false).ngrams == 2);
  CHECK_THROWS_MATCHES(parse_text_feature_options(nlohmann::json::parse(R"({"ngrams": 9})"), "q.r"),
                       fedleaf::InvalidInput,
                       MessageContains("q.r.ngrams: expected an integer in [1, 8]"));
  CHECK_THROWS_MATCHES(
      parse_text_feature_options(
          nlohmann::json::parse(R"({"min_token_length": 4, "max_token_length": 3})"), "q"),
      fedleaf::InvalidInput, MessageContains("q.max_token_length: must be >= min_token_length"));
}
