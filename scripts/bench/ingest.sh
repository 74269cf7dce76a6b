#!/usr/bin/env bash
# scripts/bench.sh ingest [--pairs K] [--uploads N] [--rounds R] [--rows ROWS]: the server's CPU
# per accepted MB and per published model against a floor for the same bytes measured in the
# same run (memcpy, sha256, fold, write + fdatasync), interleaved server / floor (A B A' B') after
# a warm-up; ratios are medians over the pairs with their min and max, and the server's step
# timings (fedleaf_phase_seconds) give the breakdown. One fedleaf-server (SQLite store in a temp
# dir) and one native client on loopback (tests/bench/ingest/ingest_bench.cc: method in its
# header comment): demo-sized uploads (scripts/demo/spam_plan.json: 15000 embedding rows, int8
# values, delta_varint ids) as fast as the server answers, no training. Prints a table and writes
# build/bench/ingest.json (FEDLEAF_BUILD_DIR overrides build/). FEDLEAF_SKIP_SETUP=1 runs the
# binaries already built instead of building them first.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${FEDLEAF_BUILD_DIR:-$root/build}"
[[ "$build" = /* ]] || build="$root/$build"
if [[ "${FEDLEAF_SKIP_SETUP:-0}" != 1 ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
  cmake --build "$build" -j2 --target fedleaf-server fedleaf_ingest_bench >/dev/null
fi
out_dir="${FEDLEAF_BENCH_OUT_DIR:-$build/bench}"
mkdir -p "$out_dir"
args=(--pairs 5 --uploads 160 --rounds 4)
# Smoke (scripts/bench.sh --smoke): small uploads, one short pair.
if [[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]]; then
  args=(--pairs 1 --uploads 8 --rounds 1 --rows 500 --leaves 4)
fi
server="$build/fedleaf-server"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
admin="bench-admin-token-0123456789"
echo "$admin" > "$work/admin.token"
version="$("$server" --version | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')"
"$server" --db "$work/tasks.db" --port 0 --admin-token-file "$work/admin.token" \
  --log-level warn --threads 2 > "$work/server.out" 2> "$work/server.err" &
server_pid=$!
for _ in $(seq 200); do grep -q listening "$work/server.out" 2>/dev/null && break; sleep 0.05; done
port="$(grep -oE '[0-9]+$' "$work/server.out")" ||
  { echo "bench ingest: the server did not start:" >&2; cat "$work/server.err" >&2; exit 1; }
# Two populations of the demo plan: "ingest" never fills its round, "publish" closes one every
# clients_per_round uploads (16 as in the demo, 4 in the smoke run).
cpr=16
[[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]] && cpr=4
create() {  # create ID CLIENTS_PER_ROUND -> client token
  curl -sf -X POST "http://127.0.0.1:$port/v1/populations" \
    -H "Authorization: Bearer $admin" -H "Fedleaf-Version: $version" \
    -d "{\"id\": \"$1\", \"seed\": 1, \"rounds\": 1000000, \"clients_per_round\": $2,
         \"lease_s\": 600, \"round_deadline_s\": 36000,
         \"plan\": $(cat "$root/scripts/demo/spam_plan.json")}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["client_token"])'
}
ingest_token="$(create ingest 1000000)"
publish_token="$(create publish "$cpr")"
"$build/tests/bench/ingest/fedleaf_ingest_bench" --port "$port" --server-pid "$server_pid" \
  --ingest-token "$ingest_token" --publish-token "$publish_token" --version "$version" \
  --clients-per-round "$cpr" --work-dir "$work" --out "$out_dir/ingest.json" "${args[@]}" "$@"
