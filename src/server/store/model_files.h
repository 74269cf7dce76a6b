// ModelFiles: published models as content-addressed files in one directory (SqliteStore keeps
// its models beside the database in `<db>-models/`), each written and fsynced — the file and
// the directory entry — before a transaction that names it commits.
//
//   ModelFiles files("/var/lib/fedleaf/tasks.db-models");  // created if missing
//   files.persist(etag, bytes);         // durable when it returns; a second call is a stat
//   std::string again = files.read(etag);
//   files.set_aside_unreferenced({etag});  // at open: what no row names goes to lost+found/
//   files.remove(etag);                 // a model no row names any more (retention)
//
// Contracts:
// - A name is the model's ETag (the SHA-256 of its bytes, or any [A-Za-z0-9_-]{1,128} text
//   in tests): the same name always stands for the same bytes, so a file that exists under its
//   name was written whole — it appears only by a rename after the fsync of its temporary file.
//   Whether the bytes still hash to the name is the reader's check (TaskRepository, which knows
//   the ETag is a hash).
// - persist() and read() touch only the directory: they may run on any thread, concurrently
//   with each other and with the store's transactions. set_aside_unreferenced() must not run
//   concurrently with persist() (SqliteStore calls it while opening).
// - read() takes regular files only: a FIFO or a device in a model's place is an error, never a
//   wait (it opens without blocking).
// - Errors: fedleaf::Error naming the file by its name in the directory (messages reach
//   clients; the directory is `<db>-models`) and the system's reason (a missing file included);
//   InvalidInput for a name outside the rule above.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace fedleaf::server {

class ModelFiles {
 public:
  static constexpr const char* kLostAndFound = "lost+found";

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
  // Moves every model file that is not one of `names` into `lost+found/` in the directory and
  // returns their file names; deletes temporary files of interrupted writes; leaves anything
  // else alone. Nothing that may be the only copy of a model is deleted: a file no row names is
  // what a close that crashed before its commit left (harmless), or the sign of a database that
  // lost rows or is not the one the files belong to (then the files are the evidence and the
  // way back).
  std::vector<std::string> set_aside_unreferenced(const std::set<std::string>& names) const;

 private:
  std::string directory_;
};

}  // namespace fedleaf::server
