#!/usr/bin/env bash
# scripts/bench.sh NAME [ARGS...] — runs one benchmark: prints a table and writes
# build/bench/NAME.json ({"results": [...], "ratios": {...}}, ratios bigger-is-better, each
# against a baseline measured in the same run). Benchmarks live in scripts/bench/NAME.sh.
#
# scripts/bench.sh --smoke NAME [ARGS...] — the same benchmark at a tiny size
# (FEDLEAF_BENCH_SMOKE=1: each scripts/bench/NAME.sh picks its own), writing
# build/bench/smoke/NAME.json marked "smoke": true, never build/bench/NAME.json. It checks that
# the bench runs and writes a JSON with a non-empty "results" list and a "ratios" object, not
# its figures: scripts/test.sh runs every bench so, a few seconds to a minute each.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
smoke=0
if [[ "${1:-}" == --smoke ]]; then
  smoke=1
  shift
fi
name="${1:-}"
usage() {
  echo "usage: scripts/bench.sh [--smoke] NAME [ARGS...]"
  echo "benchmarks:" $(cd "$root/scripts/bench" && ls *.sh 2>/dev/null | sed 's/\.sh$//')
}
if [[ "$name" == -h || "$name" == --help ]]; then
  usage
  exit 0
fi
if [[ -z "$name" || ! -f "$root/scripts/bench/$name.sh" ]]; then
  usage >&2
  exit 2
fi
shift
if ((!smoke)); then
  export FEDLEAF_BENCH_OUT_DIR="$root/build/bench" FEDLEAF_BENCH_SMOKE=0
  mkdir -p "$FEDLEAF_BENCH_OUT_DIR"
  exec bash "$root/scripts/bench/$name.sh" "$@"
fi
export FEDLEAF_BENCH_OUT_DIR="$root/build/bench/smoke" FEDLEAF_BENCH_SMOKE=1
mkdir -p "$FEDLEAF_BENCH_OUT_DIR"
out="$FEDLEAF_BENCH_OUT_DIR/$name.json"
rm -f "$out"
bash "$root/scripts/bench/$name.sh" "$@"
python3 - "$out" <<'PY'
import json, sys
path = sys.argv[1]
try:
    data = json.load(open(path))
except (OSError, ValueError) as e:
    sys.exit(f"bench smoke: {path}: not written or not JSON ({e})")
if not isinstance(data.get("results"), list) or not data["results"]:
    sys.exit(f"bench smoke: {path}: 'results' must be a non-empty list")
if not isinstance(data.get("ratios"), dict):
    sys.exit(f"bench smoke: {path}: 'ratios' must be an object")
data["smoke"] = True
json.dump(data, open(path, "w"), indent=2)
print(f"bench smoke: {path}: {len(data['results'])} results, ratios {sorted(data['ratios'])}")
PY
