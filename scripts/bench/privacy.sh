#!/usr/bin/env bash
# scripts/bench.sh privacy — the same model trained by a population of many small devices without
# privacy and at ε ≤ 8 and ε ≤ 2, interleaved (tests/bench/privacy/privacy_bench.mjs: accuracy,
# server CPU per round, bytes up and down). Builds what is missing first.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/build.sh" >/dev/null
cd "$root"
smoke=()
# Smoke (scripts/bench.sh --smoke): 121 devices of 40 emails, 8 per round, 2 rounds, one repeat.
[[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]] &&
  smoke=(--rounds 2 --per-round 8 --records-per-device 40 --repeats 1 --warmup 0 --jobs nonprivate,clipped,eps8)
FEDLEAF_BUILD_DIR=build node tests/bench/privacy/privacy_bench.mjs \
  --out "${FEDLEAF_BENCH_OUT_DIR:-build/bench}/privacy.json" "${smoke[@]}" "$@"
