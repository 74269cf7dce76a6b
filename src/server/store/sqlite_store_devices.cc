// SqliteStore (sqlite_store.h): a private population's devices (device_store.h). One writer:
// the enrollment count and its insert, and a claim's check and record, are one step for every
// connection without further locks.
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "server/store/sqlite_statement.h"
#include "server/store/sqlite_store.h"

namespace fedleaf::server {

namespace {

constexpr const char* kDeviceColumns =
    "population_id, id, credential_hash, token_hash, enrolled_at, revoked_at, participations, "
    "last_round";

DeviceRecord read_device(SqliteStatement& s) {
  return {s.text(0), s.text(1), s.text(2), s.text(3), s.real(4), s.real(5), s.int32(6), s.int32(7)};
}

}  // namespace

EnrollOutcome SqliteStore::enroll_device(const DeviceRecord& d, int max_per_hour) {
  require_population(d.population_id);
  // The token's enrollments are numbered 1, 2, … (device_enrollments): it is at its limit when
  // the one max_per_hour back from the next is still within the hour.
  std::int64_t last = 0;
  {
    auto s = statement(
        "SELECT seq FROM device_enrollments WHERE population_id = ? AND token_hash = ? ORDER BY "
        "seq DESC LIMIT 1");
    s.bind(1, d.population_id).bind(2, d.token_hash);
    if (s.step()) last = s.int64(0);
  }
  if (last >= max_per_hour) {
    auto s = statement(
        "SELECT enrolled_at FROM device_enrollments WHERE population_id = ? AND token_hash = ? "
        "AND seq = ?");
    s.bind(1, d.population_id).bind(2, d.token_hash).bind(3, last - max_per_hour + 1);
    if (s.step() && s.real(0) > d.enrolled_at - 3600) return {false, s.real(0) + 3600};
  }
  statement(
      "INSERT INTO device_enrollments (population_id, token_hash, seq, enrolled_at) VALUES (?, ?, "
      "?, ?)")
      .bind(1, d.population_id)
      .bind(2, d.token_hash)
      .bind(3, last + 1)
      .bind(4, d.enrolled_at)
      .run();
  statement(
      "INSERT INTO devices (population_id, id, credential_hash, token_hash, enrolled_at, "
      "revoked_at, participations, last_round) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, d.population_id)
      .bind(2, d.id)
      .bind(3, d.credential_hash)
      .bind(4, d.token_hash)
      .bind(5, d.enrolled_at)
      .bind(6, d.revoked_at)
      .bind(7, d.participations)
      .bind(8, d.last_round)
      .run();
  return {true, std::nullopt};
}

std::optional<DeviceRecord> SqliteStore::find_device(const std::string& population_id,
                                                     const std::string& credential_hash, bool) {
  static const std::string sql = std::string("SELECT ") + kDeviceColumns +
                                 " FROM devices WHERE population_id = ? AND credential_hash = ?";
  auto s = statement(sql.c_str());
  s.bind(1, population_id).bind(2, credential_hash);
  if (!s.step()) return std::nullopt;
  return read_device(s);
}

void SqliteStore::record_participation(const std::string& population_id,
                                       const std::string& device_id, int round) {
  statement(
      "UPDATE devices SET participations = participations + 1, last_round = ? WHERE "
      "population_id = ? AND id = ?")
      .bind(1, round)
      .bind(2, population_id)
      .bind(3, device_id)
      .run();
  if (sqlite3_changes(db_) == 0) {
    throw NotFound("population '" + population_id + "' has no device '" + device_id + "'");
  }
}

bool SqliteStore::revoke_device(const std::string& population_id, const std::string& device_id,
                                double now) {
  statement(
      "UPDATE devices SET revoked_at = ? WHERE population_id = ? AND id = ? AND revoked_at = 0")
      .bind(1, now)
      .bind(2, population_id)
      .bind(3, device_id)
      .run();
  if (sqlite3_changes(db_) > 0) return true;
  auto s = statement("SELECT 1 FROM devices WHERE population_id = ? AND id = ?");
  s.bind(1, population_id).bind(2, device_id);
  if (s.step()) return false;
  require_population(population_id);
  throw NotFound("population '" + population_id + "' has no device '" + device_id + "'");
}

std::vector<DeviceRecord> SqliteStore::list_devices(const std::string& population_id,
                                                    const std::string& after_id, int limit) {
  static const std::string sql = std::string("SELECT ") + kDeviceColumns +
                                 " FROM devices WHERE population_id = ? AND id > ? ORDER BY id "
                                 "LIMIT ?";
  auto s = statement(sql.c_str());
  s.bind(1, population_id).bind(2, after_id).bind(3, limit);
  std::vector<DeviceRecord> out;
  while (s.step()) out.push_back(read_device(s));
  return out;
}

}  // namespace fedleaf::server
