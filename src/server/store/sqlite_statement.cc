#include "server/store/sqlite_statement.h"

#include "core/error.h"

namespace fedleaf::server {

void sqlite_fail(sqlite3* db, const std::string& what) {
  const int code = sqlite3_extended_errcode(db);
  const std::string message = what + ": " + sqlite3_errmsg(db);
  if (code == SQLITE_CONSTRAINT_PRIMARYKEY || code == SQLITE_CONSTRAINT_UNIQUE) {
    throw Conflict(message);
  }
  throw Error("sqlite store: " + message);
}

}  // namespace fedleaf::server
