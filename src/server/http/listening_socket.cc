#include "server/http/listening_socket.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace fedleaf::server {

namespace {

Error cannot_listen(const std::string& address, unsigned short port, const std::string& why) {
  return Error("http server: cannot listen on " + address + ":" + std::to_string(port) + ": " +
               why);
}

}  // namespace

ListeningSocket::ListeningSocket(const std::string& address, unsigned short port) {
  boost::system::error_code ec;
  const auto ip = boost::asio::ip::make_address(address, ec);
  if (ec) throw Error("http server: bad address '" + address + "'");
  const boost::asio::ip::tcp::endpoint endpoint(ip, port);
  ipv6_ = ip.is_v6();
  fd_ = ::socket(ipv6_ ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd_ < 0) throw cannot_listen(address, port, std::strerror(errno));
  const int on = 1;
  // A restarted server rebinds its port while the last run's connections sit in TIME_WAIT.
  if (::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      ::bind(fd_, endpoint.data(), static_cast<socklen_t>(endpoint.size())) != 0 ||
      ::listen(fd_, SOMAXCONN) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    throw cannot_listen(address, port, why);
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    throw cannot_listen(address, port, why);
  }
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

ListeningSocket::~ListeningSocket() {
  if (fd_ >= 0) ::close(fd_);
}

ListeningSocket::ListeningSocket(ListeningSocket&& other) noexcept
    : fd_(other.fd_), port_(other.port_), ipv6_(other.ipv6_) {
  other.fd_ = -1;
}

int ListeningSocket::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

}  // namespace fedleaf::server
