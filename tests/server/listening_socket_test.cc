#include "server/http/listening_socket.h"

#include <unistd.h>

#include <catch2/catch.hpp>

#include "core/error.h"

using fedleaf::server::ListeningSocket;

TEST_CASE("ListeningSocket binds port 0 to a free port and refuses a taken one, naming it") {
  ListeningSocket first("127.0.0.1", 0);
  REQUIRE(first.port() != 0);
  REQUIRE_FALSE(first.ipv6());
  const std::string port = std::to_string(first.port());
  REQUIRE_THROWS_WITH(
      ListeningSocket("127.0.0.1", first.port()),
      "http server: cannot listen on 127.0.0.1:" + port + ": Address already in use");
}

TEST_CASE("ListeningSocket refuses an address that is not one") {
  REQUIRE_THROWS_WITH(ListeningSocket("localhost", 0), "http server: bad address 'localhost'");
  REQUIRE_THROWS_WITH(ListeningSocket("1.2.3", 0), "http server: bad address '1.2.3'");
}

TEST_CASE("ListeningSocket released hands its descriptor over; a moved-from one closes nothing") {
  ListeningSocket socket("127.0.0.1", 0);
  const unsigned short port = socket.port();
  ListeningSocket moved(std::move(socket));
  REQUIRE(moved.port() == port);
  const int fd = moved.release();
  REQUIRE(fd >= 0);
  // Still bound: the descriptor is open in its new owner, so the port stays taken.
  REQUIRE_THROWS_AS(ListeningSocket("127.0.0.1", port), fedleaf::Error);
  ::close(fd);
  REQUIRE_NOTHROW(ListeningSocket("127.0.0.1", port));
}
