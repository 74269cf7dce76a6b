#include "server/repository/client_tokens.h"

#include <spdlog/spdlog.h>

#include "server/util/server_errors.h"
#include "server/util/tokens.h"

namespace fedleaf::server {

ClientTokens::ClientTokens(RepositoryParts& parts) : parts_(parts) {}

IssuedToken ClientTokens::issue(const std::string& population_id) {
  IssuedToken out{population_id, 0, generate_token()};
  const std::string hash = hash_token(out.client_token);
  std::lock_guard lock(parts_.mutex);
  PopulationState& st = parts_.populations.state_of(population_id);
  try {
    parts_.batch.step(
        "issue client token",
        [&] { out.id = parts_.store.issue_client_token(population_id, hash, parts_.clock.now()); },
        Durability::kFull);
  } catch (...) {
    parts_.populations.erase(population_id);
    throw;
  }
  load_client_tokens(parts_.store, st);
  if (parts_.options.logger) {
    parts_.options.logger->info("event=client_token_issued population={} token_id={}",
                                population_id, out.id);
  }
  return out;
}

ClientTokenRecord ClientTokens::revoke(const std::string& population_id, int token_id) {
  std::lock_guard lock(parts_.mutex);
  PopulationState& st = parts_.populations.state_of(population_id);
  bool revoked = false;
  try {
    parts_.batch.step(
        "revoke client token",
        [&] {
          revoked = parts_.store.revoke_client_token(population_id, token_id, parts_.clock.now());
        },
        Durability::kFull);
  } catch (...) {
    parts_.populations.erase(population_id);
    throw;
  }
  load_client_tokens(parts_.store, st);
  if (!revoked) {
    throw Conflict("client token " + std::to_string(token_id) + " of population '" + population_id +
                   "' is revoked already");
  }
  if (parts_.options.logger) {
    parts_.options.logger->info("event=client_token_revoked population={} token_id={}",
                                population_id, token_id);
  }
  for (ClientTokenRecord& token : parts_.store.list_client_tokens(population_id)) {
    if (token.id == token_id) return token;
  }
  throw Error("client token " + std::to_string(token_id) + " vanished after its revocation");
}

std::vector<ClientTokenRecord> ClientTokens::list(const std::string& population_id) {
  std::lock_guard lock(parts_.mutex);
  parts_.populations.state_of(population_id);  // NotFound for an unknown population
  return parts_.store.list_client_tokens(population_id);
}

}  // namespace fedleaf::server
