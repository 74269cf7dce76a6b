// PostgresStore (postgres_store.h): a private population's devices (device_store.h). An
// enrollment takes an advisory lock on its population and client token before it counts the
// token's last hour, so enrollers with one token on any server take turns and the hourly limit
// holds across servers; a claim reads its device FOR UPDATE, so the participation check and its
// record (in the claim's transaction) are one step for every server.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "server/store/postgres_statement.h"
#include "server/store/postgres_store.h"

namespace fedleaf::server {

namespace {

DeviceRecord device_at(const PgRows& rows, int i) {
  return {rows.text(i, 0), rows.text(i, 1), rows.text(i, 2),  rows.text(i, 3),
          rows.real(i, 4), rows.real(i, 5), rows.int32(i, 6), rows.int32(i, 7)};
}

}  // namespace

EnrollOutcome PostgresStore::enroll_device(const DeviceRecord& d, int max_per_hour) {
  require_population(d.population_id);
  run("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
      Params().text("fedleaf enroll " + d.population_id + " " + d.token_hash));
  // The token's enrollments are numbered 1, 2, … (device_enrollments): it is at its limit when
  // the one max_per_hour back from the next is still within the hour.
  Rows newest = run(
      "SELECT seq FROM device_enrollments WHERE population_id = $1 AND token_hash = $2 ORDER BY "
      "seq DESC LIMIT 1",
      Params().text(d.population_id).text(d.token_hash));
  const std::int64_t last = newest.size() == 0 ? 0 : newest.int64(0, 0);
  if (last >= max_per_hour) {
    Rows back = run(
        "SELECT enrolled_at FROM device_enrollments WHERE population_id = $1 AND token_hash = $2 "
        "AND seq = $3",
        Params().text(d.population_id).text(d.token_hash).integer(last - max_per_hour + 1));
    if (back.size() > 0 && back.real(0, 0) > d.enrolled_at - 3600) {
      return {false, back.real(0, 0) + 3600};
    }
  }
  run("INSERT INTO device_enrollments (population_id, token_hash, seq, enrolled_at) VALUES ($1, "
      "$2, $3, $4)",
      Params().text(d.population_id).text(d.token_hash).integer(last + 1).real(d.enrolled_at));
  run("INSERT INTO devices (population_id, id, credential_hash, token_hash, enrolled_at, "
      "revoked_at, participations, last_round) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
      Params()
          .text(d.population_id)
          .text(d.id)
          .text(d.credential_hash)
          .text(d.token_hash)
          .real(d.enrolled_at)
          .real(d.revoked_at)
          .integer(d.participations)
          .integer(d.last_round));
  return {true, std::nullopt};
}

std::optional<DeviceRecord> PostgresStore::find_device(const std::string& population_id,
                                                       const std::string& credential_hash,
                                                       bool lock) {
  Params params;
  params.text(population_id).text(credential_hash);
  Rows rows = lock ? run("SELECT population_id, id, credential_hash, token_hash, enrolled_at, "
                         "revoked_at, participations, last_round FROM devices WHERE "
                         "population_id = $1 AND credential_hash = $2 FOR UPDATE",
                         params)
                   : run("SELECT population_id, id, credential_hash, token_hash, enrolled_at, "
                         "revoked_at, participations, last_round FROM devices WHERE "
                         "population_id = $1 AND credential_hash = $2",
                         params);
  if (rows.size() == 0) return std::nullopt;
  return device_at(rows, 0);
}

void PostgresStore::record_participation(const std::string& population_id,
                                         const std::string& device_id, int round) {
  Rows updated =
      run("UPDATE devices SET participations = participations + 1, last_round = $1 WHERE "
          "population_id = $2 AND id = $3",
          Params().integer(round).text(population_id).text(device_id));
  if (updated.affected() == 0) {
    throw NotFound("population '" + population_id + "' has no device '" + device_id + "'");
  }
}

bool PostgresStore::revoke_device(const std::string& population_id, const std::string& device_id,
                                  double now) {
  Rows updated = run(
      "UPDATE devices SET revoked_at = $1 WHERE population_id = $2 AND id = $3 AND revoked_at = 0",
      Params().real(now).text(population_id).text(device_id));
  if (updated.affected() > 0) return true;
  if (run("SELECT 1 FROM devices WHERE population_id = $1 AND id = $2",
          Params().text(population_id).text(device_id))
          .size() > 0) {
    return false;
  }
  require_population(population_id);
  throw NotFound("population '" + population_id + "' has no device '" + device_id + "'");
}

std::vector<DeviceRecord> PostgresStore::list_devices(const std::string& population_id,
                                                      const std::string& after_id, int limit) {
  Rows rows = run(
      "SELECT population_id, id, credential_hash, token_hash, enrolled_at, revoked_at, "
      "participations, last_round FROM devices WHERE population_id = $1 AND id > $2 ORDER BY id "
      "LIMIT $3",
      Params().text(population_id).text(after_id).integer(limit));
  std::vector<DeviceRecord> out;
  out.reserve(static_cast<std::size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) out.push_back(device_at(rows, i));
  return out;
}

}  // namespace fedleaf::server
