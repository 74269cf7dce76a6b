// The Store backends the one store suite (store_*_test.cc) runs on: SQLite in memory, SQLite in a
// file and PostgreSQL (when FEDLEAF_TEST_PG_URL names a server; scripts/test.sh starts one).
//
//   FEDLEAF_STORE_CASE(store_..., FEDLEAF_STORE_BACKENDS) {
//     create(store, "p");            // store: a fresh, empty store of the backend
//     auto other = backend.open();   // another connection to the same store (shared backends)
//   }
#pragma once

#include <libpq-fe.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

#include "server/store/postgres_store.h"
#include "server/store/sqlite_store.h"

namespace fedleaf::server {

struct SqliteMemoryBackend {
  static constexpr bool kShared = false;  // every open() is a new database
  std::unique_ptr<Store> open() { return std::make_unique<SqliteStore>(":memory:"); }
};

struct SqliteFileBackend {
  static constexpr bool kShared = true;
  std::string path;
  SqliteFileBackend() {
    path = (std::filesystem::temp_directory_path() /
            ("fedleaf_store_test_" + std::to_string(::getpid()) + "_" +
             std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".db"))
               .string();
    remove_files();
  }
  ~SqliteFileBackend() { remove_files(); }
  SqliteFileBackend(const SqliteFileBackend&) = delete;
  SqliteFileBackend& operator=(const SqliteFileBackend&) = delete;
  void remove_files() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
    std::error_code ignored;
    std::filesystem::remove_all(path + "-models", ignored);
  }
  std::unique_ptr<Store> open() { return std::make_unique<SqliteStore>(path); }
};

// A schema of its own in the database named by FEDLEAF_TEST_PG_URL (ctest runs test cases in
// parallel processes), created on the first open() and dropped with the backend; every open()
// connects with that schema as its search_path. Unset: open() returns null — and fails the test
// when CI=true, so CI never skips PostgreSQL silently.
struct PostgresBackend {
  static constexpr bool kShared = true;
  std::string admin_url;
  std::string schema;
  PostgresBackend() = default;
  PostgresBackend(const PostgresBackend&) = delete;
  PostgresBackend& operator=(const PostgresBackend&) = delete;
  ~PostgresBackend() {
    if (!schema.empty()) admin("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
  }
  void admin(const std::string& sql) {
    pg_conn* conn = PQconnectdb(admin_url.c_str());
    pg_result* result = PQexec(conn, ("SET client_min_messages = warning; " + sql).c_str());
    const bool ok = PQresultStatus(result) == PGRES_COMMAND_OK;
    const std::string message = PQerrorMessage(conn);
    PQclear(result);
    PQfinish(conn);
    if (!ok) throw std::runtime_error("PostgresBackend: " + sql + ": " + message);
  }
  // The URL every open() connects with (its schema created on the first call); empty when
  // FEDLEAF_TEST_PG_URL is unset.
  std::string url() {
    const char* env = std::getenv("FEDLEAF_TEST_PG_URL");
    if (env == nullptr || *env == '\0') {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") {
        FAIL("CI=true but FEDLEAF_TEST_PG_URL is not set: the store suite must run on PostgreSQL");
      }
      return "";
    }
    if (schema.empty()) {
      admin_url = env;
      schema = "test_" + std::to_string(::getpid()) + "_" +
               std::to_string(reinterpret_cast<std::uintptr_t>(this));
      admin("DROP SCHEMA IF EXISTS " + schema + " CASCADE; CREATE SCHEMA " + schema);
    }
    const char separator = admin_url.find('?') == std::string::npos ? '?' : '&';
    return admin_url + separator + "options=-csearch_path%3D" + schema;
  }
  std::unique_ptr<Store> open() {
    const std::string store_url = url();
    if (store_url.empty()) return nullptr;
    return std::make_unique<PostgresStore>(store_url);
  }
};

}  // namespace fedleaf::server

// The backends as TEMPLATE_TEST_CASE's type list: Catch names each case after its type
// ("store_... - PostgresBackend"), where a TEMPLATE_LIST_TEST_CASE would number them. Every
// backend, and those where several connections share one store.
#define FEDLEAF_STORE_BACKENDS SqliteMemoryBackend, SqliteFileBackend, PostgresBackend
#define FEDLEAF_SHARED_STORE_BACKENDS SqliteFileBackend, PostgresBackend

// One case of the store suite, run on a fresh, empty store of each backend listed: the body sees
// `Store& store` and `TestType& backend`, and does not run when the backend is not configured
// (PostgreSQL without FEDLEAF_TEST_PG_URL; a failure when CI=true). Catch names each run
// "name - Backend".
#define FEDLEAF_STORE_CASE(name, ...)                          \
  template <typename TestType>                                 \
  void name(Store& store, [[maybe_unused]] TestType& backend); \
  TEMPLATE_TEST_CASE(#name, "[store]", __VA_ARGS__) {          \
    TestType backend;                                          \
    const std::unique_ptr<Store> fresh = backend.open();       \
    if (fresh) name(*fresh, backend);                          \
  }                                                            \
  template <typename TestType>                                 \
  void name(Store& store, [[maybe_unused]] TestType& backend)
