#include "server/util/admin_token_file.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace fedleaf::server {

namespace {

InvalidInput bad(const std::string& path, const std::string& rule) {
  return InvalidInput("--admin-token-file: the token in '" + path + "' " + rule);
}

}  // namespace

std::string read_admin_token_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw InvalidInput("--admin-token-file: '" + path + "' is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput("--admin-token-file: cannot read '" + path + "'");
  // Whitespace around the token is allowed (an editor's final newline), so read a little more
  // than the longest token before deciding the file is too long.
  constexpr std::size_t kReadLimit = 2 * kMaxAdminTokenChars + 1;
  std::string text(kReadLimit, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() == kReadLimit) {
    throw InvalidInput("--admin-token-file: '" + path + "' holds more than " +
                       std::to_string(kReadLimit - 1) + " bytes; a token has at most " +
                       std::to_string(kMaxAdminTokenChars) + " characters");
  }
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
  text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x21 || c > 0x7e) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", c);
      throw bad(path, "has byte " + std::string(byte) + " at position " + std::to_string(i) +
                          ": a token is visible ASCII characters only (no space, control "
                          "character or non-ASCII byte), what a Bearer header can carry");
    }
  }
  if (text.size() < kMinAdminTokenChars || text.size() > kMaxAdminTokenChars) {
    throw bad(path, "must have " + std::to_string(kMinAdminTokenChars) + " to " +
                        std::to_string(kMaxAdminTokenChars) + " characters (it has " +
                        std::to_string(text.size()) + ")");
  }
  return text;
}

}  // namespace fedleaf::server
