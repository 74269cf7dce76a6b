#!/usr/bin/env bash
# scripts/bench.sh aggregate [--clients N] [--pairs K] [--rounds R] [--warmup W]
# [--min-sample-s S]: the sparse-sum accumulator against dense, radix-sort and hash baselines
# (tests/bench/aggregate). Builds the Release bench in build/, runs it from the repository root,
# prints the table and writes build/bench/aggregate.json. Methods are interleaved round by round
# and ratios are medians of per-pair ratios with their min-max (method: the bench's header
# comment). Samples last >= 0.5 s of CPU (--min-sample-s); about four minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build --target fedleaf_aggregate_bench -j2
out_dir="${FEDLEAF_BENCH_OUT_DIR:-build/bench}"
mkdir -p "$out_dir"
smoke=()
# Smoke (scripts/bench.sh --smoke): the smallest point, few pairs, one sample per method.
if [[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]]; then
  smoke=(--clients 20 --pairs 100 --rounds 1 --warmup 1 --min-sample-s 0 --point d=2^20)
fi
exec build/tests/bench/aggregate/fedleaf_aggregate_bench --json "$out_dir/aggregate.json" \
  "${smoke[@]}" "$@"
