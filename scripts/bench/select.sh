#!/usr/bin/env bash
# scripts/bench.sh select [--rounds N] [--warmup W] — sparse download (model:select) against the
# full model for one leaf of a 2^20 × 32 embedding model: bytes downloaded, leaf peak memory
# (process RSS and wasm memory), download and train time, full vs select interleaved
# (tests/bench/select/select_bench.mjs). Writes build/bench/select.json (ratios
# bytes_full_over_select, memory_full_over_select). Builds what is missing first.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/build.sh" >/dev/null
cd "$root"
smoke=()
# Smoke (scripts/bench.sh --smoke): one round, no warm-up.
[[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]] && smoke=(--rounds 1 --warmup 0)
FEDLEAF_BUILD_DIR=build node tests/bench/select/select_bench.mjs \
  --out "${FEDLEAF_BENCH_OUT_DIR:-build/bench}/select.json" "${smoke[@]}" "$@"
