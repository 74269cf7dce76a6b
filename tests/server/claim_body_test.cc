// The claim body: min_round and wait_s, validated, wait capped.
#include "server/api/claim_body.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "server/util/server_errors.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::server {

using test::MessageContains;

TEST_CASE("claim_body_reads_min_round_and_wait_s_with_defaults", "[claim_body]") {
  CHECK(parse_claim_body("").min_round == 0);
  CHECK(parse_claim_body("").wait_s == 0);
  const ClaimBody body = parse_claim_body(R"({"min_round": 3, "wait_s": 2.5, "other": 1})");
  CHECK(body.min_round == 3);
  CHECK(body.wait_s == 2.5);
}

TEST_CASE("claim_body_caps_wait_s_at_the_server_limit", "[claim_body]") {
  CHECK(parse_claim_body(R"({"wait_s": 3600})").wait_s == kMaxClaimWaitS);
}

TEST_CASE("claim_body_rejects_bad_fields_naming_them", "[claim_body]") {
  CHECK_THROWS_MATCHES(parse_claim_body("[1]"), InvalidInput, MessageContains("JSON object"));
  CHECK_THROWS_MATCHES(parse_claim_body(R"({"min_round": -1})"), InvalidInput,
                       MessageContains("min_round"));
  CHECK_THROWS_MATCHES(parse_claim_body(R"({"min_round": 1.5})"), InvalidInput,
                       MessageContains("min_round"));
  CHECK_THROWS_MATCHES(parse_claim_body(R"({"wait_s": -1})"), InvalidInput,
                       MessageContains("wait_s"));
  CHECK_THROWS_MATCHES(parse_claim_body(R"({"wait_s": "20"})"), InvalidInput,
                       MessageContains("wait_s"));
  // Regression: the last of two min_round fields won.
  CHECK_THROWS_MATCHES(parse_claim_body(R"({"min_round": 5, "min_round": 0})"), InvalidInput,
                       MessageContains("claim body: the field 'min_round' appears twice"));
  CHECK(parse_claim_body(R"({"min_round": 5, "x": {"min_round": 0}})").min_round == 5);
}

// Regression: any body up to --max-body-bytes was parsed before the claim's token was checked.
TEST_CASE("claim_body_over_the_cap_is_refused_before_it_is_parsed", "[claim_body]") {
  std::string padded = R"({"min_round": 3})";
  padded.resize(kMaxClaimBodyBytes, ' ');
  CHECK(parse_claim_body(padded).min_round == 3);
  const std::string nested = std::string(kMaxClaimBodyBytes, '[');
  CHECK_THROWS_AS(parse_claim_body(nested), InvalidInput);
  CHECK_THROWS_MATCHES(parse_claim_body(nested + "]"), PayloadTooLarge,
                       MessageContains("claim body: 1025 bytes exceeds the 1024 bytes"));
}

}  // namespace fedleaf::server
