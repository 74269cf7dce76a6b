#!/usr/bin/env bash
# scripts/bench.sh round — orchestration overhead of federated rounds, prefetch 0 vs 1
# (tests/bench/round/round_bench.mjs). Builds what is missing first.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/build.sh" >/dev/null
cd "$root"
smoke=()
# Smoke (scripts/bench.sh --smoke): two leaves, two rounds, the default configuration.
[[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]] && smoke=(--clients 2 --rounds 2 --configs default)
FEDLEAF_BUILD_DIR=build node tests/bench/round/round_bench.mjs \
  --out "${FEDLEAF_BENCH_OUT_DIR:-build/bench}/round.json" "${smoke[@]}" "$@"
