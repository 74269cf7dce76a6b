// Bearer tokens: generation, hashing for storage, constant-time comparison, header parsing.
//
//   std::string token = generate_token();            // "fl_" + 43 url-safe characters (258 random
//   bits) std::string stored = hash_token(token);          // what the store keeps if
//   (token_matches(presented, stored)) { ... }     // constant time in the token contents
//
// Only token hashes are stored, so a copy of the database does not let anyone claim or upload.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fedleaf::server {

// 256 random bits from the OS (getrandom), base64url without padding. Throws fedleaf::Error
// when the OS has no randomness to give.
std::string generate_token();
// Hex SHA-256 of the token.
std::string hash_token(std::string_view token);
// Whether a and b are equal, in time that depends only on their lengths.
bool constant_time_equals(std::string_view a, std::string_view b);
// Whether hash_token(presented) equals stored_hash, compared in constant time.
bool token_matches(std::string_view presented, std::string_view stored_hash);
// The token of an "Authorization: Bearer <token>" header value; nullopt when the header is
// empty or uses another scheme. The scheme name is case-insensitive (RFC 7235).
std::optional<std::string> parse_bearer(std::string_view authorization);

}  // namespace fedleaf::server
