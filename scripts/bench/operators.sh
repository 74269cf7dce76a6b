#!/usr/bin/env bash
# scripts/bench.sh operators — mean_over_contributors vs weighted_mean for the embedding table on
# the non-IID demo job (tests/bench/operators/operator_comparison.mjs). Builds the wasm if needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/build.sh" --wasm >/dev/null
cd "$root"
smoke=()
# Smoke (scripts/bench.sh --smoke): one round of two leaves.
[[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]] && smoke=(--rounds 1 --clients 2)
node tests/bench/operators/operator_comparison.mjs \
  --out "${FEDLEAF_BENCH_OUT_DIR:-build/bench}/operators.json" "${smoke[@]}" "$@"
