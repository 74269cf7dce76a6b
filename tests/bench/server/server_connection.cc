#include "tests/bench/server/server_connection.h"

namespace fedleaf::bench {

bool ServerOptions::parse_option(const std::string& key, const std::string& value) {
  if (key == "--host") {
    host = value;
  } else if (key == "--port") {
    port = static_cast<unsigned short>(std::stoi(value));
  } else if (key == "--population") {
    population = value;
  } else if (key == "--token") {
    token = value;
  } else if (key == "--version") {
    version = value;
  } else {
    return false;
  }
  return true;
}

http::request<http::string_body>& ServerConnection::request(http::verb verb,
                                                            const std::string& target,
                                                            const std::string& token) {
  req_ = {};
  req_.method(verb);
  req_.target(target);
  req_.version(11);
  req_.set(http::field::host, server_.host);
  req_.set(http::field::authorization, "Bearer " + token);
  req_.set("Fedleaf-Version", server_.version);
  return req_;
}

void ServerConnection::close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

}  // namespace fedleaf::bench
