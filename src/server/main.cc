// fedleaf-server: the task repository (see src/server/README.md).
//
//   fedleaf-server --db var/tasks.db --port 8080 --web-root web_demo
//                  --admin-token-file var/admin.token
//   fedleaf-server backup --db var/tasks.db --to backups/monday   (backup_command.h)
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <atomic>

#include <CLI/CLI.hpp>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/train/executor.h"
#include "core/version.h"
#include "server/api/router.h"
#include "server/backup_command.h"
#include "server/http/http_server.h"
#include "server/http/listening_socket.h"
#include "server/repository/deadline_ticker.h"
#include "server/repository/group_commit.h"
#include "server/repository/task_repository.h"
#include "server/store/postgres_store.h"
#include "server/store/sqlite_store.h"
#include "server/util/admin_token_file.h"
#include "server/util/tokens.h"

namespace {

// A number flag in [min, max]: CLI11's Range lets NaN through (no comparison with it is true) and
// wraps a negative into an unsigned flag; this reads the text as a double first.
CLI::Validator number_in(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !(v >= min && v <= max)) {
          std::ostringstream rule;
          rule << std::setprecision(15) << "'" << text << "' is not a number in [" << min << ", "
               << max << "]";
          return rule.str();
        }
        return "";
      },
      "");
}

bool is_postgres_url(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

// `postgresql://` or `postgres://` URLs pick PostgresStore, anything else is a SQLite file.
std::unique_ptr<fedleaf::server::Store> open_store(const std::string& db,
                                                   const std::shared_ptr<spdlog::logger>& logger) {
  if (is_postgres_url(db)) {
    fedleaf::server::PostgresSchemaSetup setup;
    setup.logger = logger;
    return std::make_unique<fedleaf::server::PostgresStore>(db, setup);
  }
  auto store = std::make_unique<fedleaf::server::SqliteStore>(db);
  const auto& found = store->model_files_at_open();
  const std::string aside = db + "-models/" + fedleaf::server::ModelFiles::kLostAndFound;
  for (const std::string& file : found.set_aside) {
    logger->warn(
        "event=model_file_set_aside file={} moved_to={} reason=\"no model row of the "
        "database names it\"",
        file, aside);
  }
  if (!found.set_aside.empty() && found.named == 0) {
    logger->error(
        "event=model_files_without_database db={} set_aside={} message=\"the database "
        "names no model, yet its model directory held some: if --db is not the database "
        "they belong to, stop and point --db at that one (the files are in {})\"",
        db, found.set_aside.size(), aside);
  }
  return store;
}

// A SQLite database serves one server: a second one would keep its own in-memory rounds and hand
// out the same tasks again. The lock is on a file beside the database (SQLite's own POSIX locks
// on the database file would be dropped by any other descriptor of it closing), and the kernel
// releases it when the process ends, however it ends: the descriptor stays open until then.
void lock_sqlite_database(const std::string& db) {
  const std::string path = db + "-lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw fedleaf::Error("--db: cannot open the lock file '" + path + "': " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    throw fedleaf::Error("--db: another fedleaf-server uses '" + db + "' (it holds '" + path +
                         "'); a SQLite database serves one server at a time — several servers "
                         "share a postgresql:// URL");
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fedleaf::server;
#ifdef __GLIBC__
  // Every round moves megabytes through short-lived buffers (uploads, model:select answers, the
  // next model and its encoding). glibc's defaults hand such buffers back to the kernel when
  // they are freed (mmap above a threshold, heap trimming), and the next one faults in pages the
  // kernel must zero: 15% of the server's CPU in the round bench. Keep freed memory for reuse.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: buffers under 32 MB come from the heap
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
  if (argc > 1 && std::strcmp(argv[1], "backup") == 0)
    return run_backup_command(argc - 1, argv + 1);
  CLI::App app{"fedleaf task repository", "fedleaf-server"};
  app.footer(
      "Online backup of a SQLite database while it serves: fedleaf-server backup --db FILE --to "
      "DIR (fedleaf-server backup --help)");
  std::string db_path;
  std::string admin_token_file;
  std::string log_level = "info";
  std::string address = "127.0.0.1";
  unsigned short port = 8080;
  HttpServerOptions http;
  double tick_interval_s = 1;
  RouterOptions routing;
  TaskRepositoryOptions repo_options;
  app.set_version_flag("--version", std::string(fedleaf::kVersion));
  app.add_option("--db", db_path,
                 "SQLite database file (created if missing; one server at a time), or a "
                 "postgresql:// URL (shared by any number of servers)")
      ->check(CLI::Validator(
          [](std::string& db) -> std::string {
            // Accepted reports must outlive the process: no in-memory or temporary database.
            if (db.empty() || db == ":memory:" || db.rfind("file:", 0) == 0) {
              return "'" + db + "' is not a database file path or a postgresql:// URL";
            }
            return "";
          },
          ""))
      ->required();
  app.add_option("--admin-token-file", admin_token_file,
                 "file holding the admin token (16 to 4096 visible ASCII characters)")
      ->required();
  app.add_option("--port", port, "TCP port; 0 picks a free one")
      ->check(number_in(0, 65535))
      ->capture_default_str();
  app.add_option("--address", address, "address to listen on")->capture_default_str();
  app.add_option("--web-root", routing.web_root, "folder of static files served at /")
      ->check(CLI::ExistingDirectory);
  app.add_option("--threads", http.threads, "I/O threads")
      ->check(number_in(1, 256))
      ->capture_default_str();
  app.add_option("--max-body-bytes", http.max_body_bytes, "largest request body (413 above)")
      ->check(number_in(1024, 1ull << 40))
      ->capture_default_str();
  app.add_option("--max-model-bytes", repo_options.max_model_bytes,
                 "largest model a population may have (bytes of F32 parameters; 400 above)")
      ->check(number_in(1024, 1ull << 40))
      ->capture_default_str();
  app.add_option("--header-timeout-s", http.header_timeout_s,
                 "seconds to receive a request header, and keep-alive idle time (408)")
      ->check(number_in(0.001, 86400))
      ->capture_default_str();
  app.add_option("--body-timeout-s", http.body_timeout_s, "seconds to receive a body (408)")
      ->check(number_in(0.001, 86400))
      ->capture_default_str();
  app.add_option("--max-connections", http.max_connections, "open connections (429 above)")
      ->check(number_in(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--cors-origin", http.cors_origins,
                 "origin allowed to call the API from a browser (repeatable; '*' for any)");
  double client_burst = 0;
  app.add_option("--client-rate-limit", routing.client_rate_limit.rate_per_s,
                 "requests/s each client token may make (claims, model:select); 0: no limit")
      ->check(number_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--client-rate-burst", client_burst,
                 "requests a client token may make at once (default: 2 s of its rate, >= 1)")
      ->check(number_in(1, 1e9));
  app.add_option("--tick-interval-s", tick_interval_s, "deadline check period")
      ->check(number_in(0.01, 3600))
      ->capture_default_str();
  app.add_option("--shutdown-grace-s", http.shutdown_grace_s,
                 "longest wait for requests in flight at shutdown")
      ->check(number_in(0, 3600))
      ->capture_default_str();
  app.add_option("--checkpoint-every", repo_options.checkpoint_every,
                 "checkpoint an open round every N accepted reports (0: at shutdown only)")
      ->check(number_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--keep-models", repo_options.keep_models,
                 "keep the last N published models of each population, and those of rounds a "
                 "task still holds a lease of; older ones are deleted (0: keep every model)")
      ->check(number_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  routing.client_rate_limit.burst =
      client_burst > 0 ? client_burst : std::max(1.0, 2 * routing.client_rate_limit.rate_per_s);

  auto logger = spdlog::stderr_color_mt("fedleaf");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z level=%l %v");
  logger->set_level(spdlog::level::from_str(log_level));
  logger->flush_on(spdlog::level::info);
  repo_options.logger = logger;
  routing.logger = logger;
  repo_options.model_initializer = fedleaf::core::initialize_model;
  // The upload that completes a round is answered without waiting for the close (README "Round
  // close cost and model storage").
  repo_options.close_in_background = true;

  try {
    routing.admin_token_hash = hash_token(read_admin_token_file(admin_token_file));
    // Bound first: a start that cannot listen fails before it creates or locks a database.
    ListeningSocket listening(address, port);
    if (!is_postgres_url(db_path)) lock_sqlite_database(db_path);
    std::unique_ptr<Store> owned_store = open_store(db_path, logger);
    Store& store = *owned_store;
    SystemClock clock;
    ServerMetrics metrics;
    TaskRepository repository(store, clock, metrics, repo_options);
    // Declared after the store and before the server: destroyed (drained) before the store.
    // A failed commit or sync leaves the server unable to promise anything until a restart
    // rebuilds from the store: it stops (answering 503 meanwhile, /healthz included) and exits
    // non-zero, so that systemd's Restart=on-failure restarts it (docs/deploy.md "Runbook").
    std::atomic<HttpServer*> to_stop{nullptr};
    GroupCommit group_commit([&repository] { repository.commit_batch(); },
                             [&store] { store.sync(); }, metrics, logger,
                             [&to_stop] {
                               if (HttpServer* server = to_stop.load()) server->stop();
                             });
    routing.failure = [&group_commit] { return group_commit.failure(); };
    Router router(repository, metrics, routing);
    HttpServer server(std::move(listening), router, repository.waiters(), group_commit, metrics,
                      http, logger);
    to_stop = &server;
    std::optional<DeadlineTicker> ticker;
    ticker.emplace(tick_interval_s, [&repository] { repository.tick(); });
    logger->info("event=listening version={} address={} port={} db={} threads={}",
                 fedleaf::kVersion, address, server.port(),
                 store.shared() ? std::string("postgresql (URL not logged: it may hold a password)")
                                : db_path,
                 http.threads);
    // An IPv6 address goes in brackets, so the line is a URL a client can use.
    const bool ipv6 = address.find(':') != std::string::npos;
    std::cout << "fedleaf-server listening on http://" << (ipv6 ? "[" : "") << address
              << (ipv6 ? "]" : "") << ":" << server.port() << std::endl;
    server.run();
    // Before the HTTP server is destroyed: an answer still queued holds its session, whose
    // release posts to the server's io_context.
    group_commit.stop();
    ticker.reset();
    if (const std::optional<std::string> failure = group_commit.failure()) {
      // No checkpoint: the memory may hold changes the store refused; the restart rebuilds from
      // what the store holds.
      logger->critical("event=exit_after_group_commit_failed failure=\"{}\" exit_status=3",
                       *failure);
      return 3;
    }
    repository.checkpoint_all();
    logger->info("event=shutdown_complete");
    return 0;
  } catch (const std::exception& e) {
    logger->critical("event=fatal error=\"{}\"", e.what());
    return 1;
  }
}
