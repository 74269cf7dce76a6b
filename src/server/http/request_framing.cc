#include "server/http/request_framing.h"

#include <cctype>

#include "core/text/text_format.h"
#include "server/api/protocol_headers.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {

namespace http = boost::beast::http;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string transfer_codings(const http::request_header<>& header) {
  std::string out;
  for (const auto& field : header) {
    if (field.name() != http::field::transfer_encoding) continue;
    std::string_view rest = field.value();
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view coding = trim_blanks(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      if (coding.empty()) continue;
      out += (out.empty() ? "" : ", ") + lower(coding);
    }
  }
  return out;
}

void check_transfer_codings(const http::request_header<>& header) {
  const std::string codings = transfer_codings(header);
  if (!codings.empty() && codings != "chunked") {
    throw InvalidInput("Transfer-Encoding '" + codings +
                       "' is not accepted: the only transfer coding read is 'chunked'");
  }
}

bool is_single_value_header(std::string_view name) {
  const std::string lowercase = lower(name);
  return lowercase == "authorization" || lowercase == lower(kFedleafVersion) ||
         lowercase == "content-type";
}

Request to_request(http::request<http::string_body>&& message) {
  Request request;
  request.method = std::string(message.method_string());
  request.target = origin_form(std::string(message.target()));
  for (const auto& field : message) {
    std::string name = lower(field.name_string());
    const bool added = request.headers.emplace(name, std::string(field.value())).second;
    if (!added && is_single_value_header(name)) {
      throw InvalidInput("the header " + core::in_quotes(name) + " is given more than once");
    }
  }
  request.body = std::move(message.body());
  return request;
}

}  // namespace fedleaf::server
