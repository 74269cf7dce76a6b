// Standard base64 (RFC 4648 §4, with or without '=' padding) for model bytes in JSON bodies.
//
//   std::string bytes = base64_decode("aGVsbG8=", "initial_model_b64");   // "hello"
#pragma once

#include <string>
#include <string_view>

namespace fedleaf::server {

// Throws InvalidInput naming `field` on a character outside the alphabet or a bad length.
// ASCII whitespace is ignored.
std::string base64_decode(std::string_view text, const std::string& field);
std::string base64_encode(std::string_view bytes);

}  // namespace fedleaf::server
