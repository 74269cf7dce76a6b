// What the router's files share (router.cc, router_devices.cc): the bearer token of a request
// and the method check, each answering with the error that names the rule.
//
//   require_method(request, {"GET", "POST"});   // MethodNotAllowed naming the allowed ones
//   const std::string token = bearer(request);  // Unauthorized without one
#pragma once

#include <initializer_list>
#include <string>

#include "server/api/http_message.h"

namespace fedleaf::server {

// The token of the request's "Authorization: Bearer <token>" header; Unauthorized when it is
// missing or uses another scheme.
std::string bearer(const Request& request);
// MethodNotAllowed naming the allowed methods unless the request's is one of them.
void require_method(const Request& request, std::initializer_list<const char*> allowed);

}  // namespace fedleaf::server
