#!/usr/bin/env bash
# scripts/bench.sh server — load on fedleaf-server: C concurrent simulated leaves (C = 50, 500,
# 2000) on loopback doing claim → upload (small sparse result) → claim …, each run bounded in
# time (FEDLEAF_BENCH_SECONDS, default 10) and count (FEDLEAF_BENCH_MAX_CYCLES, default 200000).
# Prints a table and writes build/bench/server.json: {"results": [per C], "ratios":
# {"cycles_per_s": at C = 500, "p99_ms": {C: p99}, "cycles_per_s_vs_target_3000": ...},
# "think_time_variant": {a labelled extra run with think time, see below}}.
# The leaves long-poll as runLeaf's do: each claim waits up to FEDLEAF_BENCH_WAIT_S (default 20;
# 0: leaves that poll every 5 ms instead) for a task.
# Server binary and load generator come from FEDLEAF_BUILD_DIR (default build).
#
# scripts/bench.sh server --store postgres --servers N: the same closed loop at C = 500 (or
# FEDLEAF_BENCH_CONCURRENCY) against SQLite (one server), PostgreSQL with one server and, for
# N > 1, N servers on one PostgreSQL behind haproxy — a throwaway cluster (scripts/pg_cluster.sh,
# port FEDLEAF_BENCH_PG_PORT, default 55433); ratios gain postgres1_vs_sqlite.cycles_per_s and
# postgres{N}_vs_postgres1.cycles_per_s. Server CPU is summed over the instances; PostgreSQL's
# own CPU is reported as postgres_cpu_s.
#
# scripts/bench.sh server --private [--store postgres]: a private population (docs/design.md
# "Privacy") against a non-private one at C = 500 on the same store, interleaved (A B A B,
# FEDLEAF_BENCH_REPEATS, default 2): before each private run FEDLEAF_BENCH_DEVICES devices
# (default 1,000,000) enroll through the server (tests/bench/server/enroll_devices), and every
# claim then carries a device credential the server looks up and records (one participation per
# device); ratios gain private_over_nonprivate.cycles_per_s (target ≥ 0.8), the medians.
set -euo pipefail
store=sqlite
servers=1
private=0
while [ $# -gt 0 ]; do
  case "$1" in
    --store) store="$2"; shift 2 ;;
    --servers) servers="$2"; shift 2 ;;
    --private) private=1; shift ;;
    *) echo "bench server: unknown argument $1 (--store sqlite|postgres, --servers N, --private)" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/${FEDLEAF_BUILD_DIR:-build}"
# Smoke (scripts/bench.sh --smoke): 1 s runs of 2 and 5 leaves (two runs: the second starts
# where the first left its database), no think-time variant.
if [[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]]; then
  : "${FEDLEAF_BENCH_SECONDS:=1}" "${FEDLEAF_BENCH_CONCURRENCY:=2 5}" "${FEDLEAF_BENCH_THINK_MS:=0}"
  : "${FEDLEAF_BENCH_DEVICES:=2000}" "${FEDLEAF_BENCH_REPEATS:=1}"
fi
seconds="${FEDLEAF_BENCH_SECONDS:-10}"
max_cycles="${FEDLEAF_BENCH_MAX_CYCLES:-200000}"
if [ "$store" = postgres ] || ((private)); then
  concurrencies="${FEDLEAF_BENCH_CONCURRENCY:-500}"
else
  concurrencies="${FEDLEAF_BENCH_CONCURRENCY:-50 500 2000}"
fi
out_dir="${FEDLEAF_BENCH_OUT_DIR:-$root/build/bench}"
out="$out_dir/server.json"
mkdir -p "$out_dir"

cmake --build "$build" -j2 --target fedleaf-server server_load enroll_devices >/dev/null
server="$build/fedleaf-server"
load="$build/tests/bench/server/server_load"
enroll="$build/tests/bench/server/enroll_devices"
work="$(mktemp -d)"
pids=()
pg_dir=""
cleanup() {
  local status=$?
  # A failed run names what the servers printed: a crashed server's message is the diagnosis.
  if [ "$status" != 0 ]; then
    for f in "$work"/server*.err; do
      [ -s "$f" ] && { echo "bench server: $(basename "$f"):" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  for p in "${pids[@]}" ${lb_pid:-}; do kill "$p" 2>/dev/null || true; done
  if [ -n "$pg_dir" ]; then
    bash "$root/scripts/pg_cluster.sh" stop "$pg_dir" || true
    rm -rf "$pg_dir"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
pg_url=""
if [ "$store" = postgres ]; then
  pg_dir="$(mktemp -d /tmp/fedleaf-bench-pg.XXXXXX)"  # not under $work: postgres must reach it
  pg_url="$(bash "$root/scripts/pg_cluster.sh" start "$pg_dir" "${FEDLEAF_BENCH_PG_PORT:-55433}")"
fi
# api_field FIELD CURL_ARGS...: one field of a JSON answer; any failure stops the bench naming
# the request, its status and body (not a JSON traceback on an empty string).
api_field() {
  local field="$1" body status url="" a
  shift
  for a in "$@"; do case "$a" in http*) url="$a" ;; esac; done
  body="$(mktemp)"
  status="$(curl -s -o "$body" -w '%{http_code}' "$@" || true)"
  if [ "$status" != 200 ] && [ "$status" != 201 ]; then
    echo "bench server: $url answered status ${status:-none}: $(head -c 500 "$body")" >&2
    rm -f "$body"
    exit 1
  fi
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$body" "$field"
  rm -f "$body"
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
admin="bench-admin-token-0123456789"
echo "$admin" > "$work/admin.token"
version="$("$server" --version | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')"
plan='{"model": {"inputs": {"tokens": "sparse_ids"},
         "layers": [{"type": "embedding_bag", "name": "emb", "input": "tokens", "vocab": 20000,
                     "dim": 8, "combiner": "mean"},
                    {"type": "dense", "name": "out", "units": 2}],
         "loss": "softmax_cross_entropy"},
       "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}, "epochs": 1, "batch_size": 32},
       "updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
                   "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"}}}'

# The private population's plan: the same model, no data-dependent rule (a private round's sum
# replaces the operators), and its privacy section: one participation per device, a budget the
# bench's rounds cannot reach (what is measured is the claim path and the noised close).
private_plan="${plan/mean_over_contributors/weighted_mean}"
privacy='{"mechanism": "dp_ftrl_tree", "noise_multiplier": 1.0, "clip_norm": 1.0, "delta": 1e-6,
          "max_epsilon": 1000, "max_participations": 1, "min_separation": 0,
          "enrollments_per_token_per_hour": 10000000}'

# One run against a fresh server: C leaves, think time T ms; sets run_result to the load
# generator's JSON with the server's peak RSS, CPU, rounds closed and the load average before
# the run. (Not called in $(...): the EXIT trap must see the server's pid.)
run() {
  local c="$1" think_ms="$2" db="${3:-sqlite}" n="${4:-1}" is_private="${5:-0}"
  # server*.out too: a stale "listening" line from the previous run would race the new server.
  # -r: the database's model files are in the directory tasks.db-models beside it.
  rm -rf "$work"/tasks.db* "$work"/server*.out "$work"/server*.err
  local db_arg="$work/tasks.db"
  if [ "$db" = postgres ]; then
    local pg_bin=/usr/lib/postgresql/15/bin pg_port="${pg_url##*:}"
    pg_port="${pg_port%%/*}"
    "$pg_bin/dropdb" -h 127.0.0.1 -p "$pg_port" -U fedleaf --if-exists bench
    "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U fedleaf bench
    db_arg="${pg_url%/*}/bench"
  fi
  local load_before
  load_before="$(cut -d' ' -f1 /proc/loadavg)"
  pids=()
  local ports=() i
  for i in $(seq "$n"); do
    "$server" --db "$db_arg" --port 0 --admin-token-file "$work/admin.token" \
      --log-level warn --threads 2 > "$work/server$i.out" 2> "$work/server$i.err" &
    pids+=($!)
    # Up to 60 s: on a loaded CI machine a server creating its PostgreSQL schema took over 5 s.
    for _ in $(seq 1200); do grep -q listening "$work/server$i.out" 2>/dev/null && break; sleep 0.05; done
    grep -q listening "$work/server$i.out" 2>/dev/null ||
      { echo "bench server: fedleaf-server $i did not start listening in 60 s:" >&2; cat "$work/server$i.err" >&2; exit 1; }
    ports+=("$(grep -oE '[0-9]+$' "$work/server$i.out")")
  done
  local port="${ports[0]}"
  lb_pid=""
  if [ "$n" -gt 1 ]; then
    port="$(free_port)"
    # The shipped configuration with this run's servers.
    {
      cat "$root/deploy/haproxy.cfg"
      for i in "${!ports[@]}"; do printf '  server s%s 127.0.0.1:%s\n' "$i" "${ports[$i]}"; done
    } > "$work/haproxy.cfg"
    FEDLEAF_LB_BIND="127.0.0.1:$port" haproxy -f "$work/haproxy.cfg" -db > "$work/haproxy.log" 2>&1 &
    lb_pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.05; done
    curl -sf "http://127.0.0.1:$port/healthz" > /dev/null ||
      { echo "haproxy did not start:" >&2; cat "$work/haproxy.log" >&2; exit 1; }
  fi
  local token result rss_kb cpu_ticks=0 rounds pg_ticks_before=0 pg_ticks=0
  if [ "$db" = postgres ]; then pg_ticks_before="$(postgres_ticks)"; fi
  local spec="\"plan\": $plan" device_args=() enrolled="null"
  if ((is_private)); then spec="\"plan\": $private_plan, \"privacy\": $privacy"; fi
  token="$(api_field client_token -X POST "http://127.0.0.1:$port/v1/populations" \
    -H "Authorization: Bearer $admin" -H "Fedleaf-Version: $version" \
    -d "{\"id\": \"bench\", \"seed\": 1, \"rounds\": 100000, \"clients_per_round\": 2000,
         \"lease_s\": 600, \"round_deadline_s\": 3600, $spec}")"
  if ((is_private)); then
    enrolled="$("$enroll" --port "$port" --population bench --token "$token" --version "$version" \
      --count "${FEDLEAF_BENCH_DEVICES:-1000000}" --concurrency 64 --out "$work/devices.txt")" ||
      { echo "bench server: enrolling devices failed: $enrolled" >&2; exit 1; }
    device_args=(--devices-file "$work/devices.txt")
    if [ "$db" = postgres ]; then pg_ticks_before="$(postgres_ticks)"; fi
    for p in "${pids[@]}"; do cpu_ticks=$((cpu_ticks - $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  fi
  result="$("$load" --port "$port" --population bench --token "$token" --version "$version" \
    --concurrency "$c" --duration-s "$seconds" --max-cycles "$max_cycles" --vocab 20000 --dim 8 \
    --think-ms "$think_ms" --wait-s "${FEDLEAF_BENCH_WAIT_S:-20}" "${device_args[@]}")"
  rss_kb=0
  for p in "${pids[@]}"; do
    local r
    r="$(awk '/VmHWM/ {print $2}' "/proc/$p/status")"
    if [ "$r" -gt "$rss_kb" ]; then rss_kb="$r"; fi
    # Server CPU (user + system clock ticks): per cycle it does not depend on what else runs on
    # this shared machine, unlike cycles/s.
    cpu_ticks=$((cpu_ticks + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  if [ "$db" = postgres ]; then pg_ticks=$(($(postgres_ticks) - pg_ticks_before)); fi
  rounds="$(api_field round "http://127.0.0.1:$port/v1/populations/bench")"
  if [ -n "$lb_pid" ]; then kill -TERM "$lb_pid"; wait "$lb_pid" || true; fi
  for p in "${pids[@]}"; do kill -TERM "$p"; wait "$p"; done
  pids=()
  run_result="$(python3 -c 'import json, os, sys; r = json.loads(sys.argv[1]);
r["server_peak_rss_mb"] = int(sys.argv[2]) / 1024; r["rounds_closed"] = int(sys.argv[3]);
r["server_cpu_s"] = int(sys.argv[4]) / os.sysconf("SC_CLK_TCK");
r["load_average_1m"] = float(sys.argv[5]); r["store"] = sys.argv[6]; r["servers"] = int(sys.argv[7]);
r["postgres_cpu_s"] = int(sys.argv[8]) / os.sysconf("SC_CLK_TCK");
r["private"] = sys.argv[9] == "1"; r["enrollment"] = json.loads(sys.argv[10]);
print(json.dumps(r))' "$result" "$rss_kb" "$rounds" "$cpu_ticks" "$load_before" "$db" "$n" "$pg_ticks" \
    "$is_private" "$enrolled")"
}
# CPU clock ticks of every PostgreSQL process of the bench cluster (its postmaster's children).
postgres_ticks() {
  local master total=0 p
  master="$(head -1 "$pg_dir/data/postmaster.pid")"
  for p in $master $(pgrep -P "$master"); do
    total=$((total + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
# The issue's benchmark: closed loop, no think time.
results=()
if ((private)); then
  # Private against non-private on one store, interleaved: A B A B …
  for _ in $(seq "${FEDLEAF_BENCH_REPEATS:-2}"); do
    for is_private in 0 1; do
      run "${concurrencies%% *}" 0 "$store" 1 "$is_private"
      results+=("$run_result")
    done
  done
else
  for c in $concurrencies; do
    run "$c" 0
    results+=("$run_result")
  done
fi
# --store postgres: the same loads on PostgreSQL, one server and N behind haproxy.
pg_results=()
if [ "$store" = postgres ] && ((!private)); then
  for c in $concurrencies; do
    run "$c" 0 postgres 1
    pg_results+=("$run_result")
    if [ "$servers" -gt 1 ]; then
      run "$c" 0 postgres "$servers"
      pg_results+=("$run_result")
    fi
  done
fi
# A labelled extra, not part of the issue's figures: C = 500 leaves that each "train" for
# FEDLEAF_BENCH_THINK_MS (default 150 ms; drawn from [T/2, 3T/2]) between task and upload, an
# offered load of about 500 / 0.15 = 3,300 cycles/s; its latency is the server's below
# saturation, not queueing behind C requests. FEDLEAF_BENCH_THINK_MS=0 skips it.
think_ms="${FEDLEAF_BENCH_THINK_MS:-150}"
if [ "$store" = postgres ]; then think_ms="${FEDLEAF_BENCH_THINK_MS:-0}"; fi
think_result="null"
if [ "$think_ms" != "0" ] && ((!private)); then
  run 500 "$think_ms"
  think_result="$run_result"
fi

python3 - "$out" "$think_result" "${results[@]}" "${pg_results[@]}" <<'PY'
import json, sys
out, think = sys.argv[1], json.loads(sys.argv[2])
everything = [json.loads(r) for r in sys.argv[3:]]
if any(r["private"] for r in everything):
    # --private: the private population against the non-private one, interleaved on one store.
    from statistics import median
    runs = {flag: [r for r in everything if r["private"] == flag] for flag in (False, True)}
    rate = {flag: median(r["cycles_per_s"] for r in rs) for flag, rs in runs.items()}
    ratios = {"private_over_nonprivate": {"cycles_per_s": rate[True] / rate[False]}}
    json.dump({"benchmark": "server", "variant": "private", "target": {"private_over_nonprivate": 0.8},
               "results": everything, "ratios": ratios}, open(out, "w"), indent=2)
    print(f"{'population':>11} {'store':>9} {'C':>5} {'cycles/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6}"
          f" {'rounds':>6} {'devices':>9} {'enrolled/s':>10} {'CPU ms/cycle':>12} {'load':>5}")
    for r in everything:
        e = r["enrollment"] or {}
        print(f"{'private' if r['private'] else 'plain':>11} {r['store']:>9} {r['concurrency']:>5}"
              f" {r['cycles_per_s']:>9.0f} {r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} {r['errors']:>6}"
              f" {r['rounds_closed']:>6} {e.get('enrolled', 0):>9} {e.get('enrollments_per_s', 0):>10.0f}"
              f" {1000 * r['server_cpu_s'] / max(r['cycles'], 1):>12.3f} {r['load_average_1m']:>5.1f}")
        if r["errors"]:
            print(f"{'':>11} errors: {r['errors_by_kind']}")
    spread = {flag: f"{min(r['cycles_per_s'] for r in rs):.0f}-{max(r['cycles_per_s'] for r in rs):.0f}"
              for flag, rs in runs.items()}
    print(f"private_over_nonprivate.cycles_per_s = {ratios['private_over_nonprivate']['cycles_per_s']:.3f}"
          f" (medians; private {spread[True]}, non-private {spread[False]} cycles/s)")
    print(f"wrote {out}")
    sys.exit(0)
results = [r for r in everything if r["store"] == "sqlite"]
postgres = [r for r in everything if r["store"] == "postgres"]
by_c = {r["concurrency"]: r for r in results}
ratios = {"p99_ms": {str(c): r["p99_ms"] for c, r in by_c.items()}}
if 500 in by_c:
    ratios["cycles_per_s"] = by_c[500]["cycles_per_s"]
    ratios["cycles_per_s_vs_target_3000"] = by_c[500]["cycles_per_s"] / 3000
    ratios["p99_target_50ms_vs_measured"] = 50 / max(by_c[500]["p99_ms"], 1e-9)
if postgres:
    c = postgres[0]["concurrency"]
    pg = {r["servers"]: r for r in postgres if r["concurrency"] == c}
    ratios["postgres1_vs_sqlite"] = {"cycles_per_s": pg[1]["cycles_per_s"] / by_c[c]["cycles_per_s"]}
    for n, r in pg.items():
        if n > 1:
            ratios[f"postgres{n}_vs_postgres1"] = {"cycles_per_s": r["cycles_per_s"] / pg[1]["cycles_per_s"]}
json.dump({"benchmark": "server", "target": {"cycles_per_s_at_c500": 3000, "p99_ms": 50,
                                             "errors": 0},
           "results": results, "postgres": postgres, "ratios": ratios,
           "think_time_variant": think}, open(out, "w"), indent=2)
print(f"{'store':>11} {'C':>6} {'cycles/s':>9} {'claims/s':>9} {'uploads/s':>10} {'p50 ms':>7} {'p99 ms':>7}"
      f" {'errors':>6} {'204s':>6} {'rounds':>6} {'RSS MB':>7} {'CPU ms/cycle':>12} {'load':>5}")
for r in results + postgres:
    # Server CPU includes the warm-up, whose cycles are not counted: an upper bound.
    cpu_ms = 1000 * r["server_cpu_s"] / max(r["cycles"], 1)
    label = f"{r['store']}×{r['servers']}"
    print(f"{label:>11} {r['concurrency']:>6} {r['cycles_per_s']:>9.0f} {r['claims_per_s']:>9.0f}"
          f" {r['uploads_per_s']:>10.0f} {r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} {r['errors']:>6}"
          f" {r['no_task_204']:>6} {r['rounds_closed']:>6} {r['server_peak_rss_mb']:>7.1f}"
          f" {cpu_ms:>12.3f} {r['load_average_1m']:>5.1f}"
          + (f"  postgres CPU ms/cycle {1000 * r['postgres_cpu_s'] / max(r['cycles'], 1):.3f}"
             if r["store"] == "postgres" else ""))
for key, value in ratios.items():
    if key.startswith("postgres"):
        print(f"{key}.cycles_per_s = {value['cycles_per_s']:.2f}")
if think:
    print(f"think-time variant (not the issue's closed loop): C = {think['concurrency']},"
          f" {think['think_ms'] // 2}-{think['think_ms'] * 3 // 2} ms between task and upload:"
          f" {think['cycles_per_s']:.0f} cycles/s,"
          f" p50 {think['p50_ms']:.2f} ms, p99 {think['p99_ms']:.2f} ms,"
          f" errors {think['errors']}")
print(f"wrote {out}")
PY
