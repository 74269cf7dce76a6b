#include "server/store/model_files.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace fedleaf::server {
namespace {

struct TempDirectory {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("fedleaf_model_files_" + std::to_string(::getpid()) + "_" +
                       std::to_string(reinterpret_cast<std::uintptr_t>(this))))
                         .string();
  ~TempDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

void overwrite(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("model_files_persist_then_read_returns_the_same_bytes", "[model_files]") {
  TempDirectory dir;
  ModelFiles files(dir.path + "/models");
  std::string bytes(1 << 20, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 31);

  files.persist("abc123", bytes);

  CHECK(files.read("abc123") == bytes);
  CHECK(files.path_of("abc123") == dir.path + "/models/abc123.safetensors");
}

// Content-addressed: a file under the name was written whole, so a second persist only looks.
TEST_CASE("model_files_persist_of_an_existing_name_leaves_the_file_alone", "[model_files]") {
  TempDirectory dir;
  ModelFiles files(dir.path);
  files.persist("n", "first");
  overwrite(files.path_of("n"), "changed on disk");

  files.persist("n", "first");

  CHECK(files.read("n") == "changed on disk");
}

TEST_CASE("model_files_name_outside_the_rule_is_invalid_input", "[model_files]") {
  TempDirectory dir;
  ModelFiles files(dir.path);

  CHECK_THROWS_AS(files.persist("../escape", "x"), InvalidInput);
  CHECK_THROWS_AS(files.read(""), InvalidInput);
  CHECK_THROWS_AS(files.path_of(std::string(129, 'a')), InvalidInput);
}

TEST_CASE("model_files_read_of_a_missing_name_throws_naming_the_file", "[model_files]") {
  TempDirectory dir;
  ModelFiles files(dir.path);

  CHECK_THROWS_WITH(files.read("absent"), Catch::Contains("absent.safetensors"));
}

TEST_CASE("model_files_remove_unreferenced_keeps_only_the_named_models", "[model_files]") {
  TempDirectory dir;
  ModelFiles files(dir.path);
  files.persist("kept", "a");
  files.persist("dropped", "b");
  overwrite(files.path_of("kept") + ".99.0.tmp", "half");

  CHECK(files.remove_unreferenced({"kept"}) == 2);

  CHECK(files.read("kept") == "a");
  CHECK_FALSE(std::filesystem::exists(files.path_of("dropped")));
  CHECK_FALSE(std::filesystem::exists(files.path_of("kept") + ".99.0.tmp"));
}

TEST_CASE("model_files_remove_deletes_the_file_and_reports_whether_it_existed", "[model_files]") {
  TempDirectory dir;
  ModelFiles files(dir.path + "/models");
  files.persist("gone", "bytes");
  files.persist("kept", "other bytes");

  CHECK(files.remove("gone"));
  CHECK_FALSE(files.remove("gone"));
  CHECK_FALSE(std::filesystem::exists(files.path_of("gone")));
  CHECK(files.read("kept") == "other bytes");
  CHECK_THROWS_AS(files.remove("../kept"), InvalidInput);
}

}  // namespace fedleaf::server
