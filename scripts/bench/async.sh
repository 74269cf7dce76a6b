#!/usr/bin/env bash
# scripts/bench.sh async — synchronous rounds vs buffered asynchronous aggregation (FedBuff), and
# FedAdam in each, on the demo job with heterogeneous leaves: 30% of 16 non-IID leaves 5× slower
# and churn (tests/bench/async/async_bench.mjs: method, configurations and measures in its
# header comment). Prints a table and writes build/bench/async.json: per run the wall time to the
# first model with >= 95% eval accuracy, the final accuracy after the same number of accepted
# reports, reports lost and double-counted; ratios sync_over_buffered_time_to_95 and
# buffered_over_sync_final_accuracy (medians over the repeats, min and max in ratio_detail).
# Builds what is missing first; FEDLEAF_SKIP_SETUP=1 runs what is already built
# (FEDLEAF_BUILD_DIR overrides build/).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
[[ "${FEDLEAF_SKIP_SETUP:-0}" == 1 ]] || bash "$root/scripts/build.sh" >/dev/null
smoke=()
# Smoke (scripts/bench.sh --smoke): 4 leaves, a budget of 8 reports (2 rounds of 4, 4 versions of
# 2), sync and buffered once each, no warm-up: it checks the bench runs and writes its JSON, not
# its figures (no run reaches 95% there, so the time ratio is null and left out of "ratios").
[[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]] &&
  smoke=(--clients 4 --budget 8 --buffer-size 2 --repeats 1 --warmup 0 --configs sync,buffered)
FEDLEAF_BUILD_DIR="${FEDLEAF_BUILD_DIR:-build}" node tests/bench/async/async_bench.mjs \
  --out "${FEDLEAF_BENCH_OUT_DIR:-build/bench}/async.json" "${smoke[@]}" "$@"
