// CorsPolicy: which browser origins may call the API, and the CORS headers their answers carry.
//
//   CorsPolicy cors({"https://demo.example"});
//   cors.allows("https://demo.example");            // true; "" (no Origin header) never is
//   cors.response_headers("https://demo.example");  // Access-Control-Allow-Origin, Vary, …
//
// "*" in the list allows any origin, answered with "*". Credentials are never allowed: tokens
// travel in the Authorization header, never in cookies. Preflights are answered by the HTTP
// adapter before the protocol-version check, since browsers cannot add headers to them.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fedleaf::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class CorsPolicy {
 public:
  explicit CorsPolicy(std::vector<std::string> origins);

  // Whether a request with this Origin header value ("" when absent) gets CORS headers.
  bool allows(const std::string& origin) const;
  // What an OPTIONS preflight from an allowed origin is answered with (besides
  // response_headers); empty for any other origin.
  HeaderList preflight_headers(const std::string& origin) const;
  // What every answer to an allowed origin carries, the protocol's headers exposed to scripts;
  // empty for any other origin.
  HeaderList response_headers(const std::string& origin) const;

 private:
  std::vector<std::string> origins_;
  bool any_ = false;
};

}  // namespace fedleaf::server
