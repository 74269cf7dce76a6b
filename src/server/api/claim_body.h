// ClaimBody: the optional JSON body of POST /v1/populations/{p}/tasks:claim.
//
//   ClaimBody claim = parse_claim_body(R"({"min_round": 3, "wait_s": 20})");
//   claim.min_round == 3;  claim.wait_s == 20;
//
// {"min_round": r}: train tasks only of rounds >= r (integer in [0, 1e9]; default 0).
// {"wait_s": s}: when nothing can be handed out, hold the claim up to s seconds and answer as
// soon as a task appears (number >= 0; default 0: answer at once); the server caps it at
// kMaxClaimWaitS. Other fields are ignored; a field given twice is InvalidInput. An empty body is
// {}. Anything else is InvalidInput;
// a body over kMaxClaimBodyBytes is PayloadTooLarge, before it is parsed: the claim's token is
// checked after its body is read, so without the cap anyone could make the server parse a body
// of --max-body-bytes (64 MB of nested arrays cost ~2.4 GB) for each claim.
#pragma once

#include <cstddef>
#include <string>

namespace fedleaf::server {

inline constexpr double kMaxClaimWaitS = 30;
inline constexpr std::size_t kMaxClaimBodyBytes = 1024;

struct ClaimBody {
  int min_round = 0;
  double wait_s = 0;  // already capped at kMaxClaimWaitS
};

ClaimBody parse_claim_body(const std::string& body);

}  // namespace fedleaf::server
