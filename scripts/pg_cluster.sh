#!/usr/bin/env bash
# scripts/pg_cluster.sh — a throwaway PostgreSQL cluster for tests, benches and the demo.
#
#   url=$(bash scripts/pg_cluster.sh start DIR [PORT])   # initdb in DIR, start, print the URL
#   bash scripts/pg_cluster.sh stop DIR                  # stop it (DIR is left for the caller)
#
# Debian's PostgreSQL 15 binaries (package postgresql), run as the `postgres` user when this
# script runs as root (initdb refuses root; CI runs as root). The cluster listens on 127.0.0.1
# on PORT (default 55432, not PostgreSQL's 5432) and a socket in DIR; trust authentication,
# fsync on (the durability of the store is what is tested). Fails loudly when it cannot start.
# As root, DIR is handed to `postgres`: its parent must be reachable by that user (e.g. a
# `mktemp -d /tmp/x.XXXXXX`, not a directory inside another 0700 one).
set -euo pipefail

bin=${FEDLEAF_PG_BIN:-/usr/lib/postgresql/15/bin}
cmd=${1:?usage: pg_cluster.sh start|stop DIR [PORT]}
dir=${2:?usage: pg_cluster.sh start|stop DIR [PORT]}
dir=$(realpath -m "$dir")  # as_owner runs from /
port=${3:-55432}

# From /: the caller's directory (a mktemp clone, mode 700) is not the postgres user's to enter.
as_owner() {
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

case "$cmd" in
  start)
    [ -x "$bin/initdb" ] || { echo "pg_cluster: no PostgreSQL at $bin (apt-get install postgresql)" >&2; exit 1; }
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_owner "$bin/initdb" -D "$dir/data" -U fedleaf --auth=trust -E UTF8 --no-locale \
        > "$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200" start \
      > /dev/null || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U fedleaf fedleaf 2> /dev/null || true
    echo "postgresql://fedleaf@127.0.0.1:$port/fedleaf"
    ;;
  stop)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop > /dev/null
    ;;
  *)
    echo "usage: pg_cluster.sh start|stop DIR [PORT]" >&2
    exit 2
    ;;
esac
