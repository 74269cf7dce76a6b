#include "server/repository/store_batch.h"

namespace fedleaf::server {

void StoreBatch::open() {
  if (open_) return;
  store_.begin(Durability::kNormal);
  open_ = true;
}

void StoreBatch::rollback_step() {
  try {
    store_.rollback_nested();
  } catch (...) {  // the batch is in an unknown state: give all of it up
    abandon();
  }
}

void StoreBatch::commit(bool sync) {
  if (open_) {
    try {
      store_.commit();
    } catch (...) {
      abandon();
      throw;
    }
    open_ = false;
  }
  if (sync) store_.sync();
}

void StoreBatch::abandon() {
  try {
    store_.rollback();
  } catch (...) {  // SQLite may have rolled back already; the next begin starts clean
  }
  open_ = false;
  if (on_abandon_) on_abandon_();
}

}  // namespace fedleaf::server
