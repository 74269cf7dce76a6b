// The admin token fedleaf-server reads from --admin-token-file: one line, surrounding
// whitespace ignored, 16 to 4096 visible ASCII characters (what an `Authorization: Bearer`
// header can carry: a token with a space, a control character or a NUL in it could never be
// presented, and the admin would be locked out without a word).
//
//   routing.admin_token_hash = hash_token(read_admin_token_file("/etc/fedleaf/admin.token"));
//
// The file may be a pipe (`--admin-token-file <(pass show fedleaf)`): at most 4097 bytes are
// read, so an endless source (/dev/zero) is refused, not read forever. Throws InvalidInput naming
// the flag, the file and the rule.
#pragma once

#include <cstddef>
#include <string>

namespace fedleaf::server {

inline constexpr std::size_t kMinAdminTokenChars = 16;
inline constexpr std::size_t kMaxAdminTokenChars = 4096;

std::string read_admin_token_file(const std::string& path);

}  // namespace fedleaf::server
