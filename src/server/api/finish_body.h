// FinishBody: the optional JSON body of POST /v1/populations/{p}:finish (admin).
//
//   parse_finish_reason(R"({"reason": "accuracy reached 0.9"})") == "accuracy reached 0.9";
//   parse_finish_reason("") == "";   // the repository records "finished by an operator"
//
// {"reason": text}: why the population was finished, kept and shown by its status (at most
// kMaxFinishReasonChars characters, no control characters: it is written to the log as is).
// An empty body is {}; any other field, a field given twice, or anything but a JSON object is
// InvalidInput; a body over kMaxFinishBodyBytes is PayloadTooLarge before it is parsed.
#pragma once

#include <cstddef>
#include <string>

namespace fedleaf::server {

inline constexpr std::size_t kMaxFinishReasonChars = 500;
inline constexpr std::size_t kMaxFinishBodyBytes = 4096;

std::string parse_finish_reason(const std::string& body);

}  // namespace fedleaf::server
