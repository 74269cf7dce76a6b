#include "server/http/cors_policy.h"

#include <catch2/catch.hpp>

namespace fedleaf::server {

namespace {

std::string value(const HeaderList& headers, const std::string& name) {
  for (const auto& [n, v] : headers) {
    if (n == name) return v;
  }
  return {};
}

}  // namespace

TEST_CASE("cors_policy_allows_listed_origins_and_never_a_missing_one") {
  const CorsPolicy cors({"http://allowed.example"});

  CHECK(cors.allows("http://allowed.example"));
  CHECK_FALSE(cors.allows("http://other.example"));
  CHECK_FALSE(cors.allows(""));
  CHECK(cors.response_headers("http://other.example").empty());
  CHECK(cors.preflight_headers("http://other.example").empty());
}

TEST_CASE("cors_policy_answers_an_allowed_origin_with_itself_and_exposes_protocol_headers") {
  const CorsPolicy cors({"http://allowed.example"});

  const HeaderList headers = cors.response_headers("http://allowed.example");

  CHECK(value(headers, "Access-Control-Allow-Origin") == "http://allowed.example");
  CHECK(value(headers, "Vary") == "Origin");
  CHECK(value(headers, "Access-Control-Expose-Headers") ==
        "ETag, Retry-After, Fedleaf-Retry-After-Ms, Fedleaf-Population-State, Fedleaf-Version, "
        "Location");
}

TEST_CASE("cors_policy_with_a_star_allows_any_origin_answered_with_star") {
  const CorsPolicy cors({"*"});

  CHECK(cors.allows("http://anyone.example"));
  CHECK(value(cors.response_headers("http://anyone.example"), "Access-Control-Allow-Origin") ==
        "*");
  CHECK_FALSE(cors.allows(""));
}

TEST_CASE("cors_policy_preflight_names_methods_headers_and_max_age") {
  const CorsPolicy cors({"http://allowed.example"});

  const HeaderList headers = cors.preflight_headers("http://allowed.example");

  CHECK(value(headers, "Access-Control-Allow-Methods") == "GET, HEAD, POST, PUT, OPTIONS");
  CHECK(value(headers, "Access-Control-Allow-Headers") ==
        "Authorization, Content-Type, Fedleaf-Version, Fedleaf-Device, If-None-Match");
  CHECK(value(headers, "Access-Control-Max-Age") == "600");
}

}  // namespace fedleaf::server
