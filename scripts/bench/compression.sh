#!/usr/bin/env bash
# scripts/bench.sh compression — the demo job with f32, f16 and int8 + delta_varint updates,
# interleaved: bytes up and down per round, final eval accuracy, leaf and server CPU
# (tests/bench/compression/compression_bench.mjs). FEDLEAF_BENCH_SMOKE=1 runs a tiny job.
# Builds what is missing first.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/build.sh" >/dev/null
cd "$root"
FEDLEAF_BUILD_DIR=build node tests/bench/compression/compression_bench.mjs \
  --out "${FEDLEAF_BENCH_OUT_DIR:-build/bench}/compression.json" "$@"
