#include "server/util/base64.h"

#include <cstdint>

#include "core/error.h"

namespace fedleaf::server {
namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}
}  // namespace

std::string base64_decode(std::string_view text, const std::string& field) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t buffer = 0;
  int bits = 0;
  std::size_t symbols = 0;
  std::size_t padding = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    const int v = sextet(c);
    if (v < 0 || padding) {
      throw InvalidInput(field + ": not base64 (unexpected character '" + std::string(1, c) + "')");
    }
    ++symbols;
    buffer = (buffer << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  if (symbols % 4 == 1 || padding > 2 || (padding && (symbols + padding) % 4 != 0)) {
    throw InvalidInput(field + ": not base64 (bad length)");
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (std::uint32_t{static_cast<std::uint8_t>(bytes[i])} << 16) |
                            (std::uint32_t{static_cast<std::uint8_t>(bytes[i + 1])} << 8) |
                            std::uint32_t{static_cast<std::uint8_t>(bytes[i + 2])};
    for (int k = 3; k >= 0; --k) out.push_back(kAlphabet[(v >> (6 * k)) & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest) {
    std::uint32_t v = std::uint32_t{static_cast<std::uint8_t>(bytes[i])} << 16;
    if (rest == 2) v |= std::uint32_t{static_cast<std::uint8_t>(bytes[i + 1])} << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace fedleaf::server
