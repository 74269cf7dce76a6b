#!/usr/bin/env bash
# scripts/bench.sh server — load on fedleaf-server: C concurrent simulated leaves (C = 50, 500,
# 2000) on loopback doing claim → upload (small sparse result) → claim …, each run bounded in
# time (FEDLEAF_BENCH_SECONDS, default 10) and count (FEDLEAF_BENCH_MAX_CYCLES, default 200000).
# Prints a table and writes build/bench/server.json: {"results": [per C], "ratios":
# {"cycles_per_s": at C = 500, "p99_ms": {C: p99}, "cycles_per_s_vs_target_3000": ...}}.
# Server binary and load generator come from FEDLEAF_BUILD_DIR (default build).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/${FEDLEAF_BUILD_DIR:-build}"
seconds="${FEDLEAF_BENCH_SECONDS:-10}"
max_cycles="${FEDLEAF_BENCH_MAX_CYCLES:-200000}"
concurrencies="${FEDLEAF_BENCH_CONCURRENCY:-50 500 2000}"
out="$root/build/bench/server.json"
mkdir -p "$root/build/bench"

cmake --build "$build" -j2 --target fedleaf-server server_load >/dev/null
server="$build/fedleaf-server"
load="$build/tests/bench/server/server_load"
work="$(mktemp -d)"
trap 'kill "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
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

results=()
for c in $concurrencies; do
  rm -f "$work"/tasks.db*
  "$server" --db "$work/tasks.db" --port 0 --admin-token-file "$work/admin.token" \
    --log-level warn --threads 2 > "$work/server.out" 2> "$work/server.err" &
  pid=$!
  for _ in $(seq 100); do grep -q listening "$work/server.out" && break; sleep 0.05; done
  port="$(grep -oE '[0-9]+$' "$work/server.out")"
  token="$(curl -sf -X POST "http://127.0.0.1:$port/v1/populations" \
    -H "Authorization: Bearer $admin" -H "Fedleaf-Version: $version" \
    -d "{\"id\": \"bench\", \"seed\": 1, \"rounds\": 1000000, \"clients_per_round\": 2000,
         \"lease_s\": 600, \"round_deadline_s\": 3600, \"plan\": $plan}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["client_token"])')"
  result="$("$load" --port "$port" --population bench --token "$token" --version "$version" \
    --concurrency "$c" --duration-s "$seconds" --max-cycles "$max_cycles" --vocab 20000 --dim 8)"
  rss_kb="$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")"
  rounds="$(curl -sf "http://127.0.0.1:$port/v1/populations/bench" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["round"])')"
  kill -TERM "$pid"
  wait "$pid"
  results+=("$(python3 -c 'import json, sys; r = json.loads(sys.argv[1]);
r["server_peak_rss_mb"] = int(sys.argv[2]) / 1024; r["rounds_closed"] = int(sys.argv[3]);
print(json.dumps(r))' "$result" "$rss_kb" "$rounds")")
done

python3 - "$out" "${results[@]}" <<'PY'
import json, sys
out, results = sys.argv[1], [json.loads(r) for r in sys.argv[2:]]
by_c = {r["concurrency"]: r for r in results}
ratios = {"p99_ms": {str(c): r["p99_ms"] for c, r in by_c.items()}}
if 500 in by_c:
    ratios["cycles_per_s"] = by_c[500]["cycles_per_s"]
    ratios["cycles_per_s_vs_target_3000"] = by_c[500]["cycles_per_s"] / 3000
    ratios["p99_target_50ms_vs_measured"] = 50 / max(by_c[500]["p99_ms"], 1e-9)
json.dump({"benchmark": "server", "target": {"cycles_per_s_at_c500": 3000, "p99_ms": 50,
                                             "errors": 0},
           "results": results, "ratios": ratios}, open(out, "w"), indent=2)
print(f"{'C':>6} {'cycles/s':>9} {'claims/s':>9} {'uploads/s':>10} {'p50 ms':>7} {'p99 ms':>7}"
      f" {'errors':>6} {'204s':>6} {'rounds':>6} {'RSS MB':>7}")
for r in results:
    print(f"{r['concurrency']:>6} {r['cycles_per_s']:>9.0f} {r['claims_per_s']:>9.0f}"
          f" {r['uploads_per_s']:>10.0f} {r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} {r['errors']:>6}"
          f" {r['no_task_204']:>6} {r['rounds_closed']:>6} {r['server_peak_rss_mb']:>7.1f}")
print(f"wrote {out}")
PY
