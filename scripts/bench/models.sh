#!/usr/bin/env bash
# scripts/bench.sh models — the demo job with the single-input plan (scripts/demo/spam_plan.json)
# and with the wide & deep plan (scripts/demo/spam_wide_deep_plan.json) in one run, alternating:
# final eval accuracy and AUC, bytes down and up per round, ratio wide_deep_over_single_accuracy
# (tests/bench/models/models_bench.mjs). FEDLEAF_BENCH_SMOKE=1 runs a tiny job. Builds what is
# missing first, unless FEDLEAF_SKIP_BUILD=1 (the binaries in FEDLEAF_BUILD_DIR, default build/,
# and js_bindings/dist are used as they are).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [[ "${FEDLEAF_SKIP_BUILD:-0}" != 1 ]]; then
  bash "$root/scripts/build.sh" >/dev/null
fi
cd "$root"
FEDLEAF_BUILD_DIR="${FEDLEAF_BUILD_DIR:-build}" node tests/bench/models/models_bench.mjs \
  --out "${FEDLEAF_BENCH_OUT_DIR:-build/bench}/models.json" "$@"
