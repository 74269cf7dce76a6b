#include "server/util/sha256.h"

#include <openssl/evp.h>

#include "core/error.h"

namespace fedleaf::server {

Sha256Digest sha256(const void* data, std::size_t size) {
  Sha256Digest digest;
  unsigned int length = 0;
  if (EVP_Digest(data, size, digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size()) {
    throw Error("sha256: OpenSSL EVP_Digest failed");
  }
  return digest;
}

std::string to_hex(const Sha256Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (std::uint8_t b : digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

}  // namespace fedleaf::server
