// parse_finish_reason: the optional body of POST /v1/populations/{p}:finish.
#include <catch2/catch.hpp>
#include <string>

#include "server/api/finish_body.h"
#include "server/util/server_errors.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::server {
namespace {

using test::MessageContains;

TEST_CASE("finish_body_reads_the_reason_or_none", "[finish_body]") {
  CHECK(parse_finish_reason("").empty());
  CHECK(parse_finish_reason("{}").empty());
  CHECK(parse_finish_reason(R"({"reason": "accuracy 0.9 reached"})") == "accuracy 0.9 reached");
  CHECK(parse_finish_reason(R"({"reason": "é"})") == "é");
  CHECK(parse_finish_reason("{\"reason\": \"" + std::string(500, 'x') + "\"}").size() == 500);
}

TEST_CASE("finish_body_refuses_what_breaks_a_rule", "[finish_body]") {
  CHECK_THROWS_MATCHES(parse_finish_reason("reason"), InvalidInput,
                       MessageContains("must be a JSON object"));
  CHECK_THROWS_MATCHES(parse_finish_reason(R"({"reason": 3})"), InvalidInput,
                       MessageContains("reason must be a string"));
  CHECK_THROWS_MATCHES(parse_finish_reason(R"({"reason": "a", "reason": "b"})"), InvalidInput,
                       MessageContains("appears twice"));
  CHECK_THROWS_MATCHES(parse_finish_reason(R"({"reason": "a", "by": "me"})"), InvalidInput,
                       MessageContains("unknown field 'by'"));
  CHECK_THROWS_MATCHES(parse_finish_reason(R"({"reason": "two\nlines"})"), InvalidInput,
                       MessageContains("control characters"));
  CHECK_THROWS_MATCHES(parse_finish_reason("{\"reason\": \"" + std::string(501, 'x') + "\"}"),
                       InvalidInput, MessageContains("501 characters, over 500"));
  CHECK_THROWS_AS(parse_finish_reason(std::string(5000, ' ')), PayloadTooLarge);
}

}  // namespace
}  // namespace fedleaf::server
