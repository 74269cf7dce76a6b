// SqliteStore (sqlite_store.h): models, kept as files beside the database (model_files.h), the
// results a round folds and its aggregator checkpoints.
#include "server/store/sqlite_store.h"

#include <sqlite3.h>

#include <utility>

#include "core/error.h"
#include "server/store/sqlite_rows.h"
#include "server/store/sqlite_statement.h"
#include "server/store/store_rules.h"

namespace fedleaf::server {

// ---- models

void SqliteStore::persist_model(const ModelRecord& model) {
  if (!model_files_) return;
  forget_dropped_file(model.etag);
  model_files_->persist(model.etag, model.bytes);
}

std::vector<int> SqliteStore::drop_models(const std::string& population_id, int before_round,
                                          double now) {
  std::vector<int> rounds;
  std::set<std::string> files;
  {
    auto s = statement(
        "DELETE FROM models AS m WHERE population_id = ? AND round < ? AND NOT EXISTS (SELECT 1 "
        "FROM tasks AS t WHERE t.population_id = m.population_id AND t.round = m.round AND "
        "t.state = 'leased' AND t.lease_expires_at > ?) RETURNING round, etag, storage");
    s.bind(1, population_id).bind(2, before_round).bind(3, now);
    while (s.step()) {
      rounds.push_back(s.int32(0));
      if (s.text(2) == "file") files.insert(s.text(1));
    }
  }
  std::sort(rounds.begin(), rounds.end());
  if (!model_files_) return rounds;
  std::lock_guard lock(files_mutex_);
  for (const std::string& etag : files) {
    // Content-addressed: another row (another population's equal model) may name the same file.
    if (!file_named(etag))
      (in_step_ ? step_dropped_files_ : transaction_dropped_files_).insert(etag);
  }
  return rounds;
}

bool SqliteStore::file_named(const std::string& etag) {
  auto s = statement(
      "SELECT 1 FROM models WHERE etag = ? AND storage = 'file' UNION ALL "
      "SELECT 1 FROM optimizer_states WHERE etag = ? AND storage = 'file' LIMIT 1");
  s.bind(1, etag).bind(2, etag);
  return s.step();
}

void SqliteStore::persist_optimizer_state(const OptimizerStateRecord& state) {
  if (!model_files_) return;
  forget_dropped_file(state.etag);
  model_files_->persist(state.etag, state.bytes);
}

void SqliteStore::replace_optimizer_state(const OptimizerStateRecord& state) {
  persist_optimizer_state(state);
  std::set<std::string> files;
  {
    auto s = statement(
        "DELETE FROM optimizer_states WHERE population_id = ? AND round < ? "
        "RETURNING etag, storage");
    s.bind(1, state.population_id).bind(2, state.round);
    while (s.step()) {
      if (s.text(1) == "file") files.insert(s.text(0));
    }
  }
  statement(
      "INSERT INTO optimizer_states (population_id, round, etag, bytes, storage) "
      "VALUES (?, ?, ?, ?, ?)")
      .bind(1, state.population_id)
      .bind(2, state.round)
      .bind(3, state.etag)
      .bind_blob(4, model_files_ ? std::string() : state.bytes)
      .bind(5, model_files_ ? "file" : "blob")
      .run();
  if (!model_files_) return;
  std::lock_guard lock(files_mutex_);
  for (const std::string& etag : files) {
    if (!file_named(etag))
      (in_step_ ? step_dropped_files_ : transaction_dropped_files_).insert(etag);
  }
}

// The file first: the row that names it commits after the file and its directory entry are
// durable (a file already there was, by its content-addressed name).
void SqliteStore::insert_model(const ModelRecord& model) {
  persist_model(model);
  statement(
      "INSERT INTO models (population_id, round, etag, bytes, storage) VALUES (?, ?, ?, ?, ?)")
      .bind(1, model.population_id)
      .bind(2, model.round)
      .bind(3, model.etag)
      .bind_blob(4, model_files_ ? std::string() : model.bytes)
      .bind(5, model_files_ ? "file" : "blob")
      .run();
}

std::optional<ModelRecord> SqliteStore::find_model(const std::string& population_id, int round) {
  std::optional<ModelReader> reader = find_model_reader(population_id, round);
  if (!reader) return std::nullopt;
  return ModelRecord{population_id, round, reader->etag, reader->read_bytes()};
}

std::optional<ModelReader> SqliteStore::find_model_reader(const std::string& population_id,
                                                          int round) {
  auto s =
      statement("SELECT etag, storage, bytes FROM models WHERE population_id = ? AND round = ?");
  s.bind(1, population_id).bind(2, round);
  if (!s.step()) return std::nullopt;
  std::string etag = s.text(0);
  if (s.text(1) != "file") {
    return ModelReader{std::move(etag), [bytes = s.blob(2)]() mutable { return std::move(bytes); }};
  }
  if (!model_files_) {
    throw Error("sqlite store: the model of round " + std::to_string(round) + " of population '" +
                population_id + "' is stored in a file, but this database has no model directory");
  }
  return ModelReader{etag, [files = *model_files_, etag] { return files.read(etag); }};
}

// Only at open: no close of this process is between its file and its commit.
void SqliteStore::set_aside_unreferenced_model_files() {
  if (!model_files_) return;
  std::set<std::string> names;
  auto s = statement(
      "SELECT etag FROM models WHERE storage = 'file' UNION "
      "SELECT etag FROM optimizer_states WHERE storage = 'file'");
  while (s.step()) names.insert(s.text(0));
  models_at_open_.named = names.size();
  models_at_open_.set_aside = model_files_->set_aside_unreferenced(names);
}

// ---- results and checkpoints

std::vector<ResultRecord> SqliteStore::list_results(const std::string& population_id, int round,
                                                    std::int64_t after_seq) {
  auto s = statement(
      "SELECT seq, task_id, bytes FROM results WHERE population_id = ? AND round = ? AND seq > ? "
      "ORDER BY seq");
  s.bind(1, population_id).bind(2, round).bind(3, after_seq);
  std::vector<ResultRecord> out;
  while (s.step()) out.push_back({population_id, round, s.int64(0), s.int64(1), s.blob(2)});
  return out;
}

std::map<int, std::int64_t> SqliteStore::count_results_by_task_round(
    const std::string& population_id, int round) {
  auto s = statement(
      "SELECT tasks.round, count(*) FROM results JOIN tasks ON tasks.id = results.task_id "
      "WHERE results.population_id = ? AND results.round = ? GROUP BY tasks.round");
  s.bind(1, population_id).bind(2, round);
  std::map<int, std::int64_t> out;
  while (s.step()) out[static_cast<int>(s.int64(0))] = s.int64(1);
  return out;
}

void SqliteStore::put_checkpoint(const CheckpointRecord& c) {
  statement(
      "INSERT INTO checkpoints (population_id, round, seq, bytes) VALUES (?, ?, ?, ?) "
      "ON CONFLICT (population_id, round) DO UPDATE SET seq = excluded.seq, "
      "bytes = excluded.bytes")
      .bind(1, c.population_id)
      .bind(2, c.round)
      .bind(3, c.seq)
      .bind_blob(4, c.bytes)
      .run();
}

std::optional<CheckpointRecord> SqliteStore::find_checkpoint(const std::string& population_id,
                                                             int round) {
  auto s = statement("SELECT seq, bytes FROM checkpoints WHERE population_id = ? AND round = ?");
  s.bind(1, population_id).bind(2, round);
  if (!s.step()) return std::nullopt;
  return CheckpointRecord{population_id, round, s.int64(0), s.blob(1)};
}

std::optional<OptimizerStateRecord> SqliteStore::find_optimizer_state(
    const std::string& population_id, int round) {
  auto s = statement(
      "SELECT etag, storage, bytes FROM optimizer_states WHERE population_id = ? AND round = ?");
  s.bind(1, population_id).bind(2, round);
  if (!s.step()) return std::nullopt;
  OptimizerStateRecord state{population_id, round, s.text(0), {}};
  if (s.text(1) != "file") {
    state.bytes = s.blob(2);
  } else if (!model_files_) {
    throw Error("sqlite store: the optimizer state of round " + std::to_string(round) +
                " of population '" + population_id +
                "' is stored in a file, but this database has no model directory");
  } else {
    state.bytes = model_files_->read(state.etag);
  }
  return state;
}
}  // namespace fedleaf::server
