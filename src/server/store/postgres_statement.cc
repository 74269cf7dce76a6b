#include "server/store/postgres_statement.h"

#include <utility>

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

namespace fedleaf::server {

namespace {

// The results of a pipeline, cleared unless taken.
struct PipelineResults {
  std::vector<pg_result*> results;
  ~PipelineResults() {
    for (pg_result* r : results) PQclear(r);
  }
};

}  // namespace

PgResult pg_pipeline(pg_conn* conn, const std::vector<const char*>& before, const PgLast& last,
                     const std::string& what) {
  if (PQenterPipelineMode(conn) != 1) {
    throw Error("postgres store: cannot enter pipeline mode: " + std::string(PQerrorMessage(conn)));
  }
  bool sent = true;
  for (const char* sql : before) {
    sent = sent && PQsendQueryParams(conn, sql, 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
  }
  if (last.name != nullptr) {
    const auto values = last.params->pointers();
    const auto lengths = last.params->lengths();
    sent = sent && PQsendQueryPrepared(conn, last.name, last.params->size(), values.data(),
                                       lengths.data(), last.params->formats().data(), 0) == 1;
  } else {
    sent = sent && PQsendQueryParams(conn, last.sql, 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
  }
  sent = sent && PQpipelineSync(conn) == 1;
  PipelineResults read;
  if (sent) {
    // One result per statement, each followed by a null; then the sync's.
    for (std::size_t i = 0; i <= before.size(); ++i) {
      pg_result* result = PQgetResult(conn);
      if (result == nullptr) break;  // the connection failed
      read.results.push_back(result);
      while (pg_result* extra = PQgetResult(conn)) PQclear(extra);
    }
    if (read.results.size() == before.size() + 1) PQclear(PQgetResult(conn));  // the sync
  }
  const bool left = PQexitPipelineMode(conn) == 1;
  if (!sent || !left || read.results.size() != before.size() + 1) {
    throw Error("postgres store: " + what + ": " + PQerrorMessage(conn));
  }
  for (std::size_t i = 0; i < before.size(); ++i) {
    const PgResult checked(std::exchange(read.results[i], nullptr), before[i]);
  }
  return PgResult(std::exchange(read.results.back(), nullptr), what);
}

}  // namespace fedleaf::server
