#include "server/util/tokens.h"

#include <sys/random.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/error.h"

#include "server/util/sha256.h"

namespace fedleaf::server {

std::string generate_token() {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  // getrandom(2): one system call per token (a std::random_device per call opened the entropy
  // source each time, a visible cost at thousands of claims per second).
  std::uint8_t bytes[33];
  std::size_t filled = 0;
  while (filled < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + filled, sizeof bytes - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("generate_token: getrandom failed: ") + std::strerror(errno));
    }
    filled += static_cast<std::size_t>(n);
  }
  // 33 bytes = 264 bits = 44 base64 characters; the first 43 carry 258 bits. The "fl_" prefix
  // keeps a token from starting with '-' (command lines read "--token -x…" as a missing value)
  // and lets secret scanners recognise a leaked one.
  std::string out = "fl_";
  for (std::size_t i = 0; i < sizeof bytes; i += 3) {
    const std::uint32_t v = (std::uint32_t{bytes[i]} << 16) | (std::uint32_t{bytes[i + 1]} << 8) |
                            std::uint32_t{bytes[i + 2]};
    for (int k = 3; k >= 0; --k) out.push_back(kAlphabet[(v >> (6 * k)) & 63]);
  }
  out.resize(3 + 43);
  return out;
}

std::string hash_token(std::string_view token) { return sha256_hex(token); }

bool constant_time_equals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  volatile unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = static_cast<unsigned char>(
        diff | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i])));
  }
  return diff == 0;
}

bool token_matches(std::string_view presented, std::string_view stored_hash) {
  return constant_time_equals(hash_token(presented), stored_hash);
}

std::optional<std::string> parse_bearer(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) {
      return std::nullopt;
    }
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  return std::string(token);
}

}  // namespace fedleaf::server
