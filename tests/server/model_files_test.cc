#include "server/store/model_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

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

// Regression: opening deleted every model file no row named, silently — all of them when --db
// named an empty or new database beside an existing model directory.
TEST_CASE("model_files_set_aside_unreferenced_moves_unnamed_models_to_lost_and_found",
          "[model_files]") {
  TempDirectory dir;
  ModelFiles files(dir.path);
  files.persist("kept", "a");
  files.persist("orphan", "b");
  overwrite(files.path_of("kept") + ".99.0.tmp", "half");
  overwrite(dir.path + "/notes.txt", "an operator's file");

  CHECK(files.set_aside_unreferenced({"kept"}) == std::vector<std::string>{"orphan.safetensors"});

  CHECK(files.read("kept") == "a");
  CHECK_FALSE(std::filesystem::exists(files.path_of("orphan")));
  std::ifstream aside(dir.path + "/lost+found/orphan.safetensors");
  CHECK(std::string(std::istreambuf_iterator<char>(aside), {}) == "b");
  CHECK_FALSE(std::filesystem::exists(files.path_of("kept") + ".99.0.tmp"));
  CHECK(std::filesystem::exists(dir.path + "/notes.txt"));
  // Nothing left to move: lost+found itself is not a model.
  CHECK(files.set_aside_unreferenced({"kept"}).empty());
}

// Regression: a FIFO in a model's place blocked open() for good, under the repository's lock.
TEST_CASE("model_files_read_refuses_what_is_not_a_regular_file_without_blocking", "[model_files]") {
  TempDirectory dir;
  ModelFiles files(dir.path);
  REQUIRE(::mkfifo(files.path_of("fifo").c_str(), 0600) == 0);
  std::filesystem::create_directory(files.path_of("folder"));
  std::filesystem::create_symlink("/dev/zero", files.path_of("device"));

  CHECK_THROWS_WITH(files.read("fifo"), "model files: 'fifo.safetensors' is not a regular file");
  CHECK_THROWS_WITH(files.read("folder"),
                    "model files: 'folder.safetensors' is not a regular file");
  CHECK_THROWS_WITH(files.read("device"),
                    "model files: 'device.safetensors' is not a regular file");
}

// Messages reach clients (an earlier round's model that cannot be read): no server paths.
TEST_CASE("model_files_errors_name_the_file_without_the_directory", "[model_files]") {
  TempDirectory dir;
  ModelFiles files(dir.path);
  CHECK_THROWS_WITH(files.read("absent"),
                    "model files: cannot open 'absent.safetensors': No such file or directory");
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
