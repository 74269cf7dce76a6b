// PostgresStore (postgres_store.h): an operator's changes to a population — its pause, why it
// was finished, its client tokens (their hashes). An issue locks the population's row (the epoch's
// increment) before it numbers the token, so servers issuing at once number them in turn.
#include "server/store/postgres_store.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "server/store/postgres_statement.h"

namespace fedleaf::server {

void PostgresStore::require_population(const std::string& population_id) {
  if (run("SELECT 1 FROM populations WHERE id = $1", Params().text(population_id)).size() == 0) {
    throw NotFound("population '" + population_id + "' does not exist");
  }
}

bool PostgresStore::set_paused(const std::string& population_id, bool paused) {
  Rows updated =
      run("UPDATE populations SET paused = $1 WHERE id = $2 AND state = 'running' AND paused <> $1",
          Params().integer(paused ? 1 : 0).text(population_id));
  if (updated.affected() > 0) return true;
  require_population(population_id);
  return false;
}

void PostgresStore::set_finish_reason(const std::string& population_id, const std::string& reason) {
  Rows updated = run("UPDATE populations SET finish_reason = $1, paused = 0 WHERE id = $2",
                     Params().text(reason).text(population_id));
  if (updated.affected() == 0) {
    throw NotFound("population '" + population_id + "' does not exist");
  }
}

void PostgresStore::insert_client_token(const ClientTokenRecord& token) {
  run("INSERT INTO client_tokens (population_id, id, token_hash, created_at, revoked_at) VALUES "
      "($1, $2, $3, $4, $5)",
      Params()
          .text(token.population_id)
          .integer(token.id)
          .text(token.token_hash)
          .real(token.created_at)
          .real(token.revoked_at));
}

void PostgresStore::bump_tokens_epoch(const std::string& population_id) {
  Rows updated = run("UPDATE populations SET tokens_epoch = tokens_epoch + 1 WHERE id = $1",
                     Params().text(population_id));
  if (updated.affected() == 0) {
    throw NotFound("population '" + population_id + "' does not exist");
  }
}

int PostgresStore::issue_client_token(const std::string& population_id,
                                      const std::string& token_hash, double now) {
  bump_tokens_epoch(population_id);  // the population's row lock: one issuer at a time
  Rows next = run("SELECT coalesce(max(id), -1) + 1 FROM client_tokens WHERE population_id = $1",
                  Params().text(population_id));
  const int id = next.int32(0, 0);
  insert_client_token({population_id, id, token_hash, now, 0});
  return id;
}

bool PostgresStore::revoke_client_token(const std::string& population_id, int token_id,
                                        double now) {
  Rows updated =
      run("UPDATE client_tokens SET revoked_at = $1 WHERE population_id = $2 AND id = $3 AND "
          "revoked_at = 0",
          Params().real(now).text(population_id).integer(token_id));
  if (updated.affected() > 0) {
    bump_tokens_epoch(population_id);
    return true;
  }
  if (run("SELECT 1 FROM client_tokens WHERE population_id = $1 AND id = $2",
          Params().text(population_id).integer(token_id))
          .size() > 0) {
    return false;
  }
  require_population(population_id);
  throw NotFound("population '" + population_id + "' has no client token " +
                 std::to_string(token_id));
}

std::vector<ClientTokenRecord> PostgresStore::list_client_tokens(const std::string& population_id) {
  Rows rows = run(
      "SELECT id, token_hash, created_at, revoked_at FROM client_tokens WHERE population_id = $1 "
      "ORDER BY id",
      Params().text(population_id));
  std::vector<ClientTokenRecord> out;
  out.reserve(static_cast<std::size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) {
    out.push_back(
        {population_id, rows.int32(i, 0), rows.text(i, 1), rows.real(i, 2), rows.real(i, 3)});
  }
  return out;
}

}  // namespace fedleaf::server
