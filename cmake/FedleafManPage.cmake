# cmake -DSERVER=<fedleaf-server> -DVERSION=<v> -DOUT=<file> -P FedleafManPage.cmake
# Writes fedleaf-server(1), a man page made of the binary's own --help texts (so the page never
# differs from the flags), for `cmake --install` and the Debian package.
foreach(var SERVER VERSION OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "FedleafManPage.cmake: -D${var}=… is required")
  endif()
endforeach()

# The --help text of `args` as literal roff lines: backslashes escaped, every line opened with \&
# so that none is read as a request.
function(help_as_roff out)
  execute_process(COMMAND ${SERVER} ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${SERVER} ${ARGN} exited ${status}")
  endif()
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "\n$" "" text "${text}")
  string(REPLACE "\n" "\n\\&" text "${text}")
  set(${out} "\\&${text}" PARENT_SCOPE)
endfunction()

help_as_roff(server_help --help)
help_as_roff(backup_help backup --help)
file(WRITE "${OUT}" ".TH FEDLEAF-SERVER 1 \"\" \"fedleaf ${VERSION}\" \"fedleaf\"
.SH NAME
fedleaf-server \\- the fedleaf task repository: federated learning rounds for web leaves
.SH SYNOPSIS
.B fedleaf-server
\\-\\-db FILE|URL \\-\\-admin\\-token\\-file FILE [OPTIONS]
.br
.B fedleaf-server backup
\\-\\-db FILE \\-\\-to DIR
.SH OPTIONS
.nf
${server_help}
.fi
.SH BACKUP
.nf
${backup_help}
.fi
.SH FILES
.TP
/var/lib/fedleaf/tasks.db, tasks.db-wal, tasks.db-shm, tasks.db-models/
the Debian package's SQLite database and its model files
.TP
/etc/fedleaf/admin.token
the admin token (the package makes one on first install)
.TP
/etc/default/fedleaf-server
FEDLEAF_DB and FEDLEAF_SERVER_ARGS of fedleaf-server.service
.SH SEE ALSO
docs/deploy.md and src/server/README.md of the fedleaf repository
")
