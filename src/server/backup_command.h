// `fedleaf-server backup --db FILE --to DIR`: an online backup of a SQLite task repository
// (store/sqlite_backup.h), with progress on stderr and a summary on stdout.
//
//   if (argc > 1 && std::string(argv[1]) == "backup") return run_backup_command(argc - 1, argv +
//   1);
//
// Returns the process's exit status: 0 when the backup is in place, non-zero (nothing written)
// on bad flags or any failure, named on stderr.
#pragma once

namespace fedleaf::server {

int run_backup_command(int argc, char** argv);

}  // namespace fedleaf::server
