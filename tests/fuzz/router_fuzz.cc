// HTTP requests at the router, as the transport hands them over (route matching, path and query
// parsing, headers, body dispatch), against a real TaskRepository on an in-memory SQLite store
// holding population "p" (the server tests' plan, 2 rounds of 2 reports). Any sequence of
// requests gets answers with a status in [200, 599] other than 500 (a 500 is an exception no
// rule names), whose error bodies are {"error": {"code", "message"}}; nothing crashes.
//
// Input: requests separated by a line "===". Each is "METHOD TARGET", then "name: value" header
// lines, an empty line and the body; or "TICK SECONDS", which advances the clock and runs the
// repository's tick (lease expiry, deadlines). Tokens a fuzzer cannot guess are placeholders
// replaced everywhere: $ADMIN, $CLIENT (p's client token), $TASK and $LEASE (the last task
// claimed), $VERSION (this server's Fedleaf-Version), $TRAIN and $EVAL (valid train and
// evaluate results of the plan, safetensors bytes).
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/version.h"
#include "server/api/router.h"
#include "server/repository/task_repository.h"
#include "server/server_fixtures.h"
#include "server/store/sqlite_store.h"
#include "server/util/clock.h"
#include "server/util/server_metrics.h"
#include "server/util/tokens.h"

namespace {

using namespace fedleaf::server;
namespace test = fedleaf::test;

constexpr const char* kAdmin = "fuzz-admin-token";

struct Tokens {
  std::string client;
  std::string task;
  std::string lease;
};

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

std::string substitute(std::string text, const Tokens& tokens) {
  static const std::string train = test::train_result({1, 3}, 0.25f, 0.5f, 4);
  static const std::string eval = test::eval_result(4, 0.5, 0.75);
  replace_all(text, "$ADMIN", kAdmin);
  replace_all(text, "$CLIENT", tokens.client);
  replace_all(text, "$TASK", tokens.task);
  replace_all(text, "$LEASE", tokens.lease);
  replace_all(
      text, "$VERSION",
      std::to_string(fedleaf::kVersionMajor) + "." + std::to_string(fedleaf::kVersionMinor));
  replace_all(text, "$TRAIN", train);
  replace_all(text, "$EVAL", eval);
  return text;
}

std::vector<std::string> split_requests(const std::string& input) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t at = input.find("\n===\n"); at != std::string::npos && out.size() < 16;
       at = input.find("\n===\n", start)) {
    out.push_back(input.substr(start, at - start));
    start = at + 5;
  }
  out.push_back(input.substr(start));
  return out;
}

Request parse_request(const std::string& text, const Tokens& tokens) {
  Request r;
  std::size_t line_end = text.find('\n');
  const std::string first = text.substr(0, line_end);
  const std::size_t space = first.find(' ');
  r.method = first.substr(0, space);
  // The transport reads an absolute-form target as its path (origin_form), so does this.
  r.target =
      origin_form(space == std::string::npos ? "" : substitute(first.substr(space + 1), tokens));
  while (line_end != std::string::npos) {
    const std::size_t start = line_end + 1;
    line_end = text.find('\n', start);
    const std::string line = text.substr(start, line_end - start);
    if (line.empty()) {
      if (line_end != std::string::npos) r.body = substitute(text.substr(line_end + 1), tokens);
      break;
    }
    const std::size_t colon = line.find(':');
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    r.headers[name] = substitute(value, tokens);
  }
  return r;
}

const std::string& web_root() {
  static const std::string root = [] {
    const auto dir = std::filesystem::temp_directory_path() / "fedleaf-router-fuzz-web";
    std::filesystem::create_directories(dir / "js");
    std::ofstream(dir / "index.html") << "<!doctype html><title>fedleaf</title>";
    std::ofstream(dir / "js" / "app.js") << "export {};";
    return dir.string();
  }();
  return root;
}

void check_response(const Response& response) {
  if (response.status < 200 || response.status > 599 || response.status == 500) std::abort();
  if (response.status >= 400) {
    const auto body = nlohmann::json::parse(*response.body, nullptr, false);
    if (body.is_discarded() || !body.contains("error") || !body["error"].contains("code") ||
        !body["error"]["message"].is_string()) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
  const Router router(repo, metrics, RouterOptions{hash_token(kAdmin), web_root(), nullptr, {}});
  Tokens tokens;
  tokens.client = repo.create_population(test::test_spec("p", 2, 2, 1)).client_token;

  const std::string input(reinterpret_cast<const char*>(data), size);
  for (const std::string& text : split_requests(input)) {
    if (text.rfind("TICK ", 0) == 0) {
      clock.advance(std::atof(text.c_str() + 5) > 0 ? std::atof(text.c_str() + 5) : 1.0);
      repo.tick();
      continue;
    }
    const Response response = router.handle(parse_request(text, tokens));
    repo.commit_batch();
    check_response(response);
    if (response.status == 200 && response.header("content-type") == "application/json") {
      const auto body = nlohmann::json::parse(*response.body, nullptr, false);
      if (body.is_object() && body.contains("lease_token") && body["lease_token"].is_string() &&
          body.contains("task_id") && body["task_id"].is_number_integer()) {
        tokens.task = std::to_string(body["task_id"].get<std::int64_t>());
        tokens.lease = body["lease_token"].get<std::string>();
      }
    }
  }
  return 0;
}
