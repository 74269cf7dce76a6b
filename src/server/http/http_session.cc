#include "server/http/http_session.h"

#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <utility>

#include "server/api/protocol_headers.h"
#include "server/http/request_framing.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {

Session::Session(tcp::socket socket, Shared& shared)
    : stream_(std::move(socket)),
      shared_(shared),
      read_timer_(stream_.get_executor()),
      claim_timer_(stream_.get_executor()) {
  std::lock_guard lock(shared_.sessions_mutex);
  shared_.sessions.insert(this);
}

Session::~Session() {
  std::lock_guard lock(shared_.sessions_mutex);
  shared_.sessions.erase(this);
}

void Session::start() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
}

void Session::reject_busy() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    self->send_error(TooManyRequests("the server is at its connection limit; retry later"), "",
                     "1");
  });
}

void Session::close_if_idle() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->idle_) {
      beast::error_code ec;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
      self->stream_.close();
    } else if (self->parked_ &&
               self->shared_.parking.cancel(self->parked_->wait->population, self->ticket_)) {
      self->send_parked();
    }
  });
}

void Session::read_header() {
  idle_ = true;
  if (shared_.stopping) return close();
  parser_.emplace();
  parser_->header_limit(64 * 1024);
  parser_->body_limit(shared_.options.max_body_bytes);
  stream_.expires_never();
  start_read_timer(shared_.options.header_timeout_s);
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

void Session::start_read_timer(double timeout_s) {
  const std::uint64_t generation = ++read_generation_;
  read_timer_.expires_after(steady_seconds(timeout_s));
  read_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
    if (ec || generation != self->read_generation_) return;
    self->read_timed_out_ = true;
    beast::error_code ignored;
    self->stream_.socket().cancel(ignored);
  });
}

bool Session::stop_read_timer() {
  ++read_generation_;
  read_timer_.cancel();
  const bool timed_out = read_timed_out_;
  read_timed_out_ = false;
  return timed_out;
}

void Session::on_header(beast::error_code ec) {
  idle_ = false;
  if (stop_read_timer()) {
    // Silence on an idle keep-alive connection is not an error; a partial header is.
    if (buffer_.size() == 0) return close();
    return send_error(RequestTimeout("the request header did not arrive within " +
                                     std::to_string(shared_.options.header_timeout_s) + " s"));
  }
  if (ec) {
    // Limits first: the parser reports a Content-Length over the body limit as soon as the
    // header is complete, typically with nothing of the body buffered yet (a client that sent
    // "Expect: 100-continue" waits for this answer).
    if (ec == http::error::header_limit) {
      body_unread_ = true;
      return send_error(PayloadTooLarge("the request header exceeds 64 KiB"));
    }
    if (ec == http::error::body_limit) {
      body_unread_ = true;
      const auto length = parser_->content_length();
      return send_error(PayloadTooLarge(
          "request body" + (length ? " of " + std::to_string(*length) + " bytes" : "") +
          " exceeds the limit of " + std::to_string(shared_.options.max_body_bytes) + " bytes"));
    }
    if (ec == http::error::end_of_stream || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset || ec == net::error::eof || buffer_.size() == 0) {
      return close();
    }
    return send_error(InvalidInput("malformed HTTP request: " + ec.message()));
  }
  const auto& header = parser_->get();
  origin_ = std::string(header[http::field::origin]);
  is_upload_ = origin_form(std::string(header.target())).rfind("/v1/tasks/", 0) == 0;
  if (auto length = parser_->content_length(); length && *length > shared_.options.max_body_bytes) {
    body_unread_ = true;
    return send_error(PayloadTooLarge("request body of " + std::to_string(*length) +
                                      " bytes exceeds the limit of " +
                                      std::to_string(shared_.options.max_body_bytes) + " bytes"));
  }
  try {
    check_transfer_codings(header);
  } catch (const InvalidInput& e) {
    body_unread_ = true;
    return send_error(e);
  }
  if (parser_->is_done()) return dispatch();
  if (beast::iequals(header[http::field::expect], "100-continue")) {
    auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
    http::async_write(stream_, *cont,
                      [self = shared_from_this(), cont](beast::error_code wec, std::size_t) {
                        if (wec) return self->close();
                        self->read_body();
                      });
    return;
  }
  read_body();
}

void Session::read_body() {
  start_read_timer(shared_.options.body_timeout_s);
  http::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
}

void Session::on_body(beast::error_code ec) {
  if (stop_read_timer()) {
    body_unread_ = true;
    return send_error(RequestTimeout("the request body did not arrive within " +
                                     std::to_string(shared_.options.body_timeout_s) + " s"));
  }
  if (ec == http::error::body_limit) {
    body_unread_ = true;
    return send_error(PayloadTooLarge("request body exceeds the limit of " +
                                      std::to_string(shared_.options.max_body_bytes) + " bytes"));
  }
  if (ec) {
    if (ec == http::error::end_of_stream || ec == net::error::connection_reset ||
        ec == net::error::eof || ec == net::error::operation_aborted) {
      return close();
    }
    return send_error(InvalidInput("malformed HTTP request body: " + ec.message()));
  }
  dispatch();
}

void Session::dispatch() {
  stream_.expires_never();
  http::request<http::string_body> message = parser_->release();
  keep_alive_ = message.keep_alive();
  head_ = message.method() == http::verb::head;
  const bool preflight = message.method() == http::verb::options;
  Request request;
  try {
    request = to_request(std::move(message));
  } catch (const InvalidInput& e) {
    return send_error(e);
  }
  const std::size_t bytes_in = request.body.size();  // an upload's body is moved into the store
  shared_.metrics.add_bytes_in(bytes_in);

  Response response;
  if (preflight) {
    response.status = 204;
    for (auto& [name, value] : shared_.cors.preflight_headers(origin_)) {
      response.set_header(std::move(name), std::move(value));
    }
    shared_.metrics.count_request(204);
  } else {
    response = shared_.handler.handle(request);
  }
  if (shared_.logger && shared_.logger->should_log(spdlog::level::debug)) {
    shared_.logger->debug("event=request method={} target={} status={} bytes_in={}", request.method,
                          request.target, response.status, bytes_in);
  }
  request_ = std::move(request);
  respond(std::move(response));
}

void Session::respond(Response response) {
  if (response.wait) {
    const auto now = std::chrono::steady_clock::now();
    if (!claim_deadline_) claim_deadline_ = now + steady_seconds(response.wait->wait_s);
    if (now < *claim_deadline_ && !shared_.stopping) return park(std::move(response));
    response.wait.reset();
    shared_.metrics.count_request(response.status);
  }
  claim_deadline_.reset();
  if (response.send_after != SendAfter::kNothing) {
    return write_after_group_commit(std::move(response), keep_alive_, head_);
  }
  write(response, keep_alive_ && !shared_.stopping, head_);
}

void Session::write_after_group_commit(Response response, bool keep_alive, bool head) {
  const SendAfter after = response.send_after;
  // The session moves on into the posted handler: the committer thread must not hold the last
  // reference, or the session (its socket) could be destroyed there while the server shuts down.
  auto release = [self = shared_from_this(), response = std::move(response), keep_alive,
                  head](bool ok) mutable {
    const auto executor = self->stream_.get_executor();
    net::post(executor, [self = std::move(self), response = std::move(response), keep_alive, head,
                         ok]() mutable {
      if (!ok) {
        response = error_response(
            Unavailable("the store could not commit this request's changes; they may or may "
                        "not be kept: retry the same request after the server restarts"));
      }
      self->write(response, keep_alive && !self->shared_.stopping, head);
    });
  };
  if (after == SendAfter::kSync) {
    shared_.commit_gate.after_durable(std::move(release));
  } else {
    shared_.commit_gate.after_commit(std::move(release));
  }
}

void Session::send_error(const std::exception& error, const std::string&,
                         const std::string& retry_after) {
  Response response = error_response(error);
  if (!retry_after.empty()) response.set_header("Retry-After", retry_after);
  const int status = response.status;
  shared_.metrics.count_request(status);
  if (is_upload_) {
    shared_.metrics.count_upload(status);
    if (status == 413) shared_.metrics.count_rejection("too_large");
    if (status == 408) shared_.metrics.count_rejection("timeout");
  }
  if (shared_.logger) {
    shared_.logger->info("event=request_rejected status={} message=\"{}\"", status, error.what());
  }
  write(response, false, false);
}

void Session::write(const Response& response, bool keep_alive, bool head) {
  // A task for a client that has closed the connection goes back at once.
  if (response.lease && peer() == Peer::kClosed) {
    release_lease(*response.lease);
    return close();
  }
  auto message = std::make_shared<http::response<http::span_body<const char>>>();
  message->version(11);
  message->result(static_cast<unsigned>(response.status));
  for (const auto& [name, value] : response.headers) message->insert(name, value);
  message->set(http::field::server, std::string("fedleaf-server/") + kVersion);
  message->set(kFedleafVersion, protocol_version());
  for (const auto& [name, value] : shared_.cors.response_headers(origin_)) {
    message->set(name, value);
  }
  body_ = response.body;
  const bool bodyless = response.status == 204 || response.status == 304;
  if (!bodyless) {
    message->content_length(body_->size());
    if (!head) message->body() = {body_->data(), body_->size()};
  }
  message->keep_alive(keep_alive);
  stream_.expires_after(steady_seconds(std::max(shared_.options.body_timeout_s, 30.0)));
  http::async_write(stream_, *message,
                    [self = shared_from_this(), message, keep_alive, lease = response.lease](
                        beast::error_code ec, std::size_t bytes) {
                      self->shared_.metrics.add_bytes_out(bytes);
                      self->body_.reset();
                      if (ec && lease) self->release_lease(*lease);
                      if (!ec && self->body_unread_) return self->drain_then_close();
                      if (ec || !keep_alive) return self->close();
                      self->read_header();
                    });
}

void Session::release_lease(const HandedLease& lease) {
  shared_.handler.release_undelivered(lease);
  shared_.commit_gate.after_commit([](bool) {});
}

void Session::close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.close();
}

void Session::drain_then_close() {
  body_unread_ = false;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  drained_ = 0;
  stream_.expires_after(steady_seconds(2));
  drain_some();
}

void Session::drain_some() {
  auto scratch = std::make_shared<std::array<char, 16 * 1024>>();
  stream_.async_read_some(net::buffer(*scratch), [self = shared_from_this(), scratch](
                                                     beast::error_code ec, std::size_t n) {
    self->drained_ += n;
    if (ec || self->drained_ > kMaxDrainBytes) return self->close();
    self->drain_some();
  });
}

}  // namespace fedleaf::server
