#include "server/util/base64.h"

#include <catch2/catch.hpp>

#include "core/error.h"

namespace fedleaf::server {

TEST_CASE("base64_round_trips_every_tail_length", "[base64]") {
  for (const std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    CHECK(base64_decode(base64_encode(s), "x") == s);
  }
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_decode("Zm8", "x") == "fo");  // padding optional
  CHECK(base64_decode("Zm9v\nYmFy", "x") == "foobar");
  const std::string binary("\x00\xff\x10", 3);
  CHECK(base64_decode(base64_encode(binary), "x") == binary);
}

TEST_CASE("base64_decode_rejects_bad_input_naming_the_field", "[base64]") {
  CHECK_THROWS_WITH(base64_decode("Zm9v!", "initial_model_b64"),
                    Catch::Contains("initial_model_b64"));
  CHECK_THROWS_AS(base64_decode("Z", "x"), InvalidInput);
  CHECK_THROWS_AS(base64_decode("Zm=v", "x"), InvalidInput);
}

}  // namespace fedleaf::server
