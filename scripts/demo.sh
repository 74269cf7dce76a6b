#!/usr/bin/env bash
# scripts/demo.sh — the main job: a federated spam filter trained end to end.
#
# Builds what is missing, starts fedleaf-server on an embedded SQLite file under ./var/, creates a
# population for scripts/demo/spam_wide_deep_plan.json (each email as a record of fields: body and
# subject tokens through one shared embedding table, the sender's domain and header fields as
# categorical columns, numeric features, an MLP beside a wide part on the sender × subject-token
# cross; every embedding table's row-sparse update aggregated with mean_over_contributors, the
# dense parts with weighted_mean; int8 + delta_varint uploads, F16 downloads), runs Node.js leaves
# on SpamAssassin shards in worker threads, and prints one line per round. Ctrl-C stops
# everything it started. With --store postgres the same job runs on --servers N fedleaf-server
# instances (default 3) sharing a throwaway PostgreSQL cluster (scripts/pg_cluster.sh, port
# FEDLEAF_DEMO_PG_PORT or 55434) behind haproxy on --port; the instances listen on the next N
# ports.
#
#   scripts/demo.sh [--clients 16] [--rounds 20] [--port 8080] [--iid] [--prefetch 1]
#                   [--keep-serving] [--store sqlite|postgres] [--servers 3] [--plan FILE]
#                   [--server-optimizer JSON] [--mode synchronous|buffered] [--buffer-size K]
#                   [--privacy EPS]
# --plan runs another: records-based when its model inputs carry "features", text-based otherwise,
# e.g. scripts/demo/spam_plan.json (the single-input bag-of-words model: hashed tokens →
# embedding_bag + dense) or scripts/demo/spam_plan_f32.json (that job, every value F32).
# --server-optimizer sets the population's "server_optimizer" (default FedAvg), e.g.
# '{"type": "adam", "learning_rate": 0.01}' (FedAdam; src/server/README.md).
# --mode buffered trains without a barrier (FedBuff): --rounds model versions, each published
# after --buffer-size reports (default 3/4 of the leaves); one table row per version.
# --privacy EPS makes the population private (docs/design.md "Privacy"): each leaf enrolls as a
# device, the noise keeps ε ≤ EPS (δ 1e-5) after --rounds rounds, the run ends with that budget
# spent, and each row shows ε spent (scripts/demo/run_demo.mjs says what 16 devices can and cannot do).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

clients=16 rounds=20 port=8080 iid=() prefetch=1 keep_serving=0 store=sqlite servers=""
plan=scripts/demo/spam_wide_deep_plan.json server_optimizer=() mode=synchronous buffer_size=() privacy=()
usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }
bad_flag() { echo "demo.sh: $1" >&2; usage >&2; exit 2; }
# The value after a flag: missing or empty is an error (set -u would stop at "$2: unbound").
value_of() { (($# >= 2)) && [[ -n "$2" ]] || bad_flag "$1 needs a value"; }
# An integer flag in [min, max], checked before the minutes of setup and build.
check_integer() {
  local flag="$1" value="$2" min="$3" max="$4"
  [[ "$value" =~ ^[0-9]{1,9}$ ]] && ((10#$value >= min && 10#$value <= max)) ||
    bad_flag "$flag takes an integer in [$min, $max], got '$value'"
}
while (($#)); do
  case "$1" in
    --clients) value_of "$@"; clients="$2"; shift 2 ;;
    --rounds) value_of "$@"; rounds="$2"; shift 2 ;;
    --port) value_of "$@"; port="$2"; shift 2 ;;
    --prefetch) value_of "$@"; prefetch="$2"; shift 2 ;;
    --iid) iid=(--iid); shift ;;
    --keep-serving) keep_serving=1; shift ;;
    --store) value_of "$@"; store="$2"; shift 2 ;;
    --servers) value_of "$@"; servers="$2"; shift 2 ;;
    --plan) value_of "$@"; plan="$2"; shift 2 ;;
    --server-optimizer) value_of "$@"; server_optimizer=(--server-optimizer "$2"); shift 2 ;;
    --mode) value_of "$@"; mode="$2"; shift 2 ;;
    --buffer-size) value_of "$@"; buffer_size=(--buffer-size "$2"); shift 2 ;;
    --privacy) value_of "$@"; privacy=(--privacy "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) bad_flag "unknown argument '$1'" ;;
  esac
done
# Each client is a worker thread with its own wasm instance and a shard of the ~4,800 training
# emails; each server listens on the port after the last.
check_integer --clients "$clients" 1 256
check_integer --rounds "$rounds" 1 100000
check_integer --port "$port" 1 65000
check_integer --prefetch "$prefetch" 0 16
[[ -f "$plan" ]] || bad_flag "--plan: no file '$plan'"
[[ "$mode" == synchronous || "$mode" == buffered ]] ||
  bad_flag "--mode is synchronous or buffered, got '$mode'"
if ((${#buffer_size[@]})); then
  [[ "$mode" == buffered ]] || bad_flag "--buffer-size needs --mode buffered"
  check_integer --buffer-size "${buffer_size[1]}" 1 "$clients"
fi
if ((${#privacy[@]})); then
  [[ "$mode" == synchronous ]] || bad_flag "--privacy needs --mode synchronous (a buffered population cannot be private)"
  [[ "${privacy[1]}" =~ ^[0-9]+([.][0-9]+)?$ && "${privacy[1]}" != 0 && ! "${privacy[1]}" =~ ^0+([.]0+)?$ ]] ||
    bad_flag "--privacy is the largest ε the population may spend, a number > 0, got '${privacy[1]}'"
fi
case "$store" in
  sqlite) servers="${servers:-1}"
    [[ "$servers" == 1 ]] || { echo "demo.sh: SQLite serves one server; use --store postgres" >&2; exit 2; } ;;
  postgres) servers="${servers:-3}"
    check_integer --servers "$servers" 1 16 ;;
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
  # The shipped configuration with this demo's servers.
  { cat deploy/haproxy.cfg; printf '%s' "$backends"; } > var/haproxy.cfg
  FEDLEAF_LB_BIND="127.0.0.1:$port" haproxy -f var/haproxy.cfg -db >var/haproxy.log 2>&1 &
  pids+=($!)
  where="$servers servers on PostgreSQL behind haproxy, logs var/server*.log var/haproxy.log"
fi
healthy=0
for _ in $(seq 100); do
  node -e "fetch('$server/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" && { healthy=1; break; }
  kill -0 "${pids[0]}" 2>/dev/null || { echo "demo.sh: the server exited; see var/server*.log" >&2; tail -5 var/server*.log >&2; exit 1; }
  sleep 0.1
done
((healthy)) || { echo "demo.sh: $server/healthz did not answer within 10 s; see var/server*.log" >&2; exit 1; }
echo "demo.sh: fedleaf-server on $server ($where)"

node scripts/demo/run_demo.mjs --server "$server" --admin-token-file var/admin_token \
  --clients "$clients" --rounds "$rounds" --prefetch "$prefetch" "${iid[@]}" --plan "$plan" \
  "${server_optimizer[@]}" --mode "$mode" "${buffer_size[@]}" "${privacy[@]}" \
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
