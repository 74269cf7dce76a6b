#!/usr/bin/env bash
# scripts/demo.sh — the main job: a federated spam filter trained end to end.
#
# Builds what is missing, starts fedleaf-server on an embedded SQLite file under ./var/, creates a
# population for scripts/demo/spam_plan.json (hashed bag-of-words → embedding_bag + dense; the
# row-sparse embedding update aggregated with mean_over_contributors, the dense parts with
# weighted_mean), runs Node.js leaves on SpamAssassin shards in worker threads, and prints one
# line per round. Ctrl-C stops everything it started. With --store postgres the same job runs on
# --servers N fedleaf-server instances (default 3) sharing a throwaway PostgreSQL cluster
# (scripts/pg_cluster.sh, port FEDLEAF_DEMO_PG_PORT or 55434) behind haproxy on --port; the
# instances listen on the next N ports.
#
#   scripts/demo.sh [--clients 16] [--rounds 20] [--port 8080] [--iid] [--prefetch 1]
#                   [--keep-serving] [--store sqlite|postgres] [--servers 3]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

clients=16 rounds=20 port=8080 iid=() prefetch=1 keep_serving=0 store=sqlite servers=""
usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --clients) clients="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --prefetch) prefetch="$2"; shift 2 ;;
    --iid) iid=(--iid); shift ;;
    --keep-serving) keep_serving=1; shift ;;
    --store) store="$2"; shift 2 ;;
    --servers) servers="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "demo.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ "$clients" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ && "$port" =~ ^[0-9]+$ ]] || {
  echo "demo.sh: --clients, --rounds and --port take positive integers" >&2; exit 2; }
case "$store" in
  sqlite) servers="${servers:-1}"
    [[ "$servers" == 1 ]] || { echo "demo.sh: SQLite serves one server; use --store postgres" >&2; exit 2; } ;;
  postgres) servers="${servers:-3}"
    [[ "$servers" =~ ^[1-9][0-9]*$ ]] || { echo "demo.sh: --servers takes a positive integer" >&2; exit 2; } ;;
  *) echo "demo.sh: --store is sqlite or postgres" >&2; exit 2 ;;
esac

bash scripts/setup.sh
bash scripts/build.sh

mkdir -p var build/web
rm -f var/demo.sqlite var/demo.sqlite-wal var/demo.sqlite-shm
if [[ ! -s var/admin_token ]]; then
  (umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=' > var/admin_token)
fi
if [[ -f scripts/stage_web.mjs ]]; then
  node scripts/stage_web.mjs build/web --clients "$clients"
fi

pids=()
pg_dir=""
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ -n "$pg_dir" ]]; then
    bash scripts/pg_cluster.sh stop "$pg_dir" || true
    rm -rf "$pg_dir"
  fi
}
trap cleanup EXIT
trap 'echo; echo "demo.sh: interrupted, stopping"; exit 130' INT TERM

if node -e "const s=require('net').connect(${port},'127.0.0.1');s.on('connect',()=>process.exit(0));s.on('error',()=>process.exit(1))"; then
  echo "demo.sh: port $port is in use; pick another with --port" >&2
  exit 1
fi
server="http://127.0.0.1:$port"
if [[ "$store" == sqlite ]]; then
  build/fedleaf-server --db var/demo.sqlite --port "$port" --web-root build/web \
    --admin-token-file var/admin_token --log-level warn >var/server.log 2>&1 &
  pids+=($!)
  where="database var/demo.sqlite, log var/server.log"
else
  pg_dir="$(mktemp -d /tmp/fedleaf-demo-pg.XXXXXX)"
  db="$(bash scripts/pg_cluster.sh start "$pg_dir" "${FEDLEAF_DEMO_PG_PORT:-55434}")"
  backends=""
  for i in $(seq "$servers"); do
    build/fedleaf-server --db "$db" --port $((port + i)) --web-root build/web \
      --admin-token-file var/admin_token --log-level warn >"var/server$i.log" 2>&1 &
    pids+=($!)
    backends+="  server s$i 127.0.0.1:$((port + i)) check inter 500"$'\n'
  done
  cat > var/haproxy.cfg <<CFG
global
  maxconn 4000
defaults
  mode http
  timeout connect 1s
  timeout client 60s
  timeout server 60s
  retries 3
  option redispatch
  retry-on conn-failure empty-response
frontend leaves
  bind 127.0.0.1:$port
  default_backend servers
backend servers
  balance roundrobin
  option httpchk GET /healthz
$backends
CFG
  haproxy -f var/haproxy.cfg -db >var/haproxy.log 2>&1 &
  pids+=($!)
  where="$servers servers on PostgreSQL behind haproxy, logs var/server*.log var/haproxy.log"
fi
for _ in $(seq 100); do
  node -e "fetch('$server/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "demo.sh: the server exited; see var/server*.log" >&2; tail -5 var/server*.log >&2; exit 1; }
  sleep 0.1
done
echo "demo.sh: fedleaf-server on $server ($where)"

node scripts/demo/run_demo.mjs --server "$server" --admin-token-file var/admin_token \
  --clients "$clients" --rounds "$rounds" --prefetch "$prefetch" "${iid[@]}" \
  --json build/demo/last_run.json --link-file var/demo_link &
demo_pid=$!
pids+=("$demo_pid")
wait "$demo_pid"

link="$(cat var/demo_link 2>/dev/null || echo "$server/")"
echo "demo page: $link"
if ((keep_serving)); then
  echo "demo.sh: serving until Ctrl-C (leave more tabs or leaves with the link above)"
  wait "${pids[0]}"
fi
