#pragma once
// How the PostgreSQL store's rows map to records and back, generated from the column tables
// (store_tables.h): the readers of a row and the writer of a record's values. Shared by every
// PostgresStore operation so that a column is named, bound and read in one place.
//
//   PgRows rows = ...;  // SELECT <column_list(kRoundsTable)> FROM rounds ...
//   RoundRecord r = read_round(rows, 0);

#include <string>
#include <vector>

#include "server/store/postgres_statement.h"
#include "server/store/store.h"
#include "server/store/store_tables.h"

namespace fedleaf::server {

// Row i's values of the table's columns (from column `first`), each read as its column's kind.
std::vector<Value> read_values(const PgRows& s, int i, const Table& table, int first = 0);
// Adds values[skip..] to the parameters.
PgParams& add_values(PgParams& p, const std::vector<Value>& values, std::size_t skip = 0);
PopulationRecord read_population(const PgRows& s, int i);
RoundRecord read_round(const PgRows& s, int i);
TaskRecord read_task(const PgRows& s, int i, int first = 0);
std::string select_from(const std::string& columns, const char* rest);
// A round shard's counters from column `first` on (reports .. eval_sums_json: this many).
constexpr int kShardCounterColumns = 9;
RoundRecord read_shard(const PgRows& s, int i, int first);
// Rows of `rounds r LEFT JOIN round_shards s` (the round's columns, then its shard's counters,
// null without shards), ordered by round: each round with its shards added.
std::vector<RoundRecord> read_rounds_with_shards(const PgRows& rows);
// The rounds matching `where` (on r), each row with one of its shards (null without), then
// `more_columns` (", t.a, t.b") of the relations `more_from` ("task t, ") joined before r.
std::string rounds_with_shards(const char* where, const std::string& more_columns = "",
                               const char* more_from = "");
// The table's columns, each prefixed with `alias` and a dot (for a join).
std::string qualified_columns(const Table& table, const char* alias);
// PostgresStore::find_progress's statement ($1 the population, $2 the round): the rows of
// rounds_with_shards for that round (null when it does not exist), each followed by the
// population's state, current_round, paused and tokens_epoch; no row when the population does not
// exist.
std::string progress_with_shards();
// PostgresStore::find_task_with_leases's statement ($1 the task): the task's columns, then one
// lease's id, task_id, token_hash, expires_at (null without leases), ordered by lease id. Both
// tables are restricted by $1 itself, not joined on a column: a plan cached while the tables
// were small would otherwise scan every lease.
std::string task_with_leases();

}  // namespace fedleaf::server
