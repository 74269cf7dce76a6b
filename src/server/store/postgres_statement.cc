#include "server/store/postgres_statement.h"

namespace fedleaf::server {

pg_conn* pg_connect(const std::string& url) {
  pg_conn* conn = PQconnectdb(url.c_str());
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    const std::string message = conn ? PQerrorMessage(conn) : "out of memory";
    PQfinish(conn);
    throw Error("postgres store: cannot connect: " + message);
  }
  return conn;
}

void pg_exec(pg_conn* conn, const char* sql) { const PgResult checked(PQexec(conn, sql), sql); }

}  // namespace fedleaf::server
