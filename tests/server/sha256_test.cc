#include "server/util/sha256.h"

#include <catch2/catch.hpp>
#include <string>

namespace fedleaf::server {

TEST_CASE("sha256_matches_fips_180_test_vectors", "[sha256]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256_pads_correctly_around_block_boundaries", "[sha256]") {
  // 55 bytes fit one padded block, 56 need two; both must differ from their neighbours.
  CHECK(sha256_hex(std::string(55, 'x')) != sha256_hex(std::string(56, 'x')));
  CHECK(sha256_hex(std::string(64, 'a')) ==
        "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

}  // namespace fedleaf::server
