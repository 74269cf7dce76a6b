#include "server/http/request_framing.h"

#include <catch2/catch.hpp>

#include "core/error.h"

namespace fedleaf::server {

namespace http = boost::beast::http;

TEST_CASE("transfer_codings_lists_every_coding_in_order_lowercased") {
  http::request_header<> header;
  header.insert(http::field::transfer_encoding, "gzip ,\t");
  header.insert(http::field::transfer_encoding, " Chunked");

  CHECK(transfer_codings(header) == "gzip, chunked");
  CHECK(transfer_codings(http::request_header<>{}).empty());
}

TEST_CASE("check_transfer_codings_accepts_none_or_chunked_only") {
  http::request_header<> none;
  http::request_header<> chunked;
  chunked.insert(http::field::transfer_encoding, "CHUNKED");
  http::request_header<> gzip;
  gzip.insert(http::field::transfer_encoding, "gzip, chunked");

  CHECK_NOTHROW(check_transfer_codings(none));
  CHECK_NOTHROW(check_transfer_codings(chunked));
  CHECK_THROWS_AS(check_transfer_codings(gzip), InvalidInput);
}

TEST_CASE("is_single_value_header_names_authorization_version_and_content_type") {
  CHECK(is_single_value_header("Authorization"));
  CHECK(is_single_value_header("fedleaf-version"));
  CHECK(is_single_value_header("Content-Type"));
  CHECK_FALSE(is_single_value_header("accept"));
}

TEST_CASE("to_request_lowercases_names_and_reads_the_target_in_origin_form") {
  http::request<http::string_body> message{http::verb::put, "http://host:80/v1/tasks/3/result", 11};
  message.set("Fedleaf-Version", "0.1");
  message.insert("Accept", "a");
  message.insert("Accept", "b");
  message.body() = "bytes";

  const Request request = to_request(std::move(message));

  CHECK(request.method == "PUT");
  CHECK(request.target == "/v1/tasks/3/result");
  CHECK(request.headers.at("fedleaf-version") == "0.1");
  CHECK(request.headers.at("accept") == "a");
  CHECK(request.body == "bytes");
}

TEST_CASE("to_request_rejects_a_repeated_single_value_header") {
  http::request<http::string_body> message{http::verb::post, "/v1/populations", 11};
  message.insert("Content-Type", "a/b");
  message.insert("content-type", "c/d");

  REQUIRE_THROWS_WITH(to_request(std::move(message)),
                      Catch::Contains("'content-type' is given more than once"));
}

}  // namespace fedleaf::server
