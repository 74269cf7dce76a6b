// ListeningSocket: a TCP socket bound and listening on an address and port, before anything
// else of the server exists. fedleaf-server binds first, so a start that cannot listen (the port
// is taken, the address is not on this machine) fails before it creates or locks a database;
// HttpServer then accepts on it.
//
//   ListeningSocket socket(options.address, options.port);   // throws fedleaf::Error
//   socket.port();                                            // the bound port (0 picks one)
#pragma once

#include <string>

namespace fedleaf::server {

class ListeningSocket {
 public:
  ListeningSocket(const std::string& address, unsigned short port);
  ~ListeningSocket();
  ListeningSocket(ListeningSocket&& other) noexcept;
  ListeningSocket& operator=(ListeningSocket&&) = delete;
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;

  unsigned short port() const { return port_; }
  bool ipv6() const { return ipv6_; }
  // Hands the descriptor over to its new owner; this object then closes nothing.
  int release();

 private:
  int fd_ = -1;
  unsigned short port_ = 0;
  bool ipv6_ = false;
};

}  // namespace fedleaf::server
