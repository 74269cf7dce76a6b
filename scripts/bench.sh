#!/usr/bin/env bash
# scripts/bench.sh NAME [ARGS...] — runs one benchmark: prints a table and writes
# build/bench/NAME.json ({"results": [...], "ratios": {...}}, ratios bigger-is-better, each
# against a baseline measured in the same run). Benchmarks live in scripts/bench/NAME.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name="${1:-}"
usage() {
  echo "usage: scripts/bench.sh NAME [ARGS...]"
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
mkdir -p "$root/build/bench"
exec bash "$root/scripts/bench/$name.sh" "$@"
