#include "server/util/server_errors.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/api/http_message.h"

namespace fedleaf::server {

TEST_CASE("error_reply_maps_each_error_class_to_its_status", "[errors]") {
  CHECK(error_reply(InvalidInput("x")).status == 400);
  CHECK(error_reply(Unauthorized("x")).status == 401);
  CHECK(error_reply(Forbidden("x")).status == 403);
  CHECK(error_reply(NotFound("x")).status == 404);
  CHECK(error_reply(MethodNotAllowed("x")).status == 405);
  CHECK(error_reply(RequestTimeout("x")).status == 408);
  CHECK(error_reply(Conflict("x")).status == 409);
  CHECK(error_reply(Gone("x")).status == 410);
  CHECK(error_reply(PayloadTooLarge("x")).status == 413);
  CHECK(error_reply(UpgradeRequired("x")).status == 426);
  CHECK(error_reply(TooManyRequests("x")).status == 429);
  CHECK(error_reply(Unavailable("x")).status == 503);
  CHECK(error_reply(Error("x")).status == 500);
}

TEST_CASE("error_reply_hides_messages_of_foreign_exceptions", "[errors]") {
  const ErrorReply r = error_reply(std::runtime_error("/secret/path"));
  CHECK(r.status == 500);
  CHECK(r.message.find("secret") == std::string::npos);
}

TEST_CASE("error_response_has_the_json_error_shape", "[errors]") {
  Response r = error_response(Gone("task 7: lease expired"));

  CHECK(r.status == 410);
  CHECK(r.header("content-type") == "application/json");
  const auto body = nlohmann::json::parse(*r.body);
  CHECK(body["error"]["code"] == "gone");
  CHECK(body["error"]["message"] == "task 7: lease expired");
}

}  // namespace fedleaf::server
