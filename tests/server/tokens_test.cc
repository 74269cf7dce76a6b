#include "server/util/tokens.h"

#include <catch2/catch.hpp>
#include <set>

namespace fedleaf::server {

TEST_CASE("generate_token_gives_distinct_url_safe_tokens", "[tokens]") {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string t = generate_token();
    CHECK(t.size() == 46);
    CHECK(t.rfind("fl_", 0) == 0);  // never starts with '-', which command lines misread
    CHECK(t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
          std::string::npos);
    seen.insert(t);
  }
  CHECK(seen.size() == 100);
}

TEST_CASE("token_matches_only_the_hashed_token", "[tokens]") {
  const std::string hash = hash_token("secret-token");

  CHECK(token_matches("secret-token", hash));
  CHECK_FALSE(token_matches("secret-tokem", hash));
  CHECK_FALSE(token_matches("", hash));
  CHECK(hash.size() == 64);
}

TEST_CASE("constant_time_equals_compares_whole_strings", "[tokens]") {
  CHECK(constant_time_equals("abc", "abc"));
  CHECK_FALSE(constant_time_equals("abc", "abd"));
  CHECK_FALSE(constant_time_equals("abc", "ab"));
  CHECK(constant_time_equals("", ""));
}

TEST_CASE("parse_bearer_accepts_only_the_bearer_scheme", "[tokens]") {
  CHECK(parse_bearer("Bearer abc") == std::optional<std::string>("abc"));
  CHECK(parse_bearer("bearer   abc  ") == std::optional<std::string>("abc"));
  CHECK_FALSE(parse_bearer("Basic abc"));
  CHECK_FALSE(parse_bearer("Bearer "));
  CHECK_FALSE(parse_bearer(""));
}

}  // namespace fedleaf::server
