// The Store backends the one store suite (store_test.cc) runs on: SQLite in memory, SQLite in a
// file.
//
//   TEMPLATE_LIST_TEST_CASE("store_...", "[store]", StoreBackends) {
//     TestType backend;
//     auto store = backend.open();   // a fresh, empty store
// //     auto other = backend.open();   // another connection to the same store (shared backends)
//   }
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>

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
  }
  std::unique_ptr<Store> open() { return std::make_unique<SqliteStore>(path); }
};

using StoreBackends = std::tuple<SqliteMemoryBackend, SqliteFileBackend>;
using SharedStoreBackends = std::tuple<SqliteFileBackend>;

}  // namespace fedleaf::server
