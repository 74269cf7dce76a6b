#include "server/util/admin_token_file.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace fedleaf::server {
namespace {

struct TokenFile {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("fedleaf_admin_token_" + std::to_string(::getpid()) + "_" +
                       std::to_string(reinterpret_cast<std::uintptr_t>(this))))
                         .string();
  explicit TokenFile(const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
  ~TokenFile() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("admin_token_file_reads_one_token_ignoring_surrounding_whitespace", "[admin_token]") {
  CHECK(read_admin_token_file(TokenFile("  0123456789abcdef-._~+/=\n\n").path) ==
        "0123456789abcdef-._~+/=");
  const std::string longest(kMaxAdminTokenChars, 'x');
  CHECK(read_admin_token_file(TokenFile(longest + "\n").path) == longest);
}

TEST_CASE("admin_token_file_refuses_a_token_too_short_or_too_long", "[admin_token]") {
  const TokenFile empty("\n");
  CHECK_THROWS_WITH(read_admin_token_file(empty.path),
                    "--admin-token-file: the token in '" + empty.path +
                        "' must have 16 to 4096 characters (it has 0)");
  CHECK_THROWS_WITH(read_admin_token_file(TokenFile(std::string(4097, 'x')).path),
                    Catch::EndsWith("must have 16 to 4096 characters (it has 4097)"));
  CHECK_THROWS_WITH(read_admin_token_file(TokenFile(std::string(100000, 'x')).path),
                    Catch::Contains("holds more than 8192 bytes"));
}

// Regression: a token with a space, a NUL or non-ASCII bytes was taken — one no Authorization
// header can carry, so the admin API was locked — and /dev/zero was read until memory ran out.
TEST_CASE("admin_token_file_refuses_what_a_bearer_header_cannot_carry_and_endless_files",
          "[admin_token]") {
  CHECK_THROWS_WITH(read_admin_token_file(TokenFile("0123456789 abcdef").path),
                    Catch::Contains("has byte 0x20 at position 10: a token is visible ASCII"));
  CHECK_THROWS_WITH(read_admin_token_file(TokenFile(std::string("0123456789\0abcdef", 17)).path),
                    Catch::Contains("has byte 0x00 at position 10"));
  CHECK_THROWS_WITH(read_admin_token_file(TokenFile("0123456789abcdef\xc3\xa9").path),
                    Catch::Contains("has byte 0xc3 at position 16"));
  CHECK_THROWS_WITH(read_admin_token_file("/dev/zero"),
                    "--admin-token-file: '/dev/zero' holds more than 8192 bytes; a token has at "
                    "most 4096 characters");
  CHECK_THROWS_WITH(read_admin_token_file(std::filesystem::temp_directory_path().string()),
                    Catch::EndsWith("is a directory, not a file"));
  CHECK_THROWS_WITH(read_admin_token_file("/nonexistent/admin.token"),
                    "--admin-token-file: cannot read '/nonexistent/admin.token'");
}

}  // namespace fedleaf::server
