#include "server/api/static_files.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace fedleaf::server {

namespace {
struct WebRoot {
  std::filesystem::path root = std::filesystem::temp_directory_path() /
                               ("fedleaf_static_test_" + std::to_string(::getpid()));
  WebRoot() {
    std::filesystem::create_directories(root / "sub");
    std::ofstream(root / "index.html") << "<h1>hi</h1>";
    std::ofstream(root / "sub" / "app.js") << "export {}";
    std::ofstream(root.parent_path() / "fedleaf_static_secret.txt") << "secret";
  }
  ~WebRoot() {
    std::filesystem::remove_all(root);
    std::filesystem::remove(root.parent_path() / "fedleaf_static_secret.txt");
  }
};
}  // namespace

TEST_CASE("serve_static_file_serves_index_and_files_cross_origin_isolated", "[static]") {
  WebRoot web;

  Response index = serve_static_file(web.root.string(), "/");
  Response js = serve_static_file(web.root.string(), "/sub/app.js");

  CHECK(*index.body == "<h1>hi</h1>");
  CHECK(index.header("content-type") == "text/html; charset=utf-8");
  CHECK(index.header("cross-origin-opener-policy") == "same-origin");
  CHECK(index.header("cross-origin-embedder-policy") == "require-corp");
  CHECK(*js.body == "export {}");
  CHECK(js.header("content-type") == "text/javascript; charset=utf-8");
}

TEST_CASE("serve_static_file_never_leaves_the_root", "[static]") {
  WebRoot web;

  CHECK_THROWS_AS(serve_static_file(web.root.string(), "/../fedleaf_static_secret.txt"), NotFound);
  CHECK_THROWS_AS(serve_static_file(web.root.string(), "/%2e%2e/fedleaf_static_secret.txt"),
                  NotFound);
  CHECK_THROWS_AS(serve_static_file(web.root.string(), "/missing.html"), NotFound);
}

TEST_CASE("content_type_for_knows_wasm_and_defaults_to_octet_stream", "[static]") {
  CHECK(content_type_for("leaf.wasm") == "application/wasm");
  CHECK(content_type_for("model.bin") == "application/octet-stream");
}

// Regression: a symbolic link in the web root was followed wherever it pointed (/etc/passwd).
TEST_CASE("serve_static_file_follows_links_only_within_the_root", "[static]") {
  WebRoot web;
  std::filesystem::create_symlink(web.root.parent_path() / "fedleaf_static_secret.txt",
                                  web.root / "outside.txt");
  std::filesystem::create_symlink("../fedleaf_static_secret.txt", web.root / "relative.txt");
  std::filesystem::create_symlink("/etc", web.root / "etc");
  std::filesystem::create_symlink(web.root / "sub" / "app.js", web.root / "inside.js");

  CHECK_THROWS_AS(serve_static_file(web.root.string(), "/outside.txt"), NotFound);
  CHECK_THROWS_AS(serve_static_file(web.root.string(), "/relative.txt"), NotFound);
  CHECK_THROWS_AS(serve_static_file(web.root.string(), "/etc/passwd"), NotFound);
  CHECK(*serve_static_file(web.root.string(), "/inside.js").body == "export {}");
}

}  // namespace fedleaf::server
