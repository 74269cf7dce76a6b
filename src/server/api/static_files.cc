#include "server/api/static_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace fedleaf::server {

std::string content_type_for(const std::string& file_name) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".wasm", "application/wasm"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
      {".map", "application/json"},
      {".ts", "text/plain; charset=utf-8"},
  };
  for (const auto& [ext, type] : kTypes) {
    const std::string e = ext;
    if (file_name.size() >= e.size() &&
        file_name.compare(file_name.size() - e.size(), e.size(), e) == 0) {
      return type;
    }
  }
  return "application/octet-stream";
}

Response serve_static_file(const std::string& root, const std::string& path) {
  if (path.empty() || path[0] != '/' || path.find("..") != std::string::npos ||
      path.find('\\') != std::string::npos || path.find('%') != std::string::npos ||
      path.find('\0') != std::string::npos) {
    throw NotFound("no such file: " + path);
  }
  std::filesystem::path file = std::filesystem::path(root) / path.substr(1);
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) file /= "index.html";
  if (!std::filesystem::is_regular_file(file, ec)) throw NotFound("no such file: " + path);
  // A symbolic link inside the root may point anywhere: serve only what resolves inside it.
  const std::filesystem::path real_root = std::filesystem::canonical(root, ec);
  if (ec) throw NotFound("no such file: " + path);
  const std::filesystem::path real_file = std::filesystem::canonical(file, ec);
  if (ec ||
      std::mismatch(real_root.begin(), real_root.end(), real_file.begin(), real_file.end()).first !=
          real_root.end()) {
    throw NotFound("no such file: " + path);
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw NotFound("no such file: " + path);
  std::ostringstream content;
  content << in.rdbuf();

  Response r;
  r.set_header("Content-Type", content_type_for(file.filename().string()));
  r.set_header("Cache-Control", "no-cache");
  r.set_header("Cross-Origin-Opener-Policy", "same-origin");
  r.set_header("Cross-Origin-Embedder-Policy", "require-corp");
  r.set_header("Cross-Origin-Resource-Policy", "same-origin");
  r.body = std::make_shared<const std::string>(content.str());
  return r;
}

}  // namespace fedleaf::server
