// SqliteStore (sqlite_store.h): an operator's changes to a population — its pause, why it was
// finished, its client tokens (their hashes).
#include <sqlite3.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "server/store/sqlite_statement.h"
#include "server/store/sqlite_store.h"

namespace fedleaf::server {

void SqliteStore::require_population(const std::string& population_id) {
  auto s = statement("SELECT 1 FROM populations WHERE id = ?");
  s.bind(1, population_id);
  if (!s.step()) throw NotFound("population '" + population_id + "' does not exist");
}

bool SqliteStore::set_paused(const std::string& population_id, bool paused) {
  statement("UPDATE populations SET paused = ? WHERE id = ? AND state = 'running' AND paused <> ?")
      .bind(1, paused ? 1 : 0)
      .bind(2, population_id)
      .bind(3, paused ? 1 : 0)
      .run();
  if (sqlite3_changes(db_) > 0) return true;
  require_population(population_id);
  return false;
}

void SqliteStore::set_finish_reason(const std::string& population_id, const std::string& reason) {
  statement("UPDATE populations SET finish_reason = ?, paused = 0 WHERE id = ?")
      .bind(1, reason)
      .bind(2, population_id)
      .run();
  if (sqlite3_changes(db_) == 0) {
    throw NotFound("population '" + population_id + "' does not exist");
  }
}

void SqliteStore::insert_client_token(const ClientTokenRecord& token) {
  statement(
      "INSERT INTO client_tokens (population_id, id, token_hash, created_at, revoked_at) "
      "VALUES (?, ?, ?, ?, ?)")
      .bind(1, token.population_id)
      .bind(2, token.id)
      .bind(3, token.token_hash)
      .bind(4, token.created_at)
      .bind(5, token.revoked_at)
      .run();
}

void SqliteStore::bump_tokens_epoch(const std::string& population_id) {
  statement("UPDATE populations SET tokens_epoch = tokens_epoch + 1 WHERE id = ?")
      .bind(1, population_id)
      .run();
  if (sqlite3_changes(db_) == 0) {
    throw NotFound("population '" + population_id + "' does not exist");
  }
}

int SqliteStore::issue_client_token(const std::string& population_id, const std::string& token_hash,
                                    double now) {
  bump_tokens_epoch(population_id);
  auto next =
      statement("SELECT coalesce(max(id), -1) + 1 FROM client_tokens WHERE population_id = ?");
  next.bind(1, population_id);
  next.step();
  const int id = next.int32(0);
  insert_client_token({population_id, id, token_hash, now, 0});
  return id;
}

bool SqliteStore::revoke_client_token(const std::string& population_id, int token_id, double now) {
  statement(
      "UPDATE client_tokens SET revoked_at = ? WHERE population_id = ? AND id = ? AND "
      "revoked_at = 0")
      .bind(1, now)
      .bind(2, population_id)
      .bind(3, token_id)
      .run();
  if (sqlite3_changes(db_) > 0) {
    bump_tokens_epoch(population_id);
    return true;
  }
  auto s = statement("SELECT 1 FROM client_tokens WHERE population_id = ? AND id = ?");
  s.bind(1, population_id).bind(2, token_id);
  if (s.step()) return false;
  require_population(population_id);
  throw NotFound("population '" + population_id + "' has no client token " +
                 std::to_string(token_id));
}

std::vector<ClientTokenRecord> SqliteStore::list_client_tokens(const std::string& population_id) {
  auto s = statement(
      "SELECT id, token_hash, created_at, revoked_at FROM client_tokens WHERE population_id = ? "
      "ORDER BY id");
  s.bind(1, population_id);
  std::vector<ClientTokenRecord> out;
  while (s.step()) out.push_back({population_id, s.int32(0), s.text(1), s.real(2), s.real(3)});
  return out;
}

}  // namespace fedleaf::server
