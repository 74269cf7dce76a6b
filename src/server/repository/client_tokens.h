// ClientTokens: a population's client tokens as an operator manages them (the admin calls
// POST /v1/populations/{p}/tokens, GET .../tokens, POST .../tokens/{id}:revoke).
//
//   ClientTokens tokens(parts);
//   IssuedToken t = tokens.issue("spam");    // t.client_token is shown once: only its hash is kept
//   tokens.revoke("spam", 0);                // the population's first token: 403 from now on
//
// A claim or model:select is admitted under any live token of its population (the population's
// first, id 0, made with it; then 1, 2, ... in issue order); a revoked one gets 403 (Forbidden),
// on every server sharing the store: the claim statement checks the token it leases under, and a
// server re-reads a population's tokens when its tokens_epoch moved (PopulationCache). Leases
// handed out under a token before its revocation may still report (an upload carries the lease's
// token, not the client's). Each issue and revocation is committed and synced before it returns.
//
// Errors: NotFound (404) an unknown population or token; Conflict (409) a token revoked already.
// Locking: each call takes parts.mutex itself.
#pragma once

#include <string>
#include <vector>

#include "server/repository/repository_parts.h"

namespace fedleaf::server {

struct IssuedToken {
  std::string population;
  int id = 0;
  std::string client_token;  // shown once
};

class ClientTokens {
 public:
  explicit ClientTokens(RepositoryParts& parts);

  IssuedToken issue(const std::string& population_id);
  // The token's record after it (revoked_at set).
  ClientTokenRecord revoke(const std::string& population_id, int token_id);
  // Every token of the population, live and revoked, ordered by id.
  std::vector<ClientTokenRecord> list(const std::string& population_id);

 private:
  RepositoryParts& parts_;
};

}  // namespace fedleaf::server
