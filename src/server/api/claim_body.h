// ClaimBody: the optional JSON body of POST /v1/populations/{p}/tasks:claim.
//
//   ClaimBody claim = parse_claim_body(R"({"min_round": 3, "wait_s": 20})");
//   claim.min_round == 3;  claim.wait_s == 20;
//
// {"min_round": r}: train tasks only of rounds >= r (integer in [0, 1e9]; default 0).
// {"wait_s": s}: when nothing can be handed out, hold the claim up to s seconds and answer as
// soon as a task appears (number >= 0; default 0: answer at once); the server caps it at
// kMaxClaimWaitS. Other fields are ignored. An empty body is {}. Anything else is InvalidInput.
#pragma once

#include <string>

namespace fedleaf::server {

inline constexpr double kMaxClaimWaitS = 30;

struct ClaimBody {
  int min_round = 0;
  double wait_s = 0;  // already capped at kMaxClaimWaitS
};

ClaimBody parse_claim_body(const std::string& body);

}  // namespace fedleaf::server
