// The framing rules of a request, applied before the router sees it: a body whose length a proxy
// in front could read differently is refused (request smuggling, RFC 9112 §6.3), and so is a
// header the server reads one value of given twice.
//
//   check_transfer_codings(parser.get());      // InvalidInput unless none or "chunked"
//   Request request = to_request(parser.release());   // InvalidInput on a repeated Authorization
#pragma once

#include <boost/beast/http.hpp>
#include <string>
#include <string_view>

#include "server/api/http_message.h"

namespace fedleaf::server {

// Every Transfer-Encoding of a request, in order, lowercased: "gzip, chunked" for
// "Transfer-Encoding: gzip" then "Transfer-Encoding: Chunked"; empty when there is none.
std::string transfer_codings(const boost::beast::http::request_header<>& header);

// Throws InvalidInput (400; the connection is then closed) for a transfer coding other than
// "chunked", the one the server reads: under any other the body's length is unknown (Beast then
// reads none, and the body's bytes would be taken as the next request).
void check_transfer_codings(const boost::beast::http::request_header<>& header);

// Whether the server reads one value of this header (any case): given twice, which one counts
// would be a guess (the server kept the first, a proxy in front might keep the last).
bool is_single_value_header(std::string_view name);

// The router's view of a message: the target in origin form, header names lower-cased (the
// first of repeated headers kept). Throws InvalidInput when a single-value header is repeated.
Request to_request(boost::beast::http::request<boost::beast::http::string_body>&& message);

}  // namespace fedleaf::server
