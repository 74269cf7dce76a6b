// SHA-256 (FIPS 180-4): content hashes for model ETags, result idempotency and token hashes.
// OpenSSL's libcrypto computes it (SHA extensions where the CPU has them): a round close hashes
// the whole published model, 16.8 MB for the demo, on its request path (~0.2 s with a portable
// C++ loop, ~10 ms here).
//
//   std::string hex = sha256_hex("abc");   // "ba7816bf..."
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fedleaf::server {

using Sha256Digest = std::array<std::uint8_t, 32>;

Sha256Digest sha256(const void* data, std::size_t size);
inline Sha256Digest sha256(std::string_view bytes) { return sha256(bytes.data(), bytes.size()); }
// Lower-case hex of the digest (64 characters).
std::string to_hex(const Sha256Digest& digest);
inline std::string sha256_hex(std::string_view bytes) { return to_hex(sha256(bytes)); }

}  // namespace fedleaf::server
