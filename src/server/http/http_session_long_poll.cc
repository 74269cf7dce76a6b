// Session (http_session.h): long-poll claims parked on ClaimParking — a callback and a timer per
// claim, no thread — and the peer watched while parked.
#include <boost/asio/post.hpp>
#include <cerrno>
#include <utility>

#include <sys/socket.h>

#include "server/http/http_session.h"

namespace fedleaf::server {

void Session::park(Response response) {
  // The claim's handling may have left work in the store's open batch (on a shared store, a
  // round it closed: the round's rows stay locked until the batch commits). Nothing else may ask
  // for a commit while this claim sleeps, and every other server would wait on those locks.
  if (response.send_after != SendAfter::kNothing) shared_.commit_gate.after_commit([](bool) {});
  const ClaimWait wait = *response.wait;
  parked_ = std::move(response);
  const std::uint64_t generation = ++park_generation_;
  claim_timer_.expires_at(*claim_deadline_);
  claim_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
    if (ec || generation != self->park_generation_ || !self->parked_) return;
    // Not parked any more: the wake is on its way and will answer (the deadline has passed).
    if (!self->shared_.parking.cancel(self->parked_->wait->population, self->ticket_)) return;
    self->send_parked();
  });
  // A weak reference: the pending timer keeps the session alive, and a waiter left in
  // ClaimParking (which outlives the server) must not own a session.
  ticket_ =
      shared_.parking.park(wait.population, wait.epoch, [weak = weak_from_this(), generation] {
        const auto self = weak.lock();
        if (!self) return;
        net::post(self->stream_.get_executor(), [self, generation] {
          if (generation != self->park_generation_ || !self->parked_) return;
          self->unpark();
          // A client that left while the wake was on its way gets no task.
          if (self->peer() == Peer::kClosed) return self->drop_claim();
          self->respond(self->shared_.handler.handle_woken(self->request_));
        });
      });
  watch_peer(generation);
}

Session::Peer Session::peer() {
  char byte = 0;
  const ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return Peer::kSending;
  if (n == 0) return Peer::kClosed;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Peer::kQuiet : Peer::kClosed;
}

void Session::watch_peer(std::uint64_t generation) {
  stream_.socket().async_wait(tcp::socket::wait_read,
                              [self = shared_from_this(), generation](beast::error_code ec) {
                                if (ec || generation != self->park_generation_ || !self->parked_)
                                  return;
                                switch (self->peer()) {
                                  case Peer::kClosed: {
                                    const std::string population = self->parked_->wait->population;
                                    self->unpark();
                                    self->shared_.parking.cancel(population, self->ticket_);
                                    return self->drop_claim();
                                  }
                                  case Peer::kQuiet:
                                    return self->watch_peer(generation);
                                  case Peer::kSending:
                                    return;
                                }
                              });
}

void Session::unpark() {
  parked_.reset();
  ++park_generation_;
  claim_timer_.cancel();
  beast::error_code ignored;
  stream_.socket().cancel(ignored);
}

void Session::drop_claim() {
  claim_deadline_.reset();
  close();
}

void Session::send_parked() {
  Response response = std::move(*parked_);
  unpark();
  claim_deadline_ = std::chrono::steady_clock::now();
  respond(std::move(response));
}

}  // namespace fedleaf::server
