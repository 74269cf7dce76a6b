#!/usr/bin/env bash
# scripts/bench.sh poison — the demo job with 0 and 3 poisoning leaves, robust aggregation
# defaults on and off (tests/bench/poison/poison_bench.mjs). Builds what is missing first.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/build.sh" >/dev/null
cd "$root"
smoke=()
# Smoke (scripts/bench.sh --smoke): one round of the clean and the attacked job, robust defaults.
[[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]] && smoke=(--rounds 1 --jobs clean-robust,attacked-robust)
FEDLEAF_BUILD_DIR=build node tests/bench/poison/poison_bench.mjs \
  --out "${FEDLEAF_BENCH_OUT_DIR:-build/bench}/poison.json" "${smoke[@]}" "$@"
