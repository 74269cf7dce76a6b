#include "server/api/http_message.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "server/util/server_errors.h"

namespace fedleaf::server {

std::string Request::header(const std::string& name) const {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = headers.find(lower);
  return it == headers.end() ? std::string() : it->second;
}

std::string origin_form(const std::string& target) {
  std::size_t scheme_end = 0;
  for (const char* scheme : {"http://", "https://"}) {
    const std::size_t n = std::char_traits<char>::length(scheme);
    bool same = target.size() >= n;
    for (std::size_t i = 0; i < n && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(target[i])) == scheme[i];
    }
    if (same) scheme_end = n;
  }
  if (scheme_end == 0) return target;
  const std::size_t path = target.find_first_of("/?", scheme_end);
  if (path == std::string::npos) return "/";
  return target[path] == '/' ? target.substr(path) : "/" + target.substr(path);
}

std::string Request::path() const { return target.substr(0, target.find('?')); }

Response Response::json(int status, std::string body) {
  Response r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = std::make_shared<const std::string>(std::move(body));
  return r;
}

std::string Response::header(const std::string& lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name.size() != lower_name.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(name[i])) == lower_name[i];
    }
    if (same) return value;
  }
  return {};
}

Response& Response::set_header(std::string name, std::string value) {
  headers.emplace_back(std::move(name), std::move(value));
  return *this;
}

Response error_response(const std::exception& error) {
  const ErrorReply reply = error_reply(error);
  nlohmann::json body = {{"error", {{"code", reply.code}, {"message", reply.message}}}};
  if (reply.retry_round >= 0) body["error"]["retry_round"] = reply.retry_round;
  // Error messages quote client input, which need not be UTF-8: replace invalid bytes.
  return Response::json(reply.status,
                        body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace fedleaf::server
