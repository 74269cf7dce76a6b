// PostgresStore::release_lease (store.h), beside postgres_store.cc: the task row is locked by
// the UPDATE until the batch commits, like a claim's.
#include "server/store/postgres_store.h"

#include "server/store/postgres_statement.h"

namespace fedleaf::server {

void PostgresStore::release_lease(std::int64_t task_id, std::int64_t lease_id, double now) {
  Rows released =
      run("UPDATE tasks SET lease_expires_at = $1 WHERE id = $2 AND lease_id = $3 AND state = "
          "'leased' AND lease_expires_at > $1 RETURNING id",
          Params().real(now).integer(task_id).integer(lease_id));
  if (released.size() == 0) return;
  run("UPDATE leases SET expires_at = $1 WHERE id = $2", Params().real(now).integer(lease_id));
}

}  // namespace fedleaf::server
