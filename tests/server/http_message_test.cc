#include "server/api/http_message.h"

#include <catch2/catch.hpp>

namespace fedleaf::server {

TEST_CASE("origin_form keeps an origin-form target and strips an absolute-form one") {
  CHECK(origin_form("/v1/populations/1?x=2") == "/v1/populations/1?x=2");
  CHECK(origin_form("http://127.0.0.1:8080/healthz") == "/healthz");
  CHECK(origin_form("HTTP://example.org/v1/tasks/3/result") == "/v1/tasks/3/result");
  CHECK(origin_form("https://user@example.org:443/v1/populations?all=1") ==
        "/v1/populations?all=1");
  CHECK(origin_form("http://example.org") == "/");
  CHECK(origin_form("http://example.org?q=1") == "/?q=1");
  CHECK(origin_form("*") == "*");
  CHECK(origin_form("ftp://example.org/x") == "ftp://example.org/x");
  CHECK(origin_form("http:/x") == "http:/x");
}

TEST_CASE("Request reads lower-case headers and its path without the query") {
  Request request{
      "GET", "/v1/populations/1/rounds/2/model?etag=1", {{"authorization", "Bearer a"}}, ""};
  CHECK(request.header("authorization") == "Bearer a");
  CHECK(request.header("Authorization") == "Bearer a");
  CHECK(request.header("content-type").empty());
  CHECK(request.path() == "/v1/populations/1/rounds/2/model");
}

}  // namespace fedleaf::server
