// Brings a PostgreSQL database to the schema this server reads (postgres_schema.h, version
// PostgresStore::kSchemaVersion) when a PostgresStore opens, without pausing the servers
// already serving from it.
//
//   set_up_postgres_schema(conn);  // on the connection that will serve, before it serves
//
// A start reads the version first (schema_version only) and, when it is current — every start
// but the first on an empty database and the first after an upgrade — runs no DDL and takes no
// lock on any other table. Creating or migrating runs the schema and the migrations in one
// transaction under an advisory lock (servers starting together create it once); that step
// locks tables (CREATE INDEX takes SHARE on its table, ALTER TABLE ACCESS EXCLUSIVE), so it
// waits for every open write transaction on them and pauses the servers' writers until it
// commits (docs/deploy.md "Locks"). Errors: fedleaf::Error (the database's version is not one
// this server reads; a statement failed).
#pragma once

struct pg_conn;

namespace fedleaf::server {

void set_up_postgres_schema(pg_conn* conn);

}  // namespace fedleaf::server
