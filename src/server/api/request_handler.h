// RequestHandler: what a transport needs of the API: an answer to a request, an answer to a
// parked claim woken again, and a lease given back when its answer could not be delivered.
// Router (router.h) implements it; the HTTP adapter is handed it as this, so it includes nothing
// of the repository behind the router.
//
//   Response response = handler.handle(request);        // never throws
//   if (response.wait) { /* park; once woken: */ response = handler.handle_woken(request); }
//   if (undelivered && response.lease) handler.release_undelivered(*response.lease);
#pragma once

#include "server/api/http_message.h"

namespace fedleaf::server {

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // The answer to a request (an upload's body may be moved out of it). Never throws.
  virtual Response handle(Request& request) const = 0;
  // The answer to a parked claim woken again (Response::wait), not charged to its client's rate
  // limit a second time. Never throws.
  virtual Response handle_woken(Request& request) const = 0;
  // Gives back the lease of a claim's answer that could not be delivered. Never throws.
  virtual void release_undelivered(const HandedLease& lease) const = 0;
};

}  // namespace fedleaf::server
