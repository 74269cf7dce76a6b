// Static files (the web demo) served from a root folder, cross-origin isolated.
//
//   Response r = serve_static_file("web_demo", "/worker.js");   // 200, text/javascript
//
// "/" and folders map to their index.html. Paths with "..", "\", NUL or percent-encoded bytes
// are NotFound, and so is a file that resolves outside the root through a symbolic link (links
// within the root are followed), so nothing outside the root is reachable. Every response carries
// Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp (needed
// for SharedArrayBuffer and wasm threads) and Cache-Control: no-cache.
#pragma once

#include <string>

#include "server/api/http_message.h"

namespace fedleaf::server {

Response serve_static_file(const std::string& root, const std::string& path);
// The Content-Type for a file name, by extension; application/octet-stream when unknown.
std::string content_type_for(const std::string& file_name);

}  // namespace fedleaf::server
