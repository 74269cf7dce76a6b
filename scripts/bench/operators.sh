#!/usr/bin/env bash
# scripts/bench.sh operators — mean_over_contributors vs weighted_mean for the embedding table on
# the non-IID demo job (tests/bench/operators/operator_comparison.mjs). Builds the wasm if needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/build.sh" --wasm >/dev/null
cd "$root"
node tests/bench/operators/operator_comparison.mjs "$@"
