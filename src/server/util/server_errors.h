// Errors of the task repository, on top of the core's fedleaf::Error hierarchy, and the one
// place that maps every error to an HTTP status.
//
//   try { ... } catch (const std::exception& e) {
//     ErrorReply r = error_reply(e);   // {410, "gone", "task 7: lease expired at ..."}
//   }
#pragma once

#include <exception>
#include <string>

#include "core/error.h"

namespace fedleaf::server {

// No usable credentials were presented (HTTP 401).
class Unauthorized : public Error {
 public:
  using Error::Error;
};
// Credentials were presented but do not grant this request (HTTP 403).
class Forbidden : public Error {
 public:
  using Error::Error;
};
// The thing asked for existed but is over: an expired lease, a closed round (HTTP 410).
class Gone : public Error {
 public:
  using Error::Error;
};
// The request body exceeds the configured limit (HTTP 413).
class PayloadTooLarge : public Error {
 public:
  using Error::Error;
};
// The client was too slow sending its request (HTTP 408).
class RequestTimeout : public Error {
 public:
  using Error::Error;
};
// The server is at its connection limit, or a client token is over its rate limit (HTTP 429).
// retry_after_s: when the client may try again (sent as Retry-After, whole seconds >= 1, and
// Fedleaf-Retry-After-Ms).
class TooManyRequests : public Error {
 public:
  explicit TooManyRequests(const std::string& message, double retry_after_s = 1)
      : Error(message), retry_after_s_(retry_after_s) {}
  double retry_after_s() const { return retry_after_s_; }

 private:
  double retry_after_s_;
};
// The client speaks another major protocol version (HTTP 426).
class UpgradeRequired : public Error {
 public:
  using Error::Error;
};
// The path exists but not with this method (HTTP 405).
class MethodNotAllowed : public Error {
 public:
  using Error::Error;
};
// The store failed or the server is shutting down (HTTP 503).
class Unavailable : public Error {
 public:
  using Error::Error;
};

// A private population's device rules (issue 39, docs/design.md "Privacy"), each with its own
// code so a leaf can act on it: a claim without the Fedleaf-Device header (401
// "device_required": enroll, then claim again); a device that has taken part in
// max_participations rounds (403 "max_participations": the leaf stops for good); a device
// inside min_separation, or that took this round already (429 "min_separation", with the first
// round it may take: retry_round).
class DeviceRequired : public Unauthorized {
 public:
  using Unauthorized::Unauthorized;
};
class ParticipationsUsed : public Forbidden {
 public:
  using Forbidden::Forbidden;
};
class DeviceTooSoon : public TooManyRequests {
 public:
  DeviceTooSoon(const std::string& message, double retry_after_s, int retry_round)
      : TooManyRequests(message, retry_after_s), retry_round_(retry_round) {}
  int retry_round() const { return retry_round_; }

 private:
  int retry_round_;
};

struct ErrorReply {
  int status;
  std::string code;      // stable machine-readable name, e.g. "invalid_input"
  std::string message;   // the error's message; generic for errors that are not fedleaf::Error
  int retry_round = -1;  // DeviceTooSoon: the round the device may take (-1: none)
};

// The single mapping from errors to HTTP status and code. Unknown exceptions become 500
// "internal" with a generic message (their text may describe server internals).
ErrorReply error_reply(const std::exception& error);

}  // namespace fedleaf::server
