// ModelFiles: published models as content-addressed files in one directory (SqliteStore keeps
// its models beside the database in `<db>-models/`), each written and fsynced — the file and
// the directory entry — before a transaction that names it commits.
//
//   ModelFiles files("/var/lib/fedleaf/tasks.db-models");  // created if missing
//   files.persist(etag, bytes);         // durable when it returns; a second call is a stat
//   std::string again = files.read(etag);
//   files.remove_unreferenced({etag});  // at open: what a crashed close left behind
//   files.remove(etag);                 // a model no row names any more (retention)
//
// Contracts:
// - A name is the model's ETag (the SHA-256 of its bytes, or any [A-Za-z0-9_-]{1,128} text
//   in tests): the same name always stands for the same bytes, so a file that exists under its
//   name was written whole — it appears only by a rename after the fsync of its temporary file.
//   Whether the bytes still hash to the name is the reader's check (TaskRepository, which knows
//   the ETag is a hash).
// - persist() and read() touch only the directory: they may run on any thread, concurrently
//   with each other and with the store's transactions. remove_unreferenced() must not run
//   concurrently with persist() (SqliteStore calls it while opening).
// - Errors: fedleaf::Error naming the file and the system's reason (a missing file included);
//   InvalidInput for a name outside the rule above.
#pragma once

#include <set>
#include <string>

namespace fedleaf::server {

class ModelFiles {
 public:
  explicit ModelFiles(std::string directory);

  const std::string& directory() const { return directory_; }
  std::string path_of(const std::string& name) const;
  // Writes `bytes` under `name` unless a file of that name exists: into a temporary file that
  // is fsynced, renamed into place, then the directory fsynced.
  void persist(const std::string& name, const std::string& bytes) const;
  std::string read(const std::string& name) const;
  // Removes the file of `name`; true when it existed. The caller's contract: no committed row
  // names it, and none will without persist() writing it again.
  bool remove(const std::string& name) const;
  // Removes every file that is not one of `names` (temporary files of an interrupted write
  // included); returns how many it removed.
  int remove_unreferenced(const std::set<std::string>& names) const;

 private:
  std::string directory_;
};

}  // namespace fedleaf::server
